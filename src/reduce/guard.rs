//! SPEC §11's guard: after an operation the reduced model must still have a perfect matching,
//! each equation keeping an unknown of its own.

use std::collections::{BTreeMap, VecDeque};

use super::operation::{Operation, rewrite};
use crate::dae::{Dae, Equation, VarKind};
use crate::expr::{ExprId, ExprPool, Node};
use crate::structure::matching::{Bipartite, Matching, hopcroft_karp};

/// Whether the reduced model can still be matched and sorted, by the structural analysis
/// itself (for the models the fast path does not take).
pub fn keeps_perfect_matching(reduced: &Dae) -> bool {
    crate::structure::prepare(reduced.clone())
        .is_ok_and(|(prepared, _)| crate::structure::analyse(&prepared).is_ok())
}

/// The guard kept as operations are applied: a perfect matching of the reduced model's
/// equations to its unknowns (the derivatives of its states and its algebraic variables).
///
/// An operation only takes leaves out of its equation. Where the equation keeps its matched
/// unknown, the matching stays perfect; where it loses it, an alternating path from the
/// equation to that unknown repairs the matching, and where there is none no perfect matching
/// exists. A state whose last derivative goes becomes an algebraic unknown (as
/// [`super::initial::settle`] makes it): its column stands for the variable, read by the
/// equations that read its value.
pub struct Matched {
    /// Per equation, the columns of the unknowns it reads, sorted.
    rows: Vec<Vec<usize>>,
    /// Per column, how many equations read it.
    readers: Vec<usize>,
    /// Per column, whether it is a state's derivative (else an algebraic variable).
    is_derivative: Vec<bool>,
    /// Per state's column, the equations of the model as written that read the state's value
    /// (a superset of those of the reduced model).
    value_readers: BTreeMap<usize, Vec<usize>>,
    /// Per variable, its column (`usize::MAX` for none).
    column: Vec<usize>,
    matching: Matching,
    /// The reduced model's equations so far (its pool also holds the equations being tried).
    current: Dae,
}

/// An operation's equation the guard accepted, with the matching that goes with it.
pub struct Kept {
    equation: Equation,
    /// The equations whose unknowns change, with their new rows.
    rows: BTreeMap<usize, Vec<usize>>,
    /// States' columns that become algebraic variables.
    freed: Vec<usize>,
    /// `(equation, column)` pairs the repaired matching reassigns.
    reassigned: Vec<(usize, usize)>,
}

impl Matched {
    /// Of the reduced model `flat`; `None` when it does not apply: weak variables (solved by
    /// any equation that mentions them), or no perfect matching of the model as written (a
    /// model whose index reduction finds the matching).
    pub fn new(flat: &Dae) -> Option<Matched> {
        if flat.variables.iter().any(|v| v.weak) {
            return None;
        }
        let mut column = vec![usize::MAX; flat.variables.len()];
        let mut is_derivative = Vec::new();
        for v in flat.var_ids() {
            let kind = flat.var(v).kind;
            if matches!(kind, VarKind::State | VarKind::Algebraic) {
                column[v.0 as usize] = is_derivative.len();
                is_derivative.push(kind == VarKind::State);
            }
        }
        let mut value_readers: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (e, eq) in flat.equations.iter().enumerate() {
            flat.pool.visit_leaves(eq.residual, |n| {
                if let Node::Var(v) = n
                    && flat.var(v).kind == VarKind::State
                {
                    value_readers
                        .entry(column[v.0 as usize])
                        .or_default()
                        .push(e);
                }
            });
        }
        let rows: Vec<Vec<usize>> = (flat.equations.iter())
            .map(|eq| unknowns(&flat.pool, &column, &is_derivative, eq.residual))
            .collect();
        let matching = hopcroft_karp(&Bipartite::from_rows(&rows, is_derivative.len()));
        if !matching.is_perfect() {
            return None;
        }
        let mut readers = vec![0; is_derivative.len()];
        for &c in rows.iter().flatten() {
            readers[c] += 1;
        }
        Some(Matched {
            rows,
            readers,
            is_derivative,
            value_readers,
            column,
            matching,
            current: flat.clone(),
        })
    }

