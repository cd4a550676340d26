//! The depot: a small locked stack of batches shared by all threads.
//!
//! A cache that grows past its capacity spills its oldest batch here; a
//! thread whose cache and inbox are empty refills a whole batch from here
//! before it calls the factory; a thread that exits leaves its cache here;
//! `prefill` fills it. The lock is taken once per batch, never per object,
//! and nothing is dropped while it is held (an object's `Drop` may use the
//! recycler again).
//!
//! The depot also keeps the empty vectors of the batches it hands out, so
//! that spilling and refilling through it allocate nothing in steady state.

use std::collections::VecDeque;

use crate::inbox::Batch;
use crate::loom::{AtomicUsize, Mutex, MutexGuard, Ordering};

/// Empty batch vectors kept for reuse at most.
const MAX_SPARES: usize = 64;

pub(crate) struct Depot<T> {
    state: Mutex<State<T>>,
    capacity: usize,
    /// Objects held, as of the last change (written under the lock, read
    /// without it): lets an eviction walk skip an empty depot without
    /// taking its lock.
    hint: AtomicUsize,
}

struct State<T> {
    batches: Vec<Batch<T>>,
    /// Objects in `batches`.
    len: usize,
    /// Empty vectors of batches taken out, for the next spill.
    spares: Vec<Batch<T>>,
}

