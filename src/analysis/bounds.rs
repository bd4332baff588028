//! Cycle gains and step-size bounds (SPEC §7, items 3–5), and the fold that turns a stream of
//! cycles into per-state bounds `h̄_i`: [`MinFold`], for one α or a grid of them in one pass
//! (the separability map's sweep lists the cycles once), each cycle's bound parked and settled
//! into its states' minima as they leave the search.

use super::digraph::PointWeights;
use super::johnson::{Cycle, CycleSink};

/// The largest h with `|μ_c(h)| ≤ α` for one cycle (SPEC §7, item 4). `log_abs_product` is
/// `ln|Π J_ij|` (−∞ when an entry is zero at this point); `diagonal` is `J_ii` when the cycle is
/// a self-loop on i. `+∞` means no bound.
pub fn cycle_bound(alpha: f64, len: usize, log_abs_product: f64, diagonal: f64) -> f64 {
    if len == 1 {
        return self_loop_bound(alpha, diagonal);
    }
    if log_abs_product == f64::NEG_INFINITY {
        return f64::INFINITY;
    }
    ((alpha.ln() - log_abs_product) / len as f64).exp()
}

/// `|1 + h J_ii| ≤ α` for `J_ii < 0` gives `h ≤ (1 + α)/|J_ii|`; `|h J_ii| ≤ α` for `J_ii > 0`
/// gives `h ≤ α/J_ii`; `J_ii = 0` is no cycle.
pub fn self_loop_bound(alpha: f64, diagonal: f64) -> f64 {
    if diagonal < 0.0 {
        (1.0 + alpha) / -diagonal
    } else if diagonal > 0.0 {
        alpha / diagonal
    } else {
        f64::INFINITY
    }
}

/// Per state: the smallest bound of the cycles through it (worst case over the operating
/// points), for each α of a grid, and how many cycles pass through it.
#[derive(Clone, Debug, PartialEq)]
pub struct StateBounds {
    /// `h̄` per α, α-major: for a single α, `h_bar[i]` is state i's; for a grid, see
    /// [`StateBounds::at`].
    pub h_bar: Vec<f64>,
    pub cycles_through: Vec<u64>,
}

impl StateBounds {
    fn new(states: usize, alphas: usize) -> StateBounds {
        StateBounds {
            h_bar: vec![f64::INFINITY; states * alphas],
            cycles_through: vec![0; states],
        }
    }

    /// `h̄` of every state at the `k`-th α of the grid.
    pub fn at(&self, k: usize) -> &[f64] {
        let n = self.cycles_through.len();
        &self.h_bar[k * n..(k + 1) * n]
    }

    /// The bounds of two disjoint sets of cycles together.
    pub fn merge(mut self, other: StateBounds) -> StateBounds {
        for (h, o) in self.h_bar.iter_mut().zip(other.h_bar) {
            *h = h.min(o);
        }
        for (c, o) in self.cycles_through.iter_mut().zip(other.cycles_through) {
            *c += o;
        }
        self
    }
}

/// Folds cycles into [`StateBounds`] for a grid of α (one pass for all of them). A cycle is
/// the whole search path (and the tail, if replayed), so its bounds and count are parked at
/// the path's top depth (and the tail's top) and settle into a node as it leaves, passing on to
/// the depth below: O(grid) per cycle, however long.
pub struct MinFold<'w> {
    alphas: Vec<f64>,
    points: &'w [PointWeights],
    path: Parked,
    tail: Parked,
    /// One cycle's bound per α, kept to reuse the allocation.
    bound: Vec<f64>,
    pub bounds: StateBounds,
}

