//! TCP ports opened to a tool set's processes while the network is blocked.
//!
//! A process session started with `ports` may bind those ports; while it runs, every process
//! started by the same tool set (run_command, node_process, run_tests, other sessions) may
//! connect to them. Both are Landlock ABI 4 rules (`NetPort`) added to the ruleset that
//! otherwise refuses every TCP bind and connect; nothing else about the network changes.
//! The set is shared by the tool set's options ([`SharedPorts`], one per process table).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock, Weak};

#[derive(Default)]
struct Inner {
    /// Open ports, each with how many sessions hold it.
    open: Mutex<BTreeMap<u16, usize>>,
}

/// The ports a tool set's processes may connect to. Cloning shares the set; two values are
/// equal when they are the same set.
#[derive(Clone, Default)]
pub struct SharedPorts(Arc<Inner>);

impl PartialEq for SharedPorts {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}
impl Eq for SharedPorts {}

impl std::fmt::Debug for SharedPorts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("SharedPorts").field(&self.current()).finish()
    }
}

impl SharedPorts {
    pub fn new() -> Self {
        SharedPorts::default()
    }

    /// The ports open now.
    pub fn current(&self) -> Vec<u16> {
        self.0.open.lock().unwrap_or_else(|e| e.into_inner()).keys().copied().collect()
    }

    /// Opens `ports` until the returned lease is dropped.
    pub fn open(&self, ports: &[u16]) -> PortLease {
        let mut open = self.0.open.lock().unwrap_or_else(|e| e.into_inner());
        for p in ports {
            *open.entry(*p).or_insert(0) += 1;
        }
        PortLease { set: self.clone(), ports: ports.to_vec() }
    }
}

/// Ports held open by one session.
#[derive(Debug)]
pub struct PortLease {
    set: SharedPorts,
    ports: Vec<u16>,
}

impl Drop for PortLease {
    fn drop(&mut self) {
        let mut open = self.set.0.open.lock().unwrap_or_else(|e| e.into_inner());
        for p in &self.ports {
            if let Some(n) = open.get_mut(p) {
                *n -= 1;
                if *n == 0 {
                    open.remove(p);
                }
            }
        }
    }
}

static GROUPS: OnceLock<Mutex<(u32, HashMap<u32, Weak<Inner>>)>> = OnceLock::new();

/// Registers `set` under a new number (for the JS binding, which passes the number to the
/// tool set's other tools).
pub fn register(set: &SharedPorts) -> u32 {
    let mut g = GROUPS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    g.1.retain(|_, w| w.strong_count() > 0);
    g.0 += 1;
    let id = g.0;
    g.1.insert(id, Arc::downgrade(&set.0));
    id
}

/// The set registered under `id`, if it still exists.
pub fn group(id: u32) -> Option<SharedPorts> {
    let g = GROUPS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    g.1.get(&id).and_then(Weak::upgrade).map(SharedPorts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leases_open_and_close_ports() {
        let set = SharedPorts::new();
        let a = set.open(&[3000, 3001]);
        let b = set.open(&[3000]);
        assert_eq!(set.current(), [3000, 3001]);
        drop(a);
        assert_eq!(set.current(), [3000]);
        drop(b);
        assert!(set.current().is_empty());
        let id = register(&set);
        assert_eq!(group(id), Some(set.clone()));
        drop(set);
        assert_eq!(group(id), None);
    }
}
