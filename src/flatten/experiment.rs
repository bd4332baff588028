//! The `experiment` annotation of the model's class (Modelica 18.4): the run a modeller
//! intends (`StartTime`, `StopTime`, `Interval`, `Tolerance`), which `simulate` takes as its
//! defaults. Only literal numbers are read; anything else leaves that setting to the defaults.

use super::classes::ClassTree;
use crate::dae::Experiment;
use crate::syntax::ast::{
    Argument, ClassBody, ClassDef, ClassKind, Expr, ExprKind, Modification, StoredDefinition, UnOp,
};

/// The experiment a class's annotation gives (every field `None` without one).
pub fn experiment_of(class: &ClassDef) -> Experiment {
    let Some(settings) = experiment_annotation(class).and_then(|m| m.as_ref()) else {
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

/// The `experiment` argument of a class's annotation, if it has one.
fn experiment_annotation(class: &ClassDef) -> Option<&Option<Modification>> {
    let ClassBody::Long(composition) = &class.body else {
        return None;
    };
    argument(composition.annotation.as_ref()?, "experiment")
}

/// The models, blocks and classes, not partial, in `package` (or named `package`) whose
/// annotation has an `experiment`, by full name in declaration order: the examples a library
/// means to be run.
pub fn models_with_experiment(files: &[&StoredDefinition], package: &str) -> Vec<String> {
    let (tree, _) = ClassTree::build(files);
    let inside = format!("{package}.");
    tree.ids()
        .map(|id| tree.node(id))
        .filter(|node| node.path == package || node.path.starts_with(&inside))
        .filter(|node| {
            node.def.is_some_and(|def| {
                matches!(
                    def.kind,
                    ClassKind::Model | ClassKind::Block | ClassKind::Class
                ) && !def.prefixes.partial
                    && experiment_annotation(def).is_some()
            })
        })
        .map(|node| node.path.clone())
        .collect()
}

/// Whether a declaration's annotation says `Evaluate = true` (Modelica 18.3): the value of
/// the parameter is to be used in the translation, as a constant's is.
pub fn says_evaluate(annotation: Option<&Modification>) -> bool {
    let binding = annotation
        .and_then(|m| argument(m, "Evaluate"))
        .and_then(|m| m.as_ref())
        .and_then(|m| m.binding.as_ref());
    matches!(binding.map(|e| &e.kind), Some(ExprKind::Bool(true)))
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
