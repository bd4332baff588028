//! The ODE Jacobian `J = ∂f/∂x` (SPEC §5): the total derivative of each `der(x_i)` with respect
//! to each state through the causal form. Explicit assignments give symbolic entries by the
//! chain rule, `dy/dx = ∂g/∂x + Σ ∂g/∂y_k · dy_k/dx`; a scalar implicit equation by the implicit
//! function theorem; an algebraic loop `R(Y, x) = 0` numerically as `−(∂R/∂Y)⁻¹ ∂R/∂x`.
//! Structural zeros stay zeros: the sparsity pattern is exact.

use std::collections::BTreeMap;

use crate::expr::hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::causal::{Causal, Point, Step, leaf};
use crate::dae::Dae;
use crate::expr::{ExprId, ExprPool, Node, Scaled, VarId};

/// One structurally nonzero entry of J.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub row: usize,
    pub col: usize,
    /// The symbolic value; `None` when it passes through an algebraic loop (numeric only).
    pub expr: Option<ExprId>,
}

/// Per step: which inputs it reads and the partial derivative of its expression (or
/// residual) with respect to each.
#[derive(Clone, Debug, Default)]
struct StepPartials {
    /// `(residual row within the step, input leaf, partial)`.
    inputs: Vec<(usize, Node, ExprId)>,
}

#[derive(Clone, Debug)]
pub struct OdeJacobian {
    pub states: Vec<VarId>,
    /// Sorted by row, then column.
    pub entries: Vec<Entry>,
    partials: Vec<StepPartials>,
    needed: Vec<bool>,
}

/// A variable's sensitivities: (state column, `d var / d state`, `None` when only numeric
/// through a loop), sorted by column. Mostly one or two entries, so a sorted list rather than a
/// map.
type Sens = Vec<(usize, Option<ExprId>)>;

/// What a weak read `last(v)` stands for when differentiating.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WeakReadsAs {
    /// A value held through the step (a partitioned run; the analyses): no entry through it.
    Held,
    /// `v` itself (the model simulated as one system): `∂f/∂last(v)` counts as `∂f/∂v`.
    Current,
}

impl WeakReadsAs {
    /// The node whose sensitivity a leaf carries.
    fn source(self, leaf: Node) -> Node {
        match (self, leaf) {
            (WeakReadsAs::Current, Node::Last(v)) => Node::Var(v),
            _ => leaf,
        }
    }
}

/// The Jacobian with weak reads held ([`WeakReadsAs::Held`]).
pub fn ode_jacobian(dae: &mut Dae, causal: &Causal) -> OdeJacobian {
    ode_jacobian_with(dae, causal, WeakReadsAs::Held)
}

/// The Jacobian, with weak reads standing for what `weak` says.
pub fn ode_jacobian_with(dae: &mut Dae, causal: &Causal, weak: WeakReadsAs) -> OdeJacobian {
    let column: BTreeMap<VarId, usize> = causal
        .states
        .iter()
        .enumerate()
        .map(|(i, &v)| (v, i))
        .collect();
    let needed = needed_steps(&dae.pool, causal, weak);
    let mut partials = vec![StepPartials::default(); causal.steps.len()];
    let mut sens: HashMap<Node, Sens> = HashMap::default();
    for (&v, &j) in &column {
        sens.insert(Node::Var(v), vec![(j, Some(dae.pool.one()))]);
    }
    for (k, step) in causal.steps.iter().enumerate() {
        if !needed[k] {
            continue;
        }
        partials[k] = step_partials(dae, step, &sens, weak);
        match step {
            Step::Assign { target, .. } => {
                let total = chain(&mut dae.pool, &partials[k], 0, &sens);
                sens.insert(leaf(*target), total);
            }
            Step::Newton {
                target, derivative, ..
            } => {
                let total = chain(&mut dae.pool, &partials[k], 0, &sens);
                let p = &mut dae.pool;
                let scaled = total
                    .into_iter()
                    .map(|(j, e)| {
                        let e = e.map(|e| {
                            let q = p.div(e, *derivative);
                            p.neg(q)
                        });
                        (j, e)
                    })
                    .collect();
                sens.insert(leaf(*target), scaled);
            }
            Step::Loop { targets, .. } => {
                let mut cols: Sens = partials[k]
                    .inputs
                    .iter()
                    .flat_map(|(_, l, _)| {
                        sens.get(l)
                            .into_iter()
                            .flat_map(|s| s.iter().map(|&(j, _)| (j, None)))
                    })
                    .collect();
                cols.sort_unstable_by_key(|&(j, _)| j);
                cols.dedup_by_key(|&mut (j, _)| j);
                for &t in targets {
                    sens.insert(leaf(t), cols.clone());
                }
            }
        }
    }
    let mut entries = Vec::new();
    for (row, &x) in causal.states.iter().enumerate() {
        for &(col, expr) in sens.get(&Node::Der(x)).into_iter().flatten() {
            if expr.is_some_and(|e| dae.pool.as_const(e) == Some(0.0)) {
                continue;
            }
            entries.push(Entry { row, col, expr });
        }
    }
    OdeJacobian {
        states: causal.states.clone(),
        entries,
        partials,
        needed,
    }
}

