//! Memory under the limit and the queue of those who wait for it. The
//! [`Ledger`]: every byte a buffer pool has allocated (in use and idle),
//! under an optional hard `memory_limit`, like the JDK's
//! `MaxDirectMemorySize`, and whether anyone waits for memory. Its
//! [`WaitQueue`]: the pool's waiters, in order, each served as soon as it
//! fits, a waiter passed at most [`PASSES`] times: who waits,
//! for how many bytes, how to wake each, and what each was granted (bytes
//! charged for it, or a released buffer granted whole). [`super::wait`]
//! describes the grants and why no wake-up
//! is lost; the waits themselves live there, and what the pool does where
//! the limit binds in [`super::limit`].
//!
//! Both are generic over the buffer a release grants a waiter (`B`, the
//! pool's `Box<Buf>`): every buffer holds the ledger its bytes are on, so
//! the ledger names no buffer type.
//!
//! The ledger is written only when memory is allocated or freed (a miss, a
//! growth, an eviction, a trim) and when the queue of waiters gets its first
//! waiter not yet granted or loses its last: never on a hit or an ordinary
//! release. An ordinary release under
//! a limit reads it once, for the waiting bit.
//!
//! # One word: the bytes and the waiting bit
//!
//! The bytes allocated and [`WAITING`] (someone waits for memory: the queue
//! holds a waiter not yet granted) share one atomic word. A free is a
//! `fetch_sub`, which returns the word as it was: if the bit was set, the
//! freeing thread serves the queue. A waiter sets the bit with a read-modify-
//! write of the same word before it looks for memory one last time. All of
//! these are read-modify-writes of one location, which are totally ordered
//! (its modification order) and each reads the value just before it, so a
//! free either comes before the bit is set (and the waiter's last look, which
//! reads the word after its own write, sees the freed bytes), or after (and
//! it sees the bit and serves the queue). No free between "no memory" and
//! "registered" is lost, with no fence and no ordering stronger than
//! `Relaxed`; see [`super::wait`] for the rest of the argument, and
//! `tests/tests/loom_buffer.rs` for the loom models.
//!
//! # The queue
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
use std::fmt;
use std::task::Waker;

use self::waiter::Entry;
pub(crate) use self::waiter::{PASSES, Wake};
use crate::loom::{AtomicU64, Mutex, MutexGuard, Ordering::Relaxed, StatCounter};

mod waiter;

/// The bit of [`Ledger::state`] that says someone waits for memory.
const WAITING: u64 = 1 << 63;
/// The bits of [`Ledger::state`] that count bytes.
const BYTES: u64 = WAITING - 1;

/// The bytes a pool has allocated, its limit, and the threads and tasks that
/// wait for memory; `B` is the buffer a release grants a waiter (see the
/// module docs).
pub(crate) struct Ledger<B> {
    /// Bytes allocated (the low 63 bits) and [`WAITING`]: set while the
    /// queue holds a waiter not yet granted, so that frees serve it and
    /// releases grant or free their buffers instead of keeping them in
    /// their thread's cache, where the waiters could not reach them. Only
    /// the queue, under its lock, sets and clears the bit. (Waiters granted
    /// but not yet served do not keep it set: their memory is theirs, and
    /// one that never comes back for it, a leaked future, must not keep
    /// every release from pooling.)
    state: AtomicU64,
    /// `u64::MAX` for no limit.
    limit: u64,
    /// Those waiting for memory.
    waiters: WaitQueue<B>,
    /// Bytes allocated now outside the limit: overdrafts (see
    /// [`super::limit`]). Touched only when an overdraft is made or
    /// freed.
    overdraft: StatCounter,
    /// Overdrafts made: acquires and growths served outside the limit.
    overdrafts: StatCounter,
    /// Overdrafts made by a pool with `hard_limit(true)`.
    violations: StatCounter,
}

impl<B> Ledger<B> {
    pub(crate) fn new(limit: Option<u64>) -> Self {
        Self {
            state: AtomicU64::new(0),
            limit: limit.unwrap_or(u64::MAX),
            waiters: WaitQueue::new(),
            overdraft: StatCounter::new(0),
            overdrafts: StatCounter::new(0),
            violations: StatCounter::new(0),
        }
    }

