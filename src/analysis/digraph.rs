//! The dependency digraph of SPEC §7: a node per state, an edge i → j wherever `J_ij ≠ 0`
//! ("der(x_i) reads x_j"), self-loops where `J_ii ≠ 0`. The direction only fixes how cycles are
//! listed; a cycle's product of weights is the same read either way.
//!
//! The structure (CSR adjacency) is kept apart from the weights so that one enumeration of the
//! cycles can be weighed at several operating points at once.

/// A digraph in compressed sparse rows: the successors of `v` are
/// `targets[offsets[v]..offsets[v + 1]]`, sorted; an edge's index is its position there.
#[derive(Clone, Debug, PartialEq)]
pub struct Digraph {
    offsets: Vec<usize>,
    targets: Vec<usize>,
}

impl Digraph {
    /// The digraph on `n` nodes with these edges (duplicates are merged).
    pub fn from_edges(n: usize, edges: impl IntoIterator<Item = (usize, usize)>) -> Digraph {
        let mut edges: Vec<(usize, usize)> = edges.into_iter().collect();
        edges.sort_unstable();
        edges.dedup();
        let mut offsets = vec![0; n + 1];
        for &(from, _) in &edges {
            offsets[from + 1] += 1;
        }
        for v in 0..n {
            offsets[v + 1] += offsets[v];
        }
        let targets = edges.into_iter().map(|(_, to)| to).collect();
        Digraph { offsets, targets }
    }

    pub fn nodes(&self) -> usize {
        self.offsets.len() - 1
    }

    pub fn edges(&self) -> usize {
        self.targets.len()
    }

    /// The edge indices leaving `v`.
    pub fn out_edges(&self, v: usize) -> std::ops::Range<usize> {
        self.offsets[v]..self.offsets[v + 1]
    }

    pub fn target(&self, edge: usize) -> usize {
        self.targets[edge]
    }

    pub fn successors(&self, v: usize) -> &[usize] {
        &self.targets[self.out_edges(v)]
    }

    /// The index of edge `from → to`, if present.
    pub fn edge(&self, from: usize, to: usize) -> Option<usize> {
        let range = self.out_edges(from);
        let start = range.start;
        self.targets[range]
            .binary_search(&to)
            .ok()
            .map(|k| start + k)
    }

    /// Every edge as `(from, to)`, in index order.
    pub fn edge_list(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        (0..self.nodes()).flat_map(move |v| self.successors(v).iter().map(move |&w| (v, w)))
    }
}

/// The values of J at one operating point, laid on a digraph's edges: `ln|J_ij|` per edge
/// (products of hundreds of entries overflow a double; their logarithms add) and the diagonal
/// with its sign (a self-loop's bound depends on the sign of `J_ii`).
#[derive(Clone, Debug, PartialEq)]
pub struct PointWeights {
    pub log_abs: Vec<f64>,
    pub diagonal: Vec<f64>,
}

/// The digraph of the entries that are nonzero at one point at least, and each point's weights
/// on it. `points` holds J's structurally nonzero entries; one is an edge unless its value is
/// exactly 0.0 at every point (a product with a state that is 0 there, `x*y` at `y = 0`).
/// However small, a nonzero value is a dependency: an entry of 1e-7 beside one of 1e7 is a
/// coupling, and so is the rounding residue of a cancellation that is exact only on paper
/// (the half car's `2 k_f L_f − 2 k_r L_r` evaluates to 7e-15). An entry that is zero at a
/// point weighs `ln 0 = −∞` there: every cycle through it has product 0 at that point, hence
/// no bound from that point.
pub fn from_jacobian_values(
    n: usize,
    points: &[Vec<(usize, usize, f64)>],
) -> (Digraph, Vec<PointWeights>) {
    let nonzero = points
        .iter()
        .flatten()
        .filter(|&&(_, _, v)| v != 0.0)
        .map(|&(i, j, _)| (i, j));
    let graph = Digraph::from_edges(n, nonzero);
    let weights = points
        .iter()
        .map(|values| {
            let mut log_abs = vec![f64::NEG_INFINITY; graph.edges()];
            let mut diagonal = vec![0.0; n];
            for &(i, j, v) in values {
                if let Some(e) = graph.edge(i, j) {
                    log_abs[e] = v.abs().ln();
                }
                if i == j {
                    diagonal[i] = v;
                }
            }
            PointWeights { log_abs, diagonal }
        })
        .collect();
    (graph, weights)
}

/// Convenience for a dense matrix given by rows (tests, benchmarks, small hand-built cases).
pub fn from_dense(rows: &[Vec<f64>]) -> (Digraph, PointWeights) {
    let n = rows.len();
    let values: Vec<(usize, usize, f64)> = rows
        .iter()
        .enumerate()
        .flat_map(|(i, row)| row.iter().enumerate().map(move |(j, &v)| (i, j, v)))
        .filter(|&(_, _, v)| v != 0.0)
        .collect();
    let (graph, mut weights) = from_jacobian_values(n, &[values]);
    (graph, weights.remove(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_follow_nonzero_entries_and_zero_values_drop_out() {
        let (g, w) = from_jacobian_values(3, &[vec![(0, 0, -1.0), (0, 1, 2.0), (2, 1, 0.0)]]);
        assert_eq!(g.edge_list().collect::<Vec<_>>(), vec![(0, 0), (0, 1)]);
        assert_eq!(w[0].log_abs, vec![0.0, 2f64.ln()]);
        assert_eq!(w[0].diagonal, vec![-1.0, 0.0, 0.0]);
    }

    #[test]
    fn entries_many_decades_below_the_largest_are_edges() {
        let (g, w) = from_jacobian_values(2, &[vec![(0, 0, -1e7), (0, 1, 1e-7), (1, 0, 7e-15)]]);
        assert_eq!(
            g.edge_list().collect::<Vec<_>>(),
            vec![(0, 0), (0, 1), (1, 0)]
        );
        assert_eq!(w[0].log_abs[1], 1e-7f64.ln());
    }

    #[test]
    fn an_edge_zero_at_one_point_weighs_minus_infinity_there() {
        let (g, w) = from_jacobian_values(2, &[vec![(0, 1, 3.0)], vec![(0, 1, 0.0)]]);
        assert_eq!(g.edges(), 1);
        assert_eq!(w[1].log_abs, vec![f64::NEG_INFINITY]);
    }
}
