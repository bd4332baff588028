//! Relations and event functions held between events (Modelica 8.5; SPEC §6). A relation of
//! the continuous equations (`x > 0`) and an event function (`floor`, `ceil`, `integer`,
//! `div`, `mod`, `rem`) over values that vary continuously becomes a held variable of its
//! own, a *switch*: the integrator steps the model with it fixed, and the event module
//! watches its expression and updates it at events. Under `noEvent` (or `smooth`) they stay
//! as they are, evaluated directly.
//!
//! Only simulation holds relations: the analyses evaluate a model at one operating point,
//! where a relation is what it evaluates to.

use std::collections::HashMap;

use super::hybrid::Switch;
use super::{Dae, ScalarType, VarKind, Variable};
use crate::expr::hash::FxBuild;
use crate::expr::{CmpOp, ExprId, Func, Node};

/// Replaces every relation and event function of the continuous equations whose operands
/// vary continuously (outside `noEvent`) by a switch.
pub fn hold_relations(dae: &mut Dae) {
    if !dae.pool.any_node(makes_events) {
        return;
    }
    let mut held = Holder {
        done: HashMap::default(),
    };
    for k in 0..dae.equations.len() {
        let eq = &dae.equations[k];
        let (lhs, rhs, residual) = (eq.lhs, eq.rhs, eq.residual);
        let terms: Vec<ExprId> = eq.terms.iter().map(|t| t.expr).collect();
        let lhs = held.rewrite(dae, lhs, k);
        let rhs = held.rewrite(dae, rhs, k);
        let residual = held.rewrite(dae, residual, k);
        let terms: Vec<ExprId> = terms.into_iter().map(|t| held.rewrite(dae, t, k)).collect();
        let eq = &mut dae.equations[k];
        (eq.lhs, eq.rhs, eq.residual) = (lhs, rhs, residual);
        for (term, e) in eq.terms.iter_mut().zip(terms) {
            term.expr = e;
        }
    }
}

struct Holder {
    /// Each expression rewritten, once.
    done: HashMap<ExprId, ExprId, FxBuild>,
}

impl Holder {
    /// `e` with its switches in place (`equation` names the first equation a new switch is
    /// met in, for its span).
    fn rewrite(&mut self, dae: &mut Dae, e: ExprId, equation: usize) -> ExprId {
        if let Some(&done) = self.done.get(&e) {
            return done;
        }
        let node = dae.pool.node(e);
        let result = match node {
            _ if node.is_leaf() => e,
            Node::Call(Func::NoEvent, _) => e,
            _ if makes_events(node) && varies_continuously(dae, e) && !on_breakpoint(dae, node) => {
                switch(dae, e, equation)
            }
            _ => {
                let kids = dae.pool.children(e);
                let new: Vec<ExprId> = kids
                    .as_slice()
                    .iter()
                    .map(|&k| self.rewrite(dae, k, equation))
                    .collect();
                if new.as_slice() == kids.as_slice() {
                    e
                } else {
                    dae.pool.rebuild(node, &new)
                }
            }
        };
        self.done.insert(e, result);
        result
    }
}

/// A relation that orders (`==` and `<>` compare discrete values, which change only at
/// events), or a function that steps.
fn makes_events(node: Node) -> bool {
    match node {
        Node::Cmp(op, ..) => !matches!(op, CmpOp::Eq | CmpOp::Ne),
        Node::Call(f, _) => f.is_stepwise(),
        _ => false,
    }
}

/// `time` against parameters: the integrators already switch it exactly at its breakpoint,
/// known in advance (a time event).
fn on_breakpoint(dae: &Dae, node: Node) -> bool {
    let Node::Cmp(_, a, b) = node else {
        return false;
    };
    let fixed = |e: ExprId| !varies_continuously(dae, e);
    match (dae.pool.node(a), dae.pool.node(b)) {
        (Node::Time, _) => fixed(b),
        (_, Node::Time) => fixed(a),
        _ => false,
    }
}

/// Whether `e` reads time, a derivative or an unknown: a value that changes between events.
pub fn varies_continuously(dae: &Dae, e: ExprId) -> bool {
    let mut varies = false;
    dae.pool.visit_leaves(e, |n| match n {
        Node::Time | Node::Der(_) | Node::Last(_) => varies = true,
        Node::Var(v) => varies |= dae.var(v).kind.is_unknown(),
        _ => {}
    });
    varies
}

/// The switch of `value` (a relation or a stepwise function), a new held variable read in its
/// place.
fn switch(dae: &mut Dae, value: ExprId, equation: usize) -> ExprId {
    let span = dae.equations[equation].span;
    let ty = match dae.pool.node(value) {
        Node::Cmp(..) => ScalarType::Boolean,
        _ => ScalarType::Real,
    };
    let k = dae.hybrid.switches.len();
    let var = Variable::derived(format!("$switch{k}"), VarKind::Held, ty, span);
    let var = dae
        .add_variable(var)
        .expect("`$` starts no name of the model's own");
    dae.hybrid.switches.push(Switch { var, value });
    dae.pool.var(var)
}
