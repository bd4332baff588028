//! Tearing of nonlinear algebraic loops (SPEC §4): a few unknowns of the loop (the tearing
//! variables) are guessed by Newton, the others are computed from them one equation at a time
//! (each solved explicitly for one unknown), and the equations left over are the residuals
//! Newton drives to zero. OpenModelica and Dymola solve loops this way by default: a magnetic
//! circuit of 28 unknowns whose permeabilities depend on the fluxes becomes a system in a few
//! fluxes, where Newton on all 28 (each permeability, reluctance and potential an unknown of
//! its own) wanders far from the root.
//!
//! An equation is solved for an unknown only where it is affine in it with a coefficient of
//! parameters that is not 0 (`v = R·i` for `v`, or for `i` where `R` is a nonzero parameter;
//! not for `Φ` in `V = Φ·R_m` with `R_m` an unknown, which could be 0): the eliminated part is
//! then triangular with a nonzero diagonal, and the torn system is singular exactly where the
//! loop is.
//!
//! The choice is greedy (Cellier's heuristic): assign every equation that has one unknown
//! left, and where none has, tear the unknown that lets most equations be assigned next.

use std::collections::HashMap;

use crate::dae::{Dae, VarKind};
use crate::expr::{ExprId, ExprPool, Node, Substituted, VarId};
use crate::structure::Unknown;

use super::{eval_known, leaf};

/// A loop torn: Newton on `tears` against the residual `equations` (indices into the loop's
/// equations), then `inner` in order, each `(equation, unknown, its solved form)`, an index
/// into the loop's equations and unknowns.
pub struct Torn {
    pub tears: Vec<usize>,
    pub residual_equations: Vec<usize>,
    pub inner: Vec<(usize, usize, ExprId)>,
}

/// Tears the loop of `residuals` (one per equation) in `unknowns`; `None` when no unknown
/// can be computed from the others.
pub fn tear(
    dae: &mut Dae,
    residuals: &[ExprId],
    unknowns: &[Unknown],
    known: &mut HashMap<VarId, f64>,
) -> Option<Torn> {
    let n = unknowns.len();
    let index: HashMap<Node, usize> = unknowns
        .iter()
        .enumerate()
        .map(|(k, &u)| (leaf(u), k))
        .collect();
    let incident: Vec<Vec<usize>> = residuals
        .iter()
        .map(|&r| {
            let mut vars = Vec::new();
            dae.pool.visit_leaves(r, |l| vars.extend(index.get(&l)));
            vars.sort_unstable();
            vars
        })
        .collect();
    let mut equations_of = vec![Vec::new(); n];
    for (e, vars) in incident.iter().enumerate() {
        for &v in vars {
            equations_of[v].push(e);
        }
    }
    let solvable: Vec<Vec<(usize, ExprId)>> = incident
        .iter()
        .zip(residuals)
        .map(|(vars, &r)| {
            vars.iter()
                .filter_map(|&v| Some((v, solved_for(dae, r, unknowns[v], known)?)))
                .collect()
        })
        .collect();
    let mut greedy = Greedy {
        known: vec![false; n],
        assigned: vec![false; residuals.len()],
        left: incident.iter().map(Vec::len).collect(),
        ready: Vec::new(),
        incident: &incident,
        equations_of: &equations_of,
        solvable: &solvable,
        guessed: unknowns
            .iter()
            .map(|u| {
                let start = dae.var(u.var()).start;
                start.is_some_and(|s| dae.pool.as_const(s) != Some(0.0))
            })
            .collect(),
        tears: Vec::new(),
        inner: Vec::new(),
    };
    greedy.ready = (0..residuals.len())
        .filter(|&e| greedy.left[e] == 1)
        .collect();
    loop {
        greedy.assign_ready();
        match greedy.best_tear() {
            Some(v) => {
                greedy.tears.push(v);
                greedy.make_known(v);
            }
            None => break,
        }
    }
    if greedy.inner.is_empty() {
        return None;
    }
    let residual_equations = (0..residuals.len())
        .filter(|&e| !greedy.assigned[e])
        .collect();
    Some(Torn {
        tears: greedy.tears,
        residual_equations,
        inner: greedy.inner,
    })
}