impl<T> Depot<T> {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            state: Mutex::new(State {
                batches: Vec::new(),
                len: 0,
                spares: Vec::new(),
            }),
            capacity,
            hint: AtomicUsize::new(0),
        }
    }

    /// Whether the depot held nothing at its last change (a hint: it may
    /// be stale by the time it is read).
    pub(crate) fn looks_empty(&self) -> bool {
        self.hint.load(Ordering::Relaxed) == 0
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
        let room = self.capacity.saturating_sub(state.len);
        if room == 0 {
            return Some(batch);
        }
        let rejected = (batch.len() > room).then(|| batch.split_off(room));
        state.len += batch.len();
        state.batches.push(batch);
        self.hint.store(state.len, Ordering::Relaxed);
        rejected
    }

    /// Moves up to `n` objects from the front of `from` into the depot, in a
    /// vector it keeps for the purpose if it has one; returns those that do
    /// not fit (none, unless the depot is full), for the caller to drop
    /// outside the lock.
    pub(crate) fn put_front(&self, from: &mut VecDeque<Box<T>>, n: usize) -> Option<Batch<T>> {
        let n = n.min(from.len());
        if n == 0 {
            return None;
        }
        let mut state = self.lock();
        let room = self.capacity.saturating_sub(state.len);
        let fits = n.min(room);
        if fits > 0 {
            let mut batch = state.spares.pop().unwrap_or_default();
            batch.extend(from.drain(..fits));
            state.len += fits;
            state.batches.push(batch);
            self.hint.store(state.len, Ordering::Relaxed);
        }
        drop(state);
        (fits < n).then(|| from.drain(..n - fits).collect())
    }

    /// Takes the newest batch.
    pub(crate) fn take(&self) -> Option<Batch<T>> {
        let mut state = self.lock();
        let batch = state.batches.pop()?;
        state.len -= batch.len();
        self.hint.store(state.len, Ordering::Relaxed);
        Some(batch)
    }

    /// Takes one object, leaving the rest of its batch.
    pub(crate) fn take_one(&self) -> Option<Box<T>> {
        let mut state = self.lock();
        let batch = state.batches.last_mut()?;
        let obj = batch.pop();
        if batch.is_empty() {
            let empty = state.batches.pop();
            if state.spares.len() < MAX_SPARES {
                state.spares.extend(empty);
            }
        }
        if obj.is_some() {
            state.len -= 1;
            self.hint.store(state.len, Ordering::Relaxed);
        }
        obj
    }

    /// Keeps `empty`, the vector of a batch taken out, for a later spill.
    pub(crate) fn put_spare(&self, empty: Batch<T>) {
        debug_assert!(empty.is_empty());
        if empty.capacity() == 0 {
            return;
        }
        let mut state = self.lock();
        if state.spares.len() < MAX_SPARES {
            state.spares.push(empty);
        }
    }

    /// Takes everything, for the caller to drop outside the lock.
    pub(crate) fn drain(&self) -> Vec<Batch<T>> {
        let mut state = self.lock();
        state.len = 0;
        self.hint.store(0, Ordering::Relaxed);
        std::mem::take(&mut state.batches)
    }

    /// Room for this many more objects (a snapshot).
    pub(crate) fn room(&self) -> usize {
        self.capacity.saturating_sub(self.lock().len)
    }

    /// Stores a batch of up to `n` objects that `fill` pushes into the
    /// vector it is given (a spare one), no more than the depot has room
    /// for, under the lock: so that what is taken out of somewhere else to
    /// be stored here never finds the depot full. `fill` gets the number
    /// it may push, and runs no user code. Returns how many it stored.
    pub(crate) fn put_from(&self, n: usize, fill: impl FnOnce(usize, &mut Batch<T>)) -> usize {
        let mut state = self.lock();
        let fits = n.min(self.capacity.saturating_sub(state.len));
        if fits == 0 {
            return 0;
        }
        let mut batch = state.spares.pop().unwrap_or_default();
        batch.reserve(fits);
        fill(fits, &mut batch);
        debug_assert!(batch.len() <= fits, "{} > {fits}", batch.len());
        let stored = batch.len();
        if stored == 0 {
            state.spares.push(batch);
            return 0;
        }
        state.len += stored;
        state.batches.push(batch);
        self.hint.store(state.len, Ordering::Relaxed);
        stored
    }

    /// Stores `batch` whether or not the depot has room: for objects taken
    /// out of it a moment ago that found no other place, which may take
    /// it over its capacity by that much until the next take.
    pub(crate) fn put_back(&self, batch: Batch<T>) {
        if batch.is_empty() {
            return self.put_spare(batch);
        }
        let mut state = self.lock();
        state.len += batch.len();
        state.batches.push(batch);
        self.hint.store(state.len, Ordering::Relaxed);
    }

    /// Stores one object if there is room; hands it back otherwise.
    pub(crate) fn put_one(&self, obj: Box<T>) -> Result<(), Box<T>> {
        let mut state = self.lock();
        if state.len >= self.capacity {
            return Err(obj);
        }
        match state.batches.last_mut() {
            Some(batch) => batch.push(obj),
            None => {
                let mut batch = state.spares.pop().unwrap_or_default();
                batch.push(obj);
                state.batches.push(batch);
            }
        }
        state.len += 1;
        self.hint.store(state.len, Ordering::Relaxed);
        Ok(())
    }

    /// An empty vector for a batch: a spare one if the depot keeps one.
    pub(crate) fn spare(&self) -> Batch<T> {
        self.lock().spares.pop().unwrap_or_default()
    }

    /// Objects held, as of the last change (a hint, no lock).
    pub(crate) fn len_hint(&self) -> usize {
        self.hint.load(Ordering::Relaxed)
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
        assert_eq!(depot.room(), 0);
        assert_eq!(depot.put(batch(1)).map(|b| b.len()), Some(1));
        assert_eq!(depot.take().map(|b| b.len()), Some(2));
        assert!(depot.take_one().is_some());
        assert_eq!(depot.len(), 2);
        assert_eq!(depot.drain().iter().map(Vec::len).sum::<usize>(), 2);
        assert_eq!(depot.len(), 0);
        assert!(depot.take().is_none() && depot.take_one().is_none());
    }

    #[test]
    fn spills_reuse_spare_vectors() {
        let depot = Depot::new(4);
        let mut cache: VecDeque<Box<usize>> = (0..6).map(Box::new).collect();
        let mut taken = {
            assert!(depot.put_front(&mut cache, 2).is_none());
            depot.take().unwrap()
        };
        assert_eq!(*taken[0], 0, "the front: the oldest");
        let ptr = taken.as_ptr();
        taken.clear();
        depot.put_spare(taken);
        assert_eq!(depot.put_front(&mut cache, 3), None);
        let again = depot.take().unwrap();
        assert_eq!(again.as_ptr(), ptr, "the spare vector was reused");
        assert_eq!(again.iter().map(|b| **b).collect::<Vec<_>>(), [2, 3, 4]);
        // Full: what does not fit comes back.
        assert!(depot.put(batch(4)).is_none());
        let back = depot.put_front(&mut cache, 1).unwrap();
        assert_eq!(back.len(), 1);
        assert!(cache.is_empty());
    }
}
