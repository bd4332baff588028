//! A sparse LU with threshold partial pivoting (left-looking, Gilbert–Peierls), for Newton
//! matrices whose diagonal pivots the static sparse LU refuses: the one fallback of both
//! `mocca simulate` and the crates `mocca emit` writes. It depends on `std` only.
//!
//! Columns are taken in a given order (the static LU's fill-reducing one). Column `j` of the
//! factors is `L⁻¹` applied to column `j` of the matrix, a sparse triangular solve over the
//! rows that the earlier columns' `L` reaches from the column's entries (a depth-first search
//! gives them in topological order). Its pivot is the entry on the column's own row
//! (its diagonal in the symmetric order) when that is at least [`THRESHOLD`] of the largest
//! candidate, so that a matrix the static LU would factor keeps its fill, else the largest.

/// A diagonal candidate at least this fraction of the column's largest is its pivot.
pub const THRESHOLD: f64 = 0.1;

const NONE: usize = usize::MAX;

/// `P A Q = L U` for a matrix on a fixed pattern; `L` unit lower and `U` upper, by columns.
#[derive(Clone, Debug)]
pub struct PivotingLu {
    /// The matrix by columns in the column order: column `j` is the original column `q[j]`,
    /// its rows in the original numbering.
    a_ptr: Vec<usize>,
    a_row: Vec<usize>,
    a_val: Vec<f64>,
    /// Per entry of the pattern given, its position in `a_val` (duplicates share one).
    slot: Vec<usize>,
    q: Vec<usize>,
    /// `L` by columns without its unit diagonal, rows in the original numbering.
    l_ptr: Vec<usize>,
    l_row: Vec<usize>,
    l_val: Vec<f64>,
    /// `U` by columns, rows as pivot positions, each column's diagonal last.
    u_ptr: Vec<usize>,
    u_row: Vec<usize>,
    u_val: Vec<f64>,
    /// Per original row, its pivot position ([`NONE`] while unpivoted), and the inverse.
    pinv: Vec<usize>,
    prow: Vec<usize>,
    /// The dense column being computed, and the reach of a column in topological order.
    x: Vec<f64>,
    reach: Vec<usize>,
    /// The depth-first search's stack of (row, next and end of its children in `L`), and its
    /// visit marks by epoch.
    stack: Vec<(usize, usize, usize)>,
    mark: Vec<u64>,
    epoch: u64,
    factored: bool,
}

impl PivotingLu {
    /// For `n × n` matrices with the entries `entries` (duplicates allowed, summed), their
    /// columns taken in the order `order` (`order[new] = old`, a permutation of `0..n`).
    pub fn new(n: usize, entries: &[(usize, usize)], order: &[usize]) -> PivotingLu {
        assert!(
            entries.iter().all(|&(r, c)| r < n && c < n),
            "entries in range"
        );
        let mut q: Vec<usize> = order.to_vec();
        let mut seen = vec![false; n];
        q.retain(|&c| c < n && !std::mem::replace(&mut seen[c], true));
        if q.len() != n {
            q = (0..n).collect();
        }
        let mut position = vec![0; n];
        for (j, &c) in q.iter().enumerate() {
            position[c] = j;
        }
        // Sorted by (new column, row): duplicates adjacent.
        let mut order_of: Vec<usize> = (0..entries.len()).collect();
        order_of.sort_by_key(|&k| (position[entries[k].1], entries[k].0));
        let (mut a_ptr, mut a_row) = (vec![0; n + 1], Vec::new());
        let mut slot = vec![0; entries.len()];
        let mut last = None;
        for &k in &order_of {
            let (r, c) = entries[k];
            let key = (position[c], r);
            if last != Some(key) {
                a_row.push(r);
                a_ptr[position[c] + 1] += 1;
                last = Some(key);
            }
            slot[k] = a_row.len() - 1;
        }
        for j in 0..n {
            a_ptr[j + 1] += a_ptr[j];
        }
        PivotingLu {
            a_val: vec![0.0; a_row.len()],
            a_ptr,
            a_row,
            slot,
            q,
            l_ptr: Vec::with_capacity(n + 1),
            l_row: Vec::new(),
            l_val: Vec::new(),
            u_ptr: Vec::with_capacity(n + 1),
            u_row: Vec::new(),
            u_val: Vec::new(),
            pinv: vec![NONE; n],
            prow: vec![NONE; n],
            x: vec![0.0; n],
            reach: Vec::with_capacity(n),
            stack: Vec::new(),
            mark: vec![0; n],
            epoch: 0,
            factored: false,
        }
    }

