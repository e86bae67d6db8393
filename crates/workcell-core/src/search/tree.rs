//! What the search keeps of the walk ([`crate::walk::Walker`], depth first): each regular file
//! that passes the glob, handed to the workers in batches, in tree order; the walk waits while
//! [`WINDOW`] files are ahead of the first one not finished.

use std::path::Path;
use std::sync::Arc;

use ignore::overrides::Override;

use super::workers::{Item, Shared, Source};
use super::WINDOW;
use crate::walk::{self, DirHandle, Entry, Held, Kind, Step, Visit};

/// Files handed to a worker at a time: few wake-ups per file.
const BATCH: usize = 16;

pub(super) struct Files<'a> {
    pub(super) shared: &'a Shared,
    pub(super) batch: Vec<Item>,
    pub(super) on_file: &'a (dyn Fn(u64, &str) + Sync),
    pub(super) glob: Option<Override>,
    /// Files handed out.
    pub(super) next_index: u64,
}

impl<'a> Files<'a> {
    pub(super) fn new(shared: &'a Shared, on_file: &'a (dyn Fn(u64, &str) + Sync), glob: Option<Override>) -> Self {
        Files { shared, batch: Vec::with_capacity(BATCH), on_file, glob, next_index: 0 }
    }

    /// Hands the pending files to the workers.
    pub(super) fn flush(&mut self) {
        if !self.batch.is_empty() {
            let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
            self.shared.queue(batch);
        }
    }

    fn excluded(&self, rel: &Path, is_dir: bool) -> bool {
        self.glob.as_ref().is_some_and(|g| g.matched(rel, is_dir).is_ignore())
    }

    /// Adds a file; false when the walk must stop.
    fn add_file(&mut self, item: Item) -> bool {
        if item.index >= WINDOW && self.shared.lock().collector.next + WINDOW <= item.index {
            // Everything before this file must be queued before waiting for it to finish.
            self.flush();
            if !self.shared.wait_for_window(item.index) {
                return false;
            }
        }
        (self.on_file)(item.index, &item.rel);
        self.next_index += 1;
        self.batch.push(item);
        if self.batch.len() >= BATCH {
            self.flush();
        }
        true
    }
}

impl Visit for Files<'_> {
    type Dir = ();
    type Sub = ();

    fn dir_start(&mut self) -> crate::error::Result<bool> {
        Ok(!self.shared.stopping())
    }

    fn next_entry(&self) -> bool {
        !self.shared.stopping()
    }

    fn entry(&mut self, _held: &mut Held, dir: &Arc<DirHandle>, _at: &(), entry: &Entry, rel: &Path, _depth: usize) -> Step<()> {
        match entry.kind {
            Kind::File if !self.excluded(rel, false) => {
                let item = Item { index: self.next_index, source: Source::Entry(dir.clone(), entry.name.clone()), rel: walk::display(rel) };
                if self.add_file(item) {
                    Step::Next
                } else {
                    Step::Stop
                }
            }
            Kind::Dir if !self.excluded(rel, true) => Step::Enter(()),
            // Symlinks are never followed; FIFOs, sockets and devices are never opened.
            _ => Step::Next,
        }
    }

    fn entered(&mut self, _held: &mut Held, _at: &(), _sub: (), _depth: usize) -> Option<()> {
        Some(())
    }
}
