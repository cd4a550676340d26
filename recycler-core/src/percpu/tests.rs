//! The per-CPU cache on one thread, pinned to a CPU where the test needs
//! its stack; the races are in `tests/tests/percpu.rs` and
//! `tests/tests/loom_percpu.rs`.

use std::sync::atomic::Ordering::Relaxed;

use super::PerCpu;

/// Pins the calling thread to `cpu`; `false` if the system refuses (a CPU
/// it does not have, or not Linux).
fn pin(cpu: usize) -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: a zeroed `cpu_set_t` is an empty set; `CPU_SET` writes
        // inside it (it checks the index); `sched_setaffinity` on the
        // calling thread (0) reads `size_of::<cpu_set_t>()` bytes of it.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) == 0
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = cpu;
        false
    }
}

/// Both kinds of cache, `slots` slots of `capacity`.
fn both(slots: usize, capacity: usize) -> [PerCpu<u32>; 2] {
    [
        PerCpu::with_slots(slots, capacity),
        PerCpu::fallback(slots, capacity),
    ]
}

#[test]
fn a_pinned_thread_gets_back_what_it_pushed_lifo() {
    assert!(pin(0));
    for cache in both(super::configured_cpus(), 3) {
        for i in 0..3 {
            cache.push(Box::new(i)).unwrap();
        }
        assert_eq!(cache.len(0), 3);
        assert_eq!(cache.push(Box::new(9)).map_err(|b| *b), Err(9), "full");
        let got: Vec<u32> = (0..3).map(|_| *cache.pop().unwrap()).collect();
        assert_eq!(got, [2, 1, 0]);
        assert!(cache.pop().is_none(), "empty");
        // Every operation ran as a section (no lock), or on the fallback.
        assert_eq!(cache.slow_ops(), 0, "{cache:?}");
        assert_eq!(cache.fences(), 0);
    }
}

#[test]
fn steal_takes_from_the_top_within_the_room_given() {
    assert!(pin(0));
    for cache in both(super::configured_cpus(), 8) {
        for i in 0..5 {
            cache.push(Box::new(i)).unwrap();
        }
        let mut into = Vec::with_capacity(2);
        assert_eq!(cache.steal(0, 10, &mut into), 2, "no more than the room");
        assert_eq!(into.iter().map(|b| **b).collect::<Vec<_>>(), [4, 3]);
        into.reserve(10);
        assert_eq!(cache.steal(0, 1, &mut into), 1, "no more than asked");
        assert_eq!(cache.steal(1, 1, &mut into), 0, "slot 1 is empty");
        assert_eq!(cache.len(0), 2);
        let fences = u64::from(cache.uses_rseq()) * 2;
        assert_eq!(cache.fences(), fences, "a fence per steal with rseq");
        let rest: Vec<u32> = cache.drain().into_iter().map(|b| *b).collect();
        assert_eq!(rest, [1, 0]);
        assert_eq!(cache.idle(), 0);
        // The stack is open again: the fast path serves it.
        cache.push(Box::new(7)).unwrap();
        assert_eq!(cache.pop().map(|b| *b), Some(7));
        assert_eq!(cache.slow_ops(), 0, "{cache:?}");
    }
}

#[test]
fn drain_fences_once_for_every_slot() {
    let cache: PerCpu<u32> = PerCpu::with_slots(4, 4);
    if !cache.uses_rseq() {
        return;
    }
    // Filled through the locked path (a thread on no particular CPU).
    for slot in 0..4 {
        cache.locked(slot, |s| {
            let item = Box::into_raw(Box::new(slot as u32)).cast();
            assert!(s.push(item));
        });
    }
    let fences = cache.fences();
    let mut all: Vec<u32> = cache.drain().into_iter().map(|b| *b).collect();
    all.sort_unstable();
    assert_eq!(all, [0, 1, 2, 3]);
    assert_eq!(cache.fences(), fences + 1);
}

