//! Per-target write locks: one queue per resolved file, granted in call order.
//!
//! A write takes a [`Ticket`] synchronously, on the caller's thread, the moment the call is
//! made: tickets are numbered in call order. The write then resolves its target on a worker
//! thread (which may create directories and follow a final-component symlink) and only then
//! knows its [`TargetKey`] (the parent directory's device and inode plus the final name), so two
//! spellings of one file share a queue.
//!
//! Because resolution runs concurrently, a later call may learn its key before an earlier one.
//! To keep call order, a ticket at the head of its queue is granted only once every lower
//! ticket has registered its key (or ended): a lower ticket still resolving might land on the
//! same queue and must go first. Different targets proceed in parallel.
//!
//! Waiting is asynchronous (a oneshot channel per waiter): no thread is ever blocked on a lock.
//! The table's mutex only guards its own bookkeeping and is never held across an await.
//! Dropping a [`Ticket`] or [`TargetGuard`] (success, error, cancellation, a dropped future)
//! removes it and grants the next waiter.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsString;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

use tokio::sync::oneshot;

use crate::cancel::Cancel;
use crate::error::{Code, Error, Result};
use crate::root::Identity;

/// What one write lock protects: a name in a directory, identified by the directory's identity.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TargetKey {
    pub dir: Identity,
    pub name: OsString,
}

enum Slot {
    /// Registered, waiting for the grant.
    Waiting(oneshot::Sender<()>),
    /// Holds the lock (or was granted and has not noticed yet).
    Granted,
}

#[derive(Default)]
struct State {
    next: u64,
    /// Tickets issued whose key is not known yet.
    unresolved: BTreeSet<u64>,
    /// Registered tickets per key, in ticket order; the first one holds or gets the lock.
    queues: HashMap<TargetKey, BTreeMap<u64, Slot>>,
}

impl State {
    /// Grants every queue head that no lower unresolved ticket could overtake.
    fn pump(&mut self) {
        let floor = self.unresolved.first().copied().unwrap_or(u64::MAX);
        for queue in self.queues.values_mut() {
            if let Some((&id, slot)) = queue.iter_mut().next() {
                if id < floor && matches!(slot, Slot::Waiting(_)) {
                    if let Slot::Waiting(tx) = std::mem::replace(slot, Slot::Granted) {
                        // The receiver may be gone (cancelled); its ticket's drop cleans up.
                        let _ = tx.send(());
                    }
                }
            }
        }
    }
}

/// A table of per-target queues. The process-wide one is [`ticket`]'s.
#[derive(Default)]
pub struct LockTable {
    state: Mutex<State>,
}

impl LockTable {
    pub fn new() -> Arc<Self> {
        Arc::new(LockTable::default())
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The bookkeeping stays consistent even if a holder panicked (no invariant spans a
        // panic point), so a poisoned mutex is still usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes the next ticket. Call this synchronously when the call is made.
    pub fn ticket(self: &Arc<Self>) -> Ticket {
        let mut st = self.lock();
        let id = st.next;
        st.next += 1;
        st.unresolved.insert(id);
        Ticket { table: self.clone(), id, key: None }
    }

    /// Takes `n` consecutive tickets at once (a call with several targets: `apply_patch`,
    /// `move_file`). Because no other call's ticket falls between them, two such calls meet in
    /// the same order on every key they share, so they can never wait for each other in a
    /// cycle.
    pub fn tickets(self: &Arc<Self>, n: usize) -> Vec<Ticket> {
        let mut st = self.lock();
        (0..n)
            .map(|_| {
                let id = st.next;
                st.next += 1;
                st.unresolved.insert(id);
                Ticket { table: self.clone(), id, key: None }
            })
            .collect()
    }

    /// Number of keys with registered tickets (for tests: an idle table is empty).
    pub fn queued_keys(&self) -> usize {
        self.lock().queues.len()
    }

    /// Number of tickets still resolving (for tests).
    pub fn unresolved(&self) -> usize {
        self.lock().unresolved.len()
    }
}

static TABLE: LazyLock<Arc<LockTable>> = LazyLock::new(LockTable::new);

/// A ticket from the process-wide table shared by every workspace.
pub fn ticket() -> Ticket {
    TABLE.ticket()
}

/// `n` consecutive tickets from the process-wide table (see [`LockTable::tickets`]).
pub fn tickets(n: usize) -> Vec<Ticket> {
    TABLE.tickets(n)
}

/// Locks every key of one call: `keys` (distinct) are sorted into one global order and given
/// the call's tickets in that order; unused tickets are withdrawn. Waits asynchronously for all
/// of them; cancellation gives every place up.
pub async fn acquire_all(tickets: Vec<Ticket>, mut keys: Vec<TargetKey>, cancel: &Cancel) -> Result<Vec<TargetGuard>> {
    keys.sort_by(|a, b| (a.dir.dev, a.dir.ino, &a.name).cmp(&(b.dir.dev, b.dir.ino, &b.name)));
    keys.dedup();
    if keys.len() > tickets.len() {
        return Err(Error::new(Code::IoError, "more targets than tickets").with_hint("retry the call"));
    }
    let mut tickets = tickets;
    tickets.sort_by_key(|t| t.id);
    let registrations: Vec<Registration> = tickets.into_iter().zip(keys).map(|(t, k)| t.register(k)).collect();
    let mut guards = Vec::with_capacity(registrations.len());
    for r in registrations {
        guards.push(r.wait(cancel).await?);
    }
    Ok(guards)
}

/// A place in call order. Turn it into a lock with [`Ticket::acquire`]; dropping it withdraws.
pub struct Ticket {
    table: Arc<LockTable>,
    id: u64,
    key: Option<TargetKey>,
}

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ticket").field("id", &self.id).field("key", &self.key).finish()
    }
}

