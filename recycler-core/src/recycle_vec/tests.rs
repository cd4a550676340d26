use std::cell::Cell;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::panic::{AssertUnwindSafe, catch_unwind};

use super::*;
use std::borrow::{Borrow, BorrowMut};

use crate::shrink::ShrinkTo;

thread_local! {
    /// How many `Probe`s `Probe::default` made on this thread.
    static MADE: Cell<usize> = const { Cell::new(0) };
}

fn made() -> usize {
    MADE.with(Cell::get)
}

/// An element that counts how often it was made and reset, and can be
/// told to panic in `reset`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Probe {
    text: String,
    resets: usize,
    panic_on_reset: bool,
}

impl Default for Probe {
    fn default() -> Self {
        MADE.with(|m| m.set(m.get() + 1));
        Self {
            text: String::new(),
            resets: 0,
            panic_on_reset: false,
        }
    }
}

impl Recyclable for Probe {
    fn reset(&mut self) {
        assert!(!self.panic_on_reset, "reset panics, as asked");
        self.text.clear();
        self.resets += 1;
    }

    fn retained_bytes(&self) -> usize {
        self.text.capacity()
    }
}

/// A vector of `n` probes with texts "0", "1", ...
fn filled(n: usize) -> RecycleVec<Probe> {
    let mut v: RecycleVec<Probe> = RecycleVec::new();
    for i in 0..n {
        v.push_reset().text.push_str(&i.to_string());
    }
    v
}

fn texts(v: &RecycleVec<Probe>) -> Vec<&str> {
    v.iter().map(|p| p.text.as_str()).collect()
}

#[test]
fn new_default_and_with_capacity_hold_nothing() {
    const EMPTY: RecycleVec<String> = RecycleVec::new();
    for v in [EMPTY, RecycleVec::default()] {
        assert_eq!((v.len(), v.kept(), v.capacity()), (0, 0, 0));
        assert!(v.is_empty());
        assert_eq!(v.retained_bytes(), 0);
    }
    let v: RecycleVec<String> = RecycleVec::with_capacity(10);
    assert_eq!((v.len(), v.kept()), (0, 0));
    assert!(v.capacity() >= 10);
    assert_eq!(v.retained_bytes(), v.capacity() * size_of::<String>());
}

#[test]
fn push_reset_makes_only_when_nothing_is_kept() {
    let before = made();
    let mut v = filled(3);
    assert_eq!(made() - before, 3);
    assert_eq!(texts(&v), ["0", "1", "2"]);
    v.clear();
    assert_eq!((v.len(), v.kept()), (0, 3));
    for _ in 0..3 {
        let p = v.push_reset();
        assert!(p.text.is_empty());
        assert_eq!(
            p.resets, 1,
            "reset once, when cleared; not again when handed out"
        );
    }
    assert_eq!(made() - before, 3, "the kept ones were handed out");
    v.push_reset();
    assert_eq!(made() - before, 4, "none kept: a new one");
    assert_eq!((v.len(), v.kept()), (4, 0));
}

#[test]
fn kept_strings_keep_their_buffers() {
    let mut v: RecycleVec<(String, String)> = RecycleVec::new();
    for (name, value) in [("host", "example.com"), ("accept", "*/*")] {
        let (n, val) = v.push_reset();
        n.push_str(name);
        val.push_str(value);
    }
    let bufs: Vec<_> = v
        .iter()
        .map(|(n, val)| (n.as_ptr(), val.as_ptr()))
        .collect();
    v.reset();
    for (i, (name, value)) in [("Host", "example.org"), ("Accept", "text/*")]
        .into_iter()
        .enumerate()
    {
        let (n, val) = v.push_reset();
        assert!(n.is_empty() && val.is_empty());
        n.push_str(name);
        val.push_str(value);
        assert_eq!((n.as_ptr(), val.as_ptr()), bufs[i], "pair {i}");
    }
    assert_eq!(v[1].1, "text/*");
}

#[test]
fn truncate_resets_what_it_cuts_and_only_that() {
    let mut v = filled(4);
    v.truncate(2);
    assert_eq!(texts(&v), ["0", "1"]);
    assert!(
        v.iter().all(|p| p.resets == 0),
        "the live ones are untouched"
    );
    assert_eq!(v.kept(), 2);
    v.truncate(2);
    v.truncate(7);
    assert_eq!((v.len(), v.kept()), (2, 2), "not shorter: nothing happens");
    // The kept ones come back reset, once each.
    let p = v.push_reset();
    assert_eq!((p.text.as_str(), p.resets), ("", 1));
    v.truncate(0);
    assert_eq!((v.len(), v.kept()), (0, 4));
    let resets: Vec<_> = (0..4).map(|_| v.push_reset().resets).collect();
    // Elements 0, 1 and 3 were reset once; 2 twice (cut, handed out, cut).
    assert_eq!(resets, [1, 1, 2, 1]);
}

