//! Overdrafts: what the methods that cannot fail (`acquire`, and the writes
//! that grow a buffer) do when the `memory_limit` has no room, even after
//! freeing the idle buffers the thread can reach. Rather than panic (as
//! they did, poisoning the locks of the code that held the buffer), they
//! allocate outside the limit, as Jetty gives out a buffer it does not pool
//! past its `maxMemory`, and as `Vec` and `BytesMut` always grow.
//!
//! An overdraft is never on the ledger and never pooled:
//!
//! - A buffer allocated as an overdraft has none of its bytes on the
//!   ledger (`Buf::charged` is 0) and is homed at its bucket's discard
//!   cache, so its release frees it (counted as a release and a remove of
//!   its bucket; an oversize one as any oversize buffer). The owner path
//!   never sees it: a discard home is owned by no thread.
//! - A growth served as an overdraft leaves the bytes the buffer had on the
//!   ledger there and holds the rest outside; the buffer remembers how many
//!   of its bytes the ledger holds (`Buf::charged`), and its drop credits
//!   exactly those. A grown buffer's release takes the slow path (its
//!   origin is marked `GROWN`), which frees one with an overdraft rather
//!   than pool it or grant it to a waiter.
//!
//! So the limit bounds the pooled memory and every buffer's charged part
//! exactly; the overdrafts come on top, counted
//! ([`BufferPoolStats::overdrafts`](super::BufferPoolStats::overdrafts))
//! and measured (`overdraft_memory`, the bytes they hold now). Nothing is
//! touched on the owner paths: an overdraft is made only where the old code
//! panicked, and its release is one of the slow path's branches.

use super::buckets::OVERSIZE;
use super::buf::Buf;
use super::raw::AlignedBuf;
use super::shared::PoolShared;
use super::wait::Parts;
use crate::error::AcquireError;
use crate::home::Home;
use crate::loom::Arc;
use crate::stats::Counters;

impl PoolShared {
    /// A fresh buffer for bucket `idx` (oversize past the last) allocated
    /// outside the limit: an overdraft, freed when released. Counted as a
    /// non-pooled acquire of its bucket (of the oversize entry past the
    /// last).
    #[cold]
    #[inline(never)]
    pub(crate) fn acquire_overdraft(
        &self,
        capacity: usize,
        idx: usize,
    ) -> Result<Parts, AcquireError> {
        let bytes = self.buckets.get(idx).map_or(capacity, |b| b.capacity);
        let raw = AlignedBuf::try_new(bytes, self.config.alignment)?;
        self.ledger.overdraw(bytes as u64, self.config.hard_limit);
        let buf = Box::new(Buf::overdraft(raw, Arc::clone(&self.ledger)));
        if idx >= self.buckets.len() {
            Counters::add_shared(&self.oversize_acquires, 1);
            return Ok((buf, Home::new(&self.oversize_home), OVERSIZE));
        }
        let inner = self.bucket(idx);
        let (buf, _) = inner.made(buf);
        // Homed where its release frees it, whichever thread releases it.
        Ok((buf, inner.home(None, true), idx as u32))
    }

    /// Grows `buf` to `target` bytes outside the limit: the bytes it had on
    /// the ledger stay there, the growth is an overdraft.
    #[cold]
    #[inline(never)]
    pub(crate) fn grow_overdraft(&self, buf: &mut Buf, target: usize) -> Result<(), AcquireError> {
        let extra = target - buf.capacity();
        buf.raw_mut().try_grow(target)?;
        self.ledger.overdraw(extra as u64, self.config.hard_limit);
        Ok(())
    }
}