    pub fn n(&self) -> usize {
        self.q.len()
    }

    /// Factors the matrix with `value(k)` at entry `k` (duplicates summed); false when it is
    /// singular or a value is not finite.
    pub fn factor(&mut self, value: impl Fn(usize) -> f64) -> bool {
        self.a_val.fill(0.0);
        for (k, &s) in self.slot.iter().enumerate() {
            self.a_val[s] += value(k);
        }
        self.factored = self.a_val.iter().all(|v| v.is_finite()) && self.eliminate();
        self.factored
    }

    fn eliminate(&mut self) -> bool {
        let n = self.n();
        for v in [&mut self.l_ptr, &mut self.u_ptr] {
            v.clear();
            v.push(0);
        }
        for v in [&mut self.l_row, &mut self.u_row] {
            v.clear();
        }
        self.l_val.clear();
        self.u_val.clear();
        self.pinv.fill(NONE);
        for j in 0..n {
            self.column_reach(j);
            for p in self.a_ptr[j]..self.a_ptr[j + 1] {
                self.x[self.a_row[p]] = self.a_val[p];
            }
            // x := L⁻¹ x over the reach; pivoted rows give U's column, the others L's.
            let (mut best, mut largest) = (NONE, 0.0);
            for t in (0..self.reach.len()).rev() {
                let i = self.reach[t];
                let k = self.pinv[i];
                if k == NONE {
                    let v = self.x[i].abs();
                    if best == NONE || v > largest {
                        (best, largest) = (i, v);
                    }
                    continue;
                }
                let xi = self.x[i];
                self.u_row.push(k);
                self.u_val.push(xi);
                for p in self.l_ptr[k]..self.l_ptr[k + 1] {
                    self.x[self.l_row[p]] -= self.l_val[p] * xi;
                }
            }
            let own = self.q[j];
            let pivot_row = if self.pinv[own] == NONE
                && self.mark[own] == self.epoch
                && self.x[own].abs() >= THRESHOLD * largest
            {
                own
            } else {
                best
            };
            if pivot_row == NONE || !(largest > 0.0 && largest.is_finite()) {
                self.clear_column();
                return false;
            }
            let pivot = self.x[pivot_row];
            self.u_row.push(j);
            self.u_val.push(pivot);
            self.u_ptr.push(self.u_row.len());
            self.pinv[pivot_row] = j;
            self.prow[j] = pivot_row;
            for t in 0..self.reach.len() {
                let i = self.reach[t];
                if self.pinv[i] == NONE {
                    self.l_row.push(i);
                    self.l_val.push(self.x[i] / pivot);
                }
            }
            self.l_ptr.push(self.l_row.len());
            self.clear_column();
        }
        true
    }

    fn clear_column(&mut self) {
        for &i in &self.reach {
            self.x[i] = 0.0;
        }
    }

    /// The rows that column `j`'s solve with `L` reaches, into `reach` in postorder (each row
    /// after the rows it updates): read backwards, an order to eliminate them in.
    fn column_reach(&mut self, j: usize) {
        self.epoch += 1;
        self.reach.clear();
        for p in self.a_ptr[j]..self.a_ptr[j + 1] {
            let start = self.a_row[p];
            if self.mark[start] != self.epoch {
                self.visit(start);
            }
        }
    }

    /// The depth-first search from row `start` over the columns of `L` of pivoted rows.
    fn visit(&mut self, start: usize) {
        self.mark[start] = self.epoch;
        let children = |lu: &Self, i: usize| match lu.pinv[i] {
            NONE => (0, 0),
            k => (lu.l_ptr[k], lu.l_ptr[k + 1]),
        };
        let (from, end) = children(self, start);
        self.stack.push((start, from, end));
        while let Some(&(i, mut p, end)) = self.stack.last() {
            while p < end && self.mark[self.l_row[p]] == self.epoch {
                p += 1;
            }
            if p < end {
                let r = self.l_row[p];
                self.mark[r] = self.epoch;
                *self.stack.last_mut().expect("a row") = (i, p + 1, end);
                let (from, end) = children(self, r);
                self.stack.push((r, from, end));
            } else {
                self.stack.pop();
                self.reach.push(i);
            }
        }
    }

