//! The two faces a contender shows the workloads: [`Take`], a pool used on
//! one thread (W1, W8), and [`Source`], a pool whose objects another thread
//! releases (W2, W6).

use std::ops::DerefMut;

use recycler_core::{Pooled, Recycler};

use crate::alloc::{MiBox, SysBox};
use crate::payload::Msg;

/// Something to get objects from; dropping the guard gives them back.
pub trait Take {
    /// What the pool hands out.
    type Guard<'a>: DerefMut<Target = Msg>
    where
        Self: 'a;

    /// Takes an object.
    fn take(&self) -> Self::Guard<'_>;
}

/// A [`Take`] shared between threads, whose guards may be released on
/// another thread.
pub trait Source: Sync {
    /// What the pool hands out.
    type Guard<'a>: DerefMut<Target = Msg> + Send
    where
        Self: 'a;

    /// Takes an object.
    fn take(&self) -> Self::Guard<'_>;
}

/// Implements [`Take`] and [`Source`] for a contender whose guard is `Send`.
macro_rules! take_and_source {
    ($ty:ty, $guard:ty, |$this:ident| $take:expr) => {
        impl Take for $ty {
            type Guard<'a> = $guard;

            #[inline]
            fn take(&self) -> Self::Guard<'_> {
                let $this = self;
                $take
            }
        }

        impl Source for $ty {
            type Guard<'a> = $guard;

            #[inline]
            fn take(&self) -> Self::Guard<'_> {
                let $this = self;
                $take
            }
        }
    };
}

pub(crate) use take_and_source;

take_and_source!(Recycler<Msg>, Pooled<'a, Msg>, |pool| pool.get());

/// `Box::new` + drop under the global allocator (jemalloc in this package).
#[derive(Debug, Default)]
pub struct BoxJemalloc;

take_and_source!(BoxJemalloc, Box<Msg>, |_this| Box::new(Msg::default()));

/// `Box::new` + drop under the system allocator.
#[derive(Debug, Default)]
pub struct BoxSystem;

take_and_source!(BoxSystem, SysBox<Msg>, |_this| SysBox::new(Msg::default()));

/// `Box::new` + drop under mimalloc.
#[derive(Debug, Default)]
pub struct BoxMimalloc;

take_and_source!(BoxMimalloc, MiBox<Msg>, |_this| MiBox::new(Msg::default()));
