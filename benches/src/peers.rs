//! The peer pools, behind the same [`Take`]/[`Source`] faces as the
//! recycler, each used the way its documentation shows, each resetting the
//! object as the recycler does (through its own reset hook where it has one).

use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use lockfree_object_pool::{
    LinearObjectPool, LinearReusable, SpinLockObjectPool, SpinLockReusable,
};
use opool::{LocalPool, PoolAllocator, RefGuard, RefLocalGuard};

use crate::payload::Msg;
use crate::source::{Source, Take, take_and_source};

/// Objects each peer pool may keep.
const CAPACITY: usize = 4096;

/// `sharded-slab`'s `Pool`: `create` a slot, `clear` its key to release.
/// Its borrowed guard is not `Send`, so W2 uses the owned one.
pub struct ShardedSlab(Arc<sharded_slab::Pool<Msg>>);

impl Default for ShardedSlab {
    fn default() -> Self {
        Self(Arc::new(sharded_slab::Pool::new()))
    }
}

impl std::fmt::Debug for ShardedSlab {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardedSlab").finish_non_exhaustive()
    }
}

/// A slot of a [`ShardedSlab`], cleared (and so released) when dropped.
pub struct SlabGuard<'a, G: DerefMut<Target = Msg> + SlabKey> {
    slot: ManuallyDrop<G>,
    pool: &'a sharded_slab::Pool<Msg>,
}

impl<G: DerefMut<Target = Msg> + SlabKey> std::fmt::Debug for SlabGuard<'_, G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

/// The key of a `sharded-slab` guard.
pub trait SlabKey {
    /// The slot's key.
    fn slab_key(&self) -> usize;
}

impl SlabKey for sharded_slab::pool::RefMut<'_, Msg> {
    fn slab_key(&self) -> usize {
        self.key()
    }
}

impl SlabKey for sharded_slab::pool::OwnedRefMut<Msg> {
    fn slab_key(&self) -> usize {
        self.key()
    }
}

impl<G: DerefMut<Target = Msg> + SlabKey> Deref for SlabGuard<'_, G> {
    type Target = Msg;

    fn deref(&self) -> &Msg {
        &self.slot
    }
}

impl<G: DerefMut<Target = Msg> + SlabKey> DerefMut for SlabGuard<'_, G> {
    fn deref_mut(&mut self) -> &mut Msg {
        &mut self.slot
    }
}

impl<G: DerefMut<Target = Msg> + SlabKey> Drop for SlabGuard<'_, G> {
    fn drop(&mut self) {
        let key = self.slot.slab_key();
        // SAFETY: `slot` is dropped exactly once, here, and never used again.
        unsafe { ManuallyDrop::drop(&mut self.slot) };
        self.pool.clear(key);
    }
}

impl Take for ShardedSlab {
    type Guard<'a> = SlabGuard<'a, sharded_slab::pool::RefMut<'a, Msg>>;

    #[inline]
    fn take(&self) -> Self::Guard<'_> {
        let slot = self.0.create().expect("sharded-slab pool is full");
        SlabGuard {
            slot: ManuallyDrop::new(slot),
            pool: &self.0,
        }
    }
}

impl Source for ShardedSlab {
    type Guard<'a> = SlabGuard<'a, sharded_slab::pool::OwnedRefMut<Msg>>;

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
pub struct ObjectPool(object_pool::Pool<Msg>);

impl Default for ObjectPool {
    fn default() -> Self {
        Self(object_pool::Pool::new(CAPACITY, Msg::default))
    }
}

impl std::fmt::Debug for ObjectPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectPool").finish_non_exhaustive()
    }
}

take_and_source!(ObjectPool, object_pool::Reusable<'a, Msg>, |this| {
    let mut g = this.0.pull(Msg::default);
    g.zero();
    g
});

/// `lockfree-object-pool`'s linear pool.
pub struct LockfreeLinear(LinearObjectPool<Msg>);

impl Default for LockfreeLinear {
    fn default() -> Self {
        Self(LinearObjectPool::new(Msg::default, Msg::zero))
    }
}

impl std::fmt::Debug for LockfreeLinear {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockfreeLinear").finish_non_exhaustive()
    }
}

take_and_source!(LockfreeLinear, LinearReusable<'a, Msg>, |this| this
    .0
    .pull());

/// `lockfree-object-pool`'s spin-lock pool.
pub struct LockfreeSpinLock(SpinLockObjectPool<Msg>);

impl Default for LockfreeSpinLock {
    fn default() -> Self {
        Self(SpinLockObjectPool::new(Msg::default, Msg::zero))
    }
}

impl std::fmt::Debug for LockfreeSpinLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockfreeSpinLock").finish_non_exhaustive()
    }
}

take_and_source!(LockfreeSpinLock, SpinLockReusable<'a, Msg>, |this| this
    .0
    .pull());

/// How `opool` makes and resets a [`Msg`].
#[derive(Debug, Default, Clone, Copy)]
pub struct MsgAllocator;

impl PoolAllocator<Msg> for MsgAllocator {
    #[inline]
    fn reset(&self, obj: &mut Msg) {
        obj.zero();
    }

    fn allocate(&self) -> Msg {
        Msg::default()
    }
}

/// `opool`'s concurrent `Pool`.
pub struct OPool(opool::Pool<MsgAllocator, Msg>);

impl Default for OPool {
    fn default() -> Self {
        Self(opool::Pool::new(CAPACITY, MsgAllocator))
    }
}

impl std::fmt::Debug for OPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OPool").finish_non_exhaustive()
    }
}

take_and_source!(OPool, RefGuard<'a, MsgAllocator, Msg>, |this| this.0.get());

/// `opool`'s thread-local `LocalPool`: one thread only, so W1 only.
pub struct OPoolLocal(LocalPool<MsgAllocator, Msg>);

impl Default for OPoolLocal {
    fn default() -> Self {
        Self(LocalPool::new(CAPACITY, MsgAllocator))
    }
}

impl std::fmt::Debug for OPoolLocal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OPoolLocal").finish_non_exhaustive()
    }
}

impl Take for OPoolLocal {
    type Guard<'a> = RefLocalGuard<'a, MsgAllocator, Msg>;

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

take_and_source!(Poolshark, poolshark::global::GPooled<Msg>, |this| this
    .0
    .take());