/// Steps a state derivative depends on (the rest are outputs: no need to differentiate them).
fn needed_steps(pool: &ExprPool, causal: &Causal, weak: WeakReadsAs) -> Vec<bool> {
    let mut needed = vec![false; causal.steps.len()];
    let mut wanted: HashSet<Node> = HashSet::default();
    for (k, step) in causal.steps.iter().enumerate().rev() {
        let targets = step.targets();
        let solves_der = targets.iter().any(|u| matches!(leaf(*u), Node::Der(_)));
        if !(solves_der || targets.iter().any(|&u| wanted.contains(&leaf(u)))) {
            continue;
        }
        needed[k] = true;
        for &e in step.exprs() {
            pool.visit_leaves(e, |n| {
                let n = weak.source(n);
                if matches!(n, Node::Var(_) | Node::Der(_)) {
                    wanted.insert(n);
                }
            });
        }
    }
    needed
}

/// Partials of the step's expressions with respect to every input that carries a
/// sensitivity (states and earlier unknowns), excluding the step's own targets.
fn step_partials(
    dae: &mut Dae,
    step: &Step,
    sens: &HashMap<Node, Sens>,
    weak: WeakReadsAs,
) -> StepPartials {
    let own: Vec<Node> = step.targets().into_iter().map(leaf).collect();
    let mut inputs = Vec::new();
    for (row, &e) in step.exprs().iter().enumerate() {
        let mut leaves = Vec::new();
        dae.pool.visit_leaves(e, |n| {
            let source = weak.source(n);
            if sens.contains_key(&source) && !own.contains(&source) {
                leaves.push(n);
            }
        });
        leaves.sort_by_key(|&n| leaf_order(n));
        for l in leaves {
            let d = dae.pool.diff(e, l);
            if dae.pool.as_const(d) != Some(0.0) {
                // `v` and `last(v)` both read: two partials on `v`, summed by `chain`.
                inputs.push((row, weak.source(l), d));
            }
        }
    }
    StepPartials { inputs }
}

/// A fixed order of a step's inputs, so the Jacobian's expressions come out the same on
/// every run.
fn leaf_order(n: Node) -> (u8, u32) {
    match n {
        Node::Var(v) => (0, v.0),
        Node::Der(v) => (1, v.0),
        Node::Last(v) => (2, v.0),
        _ => (3, 0),
    }
}

/// `Σ_L ∂e/∂L · dL/dx` for one residual row, column by column.
fn chain(
    pool: &mut ExprPool,
    partials: &StepPartials,
    row: usize,
    sens: &HashMap<Node, Sens>,
) -> Sens {
    // Every (column, input) contribution, then summed per column.
    let mut terms: Vec<(usize, Option<ExprId>)> = Vec::new();
    for &(_, l, d) in partials.inputs.iter().filter(|(r, _, _)| *r == row) {
        for &(j, s) in &sens[&l] {
            terms.push((j, s.map(|s| pool.mul(d, s))));
        }
    }
    let zero = Some(pool.zero());
    sum_by_column(terms, zero, |a, b| match (a, b) {
        (Some(a), Some(b)) => Some(pool.add(a, b)),
        _ => None,
    })
}

impl OdeJacobian {
    /// Numerical values of every entry at a point where the causal form has been evaluated;
    /// an entry whose terms cancel to rounding noise ([`Scaled::cancels`]) is 0, a
    /// structural zero of these parameters.
    pub fn values(&self, dae: &Dae, causal: &Causal, point: &Point) -> Vec<(usize, usize, f64)> {
        self.scaled_values(dae, causal, point)
            .into_iter()
            .map(|(r, c, x)| (r, c, if x.cancels() { 0.0 } else { x.value }))
            .collect()
    }

