//! The terms a reduction may delete or replace, as the modeller wrote them, and their values
//! at the reference run's samples.

use crate::causal::Point;
use crate::dae::{Dae, EquationOrigin, VarKind};
use crate::expr::{ExprId, Node, VarId};
use crate::source::SourceMap;

/// Term `term` of equation `equation` of the flat model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TermRef {
    pub equation: usize,
    pub term: usize,
}

/// Every term of the equations the modeller wrote (equation sections and bindings; not the
/// ones connections generate) with at least two terms, in order, those that read parameters
/// and constants only included (deleting `-m*g` is a reduction like any other; such a term
/// can only be deleted, [`is_constant`]); with `component`, only those of that instance and
/// the instances inside it. A literal zero (the `0` of `p.v = 0`) is no term: deleting it
/// changes nothing.
pub fn candidates(dae: &Dae, component: Option<&str>) -> Vec<TermRef> {
    let inside = |c: &str| match component {
        None => true,
        Some(name) => c == name || c.strip_prefix(name).is_some_and(|r| r.starts_with('.')),
    };
    dae.equations
        .iter()
        .enumerate()
        .filter(|(_, eq)| matches!(eq.origin, EquationOrigin::Model | EquationOrigin::Binding))
        .filter(|(_, eq)| eq.terms.len() >= 2 && inside(&eq.component))
        .flat_map(|(e, eq)| {
            (eq.terms.iter().enumerate())
                .filter(|(_, t)| dae.pool.as_const(t.expr) != Some(0.0))
                .map(move |(term, _)| TermRef { equation: e, term })
        })
        .collect()
}

/// Whether term `t` reads parameters and constants only (no variable, derivative or time):
/// replacing it by its mean changes nothing, so deleting it is its one operation.
pub fn is_constant(dae: &Dae, t: TermRef) -> bool {
    let mut reads = false;
    dae.pool
        .visit_leaves(dae.equations[t.equation].terms[t.term].expr, |leaf| {
            reads |= match leaf {
                Node::Var(v) | Node::Last(v) => {
                    !matches!(dae.var(v).kind, VarKind::Parameter | VarKind::Constant)
                }
                Node::Der(_) | Node::Time => true,
                _ => false,
            };
        });
    !reads
}

/// Whether some equation belongs to `component` or an instance inside it.
pub fn has_component(dae: &Dae, component: &str) -> bool {
    let prefix = format!("{component}.");
    dae.equations
        .iter()
        .any(|eq| &*eq.component == component || eq.component.starts_with(&prefix))
}

/// How a term reads to its modeller: its source text (blanks folded), line and instance.
#[derive(Clone, Debug, PartialEq)]
pub struct Described {
    pub text: String,
    pub file: String,
    pub line: usize,
    pub component: String,
}

pub fn describe(dae: &Dae, sources: &SourceMap, t: TermRef) -> Described {
    let eq = &dae.equations[t.equation];
    let term = &eq.terms[t.term];
    let written = sources.snippet(term.span);
    let text = if written.trim().is_empty() {
        dae.show(term.expr)
    } else {
        written.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    Described {
        text,
        file: sources.name(term.span.file).to_string(),
        line: sources.line(term.span),
        component: eq.component.to_string(),
    }
}

/// The derivatives of the flat model's states that the prepared model does not integrate, so
/// that a term reading one can be evaluated: a state index reduction demoted has its
/// derivative in the dummy variable `der(v)`; an alias's is an expression over the derivatives
/// of the variables it aliases (`der(v) = Σ ∂b/∂w·der(w) + ∂b/∂t` for the binding `v = b`).
pub struct AliasDerivatives {
    /// `(v, dummy)`: `der(v)` is the value of `dummy`.
    dummies: Vec<(VarId, VarId)>,
    exprs: Vec<(VarId, ExprId)>,
}

impl AliasDerivatives {
    /// Of the prepared model (its pool extends the flat model's: the flat terms' expressions
    /// stay valid in it).
    pub fn new(prepared: &mut Dae) -> AliasDerivatives {
        let aliases: Vec<(VarId, ExprId)> = prepared
            .var_ids()
            .filter(|&v| prepared.var(v).kind == VarKind::Alias)
            .filter_map(|v| prepared.var(v).binding.map(|b| (v, b)))
            .collect();
        let dummies = prepared
            .var_ids()
            .filter_map(|w| {
                let name = &prepared.var(w).name;
                let inner = name.strip_prefix("der(")?.strip_suffix(')')?;
                Some((prepared.lookup(inner)?, w))
            })
            .collect();
        let pool = &mut prepared.pool;
        let exprs = aliases
            .into_iter()
            .map(|(v, b)| {
                let mut read = Vec::new();
                pool.visit_leaves(b, |n| {
                    if let Node::Var(w) = n {
                        read.push(w);
                    }
                });
                let mut total = pool.diff(b, Node::Time);
                for w in read {
                    let partial = pool.diff(b, Node::Var(w));
                    let rate = pool.der(w);
                    let term = pool.mul(partial, rate);
                    total = pool.add(total, term);
                }
                (v, total)
            })
            .collect();
        AliasDerivatives { dummies, exprs }
    }

    /// Fills `point.ders` of the aliases (NaN where a derivative they read is not known).
    pub fn complete(&self, prepared: &Dae, point: &mut Point) {
        for &(v, dummy) in &self.dummies {
            point.ders[v.0 as usize] = point.vars[dummy.0 as usize];
        }
        for &(v, e) in &self.exprs {
            point.ders[v.0 as usize] = prepared.pool.eval(e, point).unwrap_or(f64::NAN);
        }
    }
}

/// The value of `t` at each sample (NaN where it cannot be evaluated).
pub fn values(flat: &Dae, prepared: &Dae, t: TermRef, samples: &[Point]) -> Vec<f64> {
    let term = &flat.equations[t.equation].terms[t.term];
    samples
        .iter()
        .map(|p| prepared.pool.eval(term.expr, p).unwrap_or(f64::NAN))
        .collect()
}
