//! Johnson's enumeration and the bound folds against a brute-force oracle on random small
//! digraphs, and cycle counts known in closed form.

use mocca::analysis::bounds::{MinFold, StateBounds, cycle_bound};
use mocca::analysis::digraph::{Digraph, from_jacobian_values};
use mocca::analysis::johnson::{Budget, Cycle, CycleSink, enumerate, enumerate_into};
use mocca::analysis::parallel::enumerate_parallel;
use mocca::analysis::{Values, analyse, analyse_grid};
use proptest::prelude::*;

/// Every simple cycle, each listed once starting from its least node, by trying every path of
/// distinct nodes above the start (exponential; fine for 7 nodes).
fn brute_force_cycles(n: usize, edge: &dyn Fn(usize, usize) -> bool) -> Vec<Vec<usize>> {
    let mut found = Vec::new();
    for start in 0..n {
        let mut paths = vec![vec![start]];
        while let Some(path) = paths.pop() {
            let last = *path.last().unwrap();
            if edge(last, start) {
                found.push(path.clone());
            }
            for next in start + 1..n {
                if edge(last, next) && !path.contains(&next) {
                    let mut longer = path.clone();
                    longer.push(next);
                    paths.push(longer);
                }
            }
        }
    }
    found.sort();
    found
}

/// Per state: the smallest bound of the cycles through it, straight from SPEC §7's formulas on
/// the entries themselves (no logarithms).
fn brute_force_bounds(n: usize, j: &[Vec<f64>], cycles: &[Vec<usize>], alpha: f64) -> Vec<f64> {
    let mut h = vec![f64::INFINITY; n];
    for c in cycles {
        let len = c.len();
        let bound = if len == 1 {
            let d = j[c[0]][c[0]];
            if d < 0.0 {
                (1.0 + alpha) / -d
            } else {
                alpha / d
            }
        } else {
            let product: f64 = (0..len).map(|k| j[c[k]][c[(k + 1) % len]]).product();
            alpha.powf(1.0 / len as f64) * product.abs().powf(-1.0 / len as f64)
        };
        for &v in c {
            h[v] = h[v].min(bound);
        }
    }
    h
}

fn sparse(j: &[Vec<f64>]) -> Values {
    let mut out = Vec::new();
    for (r, row) in j.iter().enumerate() {
        for (c, &v) in row.iter().enumerate() {
            if v != 0.0 {
                out.push((r, c, v));
            }
        }
    }
    out
}

fn close(a: f64, b: f64) -> bool {
    (a.is_infinite() && b.is_infinite()) || (a - b).abs() <= 1e-10 * b.abs()
}

