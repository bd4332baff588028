//! Clocked equations that no order of assignments solves (Modelica 16.7.4: a clocked
//! partition's equations are sorted like the continuous ones): an equation between two
//! unknowns (`u1 = u2` of an inverse model), one an unknown cannot be isolated from, or an
//! algebraic loop. They are matched to their unknowns and split into strongly connected
//! blocks, in evaluation order; a one-equation block affine in its unknown is an assignment,
//! any other is a system solved together by Newton at the tick, its Jacobian exact.

use crate::dae::hybrid::{Action, EquationSystem};
use crate::diagnostics::Diagnostic;
use crate::expr::hash::FxHashMap;
use crate::expr::{ExprId, Node, VarId};
use crate::source::Span;
use crate::structure::matching::{Bipartite, NONE, hopcroft_karp};
use crate::structure::tarjan::strongly_connected;

use super::super::Flattener;

impl Flattener<'_> {
    /// The equations `rows` (indices among the model's equations), of which none can be
    /// solved by assignment, as actions in evaluation order, each with its first
    /// equation's span. `assigned` marks what the partitions have assigned already.
    pub(super) fn solved_together(
        &mut self,
        rows: &[usize],
        assigned: &[bool],
    ) -> Result<Vec<(Action, Span)>, Diagnostic> {
        let (unknowns, graph) = self.incidence(rows, assigned);
        let matching = hopcroft_karp(&graph);
        if let Some(e) = (0..rows.len()).find(|&e| matching.of_equation[e] == NONE) {
            return Err(Diagnostic::error(format!(
                "these clocked equations do not determine their {} unknowns one for one: the system is structurally singular",
                unknowns.len()
            ))
            .at(self.dae.equations[rows[e]].span, "this equation is left over"));
        }
        if let Some(u) = (0..unknowns.len()).find(|&u| matching.of_unknown[u] == NONE) {
            let name = &self.dae.var(unknowns[u]).name;
            return Err(Diagnostic::error(format!(
                "no clocked equation determines `{name}`: these equations have fewer equations than unknowns"
            ))
            .at(self.dae.equations[rows[0]].span, "among these equations"));
        }
        let blocks = strongly_connected(rows.len(), &|e, next: &mut Vec<usize>| {
            let own = matching.of_equation[e];
            let needs = graph.row(e).iter().filter(|&&u| u != own);
            next.extend(needs.map(|&u| matching.of_unknown[u]));
        });
        let mut actions = Vec::with_capacity(blocks.len());
        for block in blocks {
            if let [e] = block[..]
                && let Some(solved) =
                    self.alone_on_a_side(rows[e], unknowns[matching.of_equation[e]])
            {
                actions.push(solved);
                continue;
            }
            let equations: Vec<(ExprId, Span)> = (block.iter())
                .map(|&e| {
                    let eq = &self.dae.equations[rows[e]];
                    (eq.residual, eq.span)
                })
                .collect();
            let vars: Vec<VarId> = (block.iter())
                .map(|&e| unknowns[matching.of_equation[e]])
                .collect();
            actions.push(self.block_action(&equations, vars));
        }
        Ok(actions)
    }

    /// `actions` with each cycle of assignments among them (equations solved each for a
    /// variable that depends on itself through the others, or directly: `x = 0.5·x + u`)
    /// merged into one block at the place of its first: what remains orders by dependency.
    pub(super) fn cycles_solved_together(
        &mut self,
        actions: Vec<(Action, Span)>,
    ) -> Result<Vec<(Action, Span)>, Diagnostic> {
        let mut writer: FxHashMap<VarId, usize> = FxHashMap::default();
        for (k, (action, _)) in actions.iter().enumerate() {
            for var in Action::assigned(std::slice::from_ref(action)) {
                writer.insert(var, k);
            }
        }
        let needs: Vec<Vec<usize>> = (actions.iter())
            .map(|(action, _)| {
                let mut reads = Vec::new();
                self.action_reads(action, &mut reads);
                let mut needs: Vec<usize> = reads
                    .iter()
                    .filter_map(|v| writer.get(v).copied())
                    .collect();
                needs.sort_unstable();
                needs.dedup();
                needs
            })
            .collect();
        let blocks = strongly_connected(actions.len(), &|k, next: &mut Vec<usize>| {
            next.extend_from_slice(&needs[k]);
        });
        let mut merged: Vec<Option<(Action, Span)>> = vec![None; actions.len()];
        let mut slots: Vec<Option<(Action, Span)>> = actions.into_iter().map(Some).collect();
        for mut block in blocks {
            let k = block[0];
            // An `if` or a system reads what it assigns, in an order of its own; an assignment
            // that reads its own variable is an equation in it.
            let assignment = matches!(slots[k], Some((Action::Assign { .. }, _)));
            if block.len() == 1 && !(assignment && needs[k].contains(&k)) {
                merged[k] = slots[k].take();
                continue;
            }
            block.sort_unstable();
            let mut equations = Vec::with_capacity(block.len());
            let mut vars = Vec::with_capacity(block.len());
            for &k in &block {
                let (action, at) = slots[k].take().expect("each action is in one block");
                let Action::Assign { var, value, span } = action else {
                    return Err(Diagnostic::error(
                        "these clocked equations form an algebraic loop through an if-equation, which mocca does not solve inside a clocked partition",
                    )
                    .at(at, "in the loop"));
                };
                let at = self.dae.pool.var(var);
                equations.push((self.dae.pool.sub(at, value), span));
                vars.push(var);
            }
            merged[block[0]] = Some(self.block_action(&equations, vars));
        }
        Ok(merged.into_iter().flatten().collect())
    }

    /// Equation `k` as the assignment of `var` when `var` is one of its sides.
    fn alone_on_a_side(&self, k: usize, var: VarId) -> Option<(Action, Span)> {
        let eq = &self.dae.equations[k];
        let at = Node::Var(var);
        let value = match (self.dae.pool.node(eq.lhs), self.dae.pool.node(eq.rhs)) {
            (lhs, _) if lhs == at => eq.rhs,
            (_, rhs) if rhs == at => eq.lhs,
            _ => return None,
        };
        let span = eq.span;
        Some((Action::Assign { var, value, span }, span))
    }

    /// The unknowns the equations `rows` read, in first-read order, and which each reads.
    fn incidence(&self, rows: &[usize], assigned: &[bool]) -> (Vec<VarId>, Bipartite) {
        let mut index: FxHashMap<VarId, usize> = FxHashMap::default();
        let mut unknowns = Vec::new();
        let mut incidence = Vec::with_capacity(rows.len());
        for &k in rows {
            let mut row = Vec::new();
            self.dae
                .pool
                .visit_leaves(self.dae.equations[k].residual, |node| {
                    let Node::Var(v) = node else { return };
                    if !self.is_unknown(v, assigned) {
                        return;
                    }
                    let u = *index.entry(v).or_insert_with(|| {
                        unknowns.push(v);
                        unknowns.len() - 1
                    });
                    if !row.contains(&u) {
                        row.push(u);
                    }
                });
            incidence.push(row);
        }
        let graph = Bipartite::from_rows(&incidence, unknowns.len());
        (unknowns, graph)
    }

    /// One block: `residual = 0` for its one unknown when affine in it, else the block's
    /// equations solved together.
    fn block_action(&mut self, equations: &[(ExprId, Span)], vars: Vec<VarId>) -> (Action, Span) {
        let pool = &mut self.dae.pool;
        let span = equations[0].1;
        if let ([(residual, span)], [var]) = (equations, vars.as_slice())
            && let Some(value) = pool.solve_affine(*residual, Node::Var(*var))
        {
            let var = *var;
            return (
                Action::Assign {
                    var,
                    value,
                    span: *span,
                },
                *span,
            );
        }
        let mut jacobian = Vec::new();
        for (i, &(residual, _)) in equations.iter().enumerate() {
            for (j, &var) in vars.iter().enumerate() {
                let entry = pool.diff(residual, Node::Var(var));
                if pool.as_const(entry) != Some(0.0) {
                    jacobian.push((i, j, entry));
                }
            }
        }
        let system = EquationSystem {
            vars,
            residuals: equations.iter().map(|&(r, _)| r).collect(),
            jacobian,
            span,
        };
        (Action::Solve(Box::new(system)), span)
    }
}
