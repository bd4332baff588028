//! The elementary operations of SPEC §11 applied to the flat model.

use std::collections::BTreeMap;

use super::initial::{InitialChanges, settle};
use super::terms::TermRef;
use crate::dae::{Dae, Equation};
use crate::expr::ExprPool;

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
    pub initial: InitialChanges,
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
    let initial = settle(flat, &mut dae);
    Reduced { dae, initial }
}

/// Rebuilds `eq` without its deleted terms and with its replaced ones as constants, each side
/// as written.
pub(super) fn rewrite(pool: &mut ExprPool, eq: &mut Equation, changes: &[(usize, Operation)]) {
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
