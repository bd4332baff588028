//! A dense LU factorization with partial pivoting, for small Newton matrices and algebraic
//! loops. It depends on `std` only: `mocca emit` writes this very file into the crates it
//! emits, so that their solves are `simulate`'s, operation for operation.

/// A dense LU factorization with partial pivoting, stored row-major in place.
#[derive(Clone, Debug)]
pub struct DenseLu {
    n: usize,
    a: Vec<f64>,
    pivots: Vec<usize>,
}

impl DenseLu {
    pub fn new(n: usize) -> DenseLu {
        DenseLu {
            n,
            a: vec![0.0; n * n],
            pivots: vec![0; n],
        }
    }

    /// Changes the size (allocates only when growing past the largest size so far).
    pub fn resize(&mut self, n: usize) {
        self.n = n;
        self.a.resize(self.a.len().max(n * n), 0.0);
        self.pivots.resize(self.pivots.len().max(n), 0);
    }

    pub fn clear(&mut self) {
        self.a[..self.n * self.n].fill(0.0);
    }

    pub fn set(&mut self, row: usize, col: usize, x: f64) {
        self.a[row * self.n + col] = x;
    }

    pub fn add(&mut self, row: usize, col: usize, x: f64) {
        self.a[row * self.n + col] += x;
    }

    /// Subtracts `x` from the entry at `slot` of the row-major matrix (`row · n + col`).
    pub fn subtract_at(&mut self, slot: usize, x: f64) {
        self.a[slot] -= x;
    }

    /// Factors in place; false when the matrix is singular (or not finite).
    pub fn factor(&mut self) -> bool {
        let n = self.n;
        let a = &mut self.a;
        for k in 0..n {
            let p = (k..n)
                .max_by(|&i, &j| a[i * n + k].abs().total_cmp(&a[j * n + k].abs()))
                .unwrap_or(k);
            let pivot = a[p * n + k];
            if pivot == 0.0 || !pivot.is_finite() {
                return false;
            }
            self.pivots[k] = p;
            if p != k {
                for c in 0..n {
                    a.swap(k * n + c, p * n + c);
                }
            }
            for i in k + 1..n {
                let l = a[i * n + k] / pivot;
                a[i * n + k] = l;
                if l != 0.0 {
                    for c in k + 1..n {
                        a[i * n + c] -= l * a[k * n + c];
                    }
                }
            }
        }
        true
    }

    /// Solves `A x = b` in place with the factors.
    pub fn solve(&self, b: &mut [f64]) {
        let n = self.n;
        let a = &self.a;
        for k in 0..n {
            b.swap(k, self.pivots[k]);
        }
        for i in 0..n {
            let s: f64 = (0..i).map(|c| a[i * n + c] * b[c]).sum();
            b[i] -= s;
        }
        for i in (0..n).rev() {
            let s: f64 = (i + 1..n).map(|c| a[i * n + c] * b[c]).sum();
            b[i] = (b[i] - s) / a[i * n + i];
        }
    }
}
