use super::*;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

/// The ledger of the tests (a release would grant its waiter a `Box<u8>`).
type Ledger = super::Ledger<Box<u8>>;

#[test]
fn limit_is_hard() {
    let ledger = Ledger::new(Some(100));
    assert_eq!(ledger.charge(60), Ok(()));
    assert_eq!(ledger.charge(41), Err(60));
    assert_eq!(ledger.charge(40), Ok(()));
    ledger.free(100);
    assert_eq!(ledger.allocated(), 0);
    assert_eq!(ledger.charge(u64::MAX), Err(0), "no overflow");
    let unlimited = Ledger::new(None);
    assert_eq!(unlimited.charge(u64::MAX / 2), Ok(()));
    assert_eq!(unlimited.limit(), None);
}

#[test]
fn the_waiting_bit_is_not_counted() {
    let ledger = Ledger::new(Some(100));
    assert!(!ledger.under_pressure());
    ledger.set_waiting(true);
    assert!(ledger.under_pressure());
    assert_eq!(ledger.allocated(), 0);
    assert_eq!(ledger.charge(100), Ok(()));
    assert_eq!(ledger.charge(1), Err(100), "the bit is not bytes");
    assert!(ledger.under_pressure(), "reserving keeps the bit");
    ledger.free(40);
    assert_eq!(ledger.allocated(), 60);
    assert!(ledger.under_pressure(), "freeing keeps the bit");
    ledger.set_waiting(false);
    assert!(!ledger.under_pressure());
    assert_eq!(ledger.allocated(), 60);
}

#[test]
fn a_limit_above_the_bit_is_clamped_below_it() {
    let ledger = Ledger::new(Some(u64::MAX - 1));
    assert_eq!(ledger.charge(BYTES), Ok(()));
    assert_eq!(ledger.charge(1), Err(BYTES));
    assert!(!ledger.under_pressure());
}

/// Counts its wake-ups.
#[derive(Default)]
struct Count(AtomicUsize);

