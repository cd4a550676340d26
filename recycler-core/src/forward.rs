//! The traits a guard forwards to its object where `Box<T>` forwards them:
//! `io::Read`, `io::BufRead`, `io::Write`, `io::Seek`, `Iterator` (with
//! `DoubleEndedIterator`, `ExactSizeIterator` and `FusedIterator`) and
//! `Future` (for an `Unpin` object, as `Box`); and the unwind-safety markers,
//! with the argument that makes them sound.
//!
//! Each forwarding impl calls the object's own method for every method the
//! object may have specialized (as `Box` does: `read_to_end`, `write_all`,
//! `nth`, ...), so a guard behaves exactly as its object, never as the
//! trait's default.

use std::fmt;
use std::future::Future;
use std::io;
use std::iter::FusedIterator;
use std::panic::{RefUnwindSafe, UnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::guard::Pooled;
use crate::guard_docs::guard_docs;
use crate::owned::OwnedPooled;
use crate::recyclable::Recyclable;

/// The forwarding impls for one guard type. `$guard` is the guard over `T`,
/// and `$kind` says which of the two it is, for `guard_docs!`.
macro_rules! forward {
    ($kind:ident $guard:ty) => {
        guard_docs! {$kind
            /// Reads from the object, as `Box<R>` does.
            ///
            /// # Examples
            ///
            /// ```
            /// use std::collections::VecDeque;
            /// use std::io::Read;
            /// use recycler_core::Recycler;
            ///
            /// let pool = Recycler::<VecDeque<u8>>::new();
            /// let mut queue = pool.get();
            /// queue.extend(b"abc");
            /// let mut out = [0; 2];
            /// queue.read_exact(&mut out)?;
            /// assert_eq!(&out, b"ab");
            /// let mut rest = Vec::new();
            /// queue.read_to_end(&mut rest)?;
            /// assert_eq!(rest, b"c");
            /// # Ok::<(), std::io::Error>(())
            /// ```
            owned:
            /// As for [`Pooled`]: reads from the object.
            item:
            impl<T: Recyclable + io::Read> io::Read for $guard {
                #[inline]
                fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                    (**self).read(buf)
                }

                #[inline]
                fn read_vectored(&mut self, bufs: &mut [io::IoSliceMut<'_>]) -> io::Result<usize> {
                    (**self).read_vectored(bufs)
                }

                #[inline]
                fn read_to_end(&mut self, buf: &mut Vec<u8>) -> io::Result<usize> {
                    (**self).read_to_end(buf)
                }

                #[inline]
                fn read_to_string(&mut self, buf: &mut String) -> io::Result<usize> {
                    (**self).read_to_string(buf)
                }

                #[inline]
                fn read_exact(&mut self, buf: &mut [u8]) -> io::Result<()> {
                    (**self).read_exact(buf)
                }
            }
        }

        guard_docs! {$kind
            /// Reads lines and delimited records from the object, as
            /// `Box<B>` does.
            ///
            /// # Examples
            ///
            /// ```
            /// use std::collections::VecDeque;
            /// use std::io::BufRead;
            /// use recycler_core::Recycler;
            ///
            /// let pool = Recycler::<VecDeque<u8>>::new();
            /// let mut input = pool.get();
            /// input.extend(b"GET / HTTP/1.1\r\nHost: a\r\n");
            /// let mut line = String::new();
            /// input.read_line(&mut line)?;
            /// assert_eq!(line, "GET / HTTP/1.1\r\n");
            /// let lines: Vec<String> = input.lines().collect::<Result<_, _>>()?;
            /// assert_eq!(lines, ["Host: a"]);
            /// # Ok::<(), std::io::Error>(())
            /// ```
            owned:
            /// As for [`Pooled`]: reads lines and delimited records from the object.
            item:
            impl<T: Recyclable + io::BufRead> io::BufRead for $guard {
                #[inline]
                fn fill_buf(&mut self) -> io::Result<&[u8]> {
                    (**self).fill_buf()
                }

                #[inline]
                fn consume(&mut self, amt: usize) {
                    (**self).consume(amt);
                }

                #[inline]
                fn read_until(&mut self, byte: u8, buf: &mut Vec<u8>) -> io::Result<usize> {
                    (**self).read_until(byte, buf)
                }

                #[inline]
                fn skip_until(&mut self, byte: u8) -> io::Result<usize> {
                    (**self).skip_until(byte)
                }

                #[inline]
                fn read_line(&mut self, buf: &mut String) -> io::Result<usize> {
                    (**self).read_line(buf)
                }
            }
        }

        guard_docs! {$kind
            /// Writes to the object, as `Box<W>` does: a guard of a `Vec<u8>`
            /// is a writer because a `Vec<u8>` is.
            ///
            /// # Examples
            ///
            /// ```
            /// use std::io::Write;
            /// use recycler_core::Recycler;
            ///
            /// let pool = Recycler::<Vec<u8>>::new();
            /// let mut out = pool.get();
            /// write!(out, "{} + {} = {}", 1, 2, 1 + 2)?;
            /// out.write_all(b"!")?;
            /// assert_eq!(&out[..], b"1 + 2 = 3!");
            /// # Ok::<(), std::io::Error>(())
            /// ```
            owned:
            /// As for [`Pooled`]: writes to the object.
            item:
            impl<T: Recyclable + io::Write> io::Write for $guard {
                #[inline]
                fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                    (**self).write(buf)
                }

                #[inline]
                fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
                    (**self).write_vectored(bufs)
                }

                #[inline]
                fn flush(&mut self) -> io::Result<()> {
                    (**self).flush()
                }

                #[inline]
                fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
                    (**self).write_all(buf)
                }

                #[inline]
                fn write_fmt(&mut self, args: fmt::Arguments<'_>) -> io::Result<()> {
                    (**self).write_fmt(args)
                }
            }
        }

        guard_docs! {$kind
            /// Seeks in the object, as `Box<S>` does.
            ///
            /// # Examples
            ///
            /// ```
            /// use std::io::{Cursor, Read, Seek, SeekFrom};
            /// use recycler_core::{Recyclable, Recycler};
            ///
            /// /// An in-memory file.
            /// #[derive(Default)]
            /// struct MemFile(Cursor<Vec<u8>>);
            ///
            /// impl Recyclable for MemFile {
            ///     fn reset(&mut self) {
            ///         self.0.get_mut().clear();
            ///         self.0.set_position(0);
            ///     }
            /// }
            ///
            /// impl Seek for MemFile {
            ///     fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
            ///         self.0.seek(pos)
            ///     }
            /// }
            ///
            /// let pool = Recycler::<MemFile>::new();
            /// let mut f = pool.get();
            /// f.0.get_mut().extend_from_slice(b"header|body");
            /// assert_eq!(f.seek(SeekFrom::Start(7))?, 7);
            /// assert_eq!(f.stream_position()?, 7);
            /// let mut body = String::new();
            /// f.0.read_to_string(&mut body)?;
            /// assert_eq!(body, "body");
            /// # Ok::<(), std::io::Error>(())
            /// ```
            owned:
            /// As for [`Pooled`]: seeks in the object.
            item:
            impl<T: Recyclable + io::Seek> io::Seek for $guard {
                #[inline]
                fn seek(&mut self, pos: io::SeekFrom) -> io::Result<u64> {
                    (**self).seek(pos)
                }

                #[inline]
                fn stream_position(&mut self) -> io::Result<u64> {
                    (**self).stream_position()
                }

                #[inline]
                fn seek_relative(&mut self, offset: i64) -> io::Result<()> {
                    (**self).seek_relative(offset)
                }
            }
        }

        guard_docs! {$kind
            /// Iterates the object, as `Box<I>` does: `for x in guard`
            /// consumes the guard (which then returns its object to the pool),
            /// `guard.by_ref()` iterates and keeps it.
            ///
            /// # Examples
            ///
            /// ```
            /// use recycler_core::{Recyclable, Recycler};
            ///
            /// #[derive(Default, Recyclable)]
            /// struct Countdown(u32);
            ///
            /// impl Iterator for Countdown {
            ///     type Item = u32;
            ///     fn next(&mut self) -> Option<u32> {
            ///         self.0 = self.0.checked_sub(1)?;
            ///         Some(self.0)
            ///     }
            /// }
            ///
            /// let pool = Recycler::<Countdown>::new();
            /// let mut c = pool.get();
            /// c.0 = 4;
            /// assert_eq!(c.next(), Some(3));
            /// let rest: Vec<u32> = c.collect(); // the guard is consumed, the object pooled
            /// assert_eq!(rest, [2, 1, 0]);
            /// assert_eq!(pool.stats().idle, 1);
            /// ```
            owned:
            /// As for [`Pooled`]: iterates the object.
            item:
            impl<T: Recyclable + Iterator> Iterator for $guard {
                type Item = T::Item;

                #[inline]
                fn next(&mut self) -> Option<T::Item> {
                    (**self).next()
                }

                #[inline]
                fn size_hint(&self) -> (usize, Option<usize>) {
                    (**self).size_hint()
                }

                #[inline]
                fn nth(&mut self, n: usize) -> Option<T::Item> {
                    (**self).nth(n)
                }
            }
        }

        guard_docs! {$kind
            /// Iterates the object from the back, as `Box<I>` does.
            ///
            /// # Examples
            ///
            /// ```
            /// use std::collections::VecDeque;
            /// use recycler_core::{Recyclable, Recycler};
            ///
            /// #[derive(Default, Recyclable)]
            /// struct Queue(VecDeque<u8>);
            ///
            /// impl Iterator for Queue {
            ///     type Item = u8;
            ///     fn next(&mut self) -> Option<u8> {
            ///         self.0.pop_front()
            ///     }
            /// }
            ///
            /// impl DoubleEndedIterator for Queue {
            ///     fn next_back(&mut self) -> Option<u8> {
            ///         self.0.pop_back()
            ///     }
            /// }
            ///
            /// let pool = Recycler::<Queue>::new();
            /// let mut q = pool.get();
            /// q.0.extend([1, 2, 3]);
            /// assert_eq!(q.next_back(), Some(3));
            /// assert_eq!(q.rev().collect::<Vec<_>>(), [2, 1]);
            /// ```
            owned:
            /// As for [`Pooled`]: iterates the object from the back.
            item:
            impl<T: Recyclable + DoubleEndedIterator> DoubleEndedIterator for $guard {
                #[inline]
                fn next_back(&mut self) -> Option<T::Item> {
                    (**self).next_back()
                }

                #[inline]
                fn nth_back(&mut self, n: usize) -> Option<T::Item> {
                    (**self).nth_back(n)
                }
            }
        }

        guard_docs! {$kind
            /// The object's exact length, as `Box<I>` gives it.
            ///
            /// # Examples
            ///
            /// ```
            /// use recycler_core::{Recyclable, Recycler};
            ///
            /// #[derive(Default, Recyclable)]
            /// struct Countdown(u32);
            ///
            /// impl Iterator for Countdown {
            ///     type Item = u32;
            ///     fn next(&mut self) -> Option<u32> {
            ///         self.0 = self.0.checked_sub(1)?;
            ///         Some(self.0)
            ///     }
            ///     fn size_hint(&self) -> (usize, Option<usize>) {
            ///         (self.0 as usize, Some(self.0 as usize))
            ///     }
            /// }
            ///
            /// impl ExactSizeIterator for Countdown {}
            ///
            /// let pool = Recycler::<Countdown>::new();
            /// let mut c = pool.get();
            /// c.0 = 5;
            /// c.next();
            /// assert_eq!(c.len(), 4);
            /// ```
            owned:
            /// As for [`Pooled`]: the object's exact length.
            item:
            impl<T: Recyclable + ExactSizeIterator> ExactSizeIterator for $guard {
                #[inline]
                fn len(&self) -> usize {
                    (**self).len()
                }
            }
        }

        /// Fused when the object is, as `Box<I>`.
        impl<T: Recyclable + FusedIterator> FusedIterator for $guard {}

        guard_docs! {$kind
            /// Polls the object, if it is `Unpin`, as `Box<F>` does (a `!Unpin`
            /// future cannot be pinned in a guard: its memory is reused by the
            /// pool after it is reset, which pinning forbids).
            ///
            /// # Examples
            ///
            /// ```
            /// use std::future::Future;
            /// use std::pin::Pin;
            /// use std::task::{Context, Poll, Waker};
            /// use recycler_core::{Recyclable, Recycler};
            ///
            /// /// Ready on the second poll.
            /// #[derive(Default, Recyclable)]
            /// struct Ticks(u32);
            ///
            /// impl Future for Ticks {
            ///     type Output = u32;
            ///     fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<u32> {
            ///         self.0 += 1;
            ///         if self.0 == 2 { Poll::Ready(self.0) } else { Poll::Pending }
            ///     }
            /// }
            ///
            /// let pool = Recycler::<Ticks>::new();
            /// let mut fut = pool.get();
            /// let mut cx = Context::from_waker(Waker::noop());
            /// assert_eq!(Pin::new(&mut fut).poll(&mut cx), Poll::Pending);
            /// assert_eq!(Pin::new(&mut fut).poll(&mut cx), Poll::Ready(2));
            /// ```
            owned:
            /// As for [`Pooled`]: polls the object, if it is `Unpin`.
            item:
            impl<T: Recyclable + Future + Unpin> Future for $guard {
                type Output = T::Output;

                #[inline]
                fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T::Output> {
                    T::poll(Pin::new(&mut **self.get_mut()), cx)
                }
            }
        }
    };
}