/// A random n×n matrix (n ≤ 7) with about a third of the entries nonzero, diagonal included,
/// magnitudes 0.1 to 10 of either sign.
fn matrix() -> impl Strategy<Value = Vec<Vec<f64>>> {
    (1usize..=7).prop_flat_map(|n| {
        let entry = prop_oneof![
            2 => Just(0.0),
            1 => (0.1f64..10.0, any::<bool>()).prop_map(|(m, neg)| if neg { -m } else { m }),
        ];
        proptest::collection::vec(proptest::collection::vec(entry, n), n)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn johnson_lists_exactly_the_brute_force_cycles(j in matrix()) {
        let n = j.len();
        let (graph, _) = from_jacobian_values(n, &[sparse(&j)]);
        let mut listed = Vec::new();
        let e = enumerate(&graph, &[], Budget::default(), &mut |c| listed.push(c.nodes.to_vec()), &mut |_| {});
        listed.sort();
        let expected = brute_force_cycles(n, &|a, b| j[a][b] != 0.0);
        prop_assert!(e.complete());
        prop_assert_eq!(e.cycles as usize, expected.len());
        prop_assert_eq!(listed, expected);
    }

    #[test]
    fn per_state_minima_match_the_brute_force_for_every_alpha(j in matrix(), alpha in 0.01f64..1.0) {
        let n = j.len();
        let cycles = brute_force_cycles(n, &|a, b| j[a][b] != 0.0);
        let expected = brute_force_bounds(n, &j, &cycles, alpha);
        let a = analyse(n, &[sparse(&j)], alpha, Budget::default(), &mut |_| {});
        let alphas = [1.0, alpha, 0.2];
        let grid = analyse_grid(n, &[sparse(&j)], &alphas, Budget::default(), &mut |_| {});
        for (v, &want) in expected.iter().enumerate() {
            prop_assert!(close(a.bounds.h_bar[v], want), "state {}: {} vs {}", v, a.bounds.h_bar[v], want);
            let through = cycles.iter().filter(|c| c.contains(&v)).count() as u64;
            prop_assert_eq!(a.bounds.cycles_through[v], through);
            prop_assert_eq!(grid.bounds.cycles_through[v], through);
        }
        for (k, &at) in alphas.iter().enumerate() {
            let expected = brute_force_bounds(n, &j, &cycles, at);
            for (v, (&got, &want)) in grid.bounds.at(k).iter().zip(&expected).enumerate() {
                prop_assert!(close(got, want), "α = {}, state {}", at, v);
            }
        }
    }

    #[test]
    fn several_points_give_the_worst_case_of_each(j1 in matrix(), seed in any::<u64>(), alpha in 0.01f64..1.0) {
        // A second point with the same pattern, some entries rescaled and some zeroed.
        let n = j1.len();
        let mut j2 = j1.clone();
        for (k, v) in j2.iter_mut().flatten().enumerate() {
            match (seed >> (k % 60)) & 3 {
                0 => *v = 0.0,
                1 => *v *= 3.0,
                _ => {}
            }
        }
        let both = analyse(n, &[sparse(&j1), sparse(&j2)], alpha, Budget::default(), &mut |_| {});
        let one = analyse(n, &[sparse(&j1)], alpha, Budget::default(), &mut |_| {});
        let two = analyse(n, &[sparse(&j2)], alpha, Budget::default(), &mut |_| {});
        for v in 0..n {
            let worst = one.bounds.h_bar[v].min(two.bounds.h_bar[v]);
            prop_assert!(close(both.bounds.h_bar[v], worst), "state {}", v);
        }
    }

    #[test]
    fn a_budget_leaves_every_state_outside_the_incomplete_set_exact(j in matrix(), keep in 0u64..20) {
        let n = j.len();
        let full = analyse(n, &[sparse(&j)], 0.5, Budget::default(), &mut |_| {});
        let cut = analyse(n, &[sparse(&j)], 0.5, Budget { max_cycles: Some(keep), max_time: None }, &mut |_| {});
        prop_assert_eq!(cut.enumeration.cycles, keep.min(full.enumeration.cycles));
        prop_assert_eq!(cut.enumeration.complete(), keep >= full.enumeration.cycles);
        prop_assert_eq!(
            cut.enumeration.starts_done + cut.enumeration.incomplete.len(),
            cut.enumeration.starts_total
        );
        for v in 0..n {
            if !cut.enumeration.incomplete.contains(&v) {
                prop_assert_eq!(cut.bounds.h_bar[v], full.bounds.h_bar[v]);
            }
        }
    }

    /// Shared among threads, the start nodes still give every cycle once, and the merged
    /// folds the very minima and counts of one thread.
    #[test]
    fn the_parallel_enumeration_folds_to_the_sequential_bounds(j in matrix(), threads in 2usize..5, alpha in 0.01f64..1.0) {
        let n = j.len();
        let (graph, weights) = from_jacobian_values(n, &[sparse(&j)]);
        let layers = [weights[0].log_abs.as_slice()];
        let mut one = MinFold::new(alpha, n, &weights);
        let sequential = enumerate_into(&graph, &layers, Budget::default(), &mut one, &mut |_| {});
        let new_fold = || MinFold::new(alpha, n, &weights);
        let (parallel, folds) = enumerate_parallel(&graph, &layers, threads, Budget::default(), &new_fold, &mut |_| {})
            .expect("unbudgeted");
        prop_assert_eq!(folds.len(), threads);
        let merged = folds.into_iter().map(|f| f.bounds).reduce(StateBounds::merge).unwrap();
        prop_assert_eq!(parallel, sequential);
        prop_assert_eq!(merged, one.bounds);
    }

    /// With a cycle budget the parallel search completes exactly when one thread would: when
    /// the graph has no more cycles than the budget allows.
    #[test]
    fn the_parallel_enumeration_completes_within_a_cycle_budget_only(j in matrix(), threads in 2usize..5, keep in 0u64..30) {
        let n = j.len();
        let (graph, weights) = from_jacobian_values(n, &[sparse(&j)]);
        let layers = [weights[0].log_abs.as_slice()];
        let budget = Budget { max_cycles: Some(keep), max_time: None };
        let mut one = MinFold::new(0.5, n, &weights);
        let sequential = enumerate_into(&graph, &layers, budget, &mut one, &mut |_| {});
        let new_fold = || MinFold::new(0.5, n, &weights);
        let parallel = enumerate_parallel(&graph, &layers, threads, budget, &new_fold, &mut |_| {});
        match parallel {
            Some((parallel, _)) => prop_assert_eq!(parallel, sequential),
            None => prop_assert!(!sequential.complete()),
        }
    }

    /// The fold settles bounds lazily as nodes leave the search path (or the tail of replayed
    /// cycles); stopped by the budget or not, it must hold what folding each listed cycle into
    /// each of its nodes gives: the same counts, the same bounds up to rounding.
    #[test]
    fn the_lazy_fold_equals_the_eager_fold_of_the_cycles_listed(j in matrix(), keep in 0u64..30, alpha in 0.01f64..1.0) {
        let n = j.len();
        let (graph, weights) = from_jacobian_values(n, &[sparse(&j)]);
        let layers = [weights[0].log_abs.as_slice()];
        let budget = Budget { max_cycles: Some(keep), max_time: None };
        let mut listed = Vec::new();
        enumerate(&graph, &layers, budget, &mut |c| listed.push((c.nodes.to_vec(), c.weight_sums[0])), &mut |_| {});
        let mut h_bar = vec![f64::INFINITY; n];
        let mut through = vec![0u64; n];
        for (nodes, lp) in &listed {
            let bound = cycle_bound(alpha, nodes.len(), *lp, weights[0].diagonal[nodes[0]]);
            for &v in nodes {
                h_bar[v] = h_bar[v].min(bound);
                through[v] += 1;
            }
        }
        let mut fold = MinFold::new(alpha, n, &weights);
        enumerate_into(&graph, &layers, budget, &mut fold, &mut |_| {});
        // Equal up to rounding: a replayed cycle's log-product is summed in another order.
        for (lazy, eager) in fold.bounds.h_bar.iter().zip(&h_bar) {
            prop_assert!(close(*lazy, *eager), "{lazy} against {eager}");
        }
        prop_assert_eq!(fold.bounds.cycles_through, through);
    }

    /// Replaying remembered chains hands over exactly the cycles walking would find, in the
    /// same order (so budgets cut at the same cycle), with the same weights up to rounding.
    #[test]
    fn replayed_cycles_are_the_walked_ones_in_order(j in matrix(), keep in 0u64..40) {
        let n = j.len();
        let (graph, weights) = from_jacobian_values(n, &[sparse(&j)]);
        assert_replay_lists_the_walked_cycles(&graph, &weights[0].log_abs, Some(keep));
        assert_replay_lists_the_walked_cycles(&graph, &weights[0].log_abs, None);
    }

    /// The same on larger graphs shaped like the heat exchanger (two chains running opposite
    /// ways, joined through a third at every rung), where replays are long and nest, with
    /// random edges added that make the search block and unblock.
    #[test]
    fn replayed_cycles_are_the_walked_ones_on_perturbed_ladders(
        rungs in 2usize..9,
        extra in proptest::collection::vec((0usize..27, 0usize..27), 0..6),
        keep in 0u64..200,
    ) {
        let n = 3 * rungs;
        let mut edges = ladder(rungs);
        edges.extend(extra.into_iter().map(|(a, b)| (a % n, b % n)));
        let graph = Digraph::from_edges(n, edges);
        let weights: Vec<f64> = (0..graph.edges()).map(|e| ((e * 7919) % 97) as f64 / 13.0).collect();
        assert_replay_lists_the_walked_cycles(&graph, &weights, Some(keep));
        assert_replay_lists_the_walked_cycles(&graph, &weights, None);
    }
}

/// The heat exchanger's digraph with `rungs` volumes: a_i → a_{i−1}, a_i ↔ w_i, w_i ↔ b_{N−i+1},
/// b_j → b_{j−1} (a = 0.., w = N.., b = 2N..).
fn ladder(rungs: usize) -> Vec<(usize, usize)> {
    let (a, w, b) = (|i: usize| i, |i: usize| rungs + i, |i: usize| 2 * rungs + i);
    let mut edges = Vec::new();
    for i in 0..rungs {
        edges.extend([
            (a(i), w(i)),
            (w(i), a(i)),
            (w(i), b(rungs - 1 - i)),
            (b(rungs - 1 - i), w(i)),
        ]);
        if i > 0 {
            edges.extend([(a(i), a(i - 1)), (b(i), b(i - 1))]);
        }
    }
    edges
}

/// A sink that takes tails and lists each cycle's nodes in order with its weight.
struct Listing(Vec<(Vec<usize>, f64)>);

impl CycleSink for Listing {
    fn cycle(&mut self, cycle: Cycle<'_>) {
        self.0
            .push((cycle.members().collect(), cycle.weight_sums[0]));
    }

    fn takes_tails(&self) -> bool {
        true
    }
}

fn assert_replay_lists_the_walked_cycles(graph: &Digraph, weights: &[f64], keep: Option<u64>) {
    let budget = Budget {
        max_cycles: keep,
        max_time: None,
    };
    let mut walked = Vec::new();
    let plain = enumerate(
        graph,
        &[weights],
        budget,
        &mut |c| walked.push((c.nodes.to_vec(), c.weight_sums[0])),
        &mut |_| {},
    );
    let mut replayed = Listing(Vec::new());
    let with_tails = enumerate_into(graph, &[weights], budget, &mut replayed, &mut |_| {});
    assert_eq!(plain, with_tails);
    assert_eq!(walked.len(), replayed.0.len());
    for ((w, wl), (r, rl)) in walked.iter().zip(&replayed.0) {
        assert_eq!(w, r);
        assert!(
            (wl - rl).abs() <= 1e-12 * wl.abs().max(1.0),
            "{wl} against {rl}"
        );
    }
}

fn count(graph: &Digraph) -> u64 {
    enumerate(graph, &[], Budget::default(), &mut |_| {}, &mut |_| {}).cycles
}

fn binomial(n: u64, k: u64) -> u64 {
    (0..k).fold(1, |acc, i| acc * (n - i) / (i + 1))
}

#[test]
fn complete_digraphs_have_the_closed_form_count() {
    for n in 2..=8u64 {
        let edges = (0..n as usize).flat_map(|a| {
            (0..n as usize)
                .filter(move |&b| b != a)
                .map(move |b| (a, b))
        });
        let g = Digraph::from_edges(n as usize, edges);
        let expected: u64 = (2..=n)
            .map(|k| binomial(n, k) * (1..k).product::<u64>())
            .sum();
        assert_eq!(count(&g), expected, "K_{n}");
    }
}

#[test]
fn a_directed_ring_has_one_cycle_and_a_bidirectional_one_has_n_plus_two() {
    let n = 50;
    let ring = Digraph::from_edges(n, (0..n).map(|i| (i, (i + 1) % n)));
    assert_eq!(count(&ring), 1);
    // Both directions: the two long cycles and one 2-cycle per neighbour pair.
    let both = Digraph::from_edges(n, (0..n).flat_map(|i| [(i, (i + 1) % n), ((i + 1) % n, i)]));
    assert_eq!(count(&both), n as u64 + 2);
}

#[test]
fn min_fold_and_cycle_bound_agree_on_a_long_cycle_in_log_space() {
    // A 300-ring of entries 1e3: the product overflows a double, the bound is α^(1/300)·1e-3.
    let n = 300;
    let values: Values = (0..n).map(|i| (i, (i + 1) % n, 1e3)).collect();
    let (graph, weights) = from_jacobian_values(n, &[values]);
    let mut fold = MinFold::new(0.5, n, &weights);
    let layers = [weights[0].log_abs.as_slice()];
    enumerate_into(&graph, &layers, Budget::default(), &mut fold, &mut |_| {});
    let expected = 0.5f64.powf(1.0 / 300.0) * 1e-3;
    assert!(fold.bounds.h_bar.iter().all(|&h| close(h, expected)));
    assert!(close(
        cycle_bound(0.5, 300, 300.0 * 1e3f64.ln(), 0.0),
        expected
    ));
    let mut grid = MinFold::over_grid(&[1.0, 0.5], n, &weights);
    enumerate_into(&graph, &layers, Budget::default(), &mut grid, &mut |_| {});
    assert!(grid.bounds.at(0).iter().all(|&h| close(h, 1e-3)));
    assert!(grid.bounds.at(1).iter().all(|&h| close(h, expected)));
}

/// J's pattern of the counterflow heat exchanger with `n` volumes per stream (states a, w, b;
/// 5n + n(n−1)/2 simple cycles), with assorted values.
fn heat_exchanger_pattern(n: usize) -> Values {
    let (a, w, b) = (|i: usize| i, |i: usize| n + i, |i: usize| 2 * n + i);
    let value = |k: usize| -(1.0 + (k % 7) as f64 * 0.37);
    let mut out = Vec::new();
    for i in 0..n {
        let mirror = n - 1 - i;
        for (k, (r, c)) in [
            (a(i), a(i)),
            (a(i), w(i)),
            (w(i), w(i)),
            (w(i), a(i)),
            (w(i), b(mirror)),
            (b(i), b(i)),
            (b(i), w(mirror)),
        ]
        .into_iter()
        .enumerate()
        {
            out.push((r, c, value(7 * i + k)));
        }
        if i > 0 {
            out.push((a(i), a(i - 1), 2.0));
            out.push((b(i), b(i - 1), 3.0));
        }
    }
    out
}

#[test]
fn a_large_analysis_runs_on_several_threads_with_the_sequential_result() {
    let volumes = 100;
    let n = 3 * volumes;
    assert!(n >= mocca::analysis::PARALLEL_FROM_STATES);
    let values = heat_exchanger_pattern(volumes);
    let analysis = analyse(
        n,
        std::slice::from_ref(&values),
        0.5,
        Budget::default(),
        &mut |_| {},
    );
    let (graph, weights) = from_jacobian_values(n, &[values]);
    let layers = [weights[0].log_abs.as_slice()];
    let mut one = MinFold::new(0.5, n, &weights);
    let e = enumerate_into(&graph, &layers, Budget::default(), &mut one, &mut |_| {});
    let v = volumes as u64;
    assert_eq!(e.cycles, 5 * v + v * (v - 1) / 2);
    assert_eq!(analysis.enumeration, e);
    assert_eq!(analysis.bounds, one.bounds);
}

#[test]
fn a_large_grid_analysis_runs_on_several_threads_with_the_sequential_result() {
    let volumes = 100;
    let n = 3 * volumes;
    let values = heat_exchanger_pattern(volumes);
    let points = std::slice::from_ref(&values);
    let alphas = [0.1, 0.5, 1.0];
    let parallel = analyse_grid(n, points, &alphas, Budget::default(), &mut |_| {});
    // A budget that is never reached keeps the search on one thread.
    let one_thread = Budget {
        max_cycles: Some(u64::MAX),
        max_time: None,
    };
    let sequential = analyse_grid(n, points, &alphas, one_thread, &mut |_| {});
    assert_eq!(parallel.enumeration.cycles, sequential.enumeration.cycles);
    assert!(parallel.enumeration.complete() && sequential.enumeration.complete());
    assert_eq!(parallel.bounds, sequential.bounds);
    let one = analyse(n, points, 0.5, Budget::default(), &mut |_| {});
    assert_eq!(parallel.bounds.at(1), one.bounds.h_bar.as_slice());
}