impl Ticket {
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Registers `key` for this ticket: from now on it waits in that key's queue.
    pub fn register(mut self, key: TargetKey) -> Registration {
        let rx = {
            let mut st = self.table.lock();
            st.unresolved.remove(&self.id);
            let (tx, rx) = oneshot::channel();
            st.queues.entry(key.clone()).or_default().insert(self.id, Slot::Waiting(tx));
            self.key = Some(key);
            st.pump();
            rx
        };
        Registration { ticket: self, rx }
    }

    /// Registers `key` and waits (asynchronously) until this ticket holds the lock for it:
    /// every lower ticket has registered elsewhere or ended, and every lower ticket on this key
    /// has released it. Cancellation while waiting gives up the place.
    pub async fn acquire(self, key: TargetKey, cancel: &Cancel) -> Result<TargetGuard> {
        self.register(key).wait(cancel).await
    }
}

/// A ticket waiting in a key's queue.
#[derive(Debug)]
pub struct Registration {
    ticket: Ticket,
    rx: oneshot::Receiver<()>,
}

impl Registration {
    /// The lock, if it is already granted (no waiting, no thread blocked); otherwise the
    /// registration back, still in the queue.
    pub fn try_take(mut self) -> std::result::Result<TargetGuard, Registration> {
        match self.rx.try_recv() {
            Ok(()) => Ok(TargetGuard { _ticket: self.ticket }),
            Err(_) => Err(self),
        }
    }

    /// Waits (asynchronously) for the grant. Cancellation gives up the place.
    pub async fn wait(self, cancel: &Cancel) -> Result<TargetGuard> {
        let Registration { ticket, rx } = self;
        tokio::select! {
            biased;
            _ = cancel.cancelled() => Err(Error::cancelled()),
            granted = rx => match granted {
                Ok(()) => Ok(TargetGuard { _ticket: ticket }),
                Err(_) => Err(Error::new(Code::IoError, "the write lock table dropped a waiter")
                    .with_hint("retry the call")),
            },
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut st = self.table.lock();
        match self.key.take() {
            Some(key) => {
                if let Some(queue) = st.queues.get_mut(&key) {
                    queue.remove(&self.id);
                    if queue.is_empty() {
                        st.queues.remove(&key);
                    }
                }
            }
            None => {
                st.unresolved.remove(&self.id);
            }
        }
        st.pump();
    }
}

/// The held lock for one target; released on drop.
#[derive(Debug)]
pub struct TargetGuard {
    _ticket: Ticket,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn key(name: &str) -> TargetKey {
        TargetKey { dir: Identity { dev: 1, ino: 2 }, name: name.into() }
    }

    async fn not_granted_yet(fut: &mut (impl std::future::Future + Unpin)) -> bool {
        tokio::time::timeout(Duration::from_millis(30), fut).await.is_err()
    }

