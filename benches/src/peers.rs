//! The peer pools, behind the same [`Take`]/[`Source`] faces as the
//! recycler, each used the way its documentation shows, each resetting the
//! object with the same [`Recyclable::reset`] the recycler calls (through
//! its own reset hook where it has one).
//!
//! Each is generic over the object: [`Msg`] by default (W1, W2, W6), the
//! message of W9 and its encoding buffers (`Vec<u8>`) too. `sharded-slab`
//! clears through its own `Clear` trait: the `Clear` impls of [`Msg`] and of
//! W9's message call their `reset`, and `Vec`'s is `Vec::clear`, which is
//! also `Vec`'s `reset`.

use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use lockfree_object_pool::{
    LinearObjectPool, LinearReusable, MutexObjectPool, MutexReusable, SpinLockObjectPool,
    SpinLockReusable,
};
use opool::{LocalPool, PoolAllocator, RefGuard, RefLocalGuard};

use recycler_core::Recyclable;

use crate::payload::Msg;
use crate::source::{Source, Take, take_and_source};

/// Objects each peer pool may keep.
const CAPACITY: usize = 4096;

/// `sharded-slab`'s `Pool`: `create` a slot, `clear` its key to release.
/// Its borrowed guard is not `Send`, so W2 uses the owned one.
pub struct ShardedSlab<T: sharded_slab::Clear + Default = Msg>(Arc<sharded_slab::Pool<T>>);

impl<T: sharded_slab::Clear + Default> Default for ShardedSlab<T> {
    fn default() -> Self {
        Self(Arc::new(sharded_slab::Pool::new()))
    }
}

impl<T: sharded_slab::Clear + Default> std::fmt::Debug for ShardedSlab<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardedSlab").finish_non_exhaustive()
    }
}

/// A slot of a [`ShardedSlab`], cleared (and so released) when dropped.
pub struct SlabGuard<'a, T: sharded_slab::Clear + Default, G: DerefMut<Target = T> + SlabKey> {
    slot: ManuallyDrop<G>,
    pool: &'a sharded_slab::Pool<T>,
}

impl<T, G> std::fmt::Debug for SlabGuard<'_, T, G>
where
    T: sharded_slab::Clear + Default + std::fmt::Debug,
    G: DerefMut<Target = T> + SlabKey,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

/// The key of a `sharded-slab` guard.
pub trait SlabKey {
    /// The slot's key.
    fn slab_key(&self) -> usize;
}

impl<T: sharded_slab::Clear + Default> SlabKey for sharded_slab::pool::RefMut<'_, T> {
    fn slab_key(&self) -> usize {
        self.key()
    }
}

impl<T: sharded_slab::Clear + Default> SlabKey for sharded_slab::pool::OwnedRefMut<T> {
    fn slab_key(&self) -> usize {
        self.key()
    }
}

impl<T: sharded_slab::Clear + Default, G: DerefMut<Target = T> + SlabKey> Deref
    for SlabGuard<'_, T, G>
{
    type Target = T;

    fn deref(&self) -> &T {
        &self.slot
    }
}

impl<T: sharded_slab::Clear + Default, G: DerefMut<Target = T> + SlabKey> DerefMut
    for SlabGuard<'_, T, G>
{
    fn deref_mut(&mut self) -> &mut T {
        &mut self.slot
    }
}

impl<T: sharded_slab::Clear + Default, G: DerefMut<Target = T> + SlabKey> Drop
    for SlabGuard<'_, T, G>
{
    fn drop(&mut self) {
        let key = self.slot.slab_key();
        // SAFETY: `slot` is dropped exactly once, here, and never used again.
        unsafe { ManuallyDrop::drop(&mut self.slot) };
        self.pool.clear(key);
    }
}

impl<T: sharded_slab::Clear + Default> Take for ShardedSlab<T> {
    type Object = T;
    type Guard<'a>
        = SlabGuard<'a, T, sharded_slab::pool::RefMut<'a, T>>
    where
        Self: 'a;

    #[inline]
    fn take(&self) -> Self::Guard<'_> {
        let slot = self.0.create().expect("sharded-slab pool is full");
        SlabGuard {
            slot: ManuallyDrop::new(slot),
            pool: &self.0,
        }
    }
}

impl<T: sharded_slab::Clear + Default + Send + Sync> Source for ShardedSlab<T> {
    type Object = T;
    type Guard<'a>
        = SlabGuard<'a, T, sharded_slab::pool::OwnedRefMut<T>>
    where
        Self: 'a;

    #[inline]
    fn take(&self) -> Self::Guard<'_> {
        let slot = Arc::clone(&self.0)
            .create_owned()
            .expect("sharded-slab pool is full");
        SlabGuard {
            slot: ManuallyDrop::new(slot),
            pool: &self.0,
        }
    }
}

/// `object-pool`'s `Pool` (a mutex around a `Vec`); it has no reset hook, so
/// the adapter resets on take.
pub struct ObjectPool<T = Msg>(object_pool::Pool<T>);

