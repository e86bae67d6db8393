//! The one generator of unpredictable names for temporary files and directories (a write's
//! temp file, node_process's script, run_command's scratch directory, run_tests' report
//! prefix). Every caller also creates the name exclusively (`O_EXCL`, `mkdir`), so a collision
//! is refused, never followed.

/// `prefix` followed by `bytes` random bytes in hex. Without randomness (getrandom failed) the
/// bytes come from the clock, a counter and the process id: never a fixed name.
pub fn random_name(prefix: &str, bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    if getrandom::fill(&mut buf).is_err() {
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let mut seed = (t as u64).to_le_bytes().to_vec();
        seed.extend_from_slice(&(n as u32 ^ std::process::id()).to_le_bytes());
        for (i, b) in buf.iter_mut().enumerate() {
            *b = seed[i % seed.len()] ^ (i / seed.len()) as u8;
        }
    }
    let mut name = String::with_capacity(prefix.len() + 2 * bytes);
    name.push_str(prefix);
    for b in buf {
        name.push_str(&format!("{b:02x}"));
    }
    name
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_are_prefixed_hex_and_differ() {
        let a = super::random_name(".x-", 12);
        let b = super::random_name(".x-", 12);
        assert!(a.starts_with(".x-") && a.len() == 3 + 24 && a[3..].bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
