//! Cycle analysis and what is read off it (SPEC §§7–9): the dependency digraph of J, Johnson's
//! simple cycles streamed into per-state step bounds `h̄_i`, the stiffness and separability
//! indices, the separability map over α, a fast/slow partition and the parallelisable cycle
//! sets.
//!
//! The library works on numbers (J's nonzero values at one or more operating points); finding
//! operating points in a model is [`operating_point`].

pub mod bounds;
mod chains;
pub mod digraph;
pub mod indices;
pub mod johnson;
pub mod operating_point;
pub mod parallel;
pub mod partition;
pub mod pcs;
pub mod picture;
pub mod separability;

use bounds::{MinFold, StateBounds};
use digraph::{Digraph, PointWeights, from_jacobian_values};
use johnson::{Budget, Enumeration, Progress, enumerate_into};
use parallel::enumerate_parallel;

/// J's entries `(row, col, value)` at one operating point.
pub type Values = Vec<(usize, usize, f64)>;

/// The cycles of J's digraph and the bounds they give, worst case over the points.
#[derive(Clone, Debug)]
pub struct CycleAnalysis {
    pub graph: Digraph,
    pub enumeration: Enumeration,
    pub bounds: StateBounds,
}

/// Cycle analysis at one α over the operating points `points` (n states).
pub fn analyse(
    n: usize,
    points: &[Values],
    alpha: f64,
    budget: Budget,
    progress: &mut dyn FnMut(Progress),
) -> CycleAnalysis {
    analyse_grid(n, points, &[alpha], budget, progress)
}

/// Cycle analysis at every α of `alphas` in one enumeration: `bounds.at(k)` is `h̄` at
/// `alphas[k]`.
pub fn analyse_grid(
    n: usize,
    points: &[Values],
    alphas: &[f64],
    budget: Budget,
    progress: &mut dyn FnMut(Progress),
) -> CycleAnalysis {
    let (graph, weights) = from_jacobian_values(n, points);
    let layers = layers(&weights);
    let threads = cycle_threads(n);
    let parallel = (threads > 1)
        .then(|| {
            let new_fold = || MinFold::over_grid(alphas, n, &weights);
            enumerate_parallel(&graph, &layers, threads, budget, &new_fold, progress)
        })
        .flatten();
    let (enumeration, bounds) = match parallel {
        Some((enumeration, folds)) => {
            let bounds = folds
                .into_iter()
                .map(|f| f.bounds)
                .reduce(StateBounds::merge);
            (enumeration, bounds.expect("one fold per thread"))
        }
        None => {
            let mut fold = MinFold::over_grid(alphas, n, &weights);
            let enumeration = enumerate_into(&graph, &layers, budget, &mut fold, progress);
            (enumeration, fold.bounds)
        }
    };
    CycleAnalysis {
        graph,
        enumeration,
        bounds,
    }
}

/// Graphs from this many states up are searched on every core: below it, starting threads
/// costs more than it saves.
pub const PARALLEL_FROM_STATES: usize = 256;

/// How many threads an analysis uses: one when small, else the machine's cores (at most 8).
/// The bounds are minima and counts, the same in any order, so the result does not depend on
/// it; a cycle budget that runs out has the first cycles listed again on one thread, in the
/// order that makes them definite.
fn cycle_threads(n: usize) -> usize {
    if n < PARALLEL_FROM_STATES {
        return 1;
    }
    std::thread::available_parallelism().map_or(1, |c| c.get().min(8))
}

fn layers(weights: &[PointWeights]) -> Vec<&[f64]> {
    weights.iter().map(|w| w.log_abs.as_slice()).collect()
}
