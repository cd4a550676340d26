//! The pool's waiting acquires, its public face: `acquire_timeout`,
//! `acquire_async` and their owned forms. How a wait works is in the
//! parent module.

use std::future::Future;
use std::time::Duration;

use super::super::guard::PooledBuf;
use super::super::owned::OwnedPooledBuf;
use super::super::pool::BufferPool;
use super::{Acquire, AcquireOwned};
use crate::error::AcquireError;
use crate::loom::Arc;

impl BufferPool {
    /// Like [`try_acquire`](Self::try_acquire), but at the `memory_limit`
    /// waits up to `timeout` for memory to be freed, parked. Waiting threads
    /// and tasks ([`acquire_async`](Self::acquire_async)) share one queue
    /// and are served in order, each as soon as it fits: the free that makes
    /// room for a waiter grants it the memory and wakes it; one that does
    /// not fit yet is passed by those behind it that do, at most 16 times,
    /// and then served before them. While anyone waits, buffers released
    /// anywhere go to the waiters rather than to a cache: granted to the
    /// first waiter they cover (shrunk to its request if larger), else
    /// freed. [The buffer guide](crate::guide::buffers) has the details
    /// ("Who is served first").
    ///
    /// # Errors
    ///
    /// At once, as `try_acquire` would: [`AcquireError::TooLarge`] for a
    /// size no allocation can have, [`AcquireError::LimitExceeded`] for a
    /// request larger than the limit itself (its bucket's capacity, or the
    /// size asked above `max_capacity`), [`AcquireError::AllocFailed`] if
    /// the allocator fails. After the wait, [`AcquireError::TimedOut`] with
    /// the numbers as they were when it gave up.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = BufferPool::builder().memory_limit(4096).build()?;
    /// let held = pool.acquire(4096);
    /// let waited = pool.acquire_timeout(4096, Duration::from_millis(5));
    /// assert!(waited.is_err()); // nobody released in time
    /// drop(held);
    /// assert!(pool.acquire_timeout(4096, Duration::from_millis(5)).is_ok());
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    #[cfg_attr(feature = "track", track_caller)]
    pub fn acquire_timeout(
        &self,
        capacity: usize,
        timeout: Duration,
    ) -> Result<PooledBuf<'_>, AcquireError> {
        let shared = self.shared();
        let (buf, home, origin) = shared.acquire_blocking(capacity, timeout)?;
        Ok(PooledBuf::new(shared, buf, home, origin))
    }

    /// Like [`acquire_timeout`](Self::acquire_timeout), for a pool in an
    /// `Arc`: the buffer is `'static` (see
    /// [`acquire_owned`](Self::acquire_owned)).
    ///
    /// # Errors
    ///
    /// As [`acquire_timeout`](Self::acquire_timeout).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = Arc::new(BufferPool::builder().memory_limit(100_000).build()?);
    /// // Above `max_capacity` (64 KiB): not pooled, freed when dropped.
    /// let held = pool.acquire_owned(100_000);
    /// assert!(pool.acquire_owned_timeout(4096, Duration::ZERO).is_err());
    /// let releaser = std::thread::spawn(move || {
    ///     std::thread::sleep(Duration::from_millis(10));
    ///     drop(held); // frees its memory: the waiter is woken with 4 KiB of it
    /// });
    /// let buf = pool.acquire_owned_timeout(4096, Duration::from_secs(60))?;
    /// assert_eq!(buf.capacity(), 4096);
    /// # releaser.join().unwrap();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg_attr(feature = "track", track_caller)]
    pub fn acquire_owned_timeout(
        self: &Arc<Self>,
        capacity: usize,
        timeout: Duration,
    ) -> Result<OwnedPooledBuf, AcquireError> {
        let (buf, home, origin) = self.shared().acquire_blocking(capacity, timeout)?;
        #[cfg(feature = "track")]
        self.shared().track(&buf, std::panic::Location::caller());
        Ok(OwnedPooledBuf::new(self.shared(), buf, home, origin))
    }

    /// A buffer of at least `capacity` bytes, waiting without blocking at
    /// the `memory_limit` until memory is freed for it.
    ///
    /// The future tries as [`try_acquire`](Self::try_acquire) does when it
    /// is first polled. At the limit it joins the pool's queue of waiters
    /// (tasks, and threads in [`acquire_timeout`](Self::acquire_timeout)),
    /// frees the idle buffers it can reach, and returns `Pending`; a free
    /// that makes room for it (a buffer dropped, or an idle one evicted or
    /// trimmed) grants it the memory and wakes it. Waiters are served in
    /// order, each as soon as it fits: one that does not fit yet is passed
    /// by those behind it that do, at most 16 times, and then served before
    /// them (see "Who is served first" in the guide). While anyone waits, buffers released anywhere go to the
    /// waiters rather than to a cache: a waiter for a buffer of the same
    /// bucket gets the buffer itself, and reuses it; else it is freed, so
    /// that the waiters can have its memory.
    /// Without a limit, it never waits. Polled again after it completed, it
    /// acquires another buffer.
    ///
    /// Memory idle anywhere in the pool is freed for the waiters, in other
    /// threads' caches too, whether or not those threads run again. The
    /// section "Waiting for memory" of [the buffer guide](crate::guide::buffers)
    /// has the details, and the one case a timeout (such as
    /// `tokio::time::timeout`) covers.
    ///
    /// # Errors
    ///
    /// At once, as `try_acquire` would, for a request that can never be
    /// served: [`AcquireError::TooLarge`] for a size no allocation can have,
    /// [`AcquireError::LimitExceeded`] for a request larger than the limit
    /// itself (its bucket's capacity, or the size asked above
    /// `max_capacity`); and [`AcquireError::AllocFailed`] if the allocator
    /// fails.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future before it completes takes it out of the queue,
    /// and it has taken nothing. If memory had been granted to it but
    /// it had not yet been polled, the memory goes to the next waiter, which
    /// is woken: no waiter is left asleep with memory free for it.
    ///
    /// A future leaked while it waits (`mem::forget`) stays in the queue
    /// until memory is granted to it, then keeps that grant (the bytes
    /// charged for it, or the buffer a release granted it) for the pool's
    /// life, as a leaked buffer does, and nothing more: releases pool again
    /// once no other waiter waits to be granted.
    ///
    /// # A waker that panics
    ///
    /// The task is woken on the thread whose free or release made room for
    /// it. If its waker panics there, the panic is caught and dropped (the
    /// panic hook has already reported it): it does not reach that thread,
    /// whose drop or release returns normally (even while it unwinds, or in
    /// its thread-local teardown), and the waiters behind are served all
    /// the same. The task keeps the memory granted to it, which its next
    /// poll takes (or its drop passes on); this free does not wake it again.
    ///
    /// # Examples
    ///
    /// With a minimal executor (use your runtime's: `.await` in a task):
    ///
    /// ```
    /// use std::future::Future;
    /// use std::pin::pin;
    /// use std::sync::Arc;
    /// use std::task::{Context, Poll, Wake, Waker};
    /// use std::thread::{self, Thread};
    /// use recycler_core::AcquireError;
    /// use recycler_core::buffer::BufferPool;
    ///
    /// /// Runs `f` on this thread, parked while it waits.
    /// fn block_on<F: Future>(f: F) -> F::Output {
    ///     struct Unpark(Thread);
    ///     impl Wake for Unpark {
    ///         fn wake(self: Arc<Self>) {
    ///             self.0.unpark();
    ///         }
    ///     }
    ///     let waker = Waker::from(Arc::new(Unpark(thread::current())));
    ///     let mut cx = Context::from_waker(&waker);
    ///     let mut f = pin!(f);
    ///     loop {
    ///         match f.as_mut().poll(&mut cx) {
    ///             Poll::Ready(out) => return out,
    ///             Poll::Pending => thread::park(),
    ///         }
    ///     }
    /// }
    ///
    /// let pool = BufferPool::builder().memory_limit(100_000).build()?;
    /// // The whole limit, above `max_capacity`: not pooled, freed when dropped.
    /// let held = pool.acquire(100_000);
    /// let buf = thread::scope(|s| {
    ///     s.spawn(move || drop(held)); // frees it, before or while we wait
    ///     block_on(pool.acquire_async(4096))
    /// })?;
    /// assert_eq!(buf.capacity(), 4096);
    ///
    /// // Larger than the limit: it would wait forever, so it fails at once.
    /// let err = block_on(pool.acquire_async(200_000)).unwrap_err();
    /// assert!(matches!(err, AcquireError::LimitExceeded { requested: 200_000, .. }));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg_attr(feature = "track", track_caller)]
    pub fn acquire_async(
        &self,
        capacity: usize,
    ) -> impl Future<Output = Result<PooledBuf<'_>, AcquireError>> {
        Acquire::new(self.shared(), capacity)
    }

    /// Like [`acquire_async`](Self::acquire_async), for a pool in an `Arc`:
    /// the future and the buffer are `Send + 'static`, for spawned tasks.
    ///
    /// # Errors
    ///
    /// As [`acquire_async`](Self::acquire_async).
    ///
    /// # Cancel safety
    ///
    /// As [`acquire_async`](Self::acquire_async): dropped before it
    /// completes, the future leaves the queue having taken nothing, and
    /// memory granted to it goes to the next waiter. A waker that panics
    /// is caught where it is woken, as for `acquire_async`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::future::Future;
    /// use std::pin::pin;
    /// use std::sync::Arc;
    /// use std::task::{Context, Waker};
    /// use recycler_core::buffer::BufferPool;
    ///
    /// # fn block_on<F: std::future::Future>(f: F) -> F::Output {
    /// #     struct Unpark(std::thread::Thread);
    /// #     impl std::task::Wake for Unpark {
    /// #         fn wake(self: std::sync::Arc<Self>) {
    /// #             self.0.unpark();
    /// #         }
    /// #     }
    /// #     let waker = std::task::Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
    /// #     let mut cx = std::task::Context::from_waker(&waker);
    /// #     let mut f = std::pin::pin!(f);
    /// #     loop {
    /// #         match f.as_mut().poll(&mut cx) {
    /// #             std::task::Poll::Ready(out) => return out,
    /// #             std::task::Poll::Pending => std::thread::park(),
    /// #         }
    /// #     }
    /// # }
    /// let pool = Arc::new(BufferPool::builder().memory_limit(8192).build()?);
    /// let held = pool.acquire_owned(8192);
    /// let wait = pool.acquire_owned_async(4096);
    /// fn spawnable<F: Future + Send + 'static>(f: F) -> F { f }
    /// let mut wait = pin!(spawnable(wait));
    ///
    /// // Polled once at the limit, it joins the queue.
    /// let mut cx = Context::from_waker(Waker::noop());
    /// assert!(wait.as_mut().poll(&mut cx).is_pending());
    /// std::thread::spawn(move || drop(held)).join().unwrap(); // frees 8 KiB
    /// let buf = block_on(wait)?; // memory was granted to it
    /// assert_eq!(buf.capacity(), 4096);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg_attr(feature = "track", track_caller)]
    pub fn acquire_owned_async(
        self: &Arc<Self>,
        capacity: usize,
    ) -> impl Future<Output = Result<OwnedPooledBuf, AcquireError>> + Send + 'static {
        AcquireOwned::new(Arc::clone(self), capacity)
    }
}
