//! The trait impls of both buffer guards (`Drop`, `Deref`, `AsRef`,
//! `Borrow`, `Extend`, `io::Write`, `Debug`, comparisons), written once by
//! `buf_traits!` and `buf_eq!`; the Vec-like methods are in the parent.

use std::borrow::{Borrow, BorrowMut, Cow};
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::io;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};

use super::super::grow::try_reserve;
use super::super::guard::PooledBuf;
use super::super::owned::OwnedPooledBuf;
use super::super::pool::PoolRef;
use crate::guard_docs::guard_docs;

/// The trait impls, for both guards. `$ty` is the guard, `$name` its
/// name, and `$kind` says which of the two it is, for `guard_docs!`.
macro_rules! buf_traits {
    ($kind:ident $ty:ty, $name:literal) => {
        impl Drop for $ty {
            #[inline]
            fn drop(&mut self) {
                // SAFETY: `drop` runs once, and the guards' `into_parts`
                // forgets the guard, so the buffer is taken exactly once.
                let buf = unsafe { ManuallyDrop::take(&mut self.buf) };
                let buf = buf.into_buf();
                #[cfg(feature = "track")]
                self.pool.pool_shared().untrack(&buf);
                self.pool.release_buf(buf, self.home, self.origin);
            }
        }

        impl Deref for $ty {
            type Target = [u8];

            #[inline]
            fn deref(&self) -> &[u8] {
                self.buf.as_slice()
            }
        }

        impl DerefMut for $ty {
            #[inline]
            fn deref_mut(&mut self) -> &mut [u8] {
                self.buf.as_mut_slice()
            }
        }

        impl AsRef<[u8]> for $ty {
            #[inline]
            fn as_ref(&self) -> &[u8] {
                self.buf.as_slice()
            }
        }

        impl AsMut<[u8]> for $ty {
            #[inline]
            fn as_mut(&mut self) -> &mut [u8] {
                self.buf.as_mut_slice()
            }
        }

        guard_docs! {$kind
            /// The bytes written. The buffer compares, orders and hashes as
            /// them, as a `Vec<u8>` does, so a set or map of buffers is searched
            /// by `&[u8]`.
            ///
            /// # Examples
            ///
            /// ```
            /// use std::collections::HashSet;
            /// use recycler_core::buffer::BufferPool;
            ///
            /// let pool = BufferPool::new();
            /// let mut buf = pool.acquire(16);
            /// buf.extend_from_slice(b"key");
            /// let set = HashSet::from([buf]);
            /// assert!(set.contains(&b"key"[..]));
            /// assert!(!set.contains(&b"other"[..]));
            /// ```
            owned:
            /// As for [`PooledBuf`]: the bytes written; a set of buffers is
            /// searched by `&[u8]`.
            item:
            impl Borrow<[u8]> for $ty {
                #[inline]
                fn borrow(&self) -> &[u8] {
                    self.buf.as_slice()
                }
            }
        }

        guard_docs! {$kind
            /// The bytes written, mutably.
            ///
            /// # Examples
            ///
            /// ```
            /// use std::borrow::BorrowMut;
            /// use recycler_core::buffer::BufferPool;
            ///
            /// let pool = BufferPool::new();
            /// let mut buf = pool.acquire(16);
            /// buf.extend_from_slice(b"abc");
            /// let bytes: &mut [u8] = buf.borrow_mut();
            /// bytes.make_ascii_uppercase();
            /// assert_eq!(buf, *b"ABC");
            /// ```
            owned:
            /// As for [`PooledBuf`]: the bytes written, mutably.
            item:
            impl BorrowMut<[u8]> for $ty {
                #[inline]
                fn borrow_mut(&mut self) -> &mut [u8] {
                    self.buf.as_mut_slice()
                }
            }
        }

        guard_docs! {$kind
            /// Byte equality is an equivalence; capacity plays no part.
            ///
            /// # Examples
            ///
            /// ```
            /// use recycler_core::buffer::BufferPool;
            ///
            /// fn same<E: Eq>(a: &E, b: &E) -> bool {
            ///     a == b
            /// }
            ///
            /// let pool = BufferPool::new();
            /// let (mut a, mut b) = (pool.acquire(16), pool.acquire(16));
            /// a.push(1);
            /// b.reserve(10_000);
            /// b.push(1);
            /// assert!(same(&a, &b));
            /// ```
            owned:
            /// As for [`PooledBuf`]: byte equality is an equivalence; capacity
            /// plays no part.
            item:
            impl Eq for $ty {}
        }

        guard_docs! {$kind
            /// Buffers order as their bytes do (lexicographically), as `Vec<u8>`.
            ///
            /// # Examples
            ///
            /// ```
            /// use recycler_core::buffer::BufferPool;
            ///
            /// let pool = BufferPool::new();
            /// let (mut a, mut b) = (pool.acquire(16), pool.acquire(16));
            /// a.extend_from_slice(b"ab");
            /// b.extend_from_slice(b"b");
            /// assert!(a < b);
            /// ```
            owned:
            /// As for [`PooledBuf`]: buffers order as their bytes do.
            item:
            impl PartialOrd for $ty {
                #[inline]
                fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
                    Some(Ord::cmp(self, other))
                }
            }
        }

        guard_docs! {$kind
            /// Buffers order as their bytes do (lexicographically), as `Vec<u8>`.
            ///
            /// # Examples
            ///
            /// ```
            /// use recycler_core::buffer::BufferPool;
            ///
            /// let pool = BufferPool::new();
            /// let (mut a, mut b) = (pool.acquire(16), pool.acquire(16));
            /// a.extend_from_slice(b"ab");
            /// b.extend_from_slice(b"b");
            /// assert_eq!(a.cmp(&b), std::cmp::Ordering::Less);
            /// ```
            owned:
            /// As for [`PooledBuf`]: buffers order as their bytes do.
            item:
            impl Ord for $ty {
                #[inline]
                fn cmp(&self, other: &Self) -> Ordering {
                    Ord::cmp(self.buf.as_slice(), other.buf.as_slice())
                }
            }
        }

        guard_docs! {$kind
            /// Hashes the bytes written exactly as hashing the `[u8]` (or a
            /// `Vec<u8>` of them) does, which [`Borrow<[u8]>`](Borrow) requires.
            ///
            /// # Examples
            ///
            /// ```
            /// use std::hash::{BuildHasher, RandomState};
            /// use recycler_core::buffer::BufferPool;
            ///
            /// let pool = BufferPool::new();
            /// let mut buf = pool.acquire(16);
            /// buf.extend_from_slice(b"abc");
            /// let hasher = RandomState::new();
            /// assert_eq!(hasher.hash_one(&buf), hasher.hash_one(&b"abc"[..]));
            /// assert_eq!(hasher.hash_one(&buf), hasher.hash_one(b"abc".to_vec()));
            /// ```
            owned:
            /// As for [`PooledBuf`]: hashes the bytes written exactly as
            /// hashing the `[u8]` does.
            item:
            impl Hash for $ty {
                #[inline]
                fn hash<H: Hasher>(&self, state: &mut H) {
                    Hash::hash(self.buf.as_slice(), state);
                }
            }
        }

        guard_docs! {$kind
            /// Appends the bytes, growing the buffer as
            /// [`extend_from_slice`](Self::extend_from_slice) does: by the
            /// iterator's lower size bound at once, then as it needs.
            ///
            /// # Panics
            ///
            /// As [`push`](Self::push), if the buffer must grow and cannot.
            ///
            /// # Examples
            ///
            /// ```
            /// use recycler_core::buffer::BufferPool;
            ///
            /// let pool = BufferPool::new();
            /// let mut buf = pool.acquire(16);
            /// buf.extend(b'a'..=b'e');
            /// buf.extend("xyz".bytes().rev());
            /// assert_eq!(buf, *b"abcdezyx");
            /// ```
            owned:
            /// As for [`PooledBuf`]: appends the bytes, growing the buffer if
            /// need be.
            item:
            impl Extend<u8> for $ty {
                #[inline]
                fn extend<I: IntoIterator<Item = u8>>(&mut self, iter: I) {
                    let iter = iter.into_iter();
                    self.reserve(iter.size_hint().0);
                    for byte in iter {
                        self.push(byte);
                    }
                }
            }
        }

        guard_docs! {$kind
            /// Appends copies of the bytes, as `Extend<u8>`.
            ///
            /// # Panics
            ///
            /// As [`push`](Self::push), if the buffer must grow and cannot.
            ///
            /// # Examples
            ///
            /// ```
            /// use recycler_core::buffer::BufferPool;
            ///
            /// let pool = BufferPool::new();
            /// let mut buf = pool.acquire(16);
            /// buf.extend(b"hello");
            /// buf.extend(&[b'!'; 2]);
            /// assert_eq!(buf, b"hello!!");
            /// ```
            owned:
            /// As for [`PooledBuf`]: appends copies of the bytes.
            item:
            impl<'b> Extend<&'b u8> for $ty {
                #[inline]
                fn extend<I: IntoIterator<Item = &'b u8>>(&mut self, iter: I) {
                    Extend::<u8>::extend(self, iter.into_iter().copied());
                }
            }
        }

        impl io::Write for $ty {
            /// Appends all of `bytes`, growing the buffer if need be (at
            /// the `memory_limit`, as an overdraft, as
            /// [`push`](Self::push) does); an error of kind `OutOfMemory`
            /// if it cannot grow: the allocator fails, or the pool was
            /// built with `hard_limit(true)` and the limit has no room.
            #[inline]
            fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
                let pool = self.pool.pool_shared();
                let overdraft = !pool.config().hard_limit;
                try_reserve(
                    pool,
                    &mut self.buf,
                    &mut self.origin,
                    bytes.len(),
                    overdraft,
                )
                .map_err(|err| io::Error::new(io::ErrorKind::OutOfMemory, err))?;
                self.buf.append_within_capacity(bytes);
                Ok(bytes.len())
            }

            #[inline]
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }

        impl fmt::Debug for $ty {
            /// Length and capacity; never the contents.
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct($name)
                    .field("len", &self.buf.len())
                    .field("capacity", &self.buf.capacity())
                    .finish_non_exhaustive()
            }
        }
    };
}

