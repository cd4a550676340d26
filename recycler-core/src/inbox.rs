//! The inbox: how objects released on other threads travel home.
//!
//! An MPSC queue of batches (in practice MPMC: when a cache's thread has
//! exited, whoever notices drains its inbox into the depot). Objects travel in
//! batches, so one channel operation moves up to `batch_size` objects: a
//! `crossbeam-channel` send alone costs 20–30 ns, more than the whole owner
//! path, and per-object sends would dominate a producer/consumer workload.
//!
//! The inbox holds at most `capacity` objects. The bound is exact: a send
//! that would exceed it is refused whole and the sender drops the batch.
//!
//! The channel is unbounded (the bound is kept by the `queued` count), so an
//! idle inbox costs one small allocation and no slot array; the first block of
//! slots is allocated on the first send.
//!
//! Under loom the channel is replaced by a `Mutex<VecDeque>` with the same
//! contract: loom cannot model crossbeam's internals, and the races worth
//! checking are ours, around the queue, not inside it.

use crate::loom::{AtomicUsize, Ordering};

/// A batch of idle objects on its way somewhere.
pub(crate) type Batch<T> = Vec<Box<T>>;

pub(crate) struct Inbox<T> {
    queue: Queue<T>,
    /// Objects in the queue; updated before a send and after a receive, so it
    /// never undercounts what the queue holds.
    queued: AtomicUsize,
    capacity: usize,
}

impl<T> Inbox<T> {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            queue: Queue::new(),
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
        self.queue.push(batch);
        Ok(())
    }

    /// Takes the oldest batch, if any.
    pub(crate) fn recv(&self) -> Option<Batch<T>> {
        let batch = self.queue.pop()?;
        self.queued.fetch_sub(batch.len(), Ordering::Relaxed);
        Some(batch)
    }

    /// Objects queued now (a snapshot).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.queued.load(Ordering::Relaxed)
    }
}

#[cfg(not(loom))]
struct Queue<T> {
    tx: crossbeam_channel::Sender<Batch<T>>,
    rx: crossbeam_channel::Receiver<Batch<T>>,
}

#[cfg(not(loom))]
impl<T> Queue<T> {
    fn new() -> Self {
        let (tx, rx) = crossbeam_channel::unbounded();
        Self { tx, rx }
    }

    fn push(&self, batch: Batch<T>) {
        // The queue owns a receiver, so the channel never disconnects and an
        // unbounded send cannot fail.
        let _ = self.tx.send(batch);
    }

    fn pop(&self) -> Option<Batch<T>> {
        self.rx.try_recv().ok()
    }
}

/// The loom stand-in: a locked deque behind an atomic length. Like
/// crossbeam's channel, a receive first reads an atomic that the send wrote
/// (so the `SeqCst` fences around the inbox apply to it, as they do to
/// crossbeam's indices) and returns at once when it sees nothing.
#[cfg(loom)]
struct Queue<T> {
    items: crate::loom::Mutex<std::collections::VecDeque<Batch<T>>>,
    len: AtomicUsize,
}

#[cfg(loom)]
impl<T> Queue<T> {
    fn new() -> Self {
        Self {
            items: crate::loom::Mutex::new(std::collections::VecDeque::new()),
            len: AtomicUsize::new(0),
        }
    }

    fn push(&self, batch: Batch<T>) {
        self.items.lock().unwrap().push_back(batch);
        self.len.fetch_add(1, Ordering::Release);
    }

    fn pop(&self) -> Option<Batch<T>> {
        if self.len.load(Ordering::Acquire) == 0 {
            return None;
        }
        let batch = self.items.lock().unwrap().pop_front()?;
        self.len.fetch_sub(1, Ordering::Relaxed);
        Some(batch)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn bounded_in_objects() {
        let inbox = Inbox::new(5);
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
}