    /// Equation `e` of the original model `flat` with the operations `changes` (term index,
    /// operation; all of those on `e`, the earlier ones included), judged against the reduced
    /// model so far: `None` when no perfect matching is left.
    pub fn check(
        &mut self,
        flat: &Dae,
        e: usize,
        changes: &[(usize, Operation)],
    ) -> Option<Box<Kept>> {
        let mut equation = flat.equations[e].clone();
        rewrite(&mut self.current.pool, &mut equation, changes);
        let pool = &self.current.pool;
        let before = unknowns(pool, &self.column, &self.is_derivative, equation.residual);
        let freed: Vec<usize> = (self.rows[e].iter().copied())
            .filter(|c| self.is_derivative[*c] && self.readers[*c] == 1 && !before.contains(c))
            .collect();
        let mut is_derivative = std::borrow::Cow::Borrowed(&self.is_derivative);
        for &c in &freed {
            is_derivative.to_mut()[c] = false;
        }
        let mut rows = BTreeMap::new();
        for r in (freed.iter()).flat_map(|c| self.value_readers.get(c).into_iter().flatten()) {
            if *r != e {
                let residual = self.current.equations[*r].residual;
                rows.insert(*r, unknowns(pool, &self.column, &is_derivative, residual));
            }
        }
        rows.insert(
            e,
            unknowns(pool, &self.column, &is_derivative, equation.residual),
        );
        let matched = self.matching.of_equation[e];
        let reassigned = if rows[&e].contains(&matched) {
            Vec::new()
        } else {
            self.alternating_path(e, &rows, matched)?
        };
        Some(Box::new(Kept {
            equation,
            rows,
            freed,
            reassigned,
        }))
    }

    /// The reassignments of a path from equation `e`, which no longer reads its matched
    /// column `free`, through matched pairs to an equation that reads `free` (the rows as
    /// `changed` makes them); `None` when there is none. Breadth-first, so iterative on long
    /// chains.
    fn alternating_path(
        &self,
        e: usize,
        changed: &BTreeMap<usize, Vec<usize>>,
        free: usize,
    ) -> Option<Vec<(usize, usize)>> {
        let reads = |r: usize| changed.get(&r).unwrap_or(&self.rows[r]);
        // Per column reached, the equation it was reached from.
        let mut from = BTreeMap::new();
        let mut queue = VecDeque::from([e]);
        while let Some(r) = queue.pop_front() {
            for &c in reads(r) {
                if from.contains_key(&c) {
                    continue;
                }
                from.insert(c, r);
                if c == free {
                    return Some(self.unwind(&from, c, e));
                }
                queue.push_back(self.matching.of_unknown[c]);
            }
        }
        None
    }

    /// The path's reassignments, walked back from the column `c` it reached to equation `e`.
    fn unwind(&self, from: &BTreeMap<usize, usize>, mut c: usize, e: usize) -> Vec<(usize, usize)> {
        let mut reassigned = Vec::new();
        loop {
            let r = from[&c];
            reassigned.push((r, c));
            if r == e {
                return reassigned;
            }
            c = self.matching.of_equation[r];
        }
    }

    /// Takes an accepted equation into the reduced model.
    pub fn commit(&mut self, e: usize, kept: Kept) {
        for &c in &kept.freed {
            self.is_derivative[c] = false;
        }
        for (r, row) in kept.rows {
            for &c in &self.rows[r] {
                self.readers[c] -= 1;
            }
            for &c in &row {
                self.readers[c] += 1;
            }
            self.rows[r] = row;
        }
        for (r, c) in kept.reassigned {
            self.matching.of_equation[r] = c;
            self.matching.of_unknown[c] = r;
        }
        self.current.equations[e] = kept.equation;
    }
}

/// The columns of the unknowns `residual` reads, sorted: a state's derivative, or the value
/// of an algebraic variable (a former state's included).
fn unknowns(
    pool: &ExprPool,
    column: &[usize],
    is_derivative: &[bool],
    residual: ExprId,
) -> Vec<usize> {
    let mut row = Vec::new();
    pool.visit_leaves(residual, |n| {
        let (v, derivative) = match n {
            Node::Der(v) => (v, true),
            Node::Var(v) => (v, false),
            _ => return,
        };
        let c = column[v.0 as usize];
        if c != usize::MAX && is_derivative[c] == derivative {
            row.push(c);
        }
    });
    row.sort_unstable();
    row.dedup();
    row
}