    /// Solves `A z = b` in place with the last factorization (nothing when it failed).
    pub fn solve(&mut self, b: &mut [f64]) {
        if !self.factored {
            return;
        }
        let n = self.n();
        // L w = P b, in the original row numbering.
        for k in 0..n {
            let xk = b[self.prow[k]];
            for p in self.l_ptr[k]..self.l_ptr[k + 1] {
                b[self.l_row[p]] -= self.l_val[p] * xk;
            }
        }
        let w = &mut self.x;
        for k in 0..n {
            w[k] = b[self.prow[k]];
        }
        // U v = w, by columns from the last.
        for j in (0..n).rev() {
            let (start, diag) = (self.u_ptr[j], self.u_ptr[j + 1] - 1);
            w[j] /= self.u_val[diag];
            let vj = w[j];
            for p in start..diag {
                w[self.u_row[p]] -= self.u_val[p] * vj;
            }
        }
        for j in 0..n {
            b[self.q[j]] = w[j];
        }
        w.fill(0.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dense_lu::DenseLu;
    use proptest::prelude::*;

    fn solve_both(n: usize, entries: &[(usize, usize)], values: &[f64], order: &[usize]) {
        let mut lu = PivotingLu::new(n, entries, order);
        let mut dense = DenseLu::new(n);
        for (&(r, c), &v) in entries.iter().zip(values) {
            dense.add(r, c, v);
        }
        let regular = dense.factor();
        assert_eq!(lu.factor(|k| values[k]), regular, "singular alike");
        if !regular {
            return;
        }
        let b: Vec<f64> = (0..n).map(|i| 1.0 + i as f64).collect();
        let (mut z, mut want) = (b.clone(), b);
        lu.solve(&mut z);
        dense.solve(&mut want);
        for (zi, wi) in z.iter().zip(&want) {
            assert!(
                (zi - wi).abs() <= 1e-9 * (1.0 + wi.abs()),
                "{z:?} against {want:?}"
            );
        }
    }

    #[test]
    fn a_zero_diagonal_is_pivoted_around() {
        // [[0, 1], [1, 0]] and a 3×3 arrow with a zero corner.
        solve_both(2, &[(0, 1), (1, 0)], &[1.0, 1.0], &[0, 1]);
        let arrow = [(0, 0), (0, 2), (1, 1), (1, 2), (2, 0), (2, 1), (2, 2)];
        solve_both(3, &arrow, &[0.0, 1.0, 2.0, 1.0, 1.0, 1.0, 1.0], &[2, 0, 1]);
    }

    #[test]
    fn singular_is_false() {
        let mut lu = PivotingLu::new(2, &[(0, 0), (1, 0), (0, 1), (1, 1)], &[0, 1]);
        assert!(!lu.factor(|k| [1.0, 2.0, 2.0, 4.0][k]));
        assert!(!lu.factor(|k| [1.0, f64::NAN, 0.0, 1.0][k]));
        assert!(lu.factor(|k| [1.0, 2.0, 2.0, 5.0][k]));
    }

    proptest! {
        /// Random sparse matrices, regular but with their rows shuffled (a diagonally
        /// dominant matrix, its rows permuted: zeros on the diagonal, pivots off it),
        /// duplicates among the entries, in a random column order: the dense LU's solution.
        #[test]
        fn solves_as_the_dense_lu(
            n in 1usize..12,
            raw in proptest::collection::vec((0usize..12, 0usize..12, -1.0f64..1.0), 0..40),
            rows in proptest::collection::vec(0usize..1000, 12),
            columns in proptest::collection::vec(0usize..1000, 12),
        ) {
            let order_by = |keys: &[usize]| {
                let mut order: Vec<usize> = (0..n).collect();
                order.sort_by_key(|&i| keys[i]);
                order
            };
            let row_of = order_by(&rows);
            let mut entries = Vec::new();
            let mut values = Vec::new();
            let mut row_sums = vec![0.0; n];
            for &(r, c, v) in &raw {
                let (r, c) = (r % n, c % n);
                if r != c {
                    entries.push((row_of[r], c));
                    values.push(v);
                    row_sums[r] += f64::abs(v);
                }
            }
            for (i, sum) in row_sums.iter().enumerate() {
                entries.push((row_of[i], i));
                values.push(1.0 + sum);
            }
            solve_both(n, &entries, &values, &order_by(&columns));
        }
    }
}
