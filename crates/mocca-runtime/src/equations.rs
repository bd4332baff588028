//! Equations solved together at an event: the algebraic loops of a clocked partition, each
//! `F(y) = 0` for its unknowns `y`, with its Jacobian `∂F/∂y` given as code. Solved by the
//! shared [`newton`](crate::newton) on a dense LU, by `mocca simulate` on its own
//! evaluation of the model ([`Equations`]) and by emitted crates on their register file
//! ([`OnRegisters`]): the same iterations on both.

use crate::dense_lu::DenseLu;
use crate::newton::{self, System};

/// A system `F(y) = 0` of `unknowns()` equations in as many unknowns.
pub trait Equations {
    fn unknowns(&self) -> usize;
    /// Unknown `k`'s current value.
    fn get(&self, k: usize) -> f64;
    fn set(&mut self, k: usize, value: f64);
    /// `F` at the current unknowns.
    fn residuals(&self, out: &mut [f64]);
    /// `∂F/∂y` at the current unknowns, row-major, into zeros.
    fn jacobian(&self, out: &mut [f64]);
}

/// Solves `equations` from their current unknowns, which it leaves at the solution. `Err`
/// holds the largest residual left when Newton did not converge.
pub fn solve(equations: &mut dyn Equations) -> Result<(), f64> {
    let n = equations.unknowns();
    let mut system = Dense {
        equations,
        lu: DenseLu::new(n),
        jacobian: vec![0.0; n * n],
    };
    newton::solve(&mut system, n, &mut newton::Work::new(n))
}

/// [`Equations`] as a Newton system with a dense Jacobian.
struct Dense<'a> {
    equations: &'a mut dyn Equations,
    lu: DenseLu,
    jacobian: Vec<f64>,
}

impl System for Dense<'_> {
    fn residuals(&mut self, r: &mut [f64]) {
        self.equations.residuals(r);
    }
    fn targets(&self, y: &mut [f64]) {
        for (k, yk) in y.iter_mut().enumerate() {
            *yk = self.equations.get(k);
        }
    }
    fn set_targets(&mut self, y: &[f64]) {
        for (k, &yk) in y.iter().enumerate() {
            self.equations.set(k, yk);
        }
    }
    fn factor(&mut self) -> bool {
        let n = self.equations.unknowns();
        self.jacobian.fill(0.0);
        self.equations.jacobian(&mut self.jacobian);
        self.lu.clear();
        for (slot, &x) in self.jacobian.iter().enumerate() {
            self.lu.set(slot / n, slot % n, x);
        }
        self.lu.factor()
    }
    fn solve(&mut self, v: &mut [f64]) {
        self.lu.solve(v);
    }
}

/// Equations on a register file: the unknowns are the registers `targets`, and `residuals`
/// and `jacobian` compute `F` and `∂F/∂y` from the registers.
pub struct OnRegisters<'a> {
    pub r: &'a mut [f64],
    pub targets: &'a [usize],
    pub residuals: fn(&[f64], &mut [f64]),
    pub jacobian: fn(&[f64], &mut [f64]),
}

impl Equations for OnRegisters<'_> {
    fn unknowns(&self) -> usize {
        self.targets.len()
    }
    fn get(&self, k: usize) -> f64 {
        self.r[self.targets[k]]
    }
    fn set(&mut self, k: usize, value: f64) {
        self.r[self.targets[k]] = value;
    }
    fn residuals(&self, out: &mut [f64]) {
        (self.residuals)(self.r, out);
    }
    fn jacobian(&self, out: &mut [f64]) {
        (self.jacobian)(self.r, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `x² + y² = 4`, `x = y`, from (1, 2): the root (√2, √2).
    #[test]
    fn a_circle_meets_a_line_at_the_root_newton_finds() {
        fn residuals(r: &[f64], f: &mut [f64]) {
            f[0] = r[1] * r[1] + r[2] * r[2] - 4.0;
            f[1] = r[1] - r[2];
        }
        fn jacobian(r: &[f64], j: &mut [f64]) {
            j.copy_from_slice(&[2.0 * r[1], 2.0 * r[2], 1.0, -1.0]);
        }
        let mut r = [7.0, 1.0, 2.0];
        let mut equations = OnRegisters {
            r: &mut r,
            targets: &[1, 2],
            residuals,
            jacobian,
        };
        solve(&mut equations).expect("converges");
        assert!((r[1] - 2f64.sqrt()).abs() < 1e-12 && (r[2] - 2f64.sqrt()).abs() < 1e-12);
        assert_eq!(r[0], 7.0, "a register not among the targets is left alone");
    }

    /// `x² = −1` has no real root: an error with the residual left.
    #[test]
    fn no_root_is_an_error() {
        fn residuals(r: &[f64], f: &mut [f64]) {
            f[0] = r[0] * r[0] + 1.0;
        }
        fn jacobian(r: &[f64], j: &mut [f64]) {
            j[0] = 2.0 * r[0];
        }
        let mut r = [0.5];
        let mut equations = OnRegisters {
            r: &mut r,
            targets: &[0],
            residuals,
            jacobian,
        };
        let left = solve(&mut equations).expect_err("no root");
        assert!(left >= 1.0, "{left}");
    }
}