buf_traits!(borrowed PooledBuf<'_>, "PooledBuf");
buf_traits!(owned OwnedPooledBuf, "OwnedPooledBuf");

/// `PartialEq` between a buffer and the byte containers `Vec<u8>` compares
/// with (both ways), and between the two buffer types: the bytes written
/// are compared, never the capacity (see the example on [`PooledBuf`]).
/// `[$($gen)*] $lhs, $rhs` writes `impl<$($gen)*> PartialEq<$rhs> for $lhs`.
macro_rules! buf_eq {
    ($([$($gen:tt)*] $lhs:ty, $rhs:ty;)*) => {$(
        /// Compares the bytes written, as `Vec<u8>` does; capacity plays no
        /// part.
        impl<$($gen)*> PartialEq<$rhs> for $lhs {
            #[inline]
            fn eq(&self, other: &$rhs) -> bool {
                self[..] == other[..]
            }
        }
    )*};
}

/// Each buffer type against the byte containers, both ways.
macro_rules! buf_eq_bytes {
    ($($ty:ty),*) => {$(
        buf_eq! {
            [] $ty, [u8];
            [] [u8], $ty;
            [] $ty, &[u8];
            [] &[u8], $ty;
            [] $ty, &mut [u8];
            [] &mut [u8], $ty;
            [const N: usize] $ty, [u8; N];
            [const N: usize] [u8; N], $ty;
            [const N: usize] $ty, &[u8; N];
            [const N: usize] &[u8; N], $ty;
            [] $ty, Vec<u8>;
            [] Vec<u8>, $ty;
            [] $ty, Cow<'_, [u8]>;
            [] Cow<'_, [u8]>, $ty;
        }
    )*};
}

buf_eq_bytes!(PooledBuf<'_>, OwnedPooledBuf);

buf_eq! {
    [] PooledBuf<'_>, PooledBuf<'_>;
    [] OwnedPooledBuf, OwnedPooledBuf;
    [] PooledBuf<'_>, OwnedPooledBuf;
    [] OwnedPooledBuf, PooledBuf<'_>;
}