    /// Records `bytes` allocated outside the limit, an overdraft (`hard`:
    /// by a pool with `hard_limit(true)`, a violation of it too).
    pub(crate) fn overdraw(&self, bytes: u64, hard: bool) {
        self.overdraft.fetch_add(bytes, Relaxed);
        self.overdrafts.fetch_add(1, Relaxed);
        if hard {
            self.violations.fetch_add(1, Relaxed);
        }
    }

    /// Records `bytes` of an overdraft freed.
    pub(crate) fn repay(&self, bytes: u64) {
        self.overdraft.fetch_sub(bytes, Relaxed);
    }

    /// Bytes allocated now outside the limit.
    pub(crate) fn overdrawn(&self) -> u64 {
        self.overdraft.load(Relaxed)
    }

    /// Overdrafts made.
    pub(crate) fn overdrafts(&self) -> u64 {
        self.overdrafts.load(Relaxed)
    }

    /// Overdrafts made by a pool with `hard_limit(true)`.
    pub(crate) fn violations(&self) -> u64 {
        self.violations.load(Relaxed)
    }

    /// Those waiting for memory.
    #[inline(always)]
    pub(crate) fn waiters(&self) -> &WaitQueue<B> {
        &self.waiters
    }

    /// The limit, if any.
    pub(crate) fn limit(&self) -> Option<u64> {
        (self.limit != u64::MAX).then_some(self.limit)
    }

    /// Bytes allocated now.
    pub(crate) fn allocated(&self) -> u64 {
        self.state.load(Relaxed) & BYTES
    }

    /// Charges `bytes`, if the limit allows; otherwise returns the bytes
    /// allocated as seen.
    pub(crate) fn charge(&self, bytes: u64) -> Result<(), u64> {
        if self.limit == u64::MAX {
            // No limit, so nobody ever waits and the bit means nothing (the
            // pool does not read it). The bytes of live buffers stay far
            // below it; only a request too large for any allocation can
            // carry into it, for the moment before its allocation fails and
            // `free` takes the bytes back out (wrapping, exactly).
            self.state.fetch_add(bytes, Relaxed);
            return Ok(());
        }
        // Relaxed: the count bounds memory; it orders nothing else (see the
        // module docs for why the waiting bit needs nothing stronger). The
        // bit is kept as it is.
        let most = self.limit.min(BYTES);
        self.state
            .fetch_update(Relaxed, Relaxed, |s| {
                (s & BYTES)
                    .checked_add(bytes)
                    .filter(|&after| after <= most)
                    .map(|after| after | (s & WAITING))
            })
            .map(|_| ())
            .map_err(|s| s & BYTES)
    }

    /// Charges `bytes` for a request that does not wait: as
    /// [`charge`](Self::charge) while nobody waits; while someone does, it
    /// passes them, through the queue ([`WaitQueue::charge_past`]: refused
    /// if a waiter is closed, else a pass of each counted).
    pub(crate) fn charge_unqueued(&self, bytes: u64) -> Result<(), u64> {
        if self.limit == u64::MAX {
            return self.charge(bytes);
        }
        let most = self.limit.min(BYTES);
        // As `charge`, but a word with the waiting bit set is left to the
        // queue, in the same read-modify-write: no pass goes uncounted.
        match self.state.fetch_update(Relaxed, Relaxed, |s| {
            if s & WAITING != 0 {
                return None;
            }
            s.checked_add(bytes).filter(|&after| after <= most)
        }) {
            Ok(_) => Ok(()),
            Err(s) if s & WAITING != 0 => self.waiters.charge_past(self, bytes),
            Err(s) => Err(s),
        }
    }

    /// The bytes free under the limit now (one relaxed load).
    pub(crate) fn free_bytes(&self) -> u64 {
        self.limit.min(BYTES).saturating_sub(self.allocated())
    }

    /// Returns `bytes` that were freed, and serves the waiters, if any, in
    /// their order: the free that makes room for the first one grants the
    /// memory to it.
    #[inline]
    pub(crate) fn free(&self, bytes: u64) {
        let before = self.state.fetch_sub(bytes, Relaxed);
        debug_assert!(
            self.limit == u64::MAX || before & BYTES >= bytes,
            "freed more than allocated"
        );
        if before & WAITING != 0 {
            self.waiters.serve(self);
        }
    }

