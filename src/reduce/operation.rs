//! The elementary operations of SPEC §11 applied to the flat model, the guard that keeps its
//! matching perfect.

use std::collections::BTreeMap;

use super::initial::{InitialChanges, settle};
use super::terms::TermRef;
use crate::dae::{Dae, Equation, VarKind};
use crate::expr::{ExprPool, Node};

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

/// Whether the reduced model can still be matched and sorted: every equation keeps an
/// unknown of its own (SPEC §11's guard), checked by the structural analysis itself.
pub fn keeps_perfect_matching(reduced: &Dae) -> bool {
    crate::structure::prepare(reduced.clone())
        .is_ok_and(|(prepared, _)| crate::structure::analyse(&prepared).is_ok())
}

/// The guard's fast path: a perfect matching of the reduced model's equations to its unknowns
/// (the derivatives of its states and its algebraic variables). An operation that leaves its
/// equation its matched unknown and every derivative it read keeps the matching perfect, and
/// the model's states, without analysing the model again.
pub struct Matched {
    /// Per equation, its matched unknown, as the leaf that reads it.
    matched: Vec<Node>,
    /// The reduced model so far (its pool also holds the equations being tried).
    current: Dae,
}

impl Matched {
    /// Of the reduced model `flat`; `None` when the fast path does not apply: weak variables
    /// (solved by any equation that mentions them), or no perfect matching of the model as
    /// written (a model whose index reduction finds the matching).
    pub fn new(flat: &Dae) -> Option<Matched> {
        if flat.variables.iter().any(|v| v.weak) {
            return None;
        }
        let mut column = vec![usize::MAX; flat.variables.len()];
        let mut leaves = Vec::new();
        for v in flat.var_ids() {
            let leaf = match flat.var(v).kind {
                VarKind::State => Node::Der(v),
                VarKind::Algebraic => Node::Var(v),
                _ => continue,
            };
            column[v.0 as usize] = leaves.len();
            leaves.push(leaf);
        }
        let rows: Vec<Vec<usize>> = flat
            .equations
            .iter()
            .map(|eq| {
                let mut row = Vec::new();
                flat.pool.visit_leaves(eq.residual, |n| {
                    if let Some(c) = unknown_column(flat, &column, n) {
                        row.push(c);
                    }
                });
                row.sort_unstable();
                row.dedup();
                row
            })
            .collect();
        let graph = crate::structure::matching::Bipartite::from_rows(&rows, leaves.len());
        let matching = crate::structure::matching::hopcroft_karp(&graph);
        if !matching.is_perfect() {
            return None;
        }
        Some(Matched {
            matched: matching.of_equation.iter().map(|&c| leaves[c]).collect(),
            current: flat.clone(),
        })
    }

    /// Equation `e` of the original model `flat` with the operations `changes` (term index,
    /// operation; all of those on `e`, the earlier ones included), when it surely keeps the
    /// matching perfect and the states as they are; `None` when only the full analysis can
    /// tell.
    pub fn check(
        &mut self,
        flat: &Dae,
        e: usize,
        changes: &[(usize, Operation)],
    ) -> Option<Equation> {
        let mut eq = flat.equations[e].clone();
        let pool = &mut self.current.pool;
        rewrite(pool, &mut eq, changes);
        let mut after = Vec::new();
        pool.visit_leaves(eq.residual, |n| after.push(n));
        let mut lost_derivative = false;
        pool.visit_leaves(self.current.equations[e].residual, |n| {
            lost_derivative |= matches!(n, Node::Der(_)) && !after.contains(&n);
        });
        (after.contains(&self.matched[e]) && !lost_derivative).then_some(eq)
    }

    /// Takes a checked equation into the reduced model.
    pub fn commit(&mut self, e: usize, eq: Equation) {
        self.current.equations[e] = eq;
    }
}

/// The matching column of the unknown a leaf reads, if it reads one.
fn unknown_column(flat: &Dae, column: &[usize], n: Node) -> Option<usize> {
    let v = match n {
        Node::Der(v) if flat.var(v).kind == VarKind::State => v,
        Node::Var(v) if flat.var(v).kind == VarKind::Algebraic => v,
        _ => return None,
    };
    Some(column[v.0 as usize])
}
