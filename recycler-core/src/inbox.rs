//! The inbox: how objects released on other threads travel home, and the
//! empty batch vectors that travel back.
//!
//! An MPSC queue of batches (in practice MPMC: when a cache's thread has
//! exited, whoever notices drains its inbox into the depot). Objects travel in
//! batches, so one channel operation moves up to `batch_size` objects: a
//! channel operation costs more than the whole owner path, and per-object
//! sends would dominate a producer/consumer workload.
//!
//! The inbox holds at most `capacity` objects. The bound is exact: a send
//! that would exceed it is refused whole, and the sender puts the batch in
//! the depot instead.
//!
//! # Nothing allocated in steady state
//!
//! Both queues are `crossbeam-channel`'s bounded (array) flavor, whose slots
//! are allocated once, when the inbox first receives something; its
//! unbounded flavor would allocate and free a block every 31 messages. The
//! batch vectors themselves are recycled: the owner, once it has moved a
//! batch's objects into its cache, puts the empty vector among the inbox's
//! *spares*, and a thread that starts gathering a batch for this home takes
//! a spare before it allocates one. So a steady stream of foreign releases
//! allocates nothing, whatever the global allocator. An inbox that never
//! receives anything allocates nothing at all.
//!
//! Under loom the channels are replaced by a `Mutex<VecDeque>` with the same
//! contract: loom cannot model crossbeam's internals, and the races worth
//! checking are ours, around the queue, not inside it.

use crate::loom::{AtomicUsize, Ordering};

/// A batch of idle objects on its way somewhere.
pub(crate) type Batch<T> = Vec<Box<T>>;

/// The most slots an inbox's queues have; past them, sends are refused
/// (whatever the object count) and their batches go to the depot.
const MAX_SLOTS: usize = 256;

pub(crate) struct Inbox<T> {
    queues: Queues<T>,
    /// Objects in the queue; updated before a send and after a receive, so it
    /// never undercounts what the queue holds.
    queued: AtomicUsize,
    capacity: usize,
}

impl<T> Inbox<T> {
    /// An inbox for at most `capacity` objects in batches of up to
    /// `batch_size`.
    pub(crate) fn new(capacity: usize, batch_size: usize) -> Self {
        let slots = capacity.div_ceil(batch_size.max(1)).saturating_add(2);
        Self {
            queues: Queues::new(slots.min(MAX_SLOTS)),
            queued: AtomicUsize::new(0),
            capacity,
        }
    }

    /// Queues `batch`, or hands it back if it would take the inbox over its
    /// capacity.
    pub(crate) fn send(&self, batch: Batch<T>) -> Result<(), Batch<T>> {
        let n = batch.len();
        // Relaxed: the count only bounds the queue; the queue itself orders
        // the objects' hand-off.
        let reserved = self
            .queued
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |q| {
                q.checked_add(n).filter(|&after| after <= self.capacity)
            });
        if reserved.is_err() {
            return Err(batch);
        }
        self.queues.batches().push(batch).inspect_err(|_| {
            self.queued.fetch_sub(n, Ordering::Relaxed);
        })
    }

    /// Takes the oldest batch, if any.
    pub(crate) fn recv(&self) -> Option<Batch<T>> {
        let batch = self.queues.batches_if_made()?.pop()?;
        self.queued.fetch_sub(batch.len(), Ordering::Relaxed);
        Some(batch)
    }

    /// An empty batch vector to gather objects for this home in, if one is
    /// spare.
    pub(crate) fn take_spare(&self) -> Option<Batch<T>> {
        self.queues.spares_if_made()?.pop()
    }

    /// Keeps `empty`, a drained batch vector, for the next thread that
    /// gathers objects for this home; frees it if enough are spare.
    pub(crate) fn put_spare(&self, empty: Batch<T>) {
        debug_assert!(empty.is_empty());
        if empty.capacity() == 0 {
            return;
        }
        if let Some(spares) = self.queues.spares_if_made() {
            let _ = spares.push(empty);
        }
    }

    /// Whether nothing is queued (a snapshot).
    pub(crate) fn looks_empty(&self) -> bool {
        self.queued.load(Ordering::Relaxed) == 0
    }

    /// Objects queued now (a snapshot).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.queued.load(Ordering::Relaxed)
    }
}

/// The inbox's two queues: batches coming home, and empty vectors going
/// back out.
/// The batches coming home, and the spare vectors.
#[cfg(not(loom))]
type Pair<T> = (Queue<Batch<T>>, Queue<Batch<T>>);

#[cfg(not(loom))]
struct Queues<T> {
    made: std::sync::OnceLock<Pair<T>>,
    slots: usize,
}

#[cfg(not(loom))]
impl<T> Queues<T> {
    fn new(slots: usize) -> Self {
        Self {
            made: std::sync::OnceLock::new(),
            slots,
        }
    }

    /// Both queues, made on the first send.
    fn made(&self) -> &Pair<T> {
        self.made
            .get_or_init(|| (Queue::new(self.slots), Queue::new(self.slots)))
    }