#[test]
fn a_panicking_reset_leaves_what_is_kept_reset() {
    let mut v = filled(3);
    v[1].panic_on_reset = true;
    let panicked = catch_unwind(AssertUnwindSafe(|| v.clear())).is_err();
    assert!(panicked);
    // Element 2 was reset and kept; element 1 panicked and stays live.
    assert_eq!((v.len(), v.kept()), (2, 1));
    assert_eq!(texts(&v), ["0", "1"]);
    v[1].panic_on_reset = false;
    v.clear();
    assert_eq!((v.len(), v.kept()), (0, 3));
    for _ in 0..3 {
        assert!(v.push_reset().text.is_empty());
    }
}

#[test]
fn pop_hands_the_element_over_and_leaves_the_kept_ones() {
    let mut v = filled(4);
    v.truncate(2); // "2" and "3" kept, reset
    let p = v.pop().unwrap();
    assert_eq!(
        (p.text.as_str(), p.resets),
        ("1", 0),
        "as it was: not reset"
    );
    assert_eq!((v.len(), v.kept()), (1, 2));
    assert_eq!(texts(&v), ["0"]);
    assert_eq!(v.pop().unwrap().text, "0");
    assert_eq!(v.pop(), None);
    assert_eq!((v.len(), v.kept()), (0, 2));
    // What is kept is still the reset pair.
    assert!((0..2).all(|_| v.push_reset().resets == 1));
    let mut empty: RecycleVec<Probe> = RecycleVec::new();
    assert_eq!(empty.pop(), None);
}

#[test]
fn push_takes_a_kept_place() {
    let mut v = filled(3);
    v.clear();
    v.push(Probe {
        text: "mine".into(),
        ..Probe::default()
    });
    assert_eq!((v.len(), v.kept()), (1, 2));
    assert_eq!(texts(&v), ["mine"]);
    v.clear();
    v.push(Probe::default());
    v.push(Probe::default());
    v.push(Probe::default());
    assert_eq!(
        (v.len(), v.kept()),
        (3, 0),
        "never more than it held at once"
    );
    v.push(Probe::default());
    assert_eq!((v.len(), v.kept()), (4, 0));
}

#[test]
fn shrink_kept_bounds_the_kept_elements() {
    let mut v = filled(10);
    v.truncate(3);
    v.shrink_kept(4);
    assert_eq!((v.len(), v.kept()), (3, 4));
    assert_eq!(texts(&v), ["0", "1", "2"], "live ones untouched");
    v.shrink_kept(100);
    assert_eq!(v.kept(), 4);
    v.shrink_kept(usize::MAX);
    assert_eq!(v.kept(), 4);
    v.shrink_kept(0);
    assert_eq!((v.len(), v.kept()), (3, 0));
    assert!(
        v.capacity() >= 10,
        "the vector's own buffer is left as it is"
    );
}

#[test]
fn clear_and_shrink_to_bounds_elements_and_buffer() {
    let mut v = filled(1000);
    v.clear_and_shrink_to(16);
    assert_eq!((v.len(), v.kept(), v.capacity()), (0, 16, 16));
    // Under the limit: the buffer and the elements stay as they are.
    let mut small = filled(3);
    let buf = small.as_ptr();
    let cap = small.capacity();
    small.clear_and_shrink_to(16);
    assert_eq!((small.kept(), small.capacity()), (3, cap));
    assert_eq!(small.push_reset() as *const Probe, buf);
    small.clear_and_shrink_to(0);
    assert_eq!((small.len(), small.kept(), small.capacity()), (0, 0, 0));
    let mut zst: RecycleVec<()> = RecycleVec::new();
    for _ in 0..10 {
        zst.push_reset();
    }
    zst.clear_and_shrink_to(2);
    assert_eq!((zst.len(), zst.kept()), (0, 2));
}

#[test]
fn shrink_to_attribute_bounds_a_field() {
    #[derive(recycler_derive::Recyclable, Default)]
    struct Message {
        #[recycle(shrink_to = 2)]
        tags: RecycleVec<String>,
        headers: RecycleVec<(String, String)>,
    }
    let mut m = Message::default();
    for _ in 0..5 {
        m.tags.push_reset().push_str("tag");
        m.headers.push_reset().0.push_str("name");
    }
    m.reset();
    assert_eq!((m.tags.len(), m.tags.kept()), (0, 2));
    assert_eq!((m.headers.len(), m.headers.kept()), (0, 5));
    assert_eq!(
        m.retained_bytes(),
        m.tags.retained_bytes() + m.headers.retained_bytes()
    );
}

