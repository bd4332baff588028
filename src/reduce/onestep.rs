//! One-step-solver ranking (SPEC §11): the error an operation would cause, predicted by one
//! Newton step of the reduced system from the reference solution. With `z = [x; y]` the flat
//! model's unknowns and a BDF1 step `h`, `J_F = ∂F/∂z + (1/h) ∂F/∂ẋ`; an operation on
//! equation `l` adds `δ(z)` to its residual, with gradient `v`, so `J_F̃ = J_F + e_l vᵀ` and, by
//! Sherman–Morrison with `u = J_F⁻¹ e_l`, the step is `Δ = −δ(z_k) u / (1 + vᵀu)`: one
//! factorization of `J_F` per instant and one solve per equation serve every candidate.

use std::collections::HashMap;

use super::operation::Operation;
use super::sample::scale;
use super::terms::TermRef;
use crate::causal::Point;
use crate::dae::{Dae, VarKind};
use crate::expr::{ExprId, ExprPool, Node, VarId};

/// A sparse row: `(unknown, ∂/∂z + (1/h) ∂/∂ẋ)` per unknown the expression reads.
type Gradient = Vec<(usize, ExprId)>;

/// The flat model linearised for one BDF1 step: its unknowns and `J_F`'s entries.
pub struct Linearised {
    pub unknowns: Vec<VarId>,
    index: HashMap<VarId, usize>,
    /// `(row, column)` of each entry of `J_F`, equation by equation.
    pattern: Vec<(usize, usize)>,
    /// Each entry's expression.
    entries: Vec<ExprId>,
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
            pattern: Vec::new(),
            entries: Vec::new(),
            h,
        };
        for (r, eq) in flat.equations.iter().enumerate() {
            for (c, e) in l.gradient(pool, eq.residual) {
                l.pattern.push((r, c));
                l.entries.push(e);
            }
        }
        Some(l)
    }

    /// `(row, column)` of `J_F`'s entries.
    pub fn pattern(&self) -> &[(usize, usize)] {
        &self.pattern
    }

    /// `J_F`'s entries at `point`, in [`Linearised::pattern`]'s order.
    pub fn values_at(&self, pool: &ExprPool, point: &Point) -> Vec<f64> {
        self.entries
            .iter()
            .map(|&e| pool.eval(e, point).unwrap_or(f64::NAN))
            .collect()
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

/// The factor `−δ / (1 + vᵀu)` that makes `u = J_F⁻¹ e_l` the Newton step `Δ` of one operation
/// at one instant, from `δ` and `v` evaluated there; `None` when `1 + vᵀu` vanishes (the reduced
/// system is singular: the operation is illegal).
pub fn step_factor(u: &[f64], delta: f64, v: &[(usize, f64)]) -> Option<f64> {
    let vu: f64 = v.iter().map(|&(i, x)| x * u[i]).sum();
    let denominator = 1.0 + vu;
    let size = 1.0 + v.iter().map(|&(i, x)| (x * u[i]).abs()).sum::<f64>();
    if denominator.is_nan() || denominator.abs() <= 1e-10 * size {
        return None;
    }
    Some(-delta / denominator)
}

/// The Newton step `Δ = −δ u / (1 + vᵀu)` itself.
pub fn step(u: &[f64], delta: f64, v: &[(usize, f64)]) -> Option<Vec<f64>> {
    step_factor(u, delta, v).map(|f| u.iter().map(|x| x * f).collect())
}

/// `max_i |u_i| / scale_i`: a step `f·u` is off by `100·|f|` times this, in percent of the
/// scales, so one pass over `u` serves every operation on its equation.
pub fn reach(u: &[f64], scales: &[f64]) -> f64 {
    u.iter()
        .zip(scales)
        .map(|(x, s)| x.abs() / s)
        .fold(0.0, f64::max)
}

/// Each unknown's scale ([`scale`], its largest magnitude over the samples), or infinity for
/// an unknown that is not `measured` (per variable), so its steps count for nothing.
pub fn scales(l: &Linearised, samples: &[Point], measured: &[bool]) -> Vec<f64> {
    (l.unknowns.iter())
        .map(|&v| match measured[v.0 as usize] {
            true => scale(samples.iter().map(|p| p.vars[v.0 as usize])),
            false => f64::INFINITY,
        })
        .collect()
}

/// The BDF1 step the prediction takes by default, by the paper's rule that the one-step rate
/// `a₀/h` (`a₀ = 1` for BDF1) be a fifth of the model's fastest rate `ρ`
/// ([`super::sample::Sampled::fastest_rate`]): `h = 5/ρ`, five of its fastest time constants,
/// a step over which the fastest mode has settled as a stiff solver's step lets it.
pub fn default_step(fastest_rate: f64) -> f64 {
    5.0 / fastest_rate
}