impl<T: Default> Default for ObjectPool<T> {
    fn default() -> Self {
        Self(object_pool::Pool::new(CAPACITY, T::default))
    }
}

impl<T> std::fmt::Debug for ObjectPool<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectPool").finish_non_exhaustive()
    }
}

take_and_source!(
    impl[T: Recyclable + Default + Send] ObjectPool<T>,
    T,
    object_pool::Reusable<'a, T>,
    |this| {
        let mut g = this.0.pull(T::default);
        g.reset();
        g
    }
);

/// `lockfree-object-pool`'s linear pool.
pub struct LockfreeLinear<T = Msg>(LinearObjectPool<T>);

impl<T: Recyclable + Default + 'static> Default for LockfreeLinear<T> {
    fn default() -> Self {
        Self(LinearObjectPool::new(T::default, T::reset))
    }
}

impl<T> std::fmt::Debug for LockfreeLinear<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockfreeLinear").finish_non_exhaustive()
    }
}

take_and_source!(
    impl[T: Send + Sync] LockfreeLinear<T>,
    T,
    LinearReusable<'a, T>,
    |this| this.0.pull()
);

/// `lockfree-object-pool`'s spin-lock pool.
pub struct LockfreeSpinLock<T = Msg>(SpinLockObjectPool<T>);

impl<T: Recyclable + Default + 'static> Default for LockfreeSpinLock<T> {
    fn default() -> Self {
        Self(SpinLockObjectPool::new(T::default, T::reset))
    }
}

impl<T> std::fmt::Debug for LockfreeSpinLock<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockfreeSpinLock").finish_non_exhaustive()
    }
}

take_and_source!(
    impl[T: Send + Sync] LockfreeSpinLock<T>,
    T,
    SpinLockReusable<'a, T>,
    |this| this.0.pull()
);

/// `lockfree-object-pool`'s mutex pool.
pub struct LockfreeMutex<T = Msg>(MutexObjectPool<T>);

impl<T: Recyclable + Default + 'static> Default for LockfreeMutex<T> {
    fn default() -> Self {
        Self(MutexObjectPool::new(T::default, T::reset))
    }
}

impl<T> std::fmt::Debug for LockfreeMutex<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockfreeMutex").finish_non_exhaustive()
    }
}

take_and_source!(
    impl[T: Send + Sync] LockfreeMutex<T>,
    T,
    MutexReusable<'a, T>,
    |this| this.0.pull()
);

/// How `opool` makes an object (`T::default`) and resets it
/// ([`Recyclable::reset`]).
#[derive(Debug, Default, Clone, Copy)]
pub struct ResetAllocator;

impl<T: Recyclable + Default> PoolAllocator<T> for ResetAllocator {
    #[inline]
    fn reset(&self, obj: &mut T) {
        obj.reset();
    }

    fn allocate(&self) -> T {
        T::default()
    }
}

/// `opool`'s concurrent `Pool`.
pub struct OPool<T: Recyclable + Default = Msg>(opool::Pool<ResetAllocator, T>);

impl<T: Recyclable + Default> Default for OPool<T> {
    fn default() -> Self {
        Self(opool::Pool::new(CAPACITY, ResetAllocator))
    }
}

impl<T: Recyclable + Default> std::fmt::Debug for OPool<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OPool").finish_non_exhaustive()
    }
}

take_and_source!(
    impl[T: Recyclable + Default + Send + Sync] OPool<T>,
    T,
    RefGuard<'a, ResetAllocator, T>,
    |this| this.0.get()
);

/// `opool`'s thread-local `LocalPool`: one thread only, so W1 only.
pub struct OPoolLocal<T: Recyclable + Default = Msg>(LocalPool<ResetAllocator, T>);

impl<T: Recyclable + Default> Default for OPoolLocal<T> {
    fn default() -> Self {
        Self(LocalPool::new(CAPACITY, ResetAllocator))
    }
}

impl<T: Recyclable + Default> std::fmt::Debug for OPoolLocal<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OPoolLocal").finish_non_exhaustive()
    }
}

impl<T: Recyclable + Default> Take for OPoolLocal<T> {
    type Object = T;
    type Guard<'a>
        = RefLocalGuard<'a, ResetAllocator, T>
    where
        Self: 'a;

    #[inline]
    fn take(&self) -> Self::Guard<'_> {
        self.0.get()
    }
}

/// `poolshark`'s global (cross-thread) pool.
pub struct Poolshark(poolshark::global::Pool<Msg>);

impl Default for Poolshark {
    fn default() -> Self {
        Self(poolshark::global::Pool::new(CAPACITY, 1))
    }
}

impl std::fmt::Debug for Poolshark {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Poolshark").finish_non_exhaustive()
    }
}

take_and_source!(impl[] Poolshark, Msg, poolshark::global::GPooled<Msg>, |this| this
    .0
    .take());