    /// Every entry's value with the magnitude of the terms summed to make it, so that an
    /// entry that cancels (`kf·Lf − kr·Lr` with `kf·Lf = kr·Lr`) can be told from a small one.
    pub fn scaled_values(
        &self,
        dae: &Dae,
        causal: &Causal,
        point: &Point,
    ) -> Vec<(usize, usize, Scaled)> {
        let pool = &dae.pool;
        let eval = |e: ExprId| pool.eval(e, point).unwrap_or(f64::NAN);
        let scaled = |e: ExprId| {
            pool.eval_scaled(e, point)
                .unwrap_or(Scaled::exact(f64::NAN))
        };
        // Per variable: (column, value) sorted by column, as `Sens` above.
        let mut sens: HashMap<Node, Vec<(usize, Scaled)>> = HashMap::default();
        for (j, &v) in causal.states.iter().enumerate() {
            sens.insert(Node::Var(v), vec![(j, Scaled::exact(1.0))]);
        }
        for (k, step) in causal.steps.iter().enumerate() {
            if !self.needed[k] {
                continue;
            }
            let rows = step.exprs().len();
            let mut rhs: Vec<Vec<(usize, Scaled)>> = vec![Vec::new(); rows];
            for &(r, l, d) in &self.partials[k].inputs {
                let dv = scaled(d);
                for &(j, s) in sens.get(&l).into_iter().flatten() {
                    rhs[r].push((j, dv * s));
                }
            }
            let mut rhs: Vec<Vec<(usize, Scaled)>> = rhs
                .into_iter()
                .map(|r| sum_by_column(r, Scaled::exact(0.0), |a, b| a + b))
                .collect();
            match step {
                Step::Assign { target, .. } => {
                    sens.insert(leaf(*target), rhs.swap_remove(0));
                }
                Step::Newton {
                    target, derivative, ..
                } => {
                    let d = eval(*derivative);
                    let col = rhs
                        .swap_remove(0)
                        .into_iter()
                        .map(|(j, x)| (j, -x / d))
                        .collect();
                    sens.insert(leaf(*target), col);
                }
                Step::Loop {
                    targets, jacobian, ..
                } => {
                    // Through a loop's solve the magnitudes are not followed.
                    let rhs: Vec<BTreeMap<usize, f64>> = rhs
                        .into_iter()
                        .map(|r| r.into_iter().map(|(j, x)| (j, x.value)).collect())
                        .collect();
                    for (t, col) in solve_loop(targets.len(), jacobian, &rhs, &eval) {
                        let col = col.into_iter().map(|(j, x)| (j, Scaled::exact(x)));
                        sens.insert(leaf(targets[t]), col.collect());
                    }
                }
            }
        }
        let mut out = Vec::new();
        for e in &self.entries {
            let x = self.states[e.row];
            let value = sens
                .get(&Node::Der(x))
                .and_then(|s| {
                    let k = s.binary_search_by_key(&e.col, |&(j, _)| j).ok()?;
                    Some(s[k].1)
                })
                .unwrap_or(Scaled::exact(0.0));
            out.push((e.row, e.col, value));
        }
        out
    }
}

/// Contributions summed per column, `zero + first + second + …` in the order given (a stable
/// sort), so every sum — symbolic or floating-point — is built the same whatever the container.
fn sum_by_column<T: Copy>(
    mut contributions: Vec<(usize, T)>,
    zero: T,
    mut add: impl FnMut(T, T) -> T,
) -> Vec<(usize, T)> {
    contributions.sort_by_key(|&(j, _)| j);
    let mut out: Vec<(usize, T)> = Vec::with_capacity(contributions.len());
    for (j, x) in contributions {
        match out.last_mut() {
            Some((last, sum)) if *last == j => *sum = add(*sum, x),
            _ => out.push((j, add(zero, x))),
        }
    }
    out
}

/// `dY/dx = −A⁻¹ B` for a loop with `A = ∂R/∂Y` and `B` the total `∂R/∂x` (sparse columns).
fn solve_loop(
    n: usize,
    jacobian: &[(usize, usize, ExprId)],
    rhs: &[BTreeMap<usize, f64>],
    eval: &dyn Fn(ExprId) -> f64,
) -> Vec<(usize, BTreeMap<usize, f64>)> {
    let mut a = nalgebra::DMatrix::<f64>::zeros(n, n);
    for &(r, c, d) in jacobian {
        a[(r, c)] = eval(d);
    }
    let lu = a.lu();
    let cols: std::collections::BTreeSet<usize> =
        rhs.iter().flat_map(|m| m.keys().copied()).collect();
    let mut out: Vec<(usize, BTreeMap<usize, f64>)> =
        (0..n).map(|t| (t, BTreeMap::new())).collect();
    for j in cols {
        let b = nalgebra::DVector::from_iterator(
            n,
            rhs.iter().map(|m| -m.get(&j).copied().unwrap_or(0.0)),
        );
        let x = lu
            .solve(&b)
            .unwrap_or_else(|| nalgebra::DVector::from_element(n, f64::NAN));
        for t in 0..n {
            out[t].1.insert(j, x[t]);
        }
    }
    out
}
