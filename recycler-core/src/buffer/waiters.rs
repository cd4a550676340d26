//! The queue of a pool's waiters ([`WaitQueue`]), first come first served,
//! kept in the pool's [`Ledger`]: who waits, for how many bytes, how to wake
//! each, and what each was granted (bytes reserved for it, or a released
//! buffer handed over whole). [`super::wait`] describes the grants, the
//! hand-overs and why no wake-up is lost; the waits themselves live there.
//!
//! The ledger's waiting bit says that a waiter *not yet granted* is in the
//! queue: set as one joins with none such ahead of it, cleared as the last
//! such is granted or leaves. Granted waiters that have not yet taken their
//! grant do not keep it set: what they wait for is theirs already, and a
//! wait that never comes back for its grant (a future leaked with
//! `mem::forget`) keeps that grant, and nothing else, from the pool.
//!
//! Waking a waiter runs user code (a task's waker) on the thread that freed
//! the memory, which is unrelated to the waiter. A waker that panics there
//! is caught: the panic hook has reported it, and the panic is not resumed,
//! so it neither stops the rest of the queue from being served nor reaches
//! the thread that freed (which may be dropping a buffer while it unwinds,
//! or in its thread-local teardown, where a panic aborts). The waiter keeps
//! its grant; its task is not woken by this free.

use std::collections::VecDeque;
use std::panic::{self, AssertUnwindSafe};
use std::task::Waker;
use std::thread::Thread;

use super::buf::Buf;
use super::limit::Ledger;
use crate::loom::{Mutex, MutexGuard};

/// How to wake a waiter.
pub(crate) enum Wake {
    /// A task's waker.
    Task(Waker),
    /// A thread parked in a blocking wait.
    Thread(Thread),
}

impl Wake {
    /// Wakes the waiter. A waker that panics is caught here, and its panic
    /// dropped (the panic hook has reported it): it must not reach the
    /// thread that freed the memory, nor stop it serving the next waiter
    /// (see the module docs).
    fn wake(self) {
        match self {
            Self::Task(waker) => {
                // Unwind safe: the queue's lock is not held, and the waker
                // is consumed whether it returns or panics.
                if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| waker.wake())) {
                    // The payload's own `Drop` is user code too.
                    crate::unwind::forget_panic(payload);
                }
            }
            Self::Thread(thread) => thread.unpark(),
        }
    }
}

/// One waiter in the queue.
struct Entry {
    /// Increasing in queue order, so that a waiter finds its entry by binary
    /// search.
    id: u64,
    /// The bytes its buffer takes on the ledger.
    bytes: u64,
    /// Whether a released buffer may be its grant: a wait for a buffer, not
    /// for a growth (`reserve_async`), whose grant must be bytes.
    handable: bool,
    /// Its bytes are reserved for it: it takes them when it next looks.
    granted: bool,
    /// The buffer a release handed it, if its grant is one (its bytes are
    /// that buffer's, still allocated).
    handed: Option<Box<Buf>>,
    /// How to wake it; taken when it is granted.
    wake: Option<Wake>,
}

struct Queue {
    entries: VecDeque<Entry>,
    next_id: u64,
    /// The bytes of the waiters not yet granted.
    wanted: u64,
    /// The waiters not yet granted: the ledger's waiting bit is set while
    /// this is not 0.
    ungranted: usize,
}

impl Queue {
    fn find(&self, id: u64) -> Option<usize> {
        self.entries.binary_search_by_key(&id, |e| e.id).ok()
    }

    /// Marks entry `i`, not yet granted, granted (with the buffer `handed`
    /// to it, if any); clears the waiting bit if it was the last waiter not
    /// yet granted. Returns how to wake it.
    fn grant(&mut self, i: usize, ledger: &Ledger, handed: Option<Box<Buf>>) -> Option<Wake> {
        let entry = &mut self.entries[i];
        debug_assert!(!entry.granted);
        entry.granted = true;
        entry.handed = handed;
        let (bytes, wake) = (entry.bytes, entry.wake.take());
        self.wanted -= bytes;
        self.ungranted -= 1;
        if self.ungranted == 0 {
            ledger.set_waiting(false);
        }
        wake
    }

