//! Matching and SCC algorithms against brute force on small random graphs, and on chains long
//! enough to break recursive implementations.

use mocca::structure::matching::{Bipartite, hopcroft_karp};
use mocca::structure::tarjan::strongly_connected;
use proptest::prelude::*;

/// Maximum matching size by trying every assignment (exponential; tiny graphs only).
fn brute_force_matching(rows: &[Vec<usize>], unknowns: usize) -> usize {
    fn go(rows: &[Vec<usize>], used: &mut Vec<bool>, e: usize) -> usize {
        if e == rows.len() {
            return 0;
        }
        let mut best = go(rows, used, e + 1);
        for &u in &rows[e] {
            if !used[u] {
                used[u] = true;
                best = best.max(1 + go(rows, used, e + 1));
                used[u] = false;
            }
        }
        best
    }
    go(rows, &mut vec![false; unknowns], 0)
}

fn bipartite() -> impl Strategy<Value = (Vec<Vec<usize>>, usize)> {
    (1usize..7, 1usize..7).prop_flat_map(|(n_eq, n_unk)| {
        let row = proptest::collection::btree_set(0..n_unk, 0..=n_unk)
            .prop_map(|s| s.into_iter().collect());
        (proptest::collection::vec(row, n_eq), Just(n_unk))
    })
}

proptest! {
    #[test]
    fn hopcroft_karp_is_maximum_and_consistent((rows, unknowns) in bipartite()) {
        let g = Bipartite::from_rows(&rows, unknowns);
        let m = hopcroft_karp(&g);
        prop_assert_eq!(m.size(), brute_force_matching(&rows, unknowns));
        for (e, &u) in m.of_equation.iter().enumerate() {
            if u != usize::MAX {
                prop_assert!(rows[e].contains(&u), "matched along a non-edge");
                prop_assert_eq!(m.of_unknown[u], e);
            }
        }
    }

    #[test]
    fn tarjan_agrees_with_reachability(edges in proptest::collection::vec((0usize..8, 0usize..8), 0..24)) {
        let n = 8;
        let mut succ = vec![Vec::new(); n];
        for &(a, b) in &edges {
            succ[a].push(b);
        }
        let mut reach = vec![vec![false; n]; n];
        for (a, row) in reach.iter_mut().enumerate() {
            row[a] = true;
        }
        for _ in 0..n {
            for &(a, b) in &edges {
                for row in reach.iter_mut() {
                    if row[a] {
                        row[b] = true;
                    }
                }
            }
        }
        let comps = strongly_connected(n, &|v, out: &mut Vec<usize>| { out.clear(); out.extend(&succ[v]); });
        let mut comp_of = vec![usize::MAX; n];
        for (k, c) in comps.iter().enumerate() {
            for &v in c {
                prop_assert_eq!(comp_of[v], usize::MAX, "node in two components");
                comp_of[v] = k;
            }
        }
        for a in 0..n {
            prop_assert!(comp_of[a] != usize::MAX, "node in no component");
            for b in 0..n {
                // Same component iff mutually reachable.
                prop_assert_eq!(comp_of[a] == comp_of[b], reach[a][b] && reach[b][a]);
                // Evaluation order: what a node reaches (needs) comes no later.
                if reach[a][b] {
                    prop_assert!(comp_of[b] <= comp_of[a]);
                }
            }
        }
    }
}

#[test]
fn million_node_chain_does_not_overflow() {
    let n = 1_000_000;
    // Equation e mentions unknowns e and e+1: a single long augmenting structure.
    let rows: Vec<Vec<usize>> = (0..n)
        .map(|e| if e + 1 < n { vec![e + 1, e] } else { vec![e] })
        .collect();
    let m = hopcroft_karp(&Bipartite::from_rows(&rows, n));
    assert!(m.is_perfect());
    let comps = strongly_connected(n, &|v, out: &mut Vec<usize>| {
        out.clear();
        if v + 1 < n {
            out.push(v + 1);
        }
    });
    assert_eq!(comps.len(), n);
    assert_eq!(comps[0], vec![n - 1], "the chain's end is evaluated first");
    let cycle = strongly_connected(n, &|v, out: &mut Vec<usize>| {
        out.clear();
        out.push((v + 1) % n);
    });
    assert_eq!(cycle.len(), 1);
}
