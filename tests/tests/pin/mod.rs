//! CPU pinning for the handoff tests of striped mode (`alloc.rs`,
//! `zero_alloc.rs`): a get on a CPU whose cache is empty makes a fresh
//! object rather than fence into a CPU that holds less than a quarter of a
//! cache (design notes, striped mode), so a producer and a consumer that
//! migrate between CPUs allocate now and then by design; pinned to one
//! CPU, they share its cache.

/// The calling thread's CPU affinity.
pub(crate) fn affinity() -> libc::cpu_set_t {
    // SAFETY: a zeroed `cpu_set_t` is an empty set, which
    // `sched_getaffinity` fills for the calling thread (0).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let rc = libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set);
        assert_eq!(rc, 0, "sched_getaffinity");
        set
    }
}

/// Sets the calling thread's CPU affinity to `set`.
pub(crate) fn set_affinity(set: &libc::cpu_set_t) {
    // SAFETY: `set` is a valid `cpu_set_t`, which `sched_setaffinity`
    // reads for the calling thread (0).
    let rc = unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), set) };
    assert_eq!(rc, 0, "sched_setaffinity");
}

/// The set holding only the first CPU of `set`.
pub(crate) fn first_cpu_of(set: &libc::cpu_set_t) -> libc::cpu_set_t {
    let cpu = (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `CPU_ISSET` reads inside `set` for `cpu < CPU_SETSIZE`.
        .find(|&cpu| unsafe { libc::CPU_ISSET(cpu, set) })
        .expect("the thread may run on some CPU");
    // SAFETY: a zeroed `cpu_set_t` is an empty set; `CPU_SET` writes inside
    // it for `cpu < CPU_SETSIZE`.
    unsafe {
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut one);
        one
    }
}