    /// The first waiter not yet granted, if any.
    fn first_ungranted(&self) -> Option<usize> {
        if self.ungranted == 0 {
            return None;
        }
        self.entries.iter().position(|e| !e.granted)
    }

    /// Takes entry `i` out, clearing the waiting bit if it was the last
    /// waiter not yet granted. The caller drops the entry (its waker) after
    /// unlocking.
    fn remove(&mut self, i: usize, ledger: &Ledger) -> Option<Entry> {
        let entry = self.entries.remove(i);
        if let Some(e) = entry.as_ref().filter(|e| !e.granted) {
            self.wanted -= e.bytes;
            self.ungranted -= 1;
            if self.ungranted == 0 {
                ledger.set_waiting(false);
            }
        }
        entry
    }
}

/// The queue of a pool's waiters, first come first served; kept in the
/// pool's [`Ledger`], whose frees serve it.
///
/// No user code runs under its lock (wakers are cloned, woken and dropped
/// outside it), and nothing frees memory under it, since a free may serve
/// the queue.
pub(crate) struct WaitQueue {
    queue: Mutex<Queue>,
}

/// What a waiter found when it looked.
pub(crate) enum Polled {
    /// Its bytes are reserved, or a buffer was handed to it: it has left the
    /// queue.
    Granted(Option<Box<Buf>>),
    /// Still waiting.
    Waiting,
    /// It is not in the queue (never: only a waiter takes itself out).
    Missing,
}

