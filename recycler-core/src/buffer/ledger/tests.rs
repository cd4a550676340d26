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
fn grants_in_order_and_only_what_fits() {
    let ledger = Ledger::new(Some(100));
    ledger.charge(100).unwrap();
    let q = &ledger.waiters;
    let (a, wa) = waker();
    let (b, wb) = waker();
    let (c, wc) = waker();
    assert_eq!(q.join(&ledger, 60, Wake::Task(wa)), (0, 60));
    assert_eq!(q.join(&ledger, 30, Wake::Task(wb)), (1, 90));
    assert_eq!(q.join(&ledger, 10, Wake::Task(wc)), (2, 100));
    assert!(ledger.under_pressure());
    ledger.free(50); // 50 free: the first (60) does not fit, and holds up the rest
    assert_eq!((a.0.load(SeqCst), b.0.load(SeqCst)), (0, 0));
    ledger.free(10); // 60 free: the first fits, then nothing is left
    assert_eq!((a.0.load(SeqCst), b.0.load(SeqCst)), (1, 0));
    assert_eq!(ledger.allocated(), 100, "the grant is reserved");
    ledger.free(40); // 40: the second (30) and the third (10)
    assert_eq!((b.0.load(SeqCst), c.0.load(SeqCst)), (1, 1));
    assert_eq!(ledger.allocated(), 100);
    assert!(
        !ledger.under_pressure(),
        "all granted: two in the queue, none to serve"
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
    assert_eq!(q.join(&ledger, 50, Wake::Task(wb)), (1, 50));
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

/// What a release weighs: the first waiter not yet granted, and the
/// next one behind it (a wait for a growth takes no buffer).
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
    assert_eq!(q.first_for_buffer(), Some((60, 30)));
    ledger.free(60); // grants the first
    assert_eq!(q.first(), Some((1, 30)));
    assert_eq!(q.first_for_buffer(), Some((30, 10)));
    ledger.free(30); // and the second
    assert_eq!(q.first(), Some((2, 10)));
    assert_eq!(q.first_for_buffer(), None, "a growth's wait");
}

#[test]
fn the_first_leaving_serves_the_next() {
    let ledger = Ledger::new(Some(100));
    ledger.charge(90).unwrap();
    let q = &ledger.waiters;
    let (_, wa) = waker();
    let (b, wb) = waker();
    q.join(&ledger, 50, Wake::Task(wa));
    q.join(&ledger, 10, Wake::Task(wb));
    q.serve(&ledger);
    assert_eq!(b.0.load(SeqCst), 0, "behind the first, which does not fit");
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
