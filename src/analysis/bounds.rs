//! Cycle gains and step-size bounds (SPEC §7, items 3–5), and the folds that turn a stream of
//! cycles into per-state bounds `h̄_i`.
//!
//! Two folds. [`MinFold`] serves one α: each cycle's bound is folded into its states' minima,
//! one comparison per member. [`Profile`] serves any number of α without listing the cycles
//! again: for a cycle of length `L > 1` the bound `α^(1/L) · |Π J|^(−1/L)` decreases as
//! `ln|Π J|` grows, so per state and per length only the largest log-product matters, and a
//! self-loop needs only the largest `|J_ii|` of each sign. That summary is independent of α,
//! its size is bounded by states × distinct lengths (never by the number of cycles), and
//! `h̄(α)` is read off it for every α of a sweep.

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
/// points) and how many cycles pass through it.
#[derive(Clone, Debug, PartialEq)]
pub struct StateBounds {
    pub h_bar: Vec<f64>,
    pub cycles_through: Vec<u64>,
}

impl StateBounds {
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

/// Folds cycles into [`StateBounds`] for one α. A cycle is the whole search path (and the
/// tail, if replayed), so its bound and count are parked at the path's top depth (and the
/// tail's top) and settle into a node as it leaves the path, passing on to the depth below:
/// O(1) per cycle, however long.
pub struct MinFold<'w> {
    alpha: f64,
    points: &'w [PointWeights],
    path: Parked,
    tail: Parked,
    pub bounds: StateBounds,
}

/// Per position of a stack (the search path or the tail): the smallest bound and the number of
/// the cycles through it and every position below that are not yet settled.
#[derive(Default)]
struct Parked(Vec<(f64, u64)>);

impl Parked {
    fn park(&mut self, top: usize, bound: f64) {
        if self.0.len() <= top {
            self.0.resize(top + 1, (f64::INFINITY, 0));
        }
        let slot = &mut self.0[top];
        slot.0 = slot.0.min(bound);
        slot.1 += 1;
    }

    /// The node at `position` leaves: what is parked there settles into it and passes on down.
    fn settle(&mut self, position: usize, node: usize, bounds: &mut StateBounds) {
        let Some(&(bound, count)) = self.0.get(position) else {
            return;
        };
        if count == 0 {
            return;
        }
        self.0[position] = (f64::INFINITY, 0);
        let h = &mut bounds.h_bar[node];
        *h = h.min(bound);
        bounds.cycles_through[node] += count;
        if position > 0 {
            let below = &mut self.0[position - 1];
            below.0 = below.0.min(bound);
            below.1 += count;
        }
    }
}

