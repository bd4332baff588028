//! What the specialised kinds of class may contain (Modelica 4.6): connectors and records hold
//! no equations and no protected elements; partial classes are never instantiated; the names
//! of the predefined types cannot be taken by components.

use super::classes::builtin;
use crate::diagnostics::Diagnostic;
use crate::syntax::ast::{ClassBody, ClassDef, ClassKind, Composition, ElementKind, Visibility};

/// The restrictions a class of this kind violates, checked once per instantiated class.
pub(crate) fn check_class(def: &ClassDef) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let ClassBody::Long(comp) = &def.body else {
        return out;
    };
    let kind = def.kind;
    if matches!(
        kind,
        ClassKind::Connector | ClassKind::ExpandableConnector | ClassKind::Record
    ) {
        if let Some(eq) = comp.equations.iter().chain(&comp.initial_equations).next() {
            out.push(
                Diagnostic::error(format!("a {} cannot have equations", kind.keyword()))
                    .at(eq.span, "an equation")
                    .with_secondary(def.name.span, format!("in this {}", kind.keyword())),
            );
        }
        if let Some(element) = comp
            .elements
            .iter()
            .find(|e| e.visibility == Visibility::Protected && !is_class(&e.kind))
        {
            out.push(
                Diagnostic::error(format!(
                    "a {} cannot have protected elements",
                    kind.keyword()
                ))
                .at(element.span, "a protected element")
                .with_secondary(def.name.span, format!("in this {}", kind.keyword())),
            );
        }
    }
    let classes: Vec<&str> = comp
        .elements
        .iter()
        .filter_map(|e| match &e.kind {
            ElementKind::Class(c) => Some(c.name.name.as_str()),
            _ => None,
        })
        .collect();
    for element in &comp.elements {
        if let ElementKind::Component(clause) = &element.kind {
            for decl in &clause.components {
                if classes.contains(&decl.name.name.as_str()) {
                    out.push(
                        Diagnostic::error(format!(
                            "`{}` is declared both as a component and as a class",
                            decl.name.name
                        ))
                        .at(decl.name.span, "component with a class's name"),
                    );
                }
            }
        }
    }
    for element in &comp.elements {
        if let ElementKind::Component(clause) = &element.kind {
            for decl in &clause.components {
                if builtin(&decl.name.name).is_some() {
                    out.push(
                        Diagnostic::error(format!(
                            "`{}` is a predefined type; a component cannot take its name",
                            decl.name.name
                        ))
                        .at(decl.name.span, "reserved name"),
                    );
                }
            }
        }
    }
    out
}

/// A `type` extending a predefined type is that type, modified (Modelica 4.6): it has no
/// protected section.
pub(crate) fn check_type(def: &ClassDef, comp: &Composition) -> Option<Diagnostic> {
    let element = comp
        .elements
        .iter()
        .find(|e| e.visibility == Visibility::Protected)?;
    Some(
        Diagnostic::error("a type cannot have protected elements")
            .at(element.span, "a protected element")
            .with_secondary(def.name.span, "in this type"),
    )
}

/// A partial class is incomplete by declaration (Modelica 4.4.1): only a base class or a
/// replaceable default, never an instance.
pub(crate) fn check_not_partial(def: &ClassDef) -> Result<(), Diagnostic> {
    if def.prefixes.partial {
        Err(Diagnostic::error(format!(
            "`{}` is partial and cannot be instantiated",
            def.name.name
        ))
        .at(def.name.span, "declared partial here"))
    } else {
        Ok(())
    }
}

fn is_class(kind: &ElementKind) -> bool {
    matches!(kind, ElementKind::Class(_))
}
