//! Leak tracking by call site (feature `track`).

#![cfg(feature = "track")]

use std::sync::Arc;

use recycler_core::Recycler;

#[test]
fn a_forgotten_guard_is_reported_where_it_was_taken() {
    let pool: Arc<Recycler<Vec<u8>>> = Arc::new(Recycler::new());
    assert!(pool.leaks().is_empty());
    let (first, second);
    let kept = {
        first = line!() + 1;
        let g = pool.get();
        std::mem::forget(g);
        second = line!() + 1;
        let owned = pool.get_owned();
        let detached = pool.get();
        let _vec = recycler_core::Pooled::into_inner(detached); // not a leak
        owned
    };
    drop(pool.get()); // returned: not a leak
    let leaks = pool.leaks();
    assert_eq!(leaks.in_use(), 2, "{leaks}");
    let mut lines: Vec<(String, u32)> = leaks
        .sites()
        .iter()
        .map(|s| (s.location.file().to_string(), s.location.line()))
        .collect();
    lines.sort();
    assert_eq!(
        lines,
        [(file!().to_string(), first), (file!().to_string(), second)]
    );
    let text = leaks.to_string();
    assert!(text.starts_with("2 in use, from 2 call sites"), "{text}");
    assert!(text.contains(&format!("{}:{first}:", file!())), "{text}");
    drop(kept);
    let leaks = pool.leaks();
    assert_eq!(leaks.in_use(), 1, "only the forgotten one: {leaks}");
}

#[test]
fn released_on_another_thread_is_not_a_leak() {
    let pool: Arc<Recycler<String>> = Arc::new(Recycler::new());
    let g = pool.get_owned();
    std::thread::spawn(move || drop(g)).join().unwrap();
    let striped: Recycler<String> = Recycler::builder().striped(2).build().unwrap();
    let h = striped.get();
    std::thread::scope(|s| {
        s.spawn(move || drop(h));
    });
    assert!(pool.leaks().is_empty());
    assert!(striped.leaks().is_empty());
}

#[test]
fn a_forgotten_buffer_is_reported_where_it_was_acquired() {
    use recycler_core::buffer::BufferPool;

    let pool = Arc::new(BufferPool::builder().memory_limit(1 << 20).build().unwrap());
    assert!(pool.leaks().is_empty());
    let at = |line: u32| (file!().to_string(), line);
    let mut expected = Vec::new();
    let mut kept = Vec::new();
    for _ in 0..2 {
        expected.push(at(line!() + 1));
        std::mem::forget(pool.acquire(100)); // twice from one line
    }
    expected.push(at(line!() + 1));
    std::mem::forget(pool.try_acquire(10_000).unwrap());
    expected.push(at(line!() + 1));
    let mut grown = pool.acquire_owned(10);
    grown.resize(200_000, 7); // grows past the buckets: still the same guard
    expected.push(at(line!() + 1));
    let away = pool.try_acquire_owned(5000).unwrap();
    std::thread::spawn(move || drop(away)).join().unwrap();
    expected.pop(); // returned, on another thread
    drop(pool.acquire(100));
    expected.push(at(line!() + 1));
    kept.push(pool.try_acquire_pooled(100).unwrap());
    let patience = std::time::Duration::from_millis(1);
    expected.push(at(line!() + 1));
    kept.push(pool.acquire_timeout(100, patience).unwrap());
    {
        let scope = pool.scope();
        expected.push(at(line!() + 1));
        let _ = scope.alloc(10);
        let leaks = pool.leaks();
        let mut lines: Vec<_> = leaks
            .sites()
            .iter()
            .map(|s| (s.location.file().to_string(), s.location.line()))
            .collect();
        lines.sort();
        let mut want = expected.clone();
        want.dedup();
        want.sort();
        assert_eq!(lines, want, "{leaks}");
        assert_eq!(leaks.in_use(), expected.len(), "{leaks}");
        assert_eq!(leaks.sites()[0].count, 2, "the busiest site first: {leaks}");
    }
    // The scope returned its buffer; now the grown one and the kept ones.
    drop(grown);
    drop(kept);
    let leaks = pool.leaks();
    assert_eq!(leaks.in_use(), 3, "only the forgotten ones: {leaks}");
    assert_eq!(leaks.sites().len(), 2, "{leaks}");
}

#[test]
fn a_buffer_shared_as_bytes_is_in_use_until_the_last_clone_drops() {
    use recycler_core::buffer::BufferPool;

    let pool = Arc::new(BufferPool::new());
    let mut buf = pool.acquire_owned(100);
    buf.extend_from_slice(b"shared");
    let bytes = buf.into_bytes();
    let clone = bytes.slice(1..);
    drop(bytes);
    assert_eq!(pool.leaks().in_use(), 1);
    drop(clone);
    assert!(pool.leaks().is_empty());
}

#[test]
fn waits_for_memory_are_reported_where_they_began() {
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};
    use std::time::Duration;

    use recycler_core::buffer::BufferPool;

    /// Polls once: with memory free, a wait is ready at once.
    fn now<F: Future>(f: F) -> F::Output {
        match pin!(f).poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(out) => out,
            Poll::Pending => panic!("memory is free: the wait ends at its first poll"),
        }
    }

    let pool = Arc::new(BufferPool::builder().memory_limit(1 << 20).build().unwrap());
    let lines = [line!() + 2, line!() + 3, line!() + 4];
    let waits = (
        pool.acquire_async(100),
        pool.acquire_owned_async(100),
        pool.acquire_owned_timeout(100, Duration::ZERO),
    );
    let kept = (now(waits.0), now(waits.1), waits.2);
    let mut got: Vec<u32> = pool
        .leaks()
        .sites()
        .iter()
        .map(|s| s.location.line())
        .collect();
    got.sort();
    assert_eq!(got, lines, "{}", pool.leaks());
    drop(kept);
    assert!(pool.leaks().is_empty());
}