impl<'w> MinFold<'w> {
    /// The fold for one α.
    pub fn new(alpha: f64, n: usize, points: &'w [PointWeights]) -> MinFold<'w> {
        MinFold::over_grid(&[alpha], n, points)
    }

    pub fn over_grid(alphas: &[f64], n: usize, points: &'w [PointWeights]) -> MinFold<'w> {
        MinFold {
            alphas: alphas.to_vec(),
            points,
            path: Parked::new(alphas.len()),
            tail: Parked::new(alphas.len()),
            bound: vec![f64::INFINITY; alphas.len()],
            bounds: StateBounds::new(n, alphas.len()),
        }
    }
}

/// Per position of a stack (the search path or the tail): per α the smallest bound, and the
/// number, of the cycles through it and every position below that are not yet settled.
struct Parked {
    alphas: usize,
    /// `bounds[position * alphas + k]`.
    bounds: Vec<f64>,
    counts: Vec<u64>,
}

impl Parked {
    fn new(alphas: usize) -> Parked {
        Parked {
            alphas,
            bounds: Vec::new(),
            counts: Vec::new(),
        }
    }

    fn park(&mut self, top: usize, bound: &[f64]) {
        if self.counts.len() <= top {
            self.counts.resize(top + 1, 0);
            self.bounds.resize((top + 1) * self.alphas, f64::INFINITY);
        }
        let slot = &mut self.bounds[top * self.alphas..(top + 1) * self.alphas];
        for (parked, &b) in slot.iter_mut().zip(bound) {
            *parked = parked.min(b);
        }
        self.counts[top] += 1;
    }

    /// The node at `position` leaves: what is parked there settles into it and passes on down.
    fn settle(&mut self, position: usize, node: usize, bounds: &mut StateBounds) {
        let count = match self.counts.get(position) {
            Some(&count) if count > 0 => count,
            _ => return,
        };
        let n = bounds.cycles_through.len();
        bounds.cycles_through[node] += count;
        self.counts[position] = 0;
        let first = position * self.alphas;
        for k in 0..self.alphas {
            let b = std::mem::replace(&mut self.bounds[first + k], f64::INFINITY);
            let h = &mut bounds.h_bar[k * n + node];
            *h = h.min(b);
            if position > 0 {
                let below = &mut self.bounds[first - self.alphas + k];
                *below = below.min(b);
            }
        }
        if position > 0 {
            self.counts[position - 1] += count;
        }
    }
}

impl CycleSink for MinFold<'_> {
    fn cycle(&mut self, cycle: Cycle<'_>) {
        let len = cycle.len();
        let first = cycle.nodes[0];
        for (bound, &alpha) in self.bound.iter_mut().zip(&self.alphas) {
            *bound = self
                .points
                .iter()
                .zip(cycle.weight_sums)
                .map(|(p, &lp)| cycle_bound(alpha, len, lp, p.diagonal[first]))
                .fold(f64::INFINITY, f64::min);
        }
        self.path.park(cycle.nodes.len() - 1, &self.bound);
        if !cycle.tail.is_empty() {
            self.tail.park(cycle.tail.len() - 1, &self.bound);
        }
    }

    fn leave(&mut self, depth: usize, node: usize) {
        self.path.settle(depth, node, &mut self.bounds);
    }

    fn takes_tails(&self) -> bool {
        true
    }

    fn leave_tail(&mut self, position: usize, node: usize) {
        self.tail.settle(position, node, &mut self.bounds);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_four_cases_of_spec_7() {
        assert_eq!(cycle_bound(0.5, 1, 2f64.ln(), -2.0), 0.75);
        assert_eq!(cycle_bound(0.5, 1, 2f64.ln(), 2.0), 0.25);
        assert_eq!(cycle_bound(0.5, 1, f64::NEG_INFINITY, 0.0), f64::INFINITY);
        // α^(1/2) |0.25|^(−1/2) = sqrt(2)
        let b = cycle_bound(0.5, 2, 0.25f64.ln(), 0.0);
        assert!((b - 2f64.sqrt()).abs() < 1e-15);
    }

    #[test]
    fn a_cycle_through_hundreds_of_large_entries_does_not_overflow() {
        // 400 entries of 1e3: the product 1e1200 overflows, its logarithm does not.
        let lp = 400.0 * 1e3f64.ln();
        let b = cycle_bound(1.0, 400, lp, 0.0);
        assert!((b - 1e-3).abs() < 1e-15);
    }
}
