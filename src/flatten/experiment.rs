//! The `experiment` annotation of the model's class (Modelica 18.4): the run a modeller
//! intends (`StartTime`, `StopTime`, `Interval`, `Tolerance`), which `simulate` takes as its
//! defaults. Only literal numbers are read; anything else leaves that setting to the defaults.

use crate::dae::Experiment;
use crate::syntax::ast::{Argument, ClassBody, ClassDef, Expr, ExprKind, Modification, UnOp};

/// The experiment a class's annotation gives (every field `None` without one).
pub fn experiment_of(class: &ClassDef) -> Experiment {
    let ClassBody::Long(composition) = &class.body else {
        return Experiment::default();
    };
    let Some(settings) = composition
        .annotation
        .as_ref()
        .and_then(|a| argument(a, "experiment"))
        .and_then(|m| m.as_ref())
    else {
        return Experiment::default();
    };
    let number = |name: &str| {
        argument(settings, name)
            .and_then(|m| m.as_ref())
            .and_then(|m| m.binding.as_ref())
            .and_then(literal)
    };
    Experiment {
        start: number("StartTime"),
        stop: number("StopTime"),
        interval: number("Interval"),
        tolerance: number("Tolerance"),
    }
}

/// The modification of the argument `name` of `m`, if `m` has one by that name.
fn argument<'m>(m: &'m Modification, name: &str) -> Option<&'m Option<Modification>> {
    m.arguments.iter().find_map(|a| match a {
        Argument::Modify {
            name: n,
            modification,
            ..
        } if n.dotted() == name => Some(modification),
        _ => None,
    })
}

/// A literal number, possibly signed.
fn literal(e: &Expr) -> Option<f64> {
    match &e.kind {
        ExprKind::Integer(i) => Some(*i as f64),
        ExprKind::Real(x) => Some(*x),
        ExprKind::Unary {
            op: UnOp::Neg,
            operand,
        } => literal(operand).map(|x| -x),
        ExprKind::Unary {
            op: UnOp::Plus,
            operand,
        } => literal(operand),
        _ => None,
    }
}
