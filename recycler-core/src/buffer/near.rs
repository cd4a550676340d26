//! A striped pool's lean paths, where its buckets' stripes run on
//! restartable sequences and nothing caps its idle memory (the buckets'
//! recyclers then take striped mode's lean paths, [`crate::near`]): an
//! acquire that the owner path could not serve pops this CPU's cache of
//! the bucket before anything else of the slow path, and a release that
//! the owner path could not take pushes onto it, each a critical section
//! and a few checks, out of line but without the slow paths' frames.
//!
//! The owner paths ([`super::owner`]) run first and miss (a striped pool
//! binds no index, and its buffers' homes are no thread's), so a
//! per-thread pool's owner paths are as they were; these are the first
//! thing their out-of-line calls do.

use super::buf::Buf;
use super::guard::PooledBuf;
use super::shared::PoolShared;
use crate::home::Home;
use crate::percpu::Unfinished;
use crate::shared::Shared;

impl PoolShared {
    /// `acquire` when the owner path found nothing: this CPU's cache of
    /// bucket `idx` if the pool is striped on sections (and the bucket
    /// made), else [`acquire_slower`](Self::acquire_slower). Only tail
    /// calls off the section: no register saved on the way.
    #[cold]
    #[inline(never)]
    #[cfg_attr(feature = "track", track_caller)]
    pub(crate) fn acquire_cold(&self, capacity: usize, idx: usize) -> PooledBuf<'_> {
        if let Some(inner) = self.near_bucket(idx) {
            // SAFETY: `near_bucket` checked it.
            match unsafe { inner.try_pop_near() } {
                Ok((mut buf, home)) => {
                    Buf::reset(&mut buf);
                    return PooledBuf::new(self, buf, home, idx as u32);
                }
                Err(unfinished) => return self.acquire_unfinished(unfinished, capacity, idx),
            }
        }
        self.acquire_slower(capacity, idx)
    }

    /// [`acquire_cold`](Self::acquire_cold) when the section did not
    /// commit at the first attempt.
    #[cold]
    #[inline(never)]
    #[cfg_attr(feature = "track", track_caller)]
    fn acquire_unfinished(
        &self,
        unfinished: Unfinished,
        capacity: usize,
        idx: usize,
    ) -> PooledBuf<'_> {
        let inner = self.bucket(idx);
        // SAFETY: the bucket was near for `acquire_cold` (set once).
        match unsafe { inner.finish_pop_near(unfinished) } {
            Some((mut buf, home)) => {
                Buf::reset(&mut buf);
                PooledBuf::new(self, buf, home, idx as u32)
            }
            None => self.acquire_slower(capacity, idx),
        }
    }

    /// Bucket `idx`'s recycler if it is made and takes striped mode's lean
    /// paths.
    #[inline(always)]
    fn near_bucket(&self, idx: usize) -> Option<&Shared<Buf>> {
        let inner = self.buckets().get(idx)?.made()?.inner();
        inner.is_near().then_some(inner)
    }

    /// A release the owner path could not take: onto this CPU's cache of
    /// its bucket if it may go there (see [`Shared::push_near`]), else the
    /// slow release.
    #[cold]
    #[inline(never)]
    pub(crate) fn release_off(&self, buf: Box<Buf>, home: Home<Buf>, origin: u32) {
        // SAFETY: the guard that held the buffer borrowed the pool (or held
        // a unit of its count), which owns the bucket and its caches.
        if unsafe { home.is_near() } {
            return self.release_near(buf, home, origin);
        }
        self.release_slow(buf, home, origin);
    }

    /// [`release_off`](Self::release_off)'s case of a home that is near:
    /// out of line, so that the per-thread pool's slow releases and the
    /// locked stripes' pay one compare for it and save no registers.
    #[inline(never)]
    fn release_near(&self, buf: Box<Buf>, home: Home<Buf>, origin: u32) {
        if let Err(buf) = self.push_near(buf, home, origin) {
            self.release_slow(buf, home, origin);
        }
    }

    /// Pushes a released buffer, whose home says its bucket is striped on
    /// sections, onto this CPU's cache of bucket `origin` if the buffer kept
    /// its bucket's capacity (no `GROWN` mark, not an oversize one, the
    /// same capacity) and is not an overdraft, nobody waits for memory (a
    /// release then serves the waiters) and the thread does not panic (its
    /// buffers are freed): what the slow release checks before it pools a
    /// buffer in striped mode. Hands the buffer back otherwise.
    #[inline(always)]
    fn push_near(&self, buf: Box<Buf>, home: Home<Buf>, origin: u32) -> Result<(), Box<Buf>> {
        let Some(bucket) = self.buckets().get(origin as usize) else {
            return Err(buf);
        };
        if buf.overdrawn()
            || buf.capacity() != bucket.capacity()
            || self.under_pressure()
            || std::thread::panicking()
        {
            return Err(buf);
        }
        // SAFETY: as above; the home is near, the buffer reset when it was
        // handed out.
        unsafe { Shared::push_near(buf, home) };
        Ok(())
    }
}
