//! One-step-solver ranking (SPEC §11): the error an operation would cause, predicted by one
//! Newton step of the reduced system from the reference solution. With `z = [x; y]` the flat
//! model's unknowns and a BDF1 step `h`, `J_F = ∂F/∂z + (1/h) ∂F/∂ẋ`; an operation on
//! equation `l` adds `δ(z)` to its residual, with gradient `v`, so `J_F̃ = J_F + e_l vᵀ` and, by
//! Sherman–Morrison with `u = J_F⁻¹ e_l`, the step is `Δ = −δ(z_k) u / (1 + vᵀu)`: one
//! factorization of `J_F` per instant and one solve per equation serve every candidate.

use std::collections::HashMap;

use nalgebra::{DMatrix, DVector};

use super::operation::Operation;
use super::terms::TermRef;
use crate::causal::Point;
use crate::dae::{Dae, VarKind};
use crate::expr::{ExprId, ExprPool, Node, VarId};

/// A sparse row: `(unknown, ∂/∂z + (1/h) ∂/∂ẋ)` per unknown the expression reads.
type Gradient = Vec<(usize, ExprId)>;

/// The flat model linearised for one BDF1 step: its unknowns and each equation's gradient.
pub struct Linearised {
    pub unknowns: Vec<VarId>,
    index: HashMap<VarId, usize>,
    rows: Vec<Gradient>,
    h: f64,
}

impl Linearised {
    /// Of `flat`'s equations (square: as many as unknowns), the derivatives built in `pool`
    /// (a pool in which `flat`'s expressions are valid, such as its prepared model's).
    pub fn new(flat: &Dae, pool: &mut ExprPool, h: f64) -> Option<Linearised> {
        let unknowns: Vec<VarId> = flat
            .var_ids()
            .filter(|&v| matches!(flat.var(v).kind, VarKind::State | VarKind::Algebraic))
            .collect();
        if unknowns.len() != flat.equations.len() {
            return None;
        }
        let index = unknowns.iter().enumerate().map(|(i, &v)| (v, i)).collect();
        let mut l = Linearised {
            unknowns,
            index,
            rows: Vec::new(),
            h,
        };
        l.rows = flat
            .equations
            .iter()
            .map(|eq| l.gradient(pool, eq.residual))
            .collect();
        Some(l)
    }

    /// `∂e/∂z + (1/h) ∂e/∂ẋ`, per unknown `e` reads.
    pub fn gradient(&self, pool: &mut ExprPool, e: ExprId) -> Gradient {
        let mut read: Vec<usize> = Vec::new();
        pool.visit_leaves(e, |n| {
            if let Node::Var(v) | Node::Der(v) | Node::Last(v) = n
                && let Some(&i) = self.index.get(&v)
            {
                read.push(i);
            }
        });
        read.sort_unstable();
        read.dedup();
        let rate = pool.constant(1.0 / self.h);
        read.into_iter()
            .map(|i| {
                let v = self.unknowns[i];
                let by_value = pool.diff(e, Node::Var(v));
                let by_rate = pool.diff(e, Node::Der(v));
                let scaled = pool.mul(rate, by_rate);
                (i, pool.add(by_value, scaled))
            })
            .collect()
    }

    /// `J_F` at `point`.
    pub fn matrix(&self, pool: &ExprPool, point: &Point) -> DMatrix<f64> {
        let n = self.unknowns.len();
        let mut j = DMatrix::zeros(n, n);
        for (r, row) in self.rows.iter().enumerate() {
            for &(c, e) in row {
                j[(r, c)] = pool.eval(e, point).unwrap_or(f64::NAN);
            }
        }
        j
    }

    /// The unknowns' values at `point`.
    pub fn values(&self, point: &Point) -> DVector<f64> {
        DVector::from_iterator(
            self.unknowns.len(),
            self.unknowns.iter().map(|v| point.vars[v.0 as usize]),
        )
    }
}

/// What an operation adds to its equation's residual, `δ(z)`, as an expression: `−sign·t`
/// (delete) or `sign·(c − t)` (replace).
pub fn change(pool: &mut ExprPool, flat: &Dae, t: TermRef, op: Operation) -> ExprId {
    let term = &flat.equations[t.equation].terms[t.term];
    let sign = pool.constant(term.sign);
    let removed = match op {
        Operation::Delete => pool.neg(term.expr),
        Operation::Replace(c) => {
            let c = pool.constant(c);
            pool.sub(c, term.expr)
        }
    };
    pool.mul(sign, removed)
}

/// The Newton step `Δ = −δ u / (1 + vᵀu)` of one operation at one instant, from `u = J_F⁻¹ e_l`,
/// `δ` and `v` evaluated there; `None` when `1 + vᵀu` vanishes (the reduced system is singular:
/// the operation is illegal).
pub fn step(u: &DVector<f64>, delta: f64, v: &[(usize, f64)]) -> Option<DVector<f64>> {
    let vu: f64 = v.iter().map(|&(i, x)| x * u[i]).sum();
    let denominator = 1.0 + vu;
    let size = 1.0 + v.iter().map(|&(i, x)| (x * u[i]).abs()).sum::<f64>();
    if denominator.is_nan() || denominator.abs() <= 1e-10 * size {
        return None;
    }
    Some(u * (-delta / denominator))
}

/// The largest `|Δ_i|` relative to each unknown's scale, in percent.
pub fn error_percent(step: &DVector<f64>, scales: &[f64]) -> f64 {
    100.0
        * step
            .iter()
            .zip(scales)
            .map(|(d, s)| d.abs() / s)
            .fold(0.0, f64::max)
}

/// Each unknown's scale: its largest magnitude over the samples (1 where that is 0).
pub fn scales(l: &Linearised, samples: &[Point]) -> Vec<f64> {
    (0..l.unknowns.len())
        .map(|i| {
            let v = l.unknowns[i].0 as usize;
            let s = samples.iter().map(|p| p.vars[v].abs()).fold(0.0, f64::max);
            if s > 0.0 { s } else { 1.0 }
        })
        .collect()
}