impl std::task::Wake for Count {
    fn wake(self: std::sync::Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

fn waker() -> (std::sync::Arc<Count>, Waker) {
    let count = std::sync::Arc::new(Count::default());
    (std::sync::Arc::clone(&count), Waker::from(count))
}

#[test]
fn grants_in_order_what_fits_passing_what_does_not() {
    let ledger = Ledger::new(Some(100));
    ledger.charge(100).unwrap();
    let q = &ledger.waiters;
    let (a, wa) = waker();
    let (b, wb) = waker();
    let (c, wc) = waker();
    assert_eq!(q.join(&ledger, 60, Wake::Task(wa)), 0);
    assert_eq!(q.join(&ledger, 30, Wake::Task(wb)), 1);
    assert_eq!(q.join(&ledger, 10, Wake::Task(wc)), 2);
    assert!(ledger.under_pressure());
    ledger.free(50); // 50 free: the first (60) does not fit; the others pass it
    assert_eq!(
        (a.0.load(SeqCst), b.0.load(SeqCst), c.0.load(SeqCst)),
        (0, 1, 1)
    );
    assert_eq!(ledger.allocated(), 90, "the grants are charged");
    ledger.free(20); // 30 free: not yet the first's 60
    assert_eq!(a.0.load(SeqCst), 0);
    ledger.free(30); // 60 free: the first fits
    assert_eq!(a.0.load(SeqCst), 1);
    assert_eq!(ledger.allocated(), 100);
    assert!(
        !ledger.under_pressure(),
        "all granted: three in the queue, none to serve"
    );
    assert!(matches!(q.poll(&ledger, 1, None), Polled::Granted(None)));
    assert!(
        matches!(q.leave(&ledger, 0), Some((60, None))),
        "granted, not yet taken"
    );
    assert!(matches!(q.leave(&ledger, 2), Some((10, None))));
    assert_eq!(q.len(), 0);
    assert!(!ledger.under_pressure());
    assert!(matches!(q.poll(&ledger, 2, None), Polled::Missing));
}

/// A waiter passed `PASSES` times is closed: nothing behind it, and no
/// request outside the queue, is served before it any more, and the
/// memory freed goes to it first.
#[test]
fn a_waiter_passed_as_often_as_it_may_be_is_served_first() {
    let ledger = Ledger::new(Some(100));
    ledger.charge(100).unwrap();
    let q = &ledger.waiters;
    let (big, wbig) = waker();
    q.join(&ledger, 80, Wake::Task(wbig));
    // Half the passes by waiters behind it, half by requests that do not
    // wait.
    for n in 0..u64::from(PASSES) {
        let (small, wsmall) = waker();
        if n % 2 == 0 {
            let id = q.join(&ledger, 10, Wake::Task(wsmall));
            ledger.free(10);
            assert_eq!(small.0.load(SeqCst), 1, "pass {n}: served past the first");
            // Its grant, taken: it holds the 10 bytes.
            assert!(matches!(q.leave(&ledger, id), Some((10, None))));
        } else {
            ledger.free(10);
            assert_eq!(ledger.charge_unqueued(10), Ok(()), "pass {n}");
        }
    }
    assert_eq!(big.0.load(SeqCst), 0);
    assert_eq!(ledger.allocated(), 100);
    let (small, wsmall) = waker();
    q.join(&ledger, 10, Wake::Task(wsmall));
    ledger.free(10);
    assert_eq!(small.0.load(SeqCst), 0, "closed: no more passing");
    assert_eq!(ledger.charge_unqueued(10), Err(90), "nor from outside");
    ledger.free(70); // 80 free: the first, then not the second
    assert_eq!((big.0.load(SeqCst), small.0.load(SeqCst)), (1, 0));
    ledger.free(10);
    assert_eq!(small.0.load(SeqCst), 1, "then the one behind it");
    assert_eq!(ledger.allocated(), 100);
    assert_eq!(ledger.charge_unqueued(1), Err(100), "at the limit");
}

/// Any number of waiters, of any size, under the largest limit: nothing
/// is summed, so nothing overflows (the queue summed the bytes wanted,
/// and three waiters of `isize::MAX` bytes carried past `u64::MAX`).
#[test]
fn huge_waiters_under_the_largest_limit_overflow_nothing() {
    let max = isize::MAX as u64;
    let ledger = Ledger::new(Some(max));
    ledger.charge(4096).unwrap();
    let q = &ledger.waiters;
    let counts: Vec<_> = (0..3)
        .map(|_| {
            let (n, w) = waker();
            q.join(&ledger, max, Wake::Task(w));
            n
        })
        .collect();
    ledger.free(4096); // the first fits, alone
    let woken: Vec<_> = counts.iter().map(|n| n.0.load(SeqCst)).collect();
    assert_eq!(woken, [1, 0, 0]);
    assert!(matches!(q.leave(&ledger, 0), Some((m, None)) if m == max));
    ledger.free(max); // its grant given back: the second's turn
    assert_eq!(counts[1].0.load(SeqCst), 1);
    assert!(q.leave(&ledger, 2).is_none());
    assert!(matches!(q.leave(&ledger, 1), Some((m, None)) if m == max));
    ledger.free(max);
    assert_eq!((ledger.allocated(), q.len()), (0, 0));
    assert!(!ledger.under_pressure());
}

/// The bit says "a waiter not yet granted": a granted waiter that never
/// comes back for its grant (a leaked future) does not keep it set; a
/// new waiter behind it sets it again, and its leaving clears it.
#[test]
fn the_bit_follows_the_waiters_not_yet_granted() {
    let ledger = Ledger::new(Some(100));
    ledger.charge(100).unwrap();
    let q = &ledger.waiters;
    let (_, wa) = waker();
    let (_, wb) = waker();
    let (c, wc) = waker();
    q.join(&ledger, 60, Wake::Task(wa)); // never polled again: a ghost
    assert!(ledger.under_pressure());
    ledger.free(60);
    assert!(!ledger.under_pressure(), "granted: nobody left to serve");
    assert_eq!(q.len(), 1, "the ghost keeps its grant, and no more");
    assert_eq!(q.join(&ledger, 50, Wake::Task(wb)), 1);
    assert!(ledger.under_pressure(), "joined with none ungranted ahead");
    assert!(q.leave(&ledger, 1).is_none());
    assert!(!ledger.under_pressure(), "the last ungranted one left");
    q.join(&ledger, 40, Wake::Task(wc));
    assert!(ledger.under_pressure());
    ledger.free(40);
    assert_eq!(c.0.load(SeqCst), 1);
    assert!(!ledger.under_pressure());
    assert_eq!(
        ledger.allocated(),
        100,
        "60 for the ghost, 40 for the third"
    );
}

/// Panics when woken.
struct Panicky;

impl std::task::Wake for Panicky {
    fn wake(self: std::sync::Arc<Self>) {
        panic!("waker failure (test)");
    }
}

/// A waker that panics is caught where it is woken: the free that woke
/// it returns normally, the waiters behind are served all the same, and
/// the waiter keeps its grant.
#[test]
fn a_panicking_waker_neither_escapes_nor_stops_the_serving() {
    let ledger = Ledger::new(Some(100));
    ledger.charge(100).unwrap();
    let q = &ledger.waiters;
    let (b, wb) = waker();
    q.join(
        &ledger,
        30,
        Wake::Task(Waker::from(std::sync::Arc::new(Panicky))),
    );
    q.join(&ledger, 30, Wake::Task(wb));
    ledger.free(60); // grants both; the first waker panics
    assert_eq!(b.0.load(SeqCst), 1, "the second is served all the same");
    assert!(!ledger.under_pressure());
    assert!(matches!(q.poll(&ledger, 0, None), Polled::Granted(None)));
    assert!(matches!(q.poll(&ledger, 1, None), Polled::Granted(None)));
    assert_eq!(ledger.allocated(), 100);
}

/// What a thread's idle buffers are granted to: the first waiter not yet
/// granted, if it takes a buffer (a wait for a growth does not).
#[test]
fn the_first_and_the_next_not_yet_granted() {
    let ledger = Ledger::new(Some(100));
    ledger.charge(100).unwrap();
    let q = &ledger.waiters;
    let (_, wa) = waker();
    let (_, wb) = waker();
    let (_, wc) = waker();
    assert_eq!((q.first(), q.first_for_buffer()), (None, None));
    q.join(&ledger, 60, Wake::Task(wa));
    q.join(&ledger, 30, Wake::Task(wb));
    q.join_for(&ledger, 10, Wake::Task(wc), false);
    assert_eq!(q.first(), Some((0, 60)));
    assert_eq!(q.first_for_buffer(), Some(60));
    ledger.free(60); // grants the first
    assert_eq!(q.first(), Some((1, 30)));
    assert_eq!(q.first_for_buffer(), Some(30));
    ledger.free(30); // and the second
    assert_eq!(q.first(), Some((2, 10)));
    assert_eq!(q.first_for_buffer(), None, "a growth's wait");
}

/// A released buffer goes to the first waiter if it serves it; else to a
/// waiter behind that it serves, unless its bytes freed would serve the
/// first, or the first is closed.
#[test]
fn a_released_buffer_passes_a_first_waiter_it_cannot_serve() {
    let ledger = Ledger::new(Some(100));
    ledger.charge(100).unwrap();
    let q = &ledger.waiters;
    let (a, wa) = waker();
    let (b, wb) = waker();
    q.join(&ledger, 60, Wake::Task(wa));
    q.join(&ledger, 20, Wake::Task(wb));
    assert_eq!(q.target_for_buffer(&ledger, 20), Some(20));
    assert!(q.grant_buffer(&ledger, 20, Box::new(2)).is_ok());
    assert_eq!((a.0.load(SeqCst), b.0.load(SeqCst)), (0, 1));
    assert!(matches!(q.poll(&ledger, 1, None), Polled::Granted(Some(_))));
    ledger.free(50); // 50 free: a buffer of 10 freed would serve the first
    let (c, wc) = waker();
    q.join(&ledger, 10, Wake::Task(wc));
    assert_eq!(
        q.target_for_buffer(&ledger, 10),
        None,
        "freed, it serves the first"
    );
    assert!(q.grant_buffer(&ledger, 10, Box::new(1)).is_err());
    ledger.charge(20).unwrap(); // 30 free: freed, it would not
    assert_eq!(q.target_for_buffer(&ledger, 10), Some(10));
    q.lock().entries[0].passed = PASSES; // closed
    assert_eq!(q.target_for_buffer(&ledger, 10), None, "closed");
    ledger.free(20); // 50 free
    assert_eq!((a.0.load(SeqCst), c.0.load(SeqCst)), (0, 0), "closed");
    ledger.free(10); // 60 free: the first, and no more
    assert_eq!((a.0.load(SeqCst), c.0.load(SeqCst)), (1, 0));
    ledger.free(10);
    assert_eq!(c.0.load(SeqCst), 1, "then the one behind it");
}

#[test]
fn a_closed_first_leaving_serves_the_next() {
    let ledger = Ledger::new(Some(100));
    ledger.charge(90).unwrap();
    let q = &ledger.waiters;
    let (_, wa) = waker();
    let (b, wb) = waker();
    q.join(&ledger, 50, Wake::Task(wa));
    q.lock().entries[0].passed = PASSES; // closed
    q.join(&ledger, 10, Wake::Task(wb));
    q.serve(&ledger);
    assert_eq!(
        b.0.load(SeqCst),
        0,
        "behind the first, closed, which does not fit"
    );
    assert!(q.leave(&ledger, 0).is_none());
    assert_eq!(b.0.load(SeqCst), 1, "served when the first left");
    assert_eq!(ledger.allocated(), 100);
}

#[test]
fn a_new_waker_replaces_the_old_outside_the_lock() {
    let ledger = Ledger::new(Some(10));
    ledger.charge(10).unwrap();
    let q = &ledger.waiters;
    let (a, wa) = waker();
    let (b, wb) = waker();
    q.join(&ledger, 10, Wake::Task(wa.clone()));
    assert!(matches!(q.poll(&ledger, 0, Some(&wa)), Polled::Waiting));
    assert!(matches!(q.poll(&ledger, 0, Some(&wb)), Polled::Waiting));
    ledger.free(10);
    assert_eq!(
        (a.0.load(SeqCst), b.0.load(SeqCst)),
        (0, 1),
        "the latest waker"
    );
}