    #[tokio::test]
    async fn grants_in_ticket_order_whatever_the_registration_order() {
        let table = LockTable::new();
        let cancel = Cancel::new();
        let (t1, t2, t3) = (table.ticket(), table.ticket(), table.ticket());
        // Register in reverse: 3, then 2, then 1.
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut handles = Vec::new();
        for (t, delay) in [(t3, 0), (t2, 10), (t1, 20)] {
            let cancel = cancel.clone();
            let order = order.clone();
            handles.push(tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(delay)).await;
                let id = t.id();
                let guard = t.acquire(key("a"), &cancel).await.unwrap();
                order.lock().unwrap().push(id);
                tokio::time::sleep(Duration::from_millis(5)).await;
                drop(guard);
            }));
        }
        for h in handles {
            h.await.unwrap();
        }
        let ids = order.lock().unwrap().clone();
        assert_eq!(ids.len(), 3);
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "granted out of order: {ids:?}");
        assert_eq!(table.queued_keys(), 0);
        assert_eq!(table.unresolved(), 0);
    }

    #[tokio::test]
    async fn a_lower_unresolved_ticket_holds_back_a_higher_one() {
        let table = LockTable::new();
        let cancel = Cancel::new();
        let t1 = table.ticket();
        let t2 = table.ticket();
        let mut second = Box::pin(t2.acquire(key("a"), &cancel));
        assert!(not_granted_yet(&mut second).await, "ticket 2 overtook unresolved ticket 1");
        // Ticket 1 ends without a key (a failed resolution): ticket 2 proceeds.
        drop(t1);
        let _g = second.await.unwrap();
    }

    #[tokio::test]
    async fn a_lower_ticket_resolving_elsewhere_releases_the_higher_one() {
        let table = LockTable::new();
        let cancel = Cancel::new();
        let t1 = table.ticket();
        let t2 = table.ticket();
        let mut second = Box::pin(t2.acquire(key("b"), &cancel));
        assert!(not_granted_yet(&mut second).await);
        let g1 = t1.acquire(key("a"), &cancel).await.unwrap();
        // Different targets run in parallel: 2 holds "b" while 1 holds "a".
        let g2 = second.await.unwrap();
        drop((g1, g2));
    }

    #[tokio::test]
    async fn one_key_is_exclusive_until_released() {
        let table = LockTable::new();
        let cancel = Cancel::new();
        let g1 = table.ticket().acquire(key("a"), &cancel).await.unwrap();
        let mut second = Box::pin(table.ticket().acquire(key("a"), &cancel));
        assert!(not_granted_yet(&mut second).await, "two holders of one key");
        drop(g1);
        let _g2 = second.await.unwrap();
    }

    #[tokio::test]
    async fn cancelling_a_waiter_removes_it_and_lets_the_next_one_through() {
        let table = LockTable::new();
        let g1 = table.ticket().acquire(key("a"), &Cancel::new()).await.unwrap();
        let c2 = Cancel::new();
        let t2 = table.ticket();
        let t3 = table.ticket();
        let waiter2 = {
            let c2 = c2.clone();
            tokio::spawn(async move { t2.acquire(key("a"), &c2).await.map(drop) })
        };
        let c3 = Cancel::new();
        let mut third = Box::pin(t3.acquire(key("a"), &c3));
        assert!(not_granted_yet(&mut third).await);
        c2.cancel();
        let err = waiter2.await.unwrap().unwrap_err();
        assert!(err.is_cancelled());
        drop(g1);
        let _g3 = third.await.unwrap();
    }

    #[test]
    fn try_take_grants_only_a_free_lock_without_waiting() {
        let table = LockTable::new();
        let first = table.ticket().register(key("a")).try_take().expect("a free lock is granted at once");
        let second = table.ticket().register(key("a")).try_take().expect_err("a held lock is not granted");
        // A different key is independent.
        let other = table.ticket().register(key("b")).try_take().expect("another key is free");
        drop(first);
        let second = second.try_take().expect("granted once the holder left");
        drop((second, other));
        assert_eq!(table.queued_keys(), 0);
    }

    #[tokio::test]
    async fn an_idle_table_is_empty_after_every_outcome() {
        let table = LockTable::new();
        let cancelled = Cancel::new();
        cancelled.cancel();
        drop(table.ticket());
        assert!(table.ticket().acquire(key("x"), &cancelled).await.is_err());
        drop(table.ticket().acquire(key("y"), &Cancel::new()).await.unwrap());
        assert_eq!(table.queued_keys(), 0);
        assert_eq!(table.unresolved(), 0);
    }
}
