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