#[test]
fn a_cpu_without_a_slot_takes_the_locked_path() {
    // One slot; CPU 1 has none.
    if !pin(1) {
        return;
    }
    let cache: PerCpu<u32> = PerCpu::with_slots(1, 4);
    cache.push(Box::new(5)).unwrap();
    assert_eq!(cache.len(0), 1, "slot cpu % slots");
    assert_eq!(cache.pop().map(|b| *b), Some(5));
    let expected = u64::from(cache.uses_rseq()) * 2;
    assert_eq!(cache.slow_ops(), expected, "{cache:?}");
    // Each locked access was the first of its run: a fence each.
    assert_eq!(cache.fences(), expected);
}

/// A push that finds its slot shut waits for the stealer's lock and works
/// under it, and the stealer hands the slot over still fenced: one fence
/// for both.
#[test]
fn a_section_that_finds_its_slot_shut_works_under_the_lock_unfenced() {
    let cache: PerCpu<u32> = PerCpu::with_slots(super::configured_cpus(), 4);
    if !cache.uses_rseq() || !pin(0) {
        return;
    }
    std::thread::scope(|s| {
        cache.locked(0, |_| {
            let pusher = s.spawn(|| {
                assert!(pin(0));
                cache.push(Box::new(1)).unwrap();
            });
            // The pusher's section sees `shut` and counts itself in before
            // it waits for this lock.
            while cache.slots.shut(0).load(Relaxed) < 2 {
                std::thread::yield_now();
            }
            assert_eq!(cache.slow_ops(), 1);
            pusher
        });
    });
    assert_eq!(cache.fences(), 1, "{cache:?}");
    assert_eq!(cache.len(0), 1);
    assert_eq!(cache.slots.shut(0).load(Relaxed), 0, "reopened");
    assert!(!*cache.gates[0].lock(), "unfenced when the last one left");
    assert_eq!(cache.pop().map(|b| *b), Some(1));
    assert_eq!(cache.slow_ops(), 1);
}

/// With an `rseq` area and the `membarrier` command for it, the cache runs
/// sections unless the environment turns them off.
#[test]
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn runs_sections_where_the_process_can() {
    let off = std::env::var_os(crate::rseq::NO_RSEQ).is_some_and(|v| !v.is_empty() && v != "0");
    // SAFETY: `membarrier(QUERY, 0, 0)` reads nothing of ours.
    let mask = unsafe { libc::syscall(libc::SYS_membarrier, 0, 0, 0) };
    let can = crate::cpu::rseq_offset().is_some() && mask >= 0 && mask & 0x180 == 0x180;
    let cache: PerCpu<u8> = PerCpu::new(1);
    assert_eq!(cache.uses_rseq(), can && !off, "{cache:?}, mask {mask:#x}");
    assert!(!PerCpu::<u8>::fallback(1, 1).uses_rseq());
}

#[test]
fn drops_what_it_holds() {
    use std::sync::Arc;
    let token = Arc::new(());
    for cache in [PerCpu::with_slots(2, 4), PerCpu::fallback(2, 4)] {
        for _ in 0..3 {
            cache.push(Box::new(Arc::clone(&token))).unwrap();
        }
        drop(cache);
        assert_eq!(Arc::strong_count(&token), 1);
    }
}

#[test]
fn served_counts_sections_and_the_locked_path() {
    assert!(pin(0));
    for cache in both(super::configured_cpus(), 8) {
        for i in 0..3 {
            cache.push(Box::new(i)).unwrap();
        }
        assert!(cache.pop().is_some());
        assert_eq!(cache.served(), (1, 3), "{cache:?}");
        // A steal is a locked access: it folds the sections' counts into
        // the books, and what it takes is not a pop.
        let mut into = Vec::with_capacity(1);
        assert_eq!(cache.steal(0, 1, &mut into), 1);
        assert_eq!(cache.served(), (1, 3), "{cache:?}");
        cache.push(Box::new(7)).unwrap();
        assert!(cache.pop().is_some());
        assert!(cache.pop().is_some());
        assert!(cache.pop().is_none());
        assert_eq!(cache.served(), (3, 4), "{cache:?}");
        // A take from every slot, then more sections.
        cache.push(Box::new(8)).unwrap();
        assert_eq!(cache.drain().len(), 1);
        cache.push(Box::new(9)).unwrap();
        assert_eq!(cache.served(), (3, 6), "{cache:?}");
    }
}