/// `residual = 0` solved for `unknown` where it is affine in it with a coefficient of
/// parameters and constants only, nonzero at their values (`known` caches them). A
/// coefficient that varies could be 0 where the loop is evaluated: `Q = v·i` solved for `i`
/// divides by a voltage that starts at 0, `R = R₀(1 + α(T − T₀))` for `T` by `α`, often 0.
fn solved_for(
    dae: &mut Dae,
    residual: ExprId,
    unknown: Unknown,
    known: &mut HashMap<VarId, f64>,
) -> Option<ExprId> {
    let coefficient = dae.pool.diff(residual, leaf(unknown));
    let mut fixed = true;
    dae.pool.visit_leaves(coefficient, |l| {
        fixed &= matches!(l, Node::Var(v)
            if matches!(dae.var(v).kind, VarKind::Parameter | VarKind::Constant));
    });
    if !fixed {
        return None;
    }
    let value = eval_known(dae, coefficient, known, 0).ok()?;
    if value == 0.0 || !value.is_finite() {
        return None;
    }
    dae.pool
        .solve_affine_with(residual, leaf(unknown), coefficient)
}

/// The state of the greedy choice.
struct Greedy<'a> {
    known: Vec<bool>,
    assigned: Vec<bool>,
    /// Per equation: its unknowns not yet known.
    left: Vec<usize>,
    /// Equations with one unknown left, to assign if they can be solved for it.
    ready: Vec<usize>,
    incident: &'a [Vec<usize>],
    equations_of: &'a [Vec<usize>],
    solvable: &'a [Vec<(usize, ExprId)>],
    /// Per unknown: whether the model gives it a start value other than 0.
    guessed: Vec<bool>,
    tears: Vec<usize>,
    inner: Vec<(usize, usize, ExprId)>,
}

impl Greedy<'_> {
    /// Assigns every equation with one unknown left that can be solved for it, and those
    /// that this makes ready, smallest equation first.
    fn assign_ready(&mut self) {
        self.ready.sort_unstable_by(|a, b| b.cmp(a));
        while let Some(e) = self.ready.pop() {
            if self.assigned[e] || self.left[e] != 1 {
                continue;
            }
            let Some(&v) = self.incident[e].iter().find(|&&v| !self.known[v]) else {
                continue;
            };
            let Some(&(_, solved)) = self.solvable[e].iter().find(|&&(u, _)| u == v) else {
                continue;
            };
            self.assigned[e] = true;
            self.inner.push((e, v, solved));
            self.make_known(v);
        }
    }

    /// Marks `v` known, assigned or torn.
    fn make_known(&mut self, v: usize) {
        self.known[v] = true;
        for &e in &self.equations_of[v] {
            self.left[e] -= 1;
            if self.left[e] == 1 && !self.assigned[e] {
                self.ready.push(e);
            }
        }
    }

    /// The unknown to tear next: the one whose knowledge makes most unassigned equations
    /// solvable for their last unknown, then one the model gives a start value other than 0
    /// (Newton starts from the tearing variables' guesses, the only ones it reads: a user's
    /// guess picks the root where a loop has several), then the one in most unassigned
    /// equations, then the first. `None` when every unknown is known.
    fn best_tear(&self) -> Option<usize> {
        let open = |e: &&usize| !self.assigned[**e];
        (0..self.known.len())
            .filter(|&v| !self.known[v])
            .map(|v| {
                let enables = self.equations_of[v]
                    .iter()
                    .filter(open)
                    .filter(|&&e| self.left[e] == 2 && self.solvable_for_other(e, v))
                    .count();
                let occurs = self.equations_of[v].iter().filter(open).count();
                (v, (enables, self.guessed[v], occurs))
            })
            .max_by(|(a, sa), (b, sb)| sa.cmp(sb).then(b.cmp(a)))
            .map(|(v, _)| v)
    }

    /// Whether equation `e` (two unknowns left, `v` one of them) can be solved for the other.
    fn solvable_for_other(&self, e: usize, v: usize) -> bool {
        self.incident[e]
            .iter()
            .find(|&&u| u != v && !self.known[u])
            .is_some_and(|&u| self.solvable[e].iter().any(|&(s, _)| s == u))
    }
}

/// The torn loop's residuals in terms of its tearing variables: each inner unknown replaced
/// by its solved form, in order, so that Newton's Jacobian is the total derivative.
pub fn residuals_in_tears(
    pool: &mut ExprPool,
    residuals: &[ExprId],
    unknowns: &[Unknown],
    torn: &Torn,
) -> Vec<ExprId> {
    let mut by_leaf: HashMap<Node, ExprId> = HashMap::new();
    let mut done = Substituted::default();
    // An inner form reads only tearing variables and earlier inner unknowns, so a subtree
    // rewritten once stays rewritten as the map grows.
    for &(_, v, solved) in &torn.inner {
        let expanded =
            pool.substitute_with(solved, &mut |_, l| by_leaf.get(&l).copied(), &mut done);
        by_leaf.insert(leaf(unknowns[v]), expanded);
    }
    torn.residual_equations
        .iter()
        .map(|&e| {
            pool.substitute_with(
                residuals[e],
                &mut |_, l| by_leaf.get(&l).copied(),
                &mut done,
            )
        })
        .collect()
}