impl<'w> MinFold<'w> {
    pub fn new(alpha: f64, n: usize, points: &'w [PointWeights]) -> MinFold<'w> {
        MinFold {
            alpha,
            points,
            path: Parked::default(),
            tail: Parked::default(),
            bounds: StateBounds {
                h_bar: vec![f64::INFINITY; n],
                cycles_through: vec![0; n],
            },
        }
    }
}

impl CycleSink for MinFold<'_> {
    fn cycle(&mut self, cycle: Cycle<'_>) {
        let len = cycle.len();
        let first = cycle.nodes[0];
        let bound = self
            .points
            .iter()
            .zip(cycle.weight_sums)
            .map(|(p, &lp)| cycle_bound(self.alpha, len, lp, p.diagonal[first]))
            .fold(f64::INFINITY, f64::min);
        self.path.park(cycle.nodes.len() - 1, bound);
        if !cycle.tail.is_empty() {
            self.tail.park(cycle.tail.len() - 1, bound);
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

/// The α-independent summary of the cycles through each state (see the module comment).
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    /// Largest `|J_ii|` with `J_ii < 0` over the points (0 when none).
    self_negative: Vec<f64>,
    /// Largest `J_ii > 0` over the points (0 when none).
    self_positive: Vec<f64>,
    /// Per state, sorted by length: (length ≥ 2, largest `ln|Π J|` of the cycles of that length
    /// through the state).
    longer: Vec<Vec<(usize, f64)>>,
    pub cycles_through: Vec<u64>,
}

impl Profile {
    pub fn new(n: usize) -> Profile {
        Profile {
            self_negative: vec![0.0; n],
            self_positive: vec![0.0; n],
            longer: vec![Vec::new(); n],
            cycles_through: vec![0; n],
        }
    }

    pub fn visit(&mut self, cycle: Cycle<'_>, points: &[PointWeights]) {
        for v in cycle.members() {
            self.cycles_through[v] += 1;
        }
        let len = cycle.len();
        if len == 1 {
            let v = cycle.nodes[0];
            for p in points {
                let d = p.diagonal[v];
                self.self_negative[v] = self.self_negative[v].max(-d);
                self.self_positive[v] = self.self_positive[v].max(d);
            }
            return;
        }
        let lp = cycle
            .weight_sums
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        if lp == f64::NEG_INFINITY {
            return;
        }
        for v in cycle.members() {
            let lengths = &mut self.longer[v];
            match lengths.binary_search_by_key(&len, |&(l, _)| l) {
                Ok(k) => lengths[k].1 = lengths[k].1.max(lp),
                Err(k) => lengths.insert(k, (len, lp)),
            }
        }
    }

    /// The summary of two disjoint sets of cycles together.
    pub fn merge(mut self, other: Profile) -> Profile {
        for (a, b) in self.self_negative.iter_mut().zip(other.self_negative) {
            *a = a.max(b);
        }
        for (a, b) in self.self_positive.iter_mut().zip(other.self_positive) {
            *a = a.max(b);
        }
        for (a, b) in self.cycles_through.iter_mut().zip(other.cycles_through) {
            *a += b;
        }
        for (mine, theirs) in self.longer.iter_mut().zip(other.longer) {
            *mine = merge_by_length(std::mem::take(mine), theirs);
        }
        self
    }

    /// `h̄_i(α)` for every state.
    pub fn h_bar(&self, alpha: f64) -> Vec<f64> {
        (0..self.longer.len())
            .map(|v| {
                let own = self_loop_bound(alpha, -self.self_negative[v])
                    .min(self_loop_bound(alpha, self.self_positive[v]));
                self.longer[v]
                    .iter()
                    .map(|&(len, lp)| cycle_bound(alpha, len, lp, 0.0))
                    .fold(own, f64::min)
            })
            .collect()
    }
}

/// Two lists sorted by length as one, the larger log-product where both have a length.
fn merge_by_length(a: Vec<(usize, f64)>, b: Vec<(usize, f64)>) -> Vec<(usize, f64)> {
    let mut merged: Vec<(usize, f64)> = a.into_iter().chain(b).collect();
    merged.sort_by_key(|&(len, _)| len);
    merged.dedup_by(|later, kept| {
        let same = later.0 == kept.0;
        if same {
            kept.1 = kept.1.max(later.1);
        }
        same
    });
    merged
}

/// Folds cycles into a [`Profile`], one per enumeration thread.
pub struct ProfileFold<'w> {
    points: &'w [PointWeights],
    pub profile: Profile,
}

impl<'w> ProfileFold<'w> {
    pub fn new(n: usize, points: &'w [PointWeights]) -> ProfileFold<'w> {
        ProfileFold {
            points,
            profile: Profile::new(n),
        }
    }
}

impl CycleSink for ProfileFold<'_> {
    fn cycle(&mut self, cycle: Cycle<'_>) {
        self.profile.visit(cycle, self.points);
    }

    fn takes_tails(&self) -> bool {
        true
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
    fn merged_profiles_keep_every_length_and_the_larger_product() {
        let a = vec![(2, 1.0), (4, -3.0), (7, 0.5)];
        let b = vec![(3, 2.0), (4, -1.0), (9, 0.0)];
        assert_eq!(
            merge_by_length(a, b),
            vec![(2, 1.0), (3, 2.0), (4, -1.0), (7, 0.5), (9, 0.0)]
        );
        assert_eq!(merge_by_length(Vec::new(), vec![(3, 2.0)]), vec![(3, 2.0)]);
    }

    #[test]
    fn a_cycle_through_hundreds_of_large_entries_does_not_overflow() {
        // 400 entries of 1e3: the product 1e1200 overflows, its logarithm does not.
        let lp = 400.0 * 1e3f64.ln();
        let b = cycle_bound(1.0, 400, lp, 0.0);
        assert!((b - 1e-3).abs() < 1e-15);
    }
}