    fn batches(&self) -> &Queue<Batch<T>> {
        &self.made().0
    }

    fn batches_if_made(&self) -> Option<&Queue<Batch<T>>> {
        self.made.get().map(|q| &q.0)
    }

    fn spares_if_made(&self) -> Option<&Queue<Batch<T>>> {
        self.made.get().map(|q| &q.1)
    }
}

/// A bounded MPMC queue: `crossbeam-channel`'s array flavor.
#[cfg(not(loom))]
struct Queue<M> {
    tx: crossbeam_channel::Sender<M>,
    rx: crossbeam_channel::Receiver<M>,
}

#[cfg(not(loom))]
impl<M> Queue<M> {
    fn new(slots: usize) -> Self {
        let (tx, rx) = crossbeam_channel::bounded(slots);
        Self { tx, rx }
    }

    /// Queues `m`, or hands it back if the queue is full. (The queue owns a
    /// receiver, so the channel never disconnects.)
    fn push(&self, m: M) -> Result<(), M> {
        self.tx.try_send(m).map_err(|e| e.into_inner())
    }

    fn pop(&self) -> Option<M> {
        self.rx.try_recv().ok()
    }
}

/// The loom stand-in for both queues, made at once.
#[cfg(loom)]
struct Queues<T> {
    batches: Queue<Batch<T>>,
    spares: Queue<Batch<T>>,
}

#[cfg(loom)]
impl<T> Queues<T> {
    fn new(slots: usize) -> Self {
        Self {
            batches: Queue::new(slots),
            spares: Queue::new(slots),
        }
    }

    fn batches(&self) -> &Queue<Batch<T>> {
        &self.batches
    }

    fn batches_if_made(&self) -> Option<&Queue<Batch<T>>> {
        Some(&self.batches)
    }

    fn spares_if_made(&self) -> Option<&Queue<Batch<T>>> {
        Some(&self.spares)
    }
}

/// A locked deque behind an atomic length. Like crossbeam's channel, a
/// receive first reads an atomic that the send wrote (so the `SeqCst` fences
/// around the inbox apply to it, as they do to crossbeam's indices) and
/// returns at once when it sees nothing.
#[cfg(loom)]
struct Queue<M> {
    items: crate::loom::Mutex<std::collections::VecDeque<M>>,
    len: AtomicUsize,
    slots: usize,
}

#[cfg(loom)]
impl<M> Queue<M> {
    fn new(slots: usize) -> Self {
        Self {
            items: crate::loom::Mutex::new(std::collections::VecDeque::new()),
            len: AtomicUsize::new(0),
            slots,
        }
    }

    fn push(&self, m: M) -> Result<(), M> {
        let mut items = self.items.lock().unwrap();
        if items.len() >= self.slots {
            return Err(m);
        }
        items.push_back(m);
        self.len.fetch_add(1, Ordering::Release);
        Ok(())
    }

    fn pop(&self) -> Option<M> {
        if self.len.load(Ordering::Acquire) == 0 {
            return None;
        }
        let m = self.items.lock().unwrap().pop_front()?;
        self.len.fetch_sub(1, Ordering::Relaxed);
        Some(m)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn bounded_in_objects() {
        let inbox = Inbox::new(5, 3);
        assert!(
            inbox
                .send(vec![Box::new(1), Box::new(2), Box::new(3)])
                .is_ok()
        );
        let refused = inbox
            .send(vec![Box::new(4), Box::new(5), Box::new(6)])
            .unwrap_err();
        assert_eq!(refused.len(), 3);
        assert!(inbox.send(vec![Box::new(4), Box::new(5)]).is_ok());
        assert_eq!(inbox.len(), 5);
        assert_eq!(inbox.recv().map(|b| b.len()), Some(3));
        assert_eq!(inbox.recv().map(|b| b.len()), Some(2));
        assert!(inbox.recv().is_none());
        assert_eq!(inbox.len(), 0);
    }

    #[test]
    fn bounded_in_slots() {
        // 8 objects in batches of 4: 2 batches + 2 slots of slack.
        let inbox = Inbox::new(8, 4);
        for _ in 0..4 {
            assert!(inbox.send(vec![Box::new(0)]).is_ok());
        }
        assert!(inbox.send(vec![Box::new(0)]).is_err(), "slots full");
        assert_eq!(inbox.len(), 4, "a refused batch is not counted");
    }

    #[test]
    fn spares_come_back() {
        let inbox: Inbox<u32> = Inbox::new(8, 4);
        assert!(inbox.take_spare().is_none(), "nothing made yet");
        inbox.send(Vec::with_capacity(4)).unwrap();
        let batch = inbox.recv().unwrap();
        let ptr = batch.as_ptr();
        inbox.put_spare(batch);
        let spare = inbox.take_spare().unwrap();
        assert_eq!((spare.as_ptr(), spare.capacity()), (ptr, 4));
    }
}
