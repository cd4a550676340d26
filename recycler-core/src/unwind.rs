//! Panics in user code, caught and accounted for: the payload of a caught
//! panic, dropping objects one by one so that one panicking `Drop` cannot
//! stop the rest, disposing of payloads without unwinding again, and a
//! guard that runs its closure only if what it guards unwinds.
//!
//! User code (`reset`, `Drop`, `retained_bytes`, the factory, a waker) may
//! panic wherever the recycler calls it; the paths that call it count every
//! object first and use these helpers, so that the books stay right and no
//! panic escapes where it would abort the process (a thread-local
//! destructor, an unwinding thread).

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// The payload of a caught panic.
pub(crate) type Panic = Box<dyn Any + Send + 'static>;

/// Drops every object, each on its own, so that a panicking `Drop` does not
/// keep the rest from being dropped; returns the first panic.
pub(crate) fn drop_each<T>(objs: impl IntoIterator<Item = Box<T>>) -> Option<Panic> {
    let mut first = None;
    for obj in objs {
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| drop(obj))) {
            match first {
                None => first = Some(panic),
                // A later panic's payload is dropped here, on its own.
                Some(_) => forget_panic(panic),
            }
        }
    }
    first
}

/// Disposes of a caught panic's payload without letting anything unwind: a
/// payload is user data, and its own `Drop` may panic; that second payload
/// is leaked rather than dropped (dropping it could panic again, without
/// end).
pub(crate) fn forget_panic(panic: Panic) {
    if let Err(again) = catch_unwind(AssertUnwindSafe(|| drop(panic))) {
        std::mem::forget(again);
    }
}

/// The first of two caught panics; the second one's payload is disposed of
/// with [`forget_panic`] (dropping it in place could unwind).
pub(crate) fn first_of(first: Option<Panic>, second: Option<Panic>) -> Option<Panic> {
    match (first, second) {
        (Some(first), Some(second)) => {
            forget_panic(second);
            Some(first)
        }
        (first, second) => first.or(second),
    }
}

/// Runs its closure if dropped, that is, if what it guards unwinds; the
/// guarded code `mem::forget`s it when it returns.
pub(crate) struct OnUnwind<F: FnMut()>(pub(crate) F);

impl<F: FnMut()> Drop for OnUnwind<F> {
    #[cold]
    fn drop(&mut self) {
        (self.0)();
    }
}