forward!(borrowed Pooled<'_, T>);
forward!(owned OwnedPooled<T>);

// Unwind safety. A guard stands for its object as a `Box<T>` does, and so is
// `UnwindSafe` when `T` is, `RefUnwindSafe` when `T` is. What else it
// reaches is the recycler, through `&`, and a recycler is unwind safe
// whatever `T` is (see `Recycler`'s impls in `recycler.rs`): a panic in user
// code leaves it consistent (DESIGN.md, invariant 4). The object a guard
// holds when its holder panics is dropped, not pooled (the guard's `Drop`
// checks `thread::panicking()`), so an object that a panic may have left
// half-changed never reaches another holder; which is also why the guard's
// impls need no more than `Box`'s bounds.

/// A guard is unwind safe when its object is, as a `Box<T>`.
///
/// # Examples
///
/// ```
/// use std::panic::catch_unwind;
/// use recycler_core::Recycler;
///
/// let pool: Recycler<Vec<u8>> = Recycler::new();
/// let mut v = pool.get();
/// v.push(1);
/// let len = catch_unwind(move || v.len()).unwrap(); // `v` moves in
/// assert_eq!(len, 1);
/// ```
impl<T: Recyclable + UnwindSafe> UnwindSafe for Pooled<'_, T> {}

/// A shared guard is unwind safe when a shared object is, as a `Box<T>`.
///
/// # Examples
///
/// ```
/// use std::panic::catch_unwind;
/// use recycler_core::Recycler;
///
/// let pool: Recycler<String> = Recycler::new();
/// let s = pool.get();
/// assert_eq!(catch_unwind(|| s.len()).unwrap(), 0); // `&s` is captured
/// ```
impl<T: Recyclable + RefUnwindSafe> RefUnwindSafe for Pooled<'_, T> {}

/// As for [`Pooled`].
///
/// # Examples
///
/// ```
/// use std::panic::catch_unwind;
/// use std::sync::Arc;
/// use recycler_core::Recycler;
///
/// let pool = Arc::new(Recycler::<Vec<u8>>::new());
/// let mut v = pool.get_owned();
/// assert!(catch_unwind(move || v.push(1)).is_ok());
/// ```
impl<T: Recyclable + UnwindSafe> UnwindSafe for OwnedPooled<T> {}

/// As for [`Pooled`].
///
/// # Examples
///
/// ```
/// use std::panic::catch_unwind;
/// use std::sync::Arc;
/// use recycler_core::Recycler;
///
/// let pool = Arc::new(Recycler::<String>::new());
/// let s = pool.get_owned();
/// assert!(catch_unwind(|| s.is_empty()).unwrap());
/// ```
impl<T: Recyclable + RefUnwindSafe> RefUnwindSafe for OwnedPooled<T> {}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::Recycler;
    use static_assertions::{assert_impl_all, assert_not_impl_any};
    use std::cell::Cell;
    use std::collections::VecDeque;

    // As `Box<T>`: the io and iterator traits of `T`, and `Future` for an
    // `Unpin` one; none where `T` has none (`Box<String>` is no writer).
    assert_impl_all!(Pooled<'static, Vec<u8>>: io::Write);
    assert_impl_all!(OwnedPooled<Vec<u8>>: io::Write);
    assert_impl_all!(Pooled<'static, VecDeque<u8>>: io::Read, io::BufRead, io::Write);
    assert_impl_all!(OwnedPooled<VecDeque<u8>>: io::Read, io::BufRead, io::Write);
    assert_not_impl_any!(Box<String>: io::Write, io::Read, Iterator);
    assert_not_impl_any!(
        Pooled<'static, String>: io::Write, io::Read, io::BufRead, io::Seek, Iterator
    );
    assert_not_impl_any!(OwnedPooled<String>: io::Write, io::Read, Iterator, Future);

    /// An `Unpin` future and an iterator, both ways, of known length.
    #[derive(Default)]
    struct Both;

    impl Recyclable for Both {
        fn reset(&mut self) {}
    }

    impl Future for Both {
        type Output = ();
        fn poll(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<()> {
            std::task::Poll::Ready(())
        }
    }

    impl Iterator for Both {
        type Item = u8;
        fn next(&mut self) -> Option<u8> {
            None
        }
    }

    impl DoubleEndedIterator for Both {
        fn next_back(&mut self) -> Option<u8> {
            None
        }
    }

    impl ExactSizeIterator for Both {}

    /// A future that is not `Unpin`: no guard of it is a future (nor is a
    /// `Box` of it).
    struct Pinned(std::marker::PhantomPinned);

    impl Recyclable for Pinned {
        fn reset(&mut self) {}
    }

    impl Future for Pinned {
        type Output = ();
        fn poll(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<()> {
            std::task::Poll::Ready(())
        }
    }

    assert_impl_all!(
        Pooled<'static, Both>: Future, Iterator, DoubleEndedIterator, ExactSizeIterator, Unpin
    );
    assert_impl_all!(OwnedPooled<Both>: Future, Iterator, DoubleEndedIterator, ExactSizeIterator);
    assert_not_impl_any!(Pooled<'static, Both>: FusedIterator);
    assert_not_impl_any!(Box<Pinned>: Future);
    assert_not_impl_any!(Pooled<'static, Pinned>: Future);
    assert_not_impl_any!(OwnedPooled<Pinned>: Future);

    // Unwind safety with `Box`'s bounds (`Cell<u8>` is `Recyclable` by the
    // impl in the tests of `guard.rs`): `Cell<u8>` is `UnwindSafe` but not
    // `RefUnwindSafe`, and so are its guards; the recycler is both whatever
    // `T` is.
    assert_impl_all!(Pooled<'static, Vec<u8>>: UnwindSafe, RefUnwindSafe);
    assert_impl_all!(OwnedPooled<Vec<u8>>: UnwindSafe, RefUnwindSafe);
    assert_impl_all!(Pooled<'static, Cell<u8>>: UnwindSafe);
    assert_not_impl_any!(Pooled<'static, Cell<u8>>: RefUnwindSafe);
    assert_not_impl_any!(OwnedPooled<Cell<u8>>: RefUnwindSafe);
    assert_not_impl_any!(Box<Cell<u8>>: RefUnwindSafe);
    assert_impl_all!(Recycler<Cell<u8>>: UnwindSafe, RefUnwindSafe);
}