#[test]
fn retained_bytes_counts_the_buffer_and_every_element() {
    let mut v: RecycleVec<String> = RecycleVec::with_capacity(4);
    v.push_reset().push_str(&"a".repeat(100));
    v.push_reset().push_str(&"b".repeat(50));
    let caps: usize = v.iter().map(String::capacity).sum();
    assert!(caps >= 150);
    let expected = v.capacity() * size_of::<String>() + caps;
    assert_eq!(v.retained_bytes(), expected);
    v.truncate(1);
    assert_eq!(v.retained_bytes(), expected, "the kept one still counts");
    v.reset();
    assert_eq!(v.retained_bytes(), expected);
    v.shrink_kept(1);
    assert_eq!(v.kept(), 1);
    assert_eq!(
        v.retained_bytes(),
        v.capacity() * size_of::<String>() + v.items[0].capacity(),
        "the dropped one no longer counts"
    );
}

#[test]
fn retained_bytes_saturates() {
    struct Huge;
    impl Recyclable for Huge {
        fn reset(&mut self) {}
        fn retained_bytes(&self) -> usize {
            usize::MAX / 2 + 1
        }
    }
    let v: RecycleVec<Huge> = [Huge, Huge, Huge].into_iter().collect();
    assert_eq!(v.retained_bytes(), usize::MAX);
    let zst: RecycleVec<()> = [(), ()].into_iter().collect();
    assert_eq!(zst.retained_bytes(), 0);
}

#[test]
fn slices_iterators_and_conversions_see_live_elements_only() {
    let mut v = filled(4);
    v.truncate(2);
    assert_eq!(v.as_slice().len(), 2);
    assert_eq!(v.as_mut_slice().len(), 2);
    assert_eq!(v.iter().count(), 2);
    for p in v.iter_mut() {
        p.text.push('!');
    }
    for p in &mut v {
        p.text.push('?');
    }
    assert_eq!((&v).into_iter().count(), 2);
    assert_eq!(texts(&v), ["0!?", "1!?"]);
    let r: &[Probe] = v.as_ref();
    assert_eq!(r.len(), 2);
    let m: &mut [Probe] = v.as_mut();
    m.reverse();
    let b: &[Probe] = v.borrow();
    assert_eq!(b[0].text, "1!?");
    let bm: &mut [Probe] = v.borrow_mut();
    bm.reverse();
    assert_eq!(v[0].text, "0!?");
    assert_eq!(v.first().map(|p| p.resets), Some(0));
    let owned: Vec<Probe> = v.into_iter().collect();
    assert_eq!(owned.len(), 2, "the kept ones are not moved out");
}

#[test]
fn extend_and_collect() {
    let mut v: RecycleVec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
    assert_eq!((v.len(), v.kept()), (3, 0));
    let bufs: Vec<_> = v.iter().map(|s| s.as_ptr()).collect();
    v.clear();
    v.extend(&["x".to_owned(), "y".to_owned()]);
    assert_eq!(v, ["x", "y"]);
    assert_eq!(v.kept(), 1);
    assert_eq!(
        v.iter().map(|s| s.as_ptr()).collect::<Vec<_>>(),
        bufs[..2],
        "cloned into the kept strings"
    );
    v.extend(&["z".to_owned(), "w".to_owned()]);
    assert_eq!(v, ["x", "y", "z", "w"]);
    assert_eq!(v[2].as_ptr(), bufs[2]);
    assert_eq!(v.kept(), 0);
    v.truncate(1);
    v.extend([
        "p".to_owned(),
        "q".to_owned(),
        "r".to_owned(),
        "s".to_owned(),
    ]);
    assert_eq!(v, ["x", "p", "q", "r", "s"]);
    assert_eq!(v.kept(), 0, "values took the kept places");
}

#[test]
fn debug_clone_eq_and_hash_see_live_elements_only() {
    let mut a = filled(3);
    a.truncate(1);
    let b = filled(1);
    assert_eq!(format!("{a:?}"), format!("{:?}", [&b[0]]));
    assert_eq!(a, b);
    let c = a.clone();
    assert_eq!((c.len(), c.kept()), (1, 0));
    assert_eq!(c, a);
    let s = RandomState::new();
    assert_eq!(s.hash_one(&a), s.hash_one(&b));
    assert_eq!(s.hash_one(&a), s.hash_one(a.as_slice()));
    assert_ne!(a, filled(2));

    let strings: RecycleVec<String> = ["a".to_owned()].into_iter().collect();
    assert!(strings == *["a"].as_slice());
    assert!(strings == ["a"].as_slice());
    assert!(strings == ["a"]);
    assert!(strings == vec!["a"]);
    assert!(strings != ["b"]);
}
