//! Checks on the values of parameters and constants (Modelica 3.8, 4.4.4): a constant has a
//! value and is fixed, a binding depends on nothing more variable than what it binds, and no
//! binding depends on itself.

use super::Flattener;
use crate::dae::{Equation, EquationOrigin, ScalarType, VarKind};
use crate::diagnostics::Diagnostic;
use crate::expr::hash::FxIndexMap;
use crate::expr::{Node, VarId};
use crate::source::Span;

/// How variable a flat variable is: constants < parameters < everything else.
fn level(kind: VarKind) -> u8 {
    match kind {
        VarKind::Constant => 0,
        VarKind::Parameter => 1,
        _ => 2,
    }
}

impl Flattener<'_> {
    pub(crate) fn check_parameter_values(&mut self) {
        let mut depends: Vec<Vec<VarId>> = vec![Vec::new(); self.dae.variables.len()];
        for (i, var) in self.dae.variables.iter().enumerate() {
            let own = level(var.kind);
            if own == 2 {
                continue;
            }
            if var.kind == VarKind::Constant && var.fixed == Some(false) {
                self.diags.push(
                    Diagnostic::error(format!(
                        "constant `{}` cannot have `fixed = false`",
                        var.name
                    ))
                    .at(var.span, "a constant is always fixed"),
                );
            }
            let Some(binding) = var.binding else {
                // A flow gets its value from the connection rules (an unconnected one is zero).
                // A String's value is text, kept out of the numbers (the binding is unset).
                if var.kind == VarKind::Constant && !var.flow && var.ty != ScalarType::String {
                    self.diags.push(
                        Diagnostic::error(format!("constant `{}` has no value", var.name))
                            .at(var.span, "needs a binding (`= value`)"),
                    );
                }
                continue;
            };
            let mut worst: Option<(&str, String)> = None;
            self.dae.pool.visit_leaves(binding, |n| match n {
                Node::Var(w) | Node::Der(w) | Node::Last(w) => {
                    let other = &self.dae.variables[w.0 as usize];
                    if level(other.kind) > own && worst.is_none() {
                        worst = Some((variability_name(other.kind), other.name.clone()));
                    }
                    depends[i].push(w);
                }
                Node::Time if worst.is_none() => worst = Some(("continuous", "time".into())),
                _ => {}
            });
            if let Some((what, name)) = worst {
                self.diags.push(
                    Diagnostic::error(format!(
                        "the value of {} `{}` depends on the {what} `{name}`",
                        variability_name(var.kind),
                        var.name
                    ))
                    .at(var.span, "binding too variable"),
                );
            }
        }
        self.warn_parameters_without_value();
        if let Some(v) = first_cycle(&depends) {
            let var = self.dae.var(v);
            self.diags.push(
                Diagnostic::error(format!("the value of `{}` depends on itself", var.name))
                    .at(var.span, "cyclic binding"),
            );
        }
    }
}

impl Flattener<'_> {
    /// A parameter with neither a binding nor a start value is used as 0 (OpenModelica warns
    /// the same way): one warning per declaration, naming its first scalar and the value.
    /// Not after an error: a binding that could not be flattened (`-p k=abc`) leaves its
    /// parameter without a value, and its error says why.
    fn warn_parameters_without_value(&mut self) {
        if crate::diagnostics::has_errors(&self.diags) {
            return;
        }
        let mut by_declaration: FxIndexMap<Span, Vec<VarId>> = FxIndexMap::default();
        for v in self.dae.parameters_without_value() {
            by_declaration
                .entry(self.dae.var(v).span)
                .or_default()
                .push(v);
        }
        for (span, vars) in by_declaration {
            let first = self.dae.var(vars[0]);
            let value = match first.ty {
                ScalarType::Boolean => "false",
                _ => "0",
            };
            let name = match vars.len() {
                1 => format!("`{}`", first.name),
                n => format!("`{}` (and {} more of this declaration)", first.name, n - 1),
            };
            self.diags.push(
                Diagnostic::warning(format!(
                    "parameter {name} has neither a binding nor a start value: {value} is used"
                ))
                .at(span, format!("no value given; {value} is used")),
            );
        }
    }
}

fn variability_name(kind: VarKind) -> &'static str {
    match kind {
        VarKind::Constant => "constant",
        VarKind::Parameter => "parameter",
        _ => "continuous variable",
    }
}

/// A vertex on a cycle of the dependency graph, by iterative depth-first search.
fn first_cycle(depends: &[Vec<VarId>]) -> Option<VarId> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    let mut mark = vec![Mark::New; depends.len()];
    for start in 0..depends.len() {
        if mark[start] != Mark::New || depends[start].is_empty() {
            continue;
        }
        let mut stack = vec![(start, 0usize)];
        mark[start] = Mark::Open;
        while let Some(&mut (v, ref mut next)) = stack.last_mut() {
            if let Some(&w) = depends[v].get(*next) {
                *next += 1;
                let w = w.0 as usize;
                match mark[w] {
                    Mark::Open => return Some(VarId(w as u32)),
                    Mark::New => {
                        mark[w] = Mark::Open;
                        stack.push((w, 0));
                    }
                    Mark::Done => {}
                }
            } else {
                mark[v] = Mark::Done;
                stack.pop();
            }
        }
    }
    None
}

impl Flattener<'_> {
    /// Parameters with `fixed = false` are unknowns of the initial system, constant after it
    /// (Modelica 8.6): each becomes a state whose derivative is zero, free at the start (its
    /// binding, if any, gives its start value). A parameter whose binding reads one becomes an
    /// algebraic variable computed by its binding.
    pub(crate) fn free_parameters(&mut self) {
        let free: Vec<bool> = (self.dae.variables.iter())
            .map(|v| {
                v.kind == VarKind::Parameter && v.fixed == Some(false) && v.ty == ScalarType::Real
            })
            .collect();
        if !free.contains(&true) {
            return;
        }
        let mut dependent = vec![false; free.len()];
        loop {
            let mut grew = false;
            for (i, var) in self.dae.variables.iter().enumerate() {
                if var.kind != VarKind::Parameter || free[i] || dependent[i] {
                    continue;
                }
                let Some(binding) = var.binding else {
                    continue;
                };
                let mut reads = false;
                self.dae.pool.visit_leaves(binding, |n| {
                    if let Node::Var(w) = n {
                        reads |= free[w.0 as usize] || dependent[w.0 as usize];
                    }
                });
                if reads {
                    dependent[i] = true;
                    grew = true;
                }
            }
            if !grew {
                break;
            }
        }
        for i in 0..free.len() {
            let v = VarId(i as u32);
            if free[i] || dependent[i] {
                self.free_parameters.insert(v);
            }
            if free[i] {
                let var = &mut self.dae.variables[i];
                var.kind = VarKind::Algebraic;
                if let Some(binding) = var.binding.take() {
                    var.start = Some(binding);
                }
                let place = (var.span, var.component.clone());
                let pool = &mut self.dae.pool;
                let (rate, zero) = (pool.der(v), pool.zero());
                let eq = Equation::between(pool, rate, zero, EquationOrigin::Binding, place);
                self.dae.equations.push(eq);
            } else if dependent[i] {
                let var = &mut self.dae.variables[i];
                var.kind = VarKind::Algebraic;
                let binding = var.binding.take().expect("a dependent has a binding");
                let place = (var.span, var.component.clone());
                let pool = &mut self.dae.pool;
                let eq = Equation::assignment(pool, v, binding, EquationOrigin::Binding, place);
                self.dae.equations.push(eq);
            }
        }
    }
}
