use std::mem::ManuallyDrop;

use super::*;
use crate::buffer::BufferPool;
use crate::loom::{Arc, Weak};

/// A weak reference to `pool`'s state, which its keep-alive count holds
/// the one strong reference of (threads' exit hooks upgrade theirs only
/// while they run): 0 strong once the pool is freed.
fn weak_of(pool: &BufferPool) -> Weak<PoolShared> {
    // SAFETY: the pointer is the one `Arc::into_raw` gave when the pool
    // was made; the `Arc` is never dropped here, so the count's strong
    // reference stays as it was.
    let arc = ManuallyDrop::new(unsafe { Arc::from_raw(std::ptr::from_ref(pool.shared())) });
    Arc::downgrade(&arc)
}

#[test]
fn owned_buffers_keep_the_pool_until_the_last_wherever_it_drops() {
    let pool = Arc::new(BufferPool::new());
    let weak = weak_of(&pool);
    drop(pool.acquire(10)); // this thread's cache of the bucket
    let mut a = pool.acquire_owned(10); // the owner path: a credit
    let b = pool.acquire_owned(10); // a fresh one: a unit of the count
    let c = pool.acquire_owned(5000);
    drop(pool);
    assert_eq!(weak.strong_count(), 1, "the buffers keep the pool");
    a.extend_from_slice(&[7; 10_000]); // grows through the pool
    drop(a); // the owner path: the cache is the pool's no more
    std::thread::spawn(move || drop(b)).join().unwrap();
    assert_eq!(weak.strong_count(), 1, "one buffer is still out");
    std::thread::spawn(move || drop(c)).join().unwrap();
    assert_eq!(weak.strong_count(), 0, "the last buffer let the pool go");
}

#[test]
fn the_last_handle_takes_back_the_credits_of_every_cache() {
    let pool = Arc::new(BufferPool::new());
    let weak = weak_of(&pool);
    // Owned buffers made and released on two threads: credits in both
    // threads' caches of two buckets, and none out.
    let p = Arc::clone(&pool);
    let other = std::thread::spawn(move || {
        for size in [10, 5000, 10, 5000] {
            drop(p.acquire_owned(size));
        }
        p
    });
    for size in [10, 5000, 10, 5000] {
        drop(pool.acquire_owned(size));
    }
    let p = other.join().unwrap();
    drop((pool, p));
    assert_eq!(weak.strong_count(), 0, "nothing out: the pool is gone");
}

#[cfg(feature = "bytes")]
#[test]
fn a_frame_buf_takes_buffers_after_its_pool_is_dropped() {
    use crate::buffer::FrameBuf;

    let pool = Arc::new(BufferPool::new());
    let weak = weak_of(&pool);
    let mut rx = FrameBuf::with_capacity(&pool, 100);
    drop(pool);
    rx.extend_from_slice(b"hello");
    let frame = rx.split_to(5); // the buffer now shared with the frame
    // The next write takes a new buffer, of a bucket not made before the
    // pool's last handle dropped: it is made orphaned, so the buffer's
    // release gives its unit straight back.
    rx.extend_from_slice(&[1; 10_000]);
    assert_eq!(rx.capacity(), 12 << 10);
    drop(frame);
    assert_eq!(weak.strong_count(), 1, "the reader keeps the pool");
    drop(rx);
    assert_eq!(weak.strong_count(), 0, "the last unit let the pool go");
}
