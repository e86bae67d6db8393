//! TCP ports opened to a tool set's processes while the network is blocked.
//!
//! A process session started with `ports` may bind those ports; while it runs, every process
//! started by the same tool set (run_command, node_process, run_tests, other sessions) may
//! connect to them. Both are Landlock ABI 4 rules (`NetPort`) added to the ruleset that
//! otherwise refuses every TCP bind and connect. A port rule names no address, so it alone
//! would let a process reach that port anywhere (the host's loopback, any other host): every
//! process given a port rule runs in the tool set's own network namespace instead, which has
//! loopback only ([`Keeper`](super::netns::Keeper), made on the first launch that needs it and
//! dropped when the tool set is closed). There the rule reaches the session's listener and
//! nothing of the host's. Processes without a port rule stay in the host's namespace with TCP
//! refused; where no such namespace can be made, no connect rule is given at all.
//! The set is shared by the tool set's options ([`SharedPorts`], one per process table), and
//! with it the tool set's share of the filtering proxy's connections.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock, Weak};

#[derive(Default)]
struct Inner {
    /// Open ports, each with how many sessions hold it.
    open: Mutex<BTreeMap<u16, usize>>,
    /// The tool set's network namespace, once a launch needed it; `closed` once the tool set
    /// was closed (no new one is made then).
    #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
    keeper: Mutex<(Option<Arc<super::netns::Keeper>>, bool)>,
    /// The tool set's share of the filtering proxy's connections.
    share: crate::proxy::Share,
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

    /// The tool set's share of the filtering proxy's connections (`network: { allow }`): every
    /// call of the tool set counts against it.
    pub fn proxy_share(&self) -> crate::proxy::Share {
        self.0.share.clone()
    }

    /// The ports open now.
    pub fn current(&self) -> Vec<u16> {
        self.0.open.lock().unwrap_or_else(|e| e.into_inner()).keys().copied().collect()
    }

    /// The tool set's network namespace, made now if there is none yet.
    #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
    pub fn namespace(&self) -> std::io::Result<Arc<super::netns::Keeper>> {
        let mut k = self.0.keeper.lock().unwrap_or_else(|e| e.into_inner());
        if k.1 {
            return Err(std::io::Error::other("the tools were closed"));
        }
        if let Some(keeper) = &k.0 {
            return Ok(keeper.clone());
        }
        let keeper = Arc::new(super::netns::Keeper::new()?);
        k.0 = Some(keeper.clone());
        Ok(keeper)
    }

    /// Whether the tool set's network namespace exists now.
    pub fn has_namespace(&self) -> bool {
        #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            self.0.keeper.lock().unwrap_or_else(|e| e.into_inner()).0.is_some()
        }
        #[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
        false
    }

    /// Drops the tool set's network namespace (freed once no process is left in it) and makes
    /// no new one: the tool set is closed.
    pub fn close(&self) {
        #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            let mut k = self.0.keeper.lock().unwrap_or_else(|e| e.into_inner());
            k.0 = None;
            k.1 = true;
        }
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
