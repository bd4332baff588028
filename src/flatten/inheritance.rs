//! Restrictions on `extends` (Modelica 7.1): which kinds of class may inherit from which, and
//! which classes may only be inherited alone (arrays, prefixed short classes, builtin types).

use super::classes::{ClassId, ClassTree, ROOT, TypeRef};
use crate::syntax::ast::{ClassBody, ClassDef, ClassKind, ElementKind, TypePrefixes};

/// Whether a class of kind `derived` may extend a class of kind `base` (Modelica 7.1.3).
fn kind_may_extend(derived: ClassKind, base: ClassKind) -> bool {
    use ClassKind::*;
    if base == Class || derived == Class {
        return true;
    }
    match derived {
        Model => matches!(base, Model | Block | Record),
        Block => matches!(base, Block | Record),
        Connector => matches!(base, Connector | Type | Record | OperatorRecord),
        ExpandableConnector => base == ExpandableConnector,
        Record => base == Record,
        OperatorRecord => base == OperatorRecord,
        Type => base == Type,
        Package => base == Package,
        Function => base == Function,
        OperatorFunction => matches!(base, Function | OperatorFunction),
        Operator => base == Operator,
        Class => true,
    }
}

/// Checks `derived extends base` (the base as the name resolved, before following short class
/// definitions). Returns the reason it is not allowed.
pub(crate) fn check_extends(
    tree: &ClassTree<'_>,
    derived: ClassId,
    base: TypeRef,
) -> Result<(), String> {
    let Some(derived_def) = tree.node(derived).def else {
        return Ok(());
    };
    let TypeRef::Class(mut class) = base else {
        return alone(derived_def, "a builtin type");
    };
    // Follow short definitions to the long class, noting arrays and prefixes on the way (a
    // chain that goes round is reported where the class is used).
    let mut seen = vec![class];
    loop {
        let Some(def) = tree.node(class).def else {
            return Ok(());
        };
        if !kind_may_extend(derived_def.kind, def.kind) {
            return Err(format!(
                "a {} cannot extend the {} `{}`",
                derived_def.kind.keyword(),
                def.kind.keyword(),
                def.name.name
            ));
        }
        let ClassBody::Short(short) = &def.body else {
            return Ok(());
        };
        if !short.dims.is_empty() {
            alone(derived_def, &format!("the array class `{}`", def.name.name))?;
        }
        if short.prefixes != TypePrefixes::default() {
            alone(
                derived_def,
                &format!("the prefixed class `{}`", def.name.name),
            )?;
        }
        let parent = tree.node(class).parent.unwrap_or(ROOT);
        match tree.resolve(&short.base, parent) {
            Some(TypeRef::Class(next)) if seen.contains(&next) => return Ok(()),
            Some(TypeRef::Class(next)) => {
                seen.push(next);
                class = next;
            }
            Some(TypeRef::Builtin(_) | TypeRef::Clock) => {
                return alone(derived_def, "a builtin type");
            }
            None => return Ok(()),
        }
    }
}

/// Some bases may be inherited only by a class that declares nothing else (Modelica 7.1.1):
/// the result must still be that base's kind of value.
fn alone(derived: &ClassDef, what: &str) -> Result<(), String> {
    let ClassBody::Long(comp) = &derived.body else {
        return Ok(());
    };
    let others = comp
        .elements
        .iter()
        .filter(|e| matches!(e.kind, ElementKind::Component(_) | ElementKind::Extends(_)))
        .count();
    if others > 1 {
        Err(format!(
            "a class extending {what} cannot declare components or other base classes"
        ))
    } else {
        Ok(())
    }
}
