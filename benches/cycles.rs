//! Cycle analysis (SPEC §7): Johnson's enumeration of J's simple cycles streamed into
//! the per-state bounds `h̄_i`.
//!
//! Graphs:
//! - the counterflow heat exchanger (`examples/heat_exchanger.mo`, 3N states) at N = 30 and
//!   N = 1000, J evaluated at the start values; it has exactly 5N + N(N−1)/2 simple cycles
//!   (585 and 504 500), the long ones through ~2/3·N states on average;
//! - the complete digraph on 10 nodes without self-loops: Σ_{k=2..10} C(10,k)(k−1)! =
//!   1 112 073 simple cycles, all short.
//!
//! Timed: `analyse` at α = 0.5 from J's values (digraph, weights, enumeration, fold) and the
//! enumeration alone (`johnson::enumerate` with one weight layer and a counting visitor).
//! Compiling the model and evaluating J are outside the timing. Before the timings, each graph
//! is enumerated once, untimed, to check its cycle count and to measure the memory of one
//! `analyse`: the peak of live heap bytes above the level before it (a counting allocator,
//! active only during that run) and the growth of peak resident memory (VmHWM, reset through
//! /proc/self/clear_refs first).
//!
//! `cargo bench --bench cycles` (see BENCHMARKS.md; `benches/networkx_cycles.py` is the
//! reference).

use std::alloc::{GlobalAlloc, Layout};
use std::hint::black_box;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, criterion_group, criterion_main};
use mocca::allocator::Allocator;
use mocca::analysis::digraph::from_jacobian_values;
use mocca::analysis::johnson::{Budget, enumerate};
use mocca::analysis::operating_point::Model;
use mocca::analysis::{Values, analyse};
use mocca::causal::{causal_form, initial_point};
use mocca::frontend::flatten_sources;
use mocca::jacobian::ode_jacobian;
use mocca::load;
use mocca::source::SourceMap;
use mocca::structure;

const ALPHA: f64 = 0.5;

/// The allocator the `mocca` binary runs with, counting live bytes and their peak while
/// `TRACKING` is set (one relaxed load per call otherwise, so the timings are unaffected).
struct Counting;

static TRACKING: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