    /// Whether anyone waits for memory (only ever, with a limit): one
    /// relaxed load.
    #[inline(always)]
    pub(crate) fn under_pressure(&self) -> bool {
        self.state.load(Relaxed) & WAITING != 0
    }

    /// Sets or clears [`WAITING`]; only the queue calls this, under its
    /// lock, as it gets its first waiter not yet granted or loses its last
    /// (granted, or gone). A read-modify-write, so that the waiter that sets
    /// it reads every free before it afterwards (see the module docs).
    pub(crate) fn set_waiting(&self, waiting: bool) {
        if waiting {
            self.state.fetch_or(WAITING, Relaxed);
        } else {
            self.state.fetch_and(BYTES, Relaxed);
        }
    }
}

impl<B> fmt::Debug for Ledger<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ledger")
            .field("allocated", &self.allocated())
            .field("limit", &self.limit())
            .field("waiting", &self.under_pressure())
            .finish_non_exhaustive()
    }
}

struct Queue<B> {
    entries: VecDeque<Entry<B>>,
    next_id: u64,
    /// The waiters not yet granted: the ledger's waiting bit is set while
    /// this is not 0.
    ungranted: usize,
}

impl<B> Queue<B> {
    fn find(&self, id: u64) -> Option<usize> {
        self.entries.binary_search_by_key(&id, |e| e.id).ok()
    }

    /// Marks entry `i`, not yet granted, granted (with the `buffer`
    /// to it, if any), counting a pass of every waiter ahead of it not yet
    /// granted; clears the waiting bit if it was the last waiter not yet
    /// granted. Returns how to wake it.
    fn grant(&mut self, i: usize, ledger: &Ledger<B>, buffer: Option<B>) -> Option<Wake> {
        self.pass(i);
        let entry = &mut self.entries[i];
        debug_assert!(!entry.granted);
        entry.granted = true;
        entry.buffer = buffer;
        let wake = entry.wake.take();
        self.ungranted -= 1;
        if self.ungranted == 0 {
            ledger.set_waiting(false);
        }
        wake
    }

    /// Counts a pass of every waiter not yet granted among the first `n`:
    /// a request served before them.
    fn pass(&mut self, n: usize) {
        for e in self.entries.iter_mut().take(n).filter(|e| !e.granted) {
            e.passed = e.passed.saturating_add(1);
        }
    }

    /// Whether a waiter not yet granted among the first `n` is closed: it
    /// has been passed [`PASSES`] times, and nothing may pass it again.
    fn closed_before(&self, n: usize) -> bool {
        self.entries
            .iter()
            .take(n)
            .any(|e| !e.granted && e.passed >= PASSES)
    }

    /// The waiter a released buffer of `bytes` bytes is granted to, if any
    /// ([`WaitQueue::grant_buffer`]): the first waiter not yet granted if
    /// it waits for a buffer of at most `bytes`; else none if the memory
    /// free with the buffer's bytes freed would serve that first waiter
    /// (`free`: the bytes free now), or if it is closed; else the first
    /// waiter behind it that waits for a buffer of at most `bytes`, none
    /// closed between them.
    fn buffer_target(&self, bytes: u64, free: u64) -> Option<usize> {
        let i = self.first_ungranted()?;
        let takes = |e: &Entry<B>| !e.granted && e.takes_buffer && e.bytes <= bytes;
        let head = &self.entries[i];
        if takes(head) {
            return Some(i);
        }
        if head.bytes <= free.saturating_add(bytes) || head.passed >= PASSES {
            return None;
        }
        for (j, e) in self.entries.iter().enumerate().skip(i + 1) {
            if takes(e) {
                return Some(j);
            }
            if !e.granted && e.passed >= PASSES {
                return None;
            }
        }
        None
    }

