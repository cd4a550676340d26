//! [`BufferPoolHandle`]: a cheap, cloneable handle to a buffer pool that
//! gives owned buffers, for a pool that is a plain field of a shared struct.

use std::fmt;
use std::ops::Deref;

use super::pool::BufferPool;
use crate::loom::Arc;

/// A cloneable handle to a [`BufferPool`] that gives owned (`'static`)
/// buffers, made by [`BufferPool::handle`]; the buffer pool's counterpart of
/// [`RecyclerHandle`](crate::RecyclerHandle).
///
/// The owned methods ([`acquire_owned`](BufferPool::acquire_owned),
/// [`try_acquire_owned`](BufferPool::try_acquire_owned),
/// [`try_acquire_owned_pooled`](BufferPool::try_acquire_owned_pooled),
/// [`acquire_owned_timeout`](BufferPool::acquire_owned_timeout),
/// [`acquire_owned_async`](BufferPool::acquire_owned_async)) need the pool
/// in an `Arc` of its own, which a pool kept as a plain field of a larger
/// shared struct (an `Arc<Server>`) does not have. Its handle is one: an
/// `Arc<BufferPool>` that shares the field's buckets, limits and counters.
/// It dereferences to that `Arc`, so every method of the pool, the owned
/// ones included, works on the handle, at the cost it has on any
/// `Arc<BufferPool>`; cloning the handle is one atomic increment.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use recycler_core::buffer::{BufferPool, BufferPoolHandle, OwnedPooledBuf};
///
/// #[derive(Default)]
/// struct Server {
///     buffers: BufferPool, // a plain field
/// }
///
/// let server = Arc::new(Server::default());
/// let buffers: BufferPoolHandle = server.buffers.handle(); // once
/// let reply = {
///     let buffers = buffers.clone();
///     std::thread::spawn(move || {
///         let mut buf: OwnedPooledBuf = buffers.acquire_owned(100);
///         buf.extend_from_slice(b"HTTP/1.1 200 OK\r\n");
///         buf // 'static: returned from the thread
///     })
/// };
/// assert!(reply.join().unwrap().starts_with(b"HTTP/1.1"));
/// assert_eq!(server.buffers.stats().buckets[0].idle, 1); // the field's pool
/// ```
pub struct BufferPoolHandle {
    pool: Arc<BufferPool>,
}

impl BufferPool {
    /// A cheap, cloneable handle to this pool that gives owned (`'static`)
    /// buffers: for a pool kept as a plain field of a larger shared struct,
    /// not in an `Arc` of its own. The handle shares this pool; it is made
    /// with one allocation, and cloned with one atomic increment: make it
    /// once and clone it. See [`BufferPoolHandle`].
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = BufferPool::new();
    /// let handle = pool.handle();
    /// drop(handle.acquire_owned(10)); // owned, through the handle
    /// assert!(pool.try_acquire_pooled(10).is_some()); // pooled in the same pool
    /// ```
    pub fn handle(&self) -> BufferPoolHandle {
        BufferPoolHandle {
            pool: Arc::new(self.sharing()),
        }
    }
}

impl Clone for BufferPoolHandle {
    /// Another handle to the same pool: one atomic increment.
    fn clone(&self) -> Self {
        Self {
            pool: Arc::clone(&self.pool),
        }
    }
}

impl Deref for BufferPoolHandle {
    type Target = Arc<BufferPool>;

    /// The pool, in its `Arc`, for every method of the pool.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let handle = BufferPool::new().handle(); // the handle keeps the pool
    /// let buf = handle.try_acquire_owned(100)?;
    /// assert_eq!(buf.capacity(), 4096);
    /// let arc: Arc<BufferPool> = Arc::clone(&handle);
    /// assert_eq!(arc.stats().buckets[0].in_use, 1);
    /// # Ok::<(), recycler_core::AcquireError>(())
    /// ```
    #[inline]
    fn deref(&self) -> &Arc<BufferPool> {
        &self.pool
    }
}

impl fmt::Debug for BufferPoolHandle {
    /// As the pool's `Debug`; takes no lock.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("BufferPoolHandle")
            .field(&*self.pool)
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use static_assertions::assert_impl_all;
    use std::panic::{RefUnwindSafe, UnwindSafe};

    assert_impl_all!(BufferPoolHandle: Send, Sync, Clone, fmt::Debug, UnwindSafe, RefUnwindSafe);

    #[test]
    fn the_handle_and_the_pool_share_buffers_and_the_limit() {
        let pool = BufferPool::builder().memory_limit(8192).build().unwrap();
        let handle = pool.handle();
        let a = handle.acquire_owned(4096);
        let ptr = a.as_ptr();
        let b = pool.acquire(4096);
        assert!(pool.try_acquire(1).is_err(), "one limit for both");
        assert!(handle.clone().try_acquire_owned(1).is_err());
        drop((a, b));
        assert!(
            [pool.acquire(1).as_ptr(), handle.acquire(1).as_ptr()].contains(&ptr),
            "a buffer released through the handle is pooled in the field's pool"
        );
        assert!(format!("{handle:?}").starts_with("BufferPoolHandle(BufferPool {"));
    }
}