fn grew(bytes: isize) {
    let now = LIVE.fetch_add(bytes, Relaxed) + bytes;
    PEAK.fetch_max(now, Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { Allocator.alloc(layout) };
        if TRACKING.load(Relaxed) && !p.is_null() {
            grew(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { Allocator.dealloc(ptr, layout) };
        if TRACKING.load(Relaxed) {
            LIVE.fetch_sub(layout.size() as isize, Relaxed);
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { Allocator.realloc(ptr, layout, new_size) };
        if TRACKING.load(Relaxed) && !p.is_null() {
            grew(new_size as isize - layout.size() as isize);
        }
        p
    }
}

mocca::install_allocator!(Counting = Counting);

/// A graph to analyse: states and J's values at one point, and its known cycle count.
struct Case {
    name: String,
    n: usize,
    values: Values,
    cycles: u64,
}

/// J of `examples/heat_exchanger.mo -p N=…` at its start values, compiled as `mocca cycles`
/// does (flatten, structure, causal form, symbolic Jacobian, evaluation).
fn heat_exchanger(volumes: usize) -> Case {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/heat_exchanger.mo");
    let mut sources = SourceMap::new();
    let ids = load::load_paths(&mut sources, std::slice::from_ref(&path)).expect("example");
    let params = [("N".to_string(), volumes.to_string())];
    let flat = flatten_sources(sources, &ids, None, &params).unwrap_or_else(|_| panic!("flattens"));
    let (mut dae, _) = structure::prepare(flat.dae).expect("index reduction");
    let s = structure::analyse(&dae).unwrap_or_else(|_| panic!("analyses"));
    let causal = causal_form(&mut dae, &s);
    let jacobian = ode_jacobian(&mut dae, &causal);
    let mut point = initial_point(&dae).expect("parameters");
    let model = Model {
        dae: &dae,
        causal: &causal,
        jacobian: &jacobian,
    };
    let values = model.values_at(&mut point).expect("J at the start values");
    let n = causal.states.len();
    assert_eq!(n, 3 * volumes);
    let v = volumes as u64;
    Case {
        name: format!("heat_exchanger_N={volumes}"),
        n,
        values,
        cycles: 5 * v + v * (v - 1) / 2,
    }
}

/// The complete digraph on `n` nodes without self-loops, with assorted negative weights.
fn complete(n: usize) -> Case {
    let values = (0..n)
        .flat_map(|i| (0..n).map(move |j| (i, j)))
        .filter(|(i, j)| i != j)
        .map(|(i, j)| (i, j, -(1.0 + ((7 * i + 3 * j) % 5) as f64)))
        .collect();
    // Σ_{k=2..n} C(n,k)(k−1)!
    let mut cycles = 0u64;
    for k in 2..=n as u64 {
        let choose = (1..=k).fold(1u64, |c, m| c * (n as u64 + 1 - m) / m);
        cycles += choose * (1..k).product::<u64>();
    }
    Case {
        name: format!("complete_K{n}"),
        n,
        values,
        cycles,
    }
}

/// A `kB` line of /proc/self/status.
fn status_kb(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// One untimed `analyse`: checks the cycle count and reports its peak heap (live bytes above
/// the level before it, analysis result included) and the growth of the peak resident set
/// across it (the peak is reset to the current RSS first, so the model's compilation does not
/// hide it).
fn check_and_measure(case: &Case) {
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let rss_before = status_kb("VmRSS:");
    let hwm_before = status_kb("VmHWM:");
    LIVE.store(0, Relaxed);
    PEAK.store(0, Relaxed);
    TRACKING.store(true, Relaxed);
    let began = Instant::now();
    let analysis = analyse(
        case.n,
        std::slice::from_ref(&case.values),
        ALPHA,
        Budget::default(),
        &mut |_| {},
    );
    let elapsed = began.elapsed();
    TRACKING.store(false, Relaxed);
    let heap_peak = PEAK.load(Relaxed);
    let hwm_after = status_kb("VmHWM:");
    assert!(analysis.enumeration.complete());
    assert_eq!(analysis.enumeration.cycles, case.cycles, "{}", case.name);
    let node_visits: u64 = analysis.bounds.cycles_through.iter().sum();
    let h_min = analysis
        .bounds
        .h_bar
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min);
    let h_sum: f64 = analysis.bounds.h_bar.iter().filter(|h| h.is_finite()).sum();
    let growth = match (hwm_before, hwm_after, reset) {
        (Some(b), Some(a), true) => format!("{} kB", a.saturating_sub(b)),
        _ => "unavailable".to_string(),
    };
    eprintln!(
        "{}: {} states, {} edges, {} cycles (expected {}), {} cycle–state incidences \
         (mean length {:.1}), min h̄ = {:.6e}, Σ finite h̄ = {:.6e}; one analyse in {:.3?}; \
         peak heap {:.1} kB; VmRSS before {} kB, VmHWM growth {}",
        case.name,
        case.n,
        analysis.graph.edges(),
        analysis.enumeration.cycles,
        case.cycles,
        node_visits,
        node_visits as f64 / analysis.enumeration.cycles as f64,
        h_min,
        h_sum,
        elapsed,
        heap_peak as f64 / 1024.0,
        rss_before.unwrap_or(0),
        growth,
    );
}

fn cycles(c: &mut Criterion) {
    let cases = [heat_exchanger(30), heat_exchanger(1000), complete(10)];
    for case in &cases {
        check_and_measure(case);
    }

    let mut group = c.benchmark_group("cycles_analyse_alpha0.5");
    for case in &cases {
        configure(&mut group, case);
        let points = std::slice::from_ref(&case.values);
        group.bench_function(&case.name, |b| {
            b.iter(|| analyse(case.n, points, ALPHA, Budget::default(), &mut |_| {}))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("cycles_enumerate_one_layer");
    for case in &cases {
        configure(&mut group, case);
        let (graph, weights) = from_jacobian_values(case.n, std::slice::from_ref(&case.values));
        let layers = [weights[0].log_abs.as_slice()];
        group.bench_function(&case.name, |b| {
            b.iter(|| {
                let mut count = 0u64;
                let mut last = 0.0;
                let e = enumerate(
                    &graph,
                    &layers,
                    Budget::default(),
                    &mut |c| {
                        count += 1;
                        last = c.weight_sums[0];
                    },
                    &mut |_| {},
                );
                assert_eq!(e.cycles, case.cycles);
                black_box((count, last))
            })
        });
    }
    group.finish();
}

/// Small samples for the large graphs so the whole bench takes a few minutes.
fn configure(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    case: &Case,
) {
    if case.cycles > 100_000 {
        group.sampling_mode(SamplingMode::Flat);
        group.sample_size(10);
        group.warm_up_time(Duration::from_secs(1));
        group.measurement_time(Duration::from_secs(10));
    } else {
        group.sampling_mode(SamplingMode::Auto);
        group.sample_size(50);
        group.warm_up_time(Duration::from_secs(1));
        group.measurement_time(Duration::from_secs(3));
    }
}

criterion_group!(benches, cycles);
criterion_main!(benches);
