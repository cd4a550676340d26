//! The depot: a small locked stack of batches shared by all threads.
//!
//! A cache that grows past its capacity spills its oldest batch here; a
//! thread whose cache and inbox are empty refills a whole batch from here
//! before it calls the factory; a thread that exits leaves its cache here. The
//! lock is taken once per batch, never per object, and nothing is dropped while
//! it is held (an object's `Drop` may use the recycler again).

use crate::inbox::Batch;
use crate::loom::{Mutex, MutexGuard};

pub(crate) struct Depot<T> {
    state: Mutex<State<T>>,
    capacity: usize,
}

struct State<T> {
    batches: Vec<Batch<T>>,
    /// Objects in `batches`.
    len: usize,
}

impl<T> Depot<T> {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            state: Mutex::new(State {
                batches: Vec::new(),
                len: 0,
            }),
            capacity,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // Nothing panics while the lock is held (no user code runs under it),
        // but stay usable even if that changes.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Stores as much of `batch` as fits; returns what does not, for the
    /// caller to drop outside the lock.
    pub(crate) fn put(&self, mut batch: Batch<T>) -> Option<Batch<T>> {
        if batch.is_empty() {
            return None;
        }
        let mut state = self.lock();
        let room = self.capacity - state.len;
        if room == 0 {
            return Some(batch);
        }
        let rejected = (batch.len() > room).then(|| batch.split_off(room));
        state.len += batch.len();
        state.batches.push(batch);
        rejected
    }

    /// Takes the newest batch.
    pub(crate) fn take(&self) -> Option<Batch<T>> {
        let mut state = self.lock();
        let batch = state.batches.pop()?;
        state.len -= batch.len();
        Some(batch)
    }

    /// Takes one object, leaving the rest of its batch.
    pub(crate) fn take_one(&self) -> Option<Box<T>> {
        let mut state = self.lock();
        let batch = state.batches.last_mut()?;
        let obj = batch.pop();
        if batch.is_empty() {
            state.batches.pop();
        }
        if obj.is_some() {
            state.len -= 1;
        }
        obj
    }

    /// Takes everything, for the caller to drop outside the lock.
    pub(crate) fn drain(&self) -> Vec<Batch<T>> {
        let mut state = self.lock();
        state.len = 0;
        std::mem::take(&mut state.batches)
    }

    /// Objects held now (a snapshot).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn batch(n: usize) -> Batch<usize> {
        (0..n).map(Box::new).collect()
    }

    #[test]
    fn bounded_and_split() {
        let depot = Depot::new(5);
        assert!(depot.put(batch(3)).is_none());
        let rejected = depot.put(batch(4)).unwrap();
        assert_eq!(rejected.len(), 2);
        assert_eq!(depot.len(), 5);
        assert_eq!(depot.put(batch(1)).map(|b| b.len()), Some(1));
        assert_eq!(depot.take().map(|b| b.len()), Some(2));
        assert!(depot.take_one().is_some());
        assert_eq!(depot.len(), 2);
        assert_eq!(depot.drain().iter().map(Vec::len).sum::<usize>(), 2);
        assert_eq!(depot.len(), 0);
        assert!(depot.take().is_none() && depot.take_one().is_none());
    }
}
