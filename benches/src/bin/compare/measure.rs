//! Timing: calibrate an iteration count, take interleaved samples, keep the
//! median; and [`Bench`], what a workload measures through.

use std::time::Duration;

use recycler_benches::GlobalAllocator;

/// One implementation of a workload: runs `iters` operations and returns how
/// long they took.
pub(crate) struct Contender<'a> {
    pub(crate) name: &'static str,
    pub(crate) run: Box<dyn FnMut(u64) -> Duration + 'a>,
}

impl<'a> Contender<'a> {
    pub(crate) fn new(name: &'static str, run: impl FnMut(u64) -> Duration + 'a) -> Self {
        Self {
            name,
            run: Box::new(run),
        }
    }
}

/// How long to measure.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    /// Time one sample should take.
    pub(crate) sample: Duration,
    /// Samples per contender.
    pub(crate) samples: usize,
    /// The short run of `--quick` (W7 then stops at a smaller size).
    pub(crate) quick: bool,
}

/// The nanoseconds per operation of each sample, and their median.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Measured {
    pub(crate) name: String,
    pub(crate) samples_ns: Vec<f64>,
    pub(crate) median_ns: f64,
}

/// Measures every contender: first finds, for each, an iteration count that
/// takes about `budget.sample`, then takes the samples round-robin (so slow
/// drifts of a shared machine hit all contenders alike) and keeps medians.
/// `progress` is called after each sample.
pub(crate) fn measure(
    contenders: &mut [Contender<'_>],
    budget: Budget,
    mut progress: impl FnMut(&'static str),
) -> Vec<Measured> {
    let iters: Vec<u64> = contenders
        .iter_mut()
        .map(|c| calibrate(&mut c.run, budget.sample))
        .collect();
    let mut samples: Vec<Vec<f64>> = vec![Vec::with_capacity(budget.samples); contenders.len()];
    for _ in 0..budget.samples {
        for (i, c) in contenders.iter_mut().enumerate() {
            let took = (c.run)(iters[i]);
            samples[i].push(took.as_secs_f64() * 1e9 / iters[i] as f64);
            progress(c.name);
        }
    }
    contenders
        .iter()
        .zip(samples)
        .map(|(c, s)| Measured {
            name: c.name.to_string(),
            median_ns: median(&s),
            samples_ns: s,
        })
        .collect()
}

/// What a workload measures through: the budget, the progress callback, and
/// whether this is a counting pass (nothing runs; the samples that would be
/// taken are counted, for the progress bar).
pub(crate) struct Bench<'a> {
    pub(crate) budget: Budget,
    /// The global allocator of this process.
    pub(crate) alloc: GlobalAllocator,
    /// Whether this process measures every contender of a workload that
    /// runs under every allocator (W1's peers and W1's floors run only in
    /// compare's own process), or only those whose results depend on the
    /// allocator.
    pub(crate) primary: bool,
    step: &'a mut dyn FnMut(&str),
    /// `Some(samples so far)` in a counting pass.
    counted: Option<usize>,
}

impl<'a> Bench<'a> {
    /// A bench that measures, calling `step` after every sample.
    pub(crate) fn new(
        budget: Budget,
        alloc: GlobalAllocator,
        primary: bool,
        step: &'a mut dyn FnMut(&str),
    ) -> Self {
        Self {
            budget,
            alloc,
            primary,
            step,
            counted: None,
        }
    }

    /// A bench that only counts the samples a run would take.
    pub(crate) fn counting(
        budget: Budget,
        alloc: GlobalAllocator,
        primary: bool,
        step: &'a mut dyn FnMut(&str),
    ) -> Self {
        Self {
            counted: Some(0),
            ..Self::new(budget, alloc, primary, step)
        }
    }

    /// Whether this is a counting pass.
    pub(crate) fn is_counting(&self) -> bool {
        self.counted.is_some()
    }

    /// The samples counted so far (zero when measuring).
    pub(crate) fn counted(&self) -> usize {
        self.counted.unwrap_or(0)
    }

    /// Measures `contenders` (see [`measure`]); `label` names them in the
    /// progress line. A counting pass runs nothing and returns NaN medians.
    pub(crate) fn measure(
        &mut self,
        label: &str,
        contenders: &mut [Contender<'_>],
    ) -> Vec<Measured> {
        if let Some(n) = &mut self.counted {
            *n += contenders.len() * self.budget.samples;
            return contenders
                .iter()
                .map(|c| Measured {
                    name: c.name.to_string(),
                    samples_ns: Vec::new(),
                    median_ns: f64::NAN,
                })
                .collect();
        }
        let alloc = self.alloc;
        let step = &mut *self.step;
        measure(contenders, self.budget, |c| {
            step(&format!("{label} [{alloc}] {c}"))
        })
    }

    /// `reps` samples of `f` by hand (for workloads that cannot calibrate,
    /// W7): each sample is `f()` in nanoseconds; a counting pass runs
    /// nothing and returns a NaN median.
    pub(crate) fn samples(
        &mut self,
        label: &str,
        name: &'static str,
        reps: usize,
        mut f: impl FnMut() -> f64,
    ) -> Measured {
        if let Some(n) = &mut self.counted {
            *n += reps;
            return Measured {
                name: name.to_string(),
                samples_ns: Vec::new(),
                median_ns: f64::NAN,
            };
        }
        let alloc = self.alloc;
        let samples: Vec<f64> = (0..reps)
            .map(|_| {
                let ns = f();
                (self.step)(&format!("{label} [{alloc}] {name}"));
                ns
            })
            .collect();
        Measured {
            name: name.to_string(),
            median_ns: median(&samples),
            samples_ns: samples,
        }
    }
}

/// An iteration count whose run takes about `target` (after one warm-up run).
fn calibrate(run: &mut dyn FnMut(u64) -> Duration, target: Duration) -> u64 {
    let mut iters = 64u64;
    run(iters); // warm up: first touches, thread-local setup, pool filling
    loop {
        let took = run(iters);
        if took >= target / 4 || iters >= 1 << 34 {
            let scale = target.as_secs_f64() / took.as_secs_f64().max(1e-9);
            return ((iters as f64 * scale) as u64).clamp(64, 1 << 36);
        }
        iters *= 4;
    }
}

/// The median of `xs` (the mean of the middle two for an even count).
pub(crate) fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn measures_every_contender() {
        let mut contenders = vec![
            Contender::new("fast", Duration::from_nanos),
            Contender::new("slow", |n| Duration::from_nanos(3 * n)),
        ];
        let budget = Budget {
            sample: Duration::from_micros(100),
            samples: 3,
            quick: true,
        };
        let mut order = Vec::new();
        let m = measure(&mut contenders, budget, |c| order.push(c));
        // Interleaved: sample 1 of every contender, then sample 2, ...
        assert_eq!(order, ["fast", "slow", "fast", "slow", "fast", "slow"]);
        assert_eq!(m[0].median_ns, 1.0);
        assert_eq!(m[1].median_ns, 3.0);
    }

    #[test]
    fn a_counting_pass_runs_nothing_and_counts_the_samples() {
        let ran = std::cell::Cell::new(0);
        let mut contenders = vec![
            Contender::new("a", |n| {
                ran.set(ran.get() + 1);
                Duration::from_nanos(n)
            }),
            Contender::new("b", |n| {
                ran.set(ran.get() + 1);
                Duration::from_nanos(n)
            }),
        ];
        let budget = Budget {
            sample: Duration::from_micros(100),
            samples: 3,
            quick: true,
        };
        let mut steps = 0;
        {
            let mut step = |_: &str| steps += 1;
            let mut bench = Bench::counting(budget, GlobalAllocator::System, true, &mut step);
            assert!(bench.is_counting());
            let m = bench.measure("x", &mut contenders);
            let by_hand = bench.samples("x", "c", 4, || 1.0);
            assert_eq!(bench.counted(), 2 * 3 + 4);
            assert!(m.iter().all(|m| m.median_ns.is_nan()) && by_hand.median_ns.is_nan());
        }
        assert_eq!(ran.get(), 0);
        assert_eq!(steps, 0);

        let mut steps = Vec::new();
        {
            let mut step = |what: &str| steps.push(what.to_string());
            let mut bench = Bench::new(budget, GlobalAllocator::System, true, &mut step);
            let m = bench.measure("x", &mut contenders);
            assert_eq!(bench.counted(), 0);
            assert_eq!(m[1].median_ns, 1.0);
        }
        assert_eq!(steps.len(), 6);
        assert_eq!(steps[0], "x [system] a");
    }
}