    /// The next waiter to grant, its bytes charged for it: the first one not
    /// yet granted that fits in the memory free, none closed ahead of it
    /// (see [`PASSES`]).
    fn next_to_serve(&self, ledger: &Ledger<B>) -> Option<usize> {
        if self.ungranted == 0 {
            return None;
        }
        for (i, e) in self.entries.iter().enumerate() {
            if e.granted {
                continue;
            }
            // One load first: the charge is a read-modify-write.
            if e.bytes <= ledger.free_bytes() && ledger.charge(e.bytes).is_ok() {
                return Some(i);
            }
            if e.passed >= PASSES {
                return None;
            }
        }
        None
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
    fn remove(&mut self, i: usize, ledger: &Ledger<B>) -> Option<Entry<B>> {
        let entry = self.entries.remove(i);
        if entry.as_ref().is_some_and(|e| !e.granted) {
            self.ungranted -= 1;
            if self.ungranted == 0 {
                ledger.set_waiting(false);
            }
        }
        entry
    }
}

/// The queue of a pool's waiters, served in order as each fits, none passed
/// more than [`PASSES`] times; kept in the
/// pool's [`Ledger`], whose frees serve it.
///
/// No user code runs under its lock (wakers are cloned, woken and dropped
/// outside it), and nothing frees memory under it, since a free may serve
/// the queue.
pub(crate) struct WaitQueue<B> {
    queue: Mutex<Queue<B>>,
}

/// What a waiter found when it looked.
pub(crate) enum Polled<B> {
    /// Its bytes are charged for it, or a buffer was granted to it: it has
    /// left the queue.
    Granted(Option<B>),
    /// Still waiting.
    Waiting,
    /// It is not in the queue (never: only a waiter takes itself out).
    Missing,
}

impl<B> WaitQueue<B> {
    pub(crate) fn new() -> Self {
        Self {
            queue: Mutex::new(Queue {
                entries: VecDeque::new(),
                next_id: 0,
                ungranted: 0,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue<B>> {
        // Nothing panics while the lock is held; stay usable even so.
        self.queue
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// [`join_for`](Self::join_for) a buffer (`takes_buffer`), for the tests.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn join(&self, ledger: &Ledger<B>, bytes: u64, wake: Wake) -> u64 {
        self.join_for(ledger, bytes, wake, true)
    }

    /// Joins the queue, at its end, for `bytes`, woken by `wake`, as a wait
    /// that a released buffer may serve (`takes_buffer`: one for a buffer a
    /// bucket serves) or not (a growth, an exact-size buffer); sets the
    /// ledger's waiting bit if no waiter in it was still to be granted.
    /// Returns the waiter's id. The caller then serves the queue (see
    /// [`super::wait`]). Nothing is summed over the waiters: any number of
    /// them, of any size, cannot overflow.
    pub(crate) fn join_for(
        &self,
        ledger: &Ledger<B>,
        bytes: u64,
        wake: Wake,
        takes_buffer: bool,
    ) -> u64 {
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
            takes_buffer,
            granted: false,
            passed: 0,
            buffer: None,
            wake: Some(wake),
        });
        id
    }

    /// Grants the waiters their bytes, in order, each that fits in the memory
    /// free, passing those that do not fit yet unless one of them is closed
    /// (passed [`PASSES`] times: then nothing behind it is served before it),
    /// and wakes each one granted (a waker that panics is caught: see the
    /// module docs).
    #[cold]
    #[inline(never)]
    pub(crate) fn serve(&self, ledger: &Ledger<B>) {
        loop {
            let wake = {
                let mut q = self.lock();
                let Some(i) = q.next_to_serve(ledger) else {
                    return;
                };
                q.grant(i, ledger, None)
            };
            // Outside the lock: a waker is user code.
            if let Some(wake) = wake {
                wake.wake();
            }
        }
    }

    /// Charges `bytes` for a request that does not wait (`try_acquire`,
    /// `acquire`, a growth, `prefill`) while someone waits: it passes every
    /// waiter not yet granted, so it is refused if one of them is closed
    /// (the memory free is kept for that waiter), and counts a pass of
    /// each otherwise. Returns the bytes allocated as seen if refused.
    #[cold]
    #[inline(never)]
    pub(crate) fn charge_past(&self, ledger: &Ledger<B>, bytes: u64) -> Result<(), u64> {
        let mut q = self.lock();
        let n = q.entries.len();
        if q.closed_before(n) {
            return Err(ledger.allocated());
        }
        ledger.charge(bytes)?;
        q.pass(n);
        Ok(())
    }

    /// Grants `buf`, just released, to a waiter that waits for a buffer
    /// (it joined `takes_buffer`: a request a bucket serves) of at most
    /// `bytes`, the buffer's capacity, and wakes it: the buffer's memory,
    /// still allocated, is its grant, even when it is more than the waiter
    /// asked for (the release shrinks a larger buffer to the request
    /// first, `PoolShared::release_to_waiters`, if the allocator can; an
    /// idle buffer is granted only to a request of its own bucket:
    /// `super::limit`). The waiter is the first
    /// one not yet granted if the buffer serves it; else, unless freeing the
    /// buffer would serve that first waiter or it is closed, the first one
    /// behind it that the buffer serves (a pass, as in
    /// [`serve`](Self::serve)). Gives `buf` back otherwise, to be freed
    /// (which serves the queue).
    ///
    /// The waiter then reuses the buffer instead of allocating one on
    /// memory freed for it: under contention at the limit, releases keep
    /// the hit ratio rather than turn every acquire into an allocation,
    /// and with several sizes a larger buffer serves a smaller request
    /// rather than be freed while that request allocates.
    /// A waker that panics is caught, as in [`serve`](Self::serve).
    pub(crate) fn grant_buffer(&self, ledger: &Ledger<B>, bytes: u64, buf: B) -> Result<(), B> {
        let wake = {
            let mut q = self.lock();
            let Some(i) = q.buffer_target(bytes, ledger.free_bytes()) else {
                return Err(buf);
            };
            q.grant(i, ledger, Some(buf))
        };
        // Outside the lock: a waker is user code.
        if let Some(wake) = wake {
            wake.wake();
        }
        Ok(())
    }

    /// The bytes the waiter wants that a released buffer of `bytes` bytes
    /// would be granted to now (see [`grant_buffer`](Self::grant_buffer)),
    /// for the release to shrink a larger buffer to that request first.
    pub(crate) fn target_for_buffer(&self, ledger: &Ledger<B>, bytes: u64) -> Option<u64> {
        let q = self.lock();
        let i = q.buffer_target(bytes, ledger.free_bytes())?;
        Some(q.entries[i].bytes)
    }

    /// The bytes the first waiter not yet granted wants, if a released
    /// buffer may serve it (see [`grant_buffer`](Self::grant_buffer)): the
    /// request the calling thread's idle buffers are granted to first
    /// (`PoolShared::grant_idle_to_waiters`).
    pub(crate) fn first_for_buffer(&self) -> Option<u64> {
        let q = self.lock();
        let entry = &q.entries[q.first_ungranted()?];
        entry.takes_buffer.then_some(entry.bytes)
    }

    /// The id and the bytes of the first waiter not yet granted, if any.
    pub(crate) fn first(&self) -> Option<(u64, u64)> {
        let q = self.lock();
        let entry = &q.entries[q.first_ungranted()?];
        Some((entry.id, entry.bytes))
    }

    /// Looks whether waiter `id` was granted (then it leaves the queue);
    /// else keeps `waker` as how to wake it (`None`: the thread that joined).
    pub(crate) fn poll(&self, ledger: &Ledger<B>, id: u64, waker: Option<&Waker>) -> Polled<B> {
        let mut fresh: Option<Wake> = None;
        loop {
            let mut q = self.lock();
            let Some(i) = q.find(id) else {
                return Polled::Missing;
            };
            if q.entries[i].granted {
                let entry = q.remove(i, ledger);
                drop(q);
                return Polled::Granted(entry.and_then(|mut e| e.buffer.take()));
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
    /// which the caller takes or gives up: the bytes charged for it, and
    /// the buffer granted to it if the grant is one. Else serves the queue:
    /// the waiters behind it that it held up (it was closed, or the first
    /// not yet granted) may be served now.
    pub(crate) fn leave(&self, ledger: &Ledger<B>, id: u64) -> Option<(u64, Option<B>)> {
        let mut q = self.lock();
        let i = q.find(id)?;
        let mut entry = q.remove(i, ledger)?;
        drop(q);
        if entry.granted {
            return Some((entry.bytes, entry.buffer.take()));
        }
        drop(entry);
        self.serve(ledger);
        None
    }

    /// Waiters in the queue (granted or not), for tests.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn len(&self) -> usize {
        self.lock().entries.len()
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
