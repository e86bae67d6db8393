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

/// Who created a temporary name: enough to prove later, from another process, that its creator
/// is gone. A name made by [`owned_name`] reads `<prefix><tag>-<pid>-<start>-<random>`: `tag`
/// is 16 hex digits of a hash of the boot id and the PID namespace (two hosts that see the same
/// `tag` see the same processes under the same numbers), `start` the process's start time in
/// clock ticks since boot (a reused pid has another one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Owner {
    pub tag: u64,
    pub pid: u32,
    pub start: u64,
}

/// This process, or `None` where it cannot be told apart from others (no `/proc`, or a `/proc`
/// of another PID namespace): its temporary names are then plain random ones, never swept.
pub fn this_process() -> Option<Owner> {
    static ME: std::sync::OnceLock<Option<Owner>> = std::sync::OnceLock::new();
    *ME.get_or_init(|| {
        let pid = std::process::id();
        // /proc must be this PID namespace's: /proc/self names this process by its own pid.
        let me = std::fs::read_link("/proc/self").ok()?;
        if me.to_str()? != pid.to_string() {
            return None;
        }
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
        use std::os::unix::fs::MetadataExt as _;
        let ns = std::fs::metadata("/proc/self/ns/pid").ok()?;
        let mut seed = boot.trim().as_bytes().to_vec();
        seed.extend_from_slice(&ns.dev().to_le_bytes());
        seed.extend_from_slice(&ns.ino().to_le_bytes());
        let digest = crate::hash::sha256_hex(&seed);
        let tag = u64::from_str_radix(&digest[..16], 16).ok()?;
        let start = start_time(pid)?.0;
        Some(Owner { tag, pid, start })
    })
}

/// A process's start time and whether it has exited (a zombie is gone for this purpose: it
/// runs no more code), from `/proc/<pid>/stat`; `None` when there is no such process.
fn start_time(pid: u32) -> Option<(u64, bool)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: fields count from the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    // rest starts at field 3 (state); starttime is field 22.
    let state = *fields.first()?;
    let start = fields.get(19)?.parse().ok()?;
    Some((start, matches!(state, "Z" | "X" | "x")))
}

/// A fresh temporary name: `prefix`, this process's [`Owner`] where it has one, and `bytes`
/// random bytes in hex.
pub fn owned_name(prefix: &str, bytes: usize) -> String {
    match this_process() {
        Some(o) => random_name(&format!("{prefix}{:016x}-{}-{}-", o.tag, o.pid, o.start), bytes),
        None => random_name(prefix, bytes),
    }
}

/// The owner a name made by [`owned_name`] records, or `None` for any other name.
pub fn owner_of(name: &str, prefix: &str) -> Option<Owner> {
    let rest = name.strip_prefix(prefix)?;
    let mut parts = rest.splitn(4, '-');
    let hex16 = |s: &str| s.len() == 16 && s.bytes().all(|c| c.is_ascii_hexdigit());
    let digits = |s: &str| !s.is_empty() && s.len() <= 20 && s.bytes().all(|c| c.is_ascii_digit());
    let (tag, pid, start, random) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if !hex16(tag) || !digits(pid) || !digits(start) || random.is_empty() || !random.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    Some(Owner { tag: u64::from_str_radix(tag, 16).ok()?, pid: pid.parse().ok()?, start: start.parse().ok()? })
}

/// Whether the process that made `name` (with [`owned_name`]) has provably exited: it ran on
/// this boot in this PID namespace, and that pid is now free, a zombie, or another process
/// (another start time). Anything else (another machine or namespace, a name of another form,
/// this very process, `/proc` unreadable) is not proof.
pub fn owner_is_gone(name: &str, prefix: &str) -> bool {
    let (Some(me), Some(owner)) = (this_process(), owner_of(name, prefix)) else { return false };
    if owner.tag != me.tag || owner.pid == 0 || (owner.pid == me.pid && owner.start == me.start) {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{}/stat", owner.pid)) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(_) => false,
        Ok(_) => match start_time(owner.pid) {
            Some((start, exited)) => start != owner.start || exited,
            // Gone between the two reads.
            None => std::fs::metadata(format!("/proc/{}", owner.pid)).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound),
        },
    }
}

#[cfg(test)]
mod owner_tests {
    use super::*;

    #[test]
    fn an_owned_name_records_this_process_and_is_not_gone() {
        let me = this_process().expect("a /proc of this PID namespace");
        let name = owned_name(".workcell-tmp-", 12);
        assert_eq!(owner_of(&name, ".workcell-tmp-"), Some(me));
        assert!(!owner_is_gone(&name, ".workcell-tmp-"));
    }

    #[test]
    fn an_exited_owner_is_gone_and_other_names_prove_nothing() {
        let me = this_process().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let start = start_time(pid).map(|s| s.0).unwrap_or(1);
        child.wait().unwrap();
        let p = ".workcell-tmp-";
        let dead = format!("{p}{:016x}-{pid}-{start}-00ff", me.tag);
        assert!(owner_is_gone(&dead, p));
        // A live process with another start time: its pid was reused, the owner is gone.
        let reused = format!("{p}{:016x}-{}-{}-00ff", me.tag, me.pid, me.start + 1);
        assert!(owner_is_gone(&reused, p));
        // Another boot or namespace, a plain random name, a malformed one: no proof.
        for name in [
            format!("{p}{:016x}-{pid}-{start}-00ff", me.tag ^ 1),
            format!("{p}00112233445566778899aabb"),
            format!("{p}{:016x}-{pid}-{start}-", me.tag),
            format!("{p}{:016x}-{pid}-x-00ff", me.tag),
            format!(".other-{:016x}-{pid}-{start}-00ff", me.tag),
        ] {
            assert!(!owner_is_gone(&name, p), "{name}");
        }
        // Process 1 is alive with its own start time.
        if let Some((s1, _)) = start_time(1) {
            assert!(!owner_is_gone(&format!("{p}{:016x}-1-{s1}-00ff", me.tag), p));
        }
    }
}