impl WaitQueue {
    pub(crate) fn new() -> Self {
        Self {
            queue: Mutex::new(Queue {
                entries: VecDeque::new(),
                next_id: 0,
                wanted: 0,
                ungranted: 0,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        // Nothing panics while the lock is held; stay usable even so.
        self.queue
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// [`join_for`](Self::join_for) a buffer (handable), for the tests.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn join(&self, ledger: &Ledger, bytes: u64, wake: Wake) -> (u64, u64) {
        self.join_for(ledger, bytes, wake, true)
    }

    /// Joins the queue, at its end, for `bytes`, woken by `wake`, as a wait
    /// that a released buffer may serve (`handable`: one for a buffer a
    /// bucket serves) or not (a growth, an exact-size buffer); sets the
    /// ledger's waiting bit if no waiter in it was still to be granted.
    /// Returns the waiter's id and the bytes the waiters not yet granted
    /// want, up to and including this one. The caller then serves the queue
    /// (see [`super::wait`]).
    pub(crate) fn join_for(
        &self,
        ledger: &Ledger,
        bytes: u64,
        wake: Wake,
        handable: bool,
    ) -> (u64, u64) {
        let mut q = self.lock();
        let id = q.next_id;
        q.next_id += 1;
        if q.ungranted == 0 {
            ledger.set_waiting(true);
        }
        q.ungranted += 1;
        q.entries.push_back(Entry {
            id,
            bytes,
            handable,
            granted: false,
            handed: None,
            wake: Some(wake),
        });
        // At most the limit each, and a waiter per thread or task: no
        // overflow.
        q.wanted += bytes;
        (id, q.wanted)
    }

    /// Grants the waiters their bytes, in order, while the first one not yet
    /// granted fits under the limit, and wakes each one granted (a waker
    /// that panics is caught: see the module docs).
    #[cold]
    #[inline(never)]
    pub(crate) fn serve(&self, ledger: &Ledger) {
        loop {
            let wake = {
                let mut q = self.lock();
                let Some(i) = q.first_ungranted() else {
                    return;
                };
                if ledger.reserve(q.entries[i].bytes).is_err() {
                    return;
                }
                q.grant(i, ledger, None)
            };
            // Outside the lock: a waker is user code.
            if let Some(wake) = wake {
                wake.wake();
            }
        }
    }

    /// Hands `buf`, just released, to the first waiter not yet granted if
    /// it waits for a buffer (it joined `handable`: a request a bucket
    /// serves) of at most `bytes`, the buffer's capacity, and wakes it: the
    /// buffer's memory, still allocated, is its grant, even when it is more
    /// than the waiter asked for (the release shrinks a larger buffer to
    /// the request first, `PoolShared::release_to_waiters`, if the
    /// allocator can, unless it keeps it whole for the waiter behind; an
    /// idle buffer handed over is never shrunk: `super::larger`). Hands `buf` back otherwise, to be
    /// freed (which serves the queue). Only the first waiter is looked at:
    /// first come, first served, as with the grants of bytes.
    ///
    /// The waiter then reuses the buffer instead of allocating one on
    /// memory freed for it: under contention at the limit, releases keep
    /// the hit ratio rather than turn every acquire into an allocation,
    /// and with several sizes a larger buffer serves a smaller request
    /// rather than be freed while that request allocates.
    /// A waker that panics is caught, as in [`serve`](Self::serve).
    pub(crate) fn hand_over(
        &self,
        ledger: &Ledger,
        bytes: u64,
        buf: Box<Buf>,
    ) -> Result<(), Box<Buf>> {
        let wake = {
            let mut q = self.lock();
            let Some(i) = q.first_ungranted() else {
                return Err(buf);
            };
            let want = q.entries[i].bytes;
            if want > bytes || !q.entries[i].handable {
                return Err(buf);
            }
            q.grant(i, ledger, Some(buf))
        };
        // Outside the lock: a waker is user code.
        if let Some(wake) = wake {
            wake.wake();
        }
        Ok(())
    }

    /// The bytes the first waiter not yet granted wants, if a released
    /// buffer may serve it (see [`hand_over`](Self::hand_over)), and the
    /// bytes the next waiter not yet granted behind it wants (0: none), for
    /// a release to weigh whether the part of a larger buffer beyond the
    /// first request would serve that one.
    pub(crate) fn first_handable(&self) -> Option<(u64, u64)> {
        let q = self.lock();
        let i = q.first_ungranted()?;
        let entry = &q.entries[i];
        if !entry.handable {
            return None;
        }
        let next = q
            .entries
            .iter()
            .skip(i + 1)
            .find(|e| !e.granted)
            .map_or(0, |e| e.bytes);
        Some((entry.bytes, next))
    }

    /// The id and the bytes of the first waiter not yet granted, if any.
    pub(crate) fn first(&self) -> Option<(u64, u64)> {
        let q = self.lock();
        let entry = &q.entries[q.first_ungranted()?];
        Some((entry.id, entry.bytes))
    }

    /// Looks whether waiter `id` was granted (then it leaves the queue);
    /// else keeps `waker` as how to wake it (`None`: the thread that joined).
    pub(crate) fn poll(&self, ledger: &Ledger, id: u64, waker: Option<&Waker>) -> Polled {
        let mut fresh: Option<Wake> = None;
        loop {
            let mut q = self.lock();
            let Some(i) = q.find(id) else {
                return Polled::Missing;
            };
            if q.entries[i].granted {
                let entry = q.remove(i, ledger);
                drop(q);
                return Polled::Granted(entry.and_then(|mut e| e.handed.take()));
            }
            let Some(waker) = waker else {
                return Polled::Waiting;
            };
            let entry = &mut q.entries[i];
            if matches!(&entry.wake, Some(Wake::Task(w)) if w.will_wake(waker)) {
                return Polled::Waiting;
            }
            if let Some(new) = fresh.take() {
                let old = entry.wake.replace(new);
                drop(q);
                drop(old);
                return Polled::Waiting;
            }
            // Cloning a waker is user code: not under the lock.
            drop(q);
            fresh = Some(Wake::Task(waker.clone()));
        }
    }

    /// Takes waiter `id` out of the queue. Returns its grant if it had one,
    /// which the caller takes or gives up: the bytes reserved for it, and
    /// the buffer handed to it if the grant is one. Else, if it was the
    /// first waiter not yet granted, serves the queue for the next.
    pub(crate) fn leave(&self, ledger: &Ledger, id: u64) -> Option<(u64, Option<Box<Buf>>)> {
        let mut q = self.lock();
        let i = q.find(id)?;
        let first = q.entries.iter().take(i).all(|e| e.granted);
        let mut entry = q.remove(i, ledger)?;
        drop(q);
        if entry.granted {
            return Some((entry.bytes, entry.handed.take()));
        }
        drop(entry);
        if first {
            self.serve(ledger);
        }
        None
    }

    /// Waiters in the queue (granted or not), for tests.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn len(&self) -> usize {
        self.lock().entries.len()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

    /// Counts its wake-ups.
    #[derive(Default)]
    struct Count(AtomicUsize);

    impl std::task::Wake for Count {
        fn wake(self: std::sync::Arc<Self>) {
            self.wake_by_ref();
        }

        fn wake_by_ref(self: &std::sync::Arc<Self>) {
            self.0.fetch_add(1, SeqCst);
        }
    }

    fn waker() -> (std::sync::Arc<Count>, Waker) {
        let count = std::sync::Arc::new(Count::default());
        (std::sync::Arc::clone(&count), Waker::from(count))
    }

    #[test]
    fn grants_in_order_and_only_what_fits() {
        let ledger = Ledger::new(Some(100));
        ledger.reserve(100).unwrap();
        let q = &ledger.waiters;
        let (a, wa) = waker();
        let (b, wb) = waker();
        let (c, wc) = waker();
        assert_eq!(q.join(&ledger, 60, Wake::Task(wa)), (0, 60));
        assert_eq!(q.join(&ledger, 30, Wake::Task(wb)), (1, 90));
        assert_eq!(q.join(&ledger, 10, Wake::Task(wc)), (2, 100));
        assert!(ledger.under_pressure());
        ledger.free(50); // 50 free: the first (60) does not fit, and holds up the rest
        assert_eq!((a.0.load(SeqCst), b.0.load(SeqCst)), (0, 0));
        ledger.free(10); // 60 free: the first fits, then nothing is left
        assert_eq!((a.0.load(SeqCst), b.0.load(SeqCst)), (1, 0));
        assert_eq!(ledger.allocated(), 100, "the grant is reserved");
        ledger.free(40); // 40: the second (30) and the third (10)
        assert_eq!((b.0.load(SeqCst), c.0.load(SeqCst)), (1, 1));
        assert_eq!(ledger.allocated(), 100);
        assert!(
            !ledger.under_pressure(),
            "all granted: two in the queue, none to serve"
        );
        assert!(matches!(q.poll(&ledger, 1, None), Polled::Granted(None)));
        assert!(
            matches!(q.leave(&ledger, 0), Some((60, None))),
            "granted, not yet taken"
        );
        assert!(matches!(q.leave(&ledger, 2), Some((10, None))));
        assert_eq!(q.len(), 0);
        assert!(!ledger.under_pressure());
        assert!(matches!(q.poll(&ledger, 2, None), Polled::Missing));
    }

    /// The bit says "a waiter not yet granted": a granted waiter that never
    /// comes back for its grant (a leaked future) does not keep it set; a
    /// new waiter behind it sets it again, and its leaving clears it.
    #[test]
    fn the_bit_follows_the_waiters_not_yet_granted() {
        let ledger = Ledger::new(Some(100));
        ledger.reserve(100).unwrap();
        let q = &ledger.waiters;
        let (_, wa) = waker();
        let (_, wb) = waker();
        let (c, wc) = waker();
        q.join(&ledger, 60, Wake::Task(wa)); // never polled again: a ghost
        assert!(ledger.under_pressure());
        ledger.free(60);
        assert!(!ledger.under_pressure(), "granted: nobody left to serve");
        assert_eq!(q.len(), 1, "the ghost keeps its grant, and no more");
        assert_eq!(q.join(&ledger, 50, Wake::Task(wb)), (1, 50));
        assert!(ledger.under_pressure(), "joined with none ungranted ahead");
        assert!(q.leave(&ledger, 1).is_none());
        assert!(!ledger.under_pressure(), "the last ungranted one left");
        q.join(&ledger, 40, Wake::Task(wc));
        assert!(ledger.under_pressure());
        ledger.free(40);
        assert_eq!(c.0.load(SeqCst), 1);
        assert!(!ledger.under_pressure());
        assert_eq!(
            ledger.allocated(),
            100,
            "60 for the ghost, 40 for the third"
        );
    }

    /// Panics when woken.
    struct Panicky;

    impl std::task::Wake for Panicky {
        fn wake(self: std::sync::Arc<Self>) {
            panic!("waker failure (test)");
        }
    }

    /// A waker that panics is caught where it is woken: the free that woke
    /// it returns normally, the waiters behind are served all the same, and
    /// the waiter keeps its grant.
    #[test]
    fn a_panicking_waker_neither_escapes_nor_stops_the_serving() {
        let ledger = Ledger::new(Some(100));
        ledger.reserve(100).unwrap();
        let q = &ledger.waiters;
        let (b, wb) = waker();
        q.join(
            &ledger,
            30,
            Wake::Task(Waker::from(std::sync::Arc::new(Panicky))),
        );
        q.join(&ledger, 30, Wake::Task(wb));
        ledger.free(60); // grants both; the first waker panics
        assert_eq!(b.0.load(SeqCst), 1, "the second is served all the same");
        assert!(!ledger.under_pressure());
        assert!(matches!(q.poll(&ledger, 0, None), Polled::Granted(None)));
        assert!(matches!(q.poll(&ledger, 1, None), Polled::Granted(None)));
        assert_eq!(ledger.allocated(), 100);
    }

    /// What a release weighs: the first waiter not yet granted, and the
    /// next one behind it (a wait for a growth is not handable).
    #[test]
    fn the_first_and_the_next_not_yet_granted() {
        let ledger = Ledger::new(Some(100));
        ledger.reserve(100).unwrap();
        let q = &ledger.waiters;
        let (_, wa) = waker();
        let (_, wb) = waker();
        let (_, wc) = waker();
        assert_eq!((q.first(), q.first_handable()), (None, None));
        q.join(&ledger, 60, Wake::Task(wa));
        q.join(&ledger, 30, Wake::Task(wb));
        q.join_for(&ledger, 10, Wake::Task(wc), false);
        assert_eq!(q.first(), Some((0, 60)));
        assert_eq!(q.first_handable(), Some((60, 30)));
        ledger.free(60); // grants the first
        assert_eq!(q.first(), Some((1, 30)));
        assert_eq!(q.first_handable(), Some((30, 10)));
        ledger.free(30); // and the second
        assert_eq!(q.first(), Some((2, 10)));
        assert_eq!(q.first_handable(), None, "a growth's wait");
    }

    #[test]
    fn the_first_leaving_serves_the_next() {
        let ledger = Ledger::new(Some(100));
        ledger.reserve(90).unwrap();
        let q = &ledger.waiters;
        let (_, wa) = waker();
        let (b, wb) = waker();
        q.join(&ledger, 50, Wake::Task(wa));
        q.join(&ledger, 10, Wake::Task(wb));
        q.serve(&ledger);
        assert_eq!(b.0.load(SeqCst), 0, "behind the first, which does not fit");
        assert!(q.leave(&ledger, 0).is_none());
        assert_eq!(b.0.load(SeqCst), 1, "served when the first left");
        assert_eq!(ledger.allocated(), 100);
    }

    #[test]
    fn a_new_waker_replaces_the_old_outside_the_lock() {
        let ledger = Ledger::new(Some(10));
        ledger.reserve(10).unwrap();
        let q = &ledger.waiters;
        let (a, wa) = waker();
        let (b, wb) = waker();
        q.join(&ledger, 10, Wake::Task(wa.clone()));
        assert!(matches!(q.poll(&ledger, 0, Some(&wa)), Polled::Waiting));
        assert!(matches!(q.poll(&ledger, 0, Some(&wb)), Polled::Waiting));
        ledger.free(10);
        assert_eq!(
            (a.0.load(SeqCst), b.0.load(SeqCst)),
            (0, 1),
            "the latest waker"
        );
    }
}
