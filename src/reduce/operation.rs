//! The elementary operations of SPEC §11 applied to the flat model, the guard that keeps its
//! matching perfect, and what initialisation loses with a removed derivative.

use std::collections::{BTreeMap, BTreeSet};

use super::terms::TermRef;
use crate::dae::{Dae, Equation, VarKind};
use crate::expr::{ExprPool, Node, VarId};

/// Delete a term, or replace it by a constant (its mean over the reference samples).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Operation {
    Delete,
    Replace(f64),
}

impl Operation {
    pub fn name(self) -> &'static str {
        match self {
            Operation::Delete => "delete",
            Operation::Replace(_) => "replace",
        }
    }
}

/// The flat model after some operations, and what its initialisation lost.
#[derive(Clone, Debug)]
pub struct Reduced {
    pub dae: Dae,
    /// Initial equations of the original (indices) dropped: they read the derivative of a
    /// variable no equation differentiates any more.
    pub dropped_initial: Vec<usize>,
    /// Variables that are states no more (no equation reads their derivative): their
    /// `fixed = true` start no longer holds them.
    pub no_longer_states: Vec<VarId>,
}

/// `flat` with `ops` applied (a term at most once): each changed equation keeps its sides,
/// less the deleted terms and with the replaced ones as constants.
pub fn apply(flat: &Dae, ops: &[(TermRef, Operation)]) -> Reduced {
    let mut dae = flat.clone();
    let mut by_equation: BTreeMap<usize, Vec<(usize, Operation)>> = BTreeMap::new();
    for &(t, op) in ops {
        by_equation
            .entry(t.equation)
            .or_default()
            .push((t.term, op));
    }
    for (e, changes) in by_equation {
        let eq = &mut dae.equations[e];
        rewrite(&mut dae.pool, eq, &changes);
    }
    let before = differentiated(flat);
    let after = differentiated(&dae);
    let removed: BTreeSet<VarId> = before.difference(&after).copied().collect();
    let dropped_initial: Vec<usize> = (0..flat.initial_equations.len())
        .filter(|&i| {
            let mut reads = false;
            flat.pool
                .visit_leaves(flat.initial_equations[i].residual, |n| {
                    reads |= matches!(n, Node::Der(v) if removed.contains(&v));
                });
            reads
        })
        .collect();
    for &i in dropped_initial.iter().rev() {
        dae.initial_equations.remove(i);
    }
    for &v in &removed {
        let var = &mut dae.variables[v.0 as usize];
        if var.kind == VarKind::State {
            var.kind = VarKind::Algebraic;
            var.fixed = None;
        }
    }
    Reduced {
        dae,
        dropped_initial,
        no_longer_states: removed.into_iter().collect(),
    }
}

/// The variables whose derivative some equation reads.
fn differentiated(dae: &Dae) -> BTreeSet<VarId> {
    let mut set = BTreeSet::new();
    for eq in &dae.equations {
        dae.pool.visit_leaves(eq.residual, |n| {
            if let Node::Der(v) = n {
                set.insert(v);
            }
        });
    }
    set
}

/// Rebuilds `eq` without its deleted terms and with its replaced ones as constants, each side
/// as written.
fn rewrite(pool: &mut ExprPool, eq: &mut Equation, changes: &[(usize, Operation)]) {
    let on_left = left_terms(pool, eq);
    let (mut lhs, mut rhs) = (pool.zero(), pool.zero());
    let mut kept = Vec::with_capacity(eq.terms.len());
    for (i, term) in eq.terms.iter().enumerate() {
        let expr = match changes.iter().find(|(k, _)| *k == i).map(|(_, op)| *op) {
            Some(Operation::Delete) => continue,
            Some(Operation::Replace(c)) => pool.constant(c),
            None => term.expr,
        };
        // A term's sign is +1 on the left side; within its own side, on the right, it is
        // the opposite.
        let (side, within) = if i < on_left {
            (&mut lhs, term.sign)
        } else {
            (&mut rhs, -term.sign)
        };
        *side = if within > 0.0 {
            pool.add(*side, expr)
        } else {
            pool.sub(*side, expr)
        };
        kept.push(crate::dae::Term { expr, ..*term });
    }
    eq.lhs = lhs;
    eq.rhs = rhs;
    eq.residual = pool.sub(lhs, rhs);
    eq.terms = kept;
}

/// How many of `eq`'s terms make its left side: the count whose sum, built as the flattener
/// builds it, is the left side (all the positive ones when none is).
fn left_terms(pool: &mut ExprPool, eq: &Equation) -> usize {
    let mut side = pool.zero();
    if side == eq.lhs {
        return 0;
    }
    for (i, term) in eq.terms.iter().enumerate() {
        side = if term.sign > 0.0 {
            pool.add(side, term.expr)
        } else {
            pool.sub(side, term.expr)
        };
        if side == eq.lhs {
            return i + 1;
        }
    }
    eq.terms.iter().take_while(|t| t.sign > 0.0).count()
}

/// Whether the reduced model can still be matched and sorted: every equation keeps an
/// unknown of its own (SPEC §11's guard), checked by the structural analysis itself.
pub fn keeps_perfect_matching(reduced: &Dae) -> bool {
    let (prepared, _) = crate::structure::prepare(reduced.clone());
    crate::structure::analyse(&prepared).is_ok()
}
