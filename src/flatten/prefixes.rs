//! Type prefixes written in several places for one variable: on its declaration, on a short
//! type (`connector RealInput = input Real`), and on the enclosing component
//! (`parameter Record r`, `flow C c`). They combine; saying the same thing twice, or two
//! contradicting things, is an error (Modelica 4.4.2).

use crate::dae::ScalarType;
use crate::syntax::ast::{Causality, ClassKind, TypePrefixes, Variability};

/// Combines the prefixes of an element (`own`) with those of what encloses it (`outer`).
pub(crate) fn combine(own: &TypePrefixes, outer: &TypePrefixes) -> Result<TypePrefixes, String> {
    if own.flow && outer.flow {
        return Err("`flow` is applied twice (the enclosing component is already `flow`)".into());
    }
    if own.causality != Causality::None && outer.causality != Causality::None {
        return Err(format!(
            "`{}` is applied to a variable that is already `{}`",
            causality_word(outer.causality),
            causality_word(own.causality)
        ));
    }
    if own.causality != Causality::None
        && matches!(
            outer.variability,
            Variability::Parameter | Variability::Constant
        )
    {
        return Err(format!(
            "a `{}` component cannot hold `{}` variables: their values come from connections",
            variability_word(outer.variability),
            causality_word(own.causality)
        ));
    }
    Ok(TypePrefixes {
        weak: own.weak || outer.weak,
        flow: own.flow || outer.flow,
        variability: strictest(own.variability, outer.variability),
        causality: if own.causality == Causality::None {
            outer.causality
        } else {
            own.causality
        },
    })
}

/// Prefixes that a component of a model or block cannot take (Modelica 4.4.2.1, 4.4.2.2).
pub(crate) fn check_for_class(p: &TypePrefixes, kind: ClassKind) -> Result<(), String> {
    if !matches!(kind, ClassKind::Model | ClassKind::Block) {
        return Ok(());
    }
    let word = if p.flow {
        "flow"
    } else if p.variability != Variability::Continuous {
        variability_word(p.variability)
    } else if p.causality != Causality::None {
        causality_word(p.causality)
    } else {
        return Ok(());
    };
    Err(format!(
        "`{word}` cannot be applied to a component whose type is a {}",
        kind.keyword()
    ))
}

/// `flow` only makes sense on Real variables (they are summed in connection sets).
pub(crate) fn check_for_builtin(p: &TypePrefixes, ty: ScalarType) -> Result<(), String> {
    if p.flow && ty != ScalarType::Real {
        return Err(format!("a `flow` variable must be Real, not {}", ty.name()));
    }
    Ok(())
}

fn strictest(a: Variability, b: Variability) -> Variability {
    let rank = |v: Variability| match v {
        Variability::Continuous => 0,
        Variability::Discrete => 1,
        Variability::Parameter => 2,
        Variability::Constant => 3,
    };
    if rank(a) >= rank(b) { a } else { b }
}

fn causality_word(c: Causality) -> &'static str {
    match c {
        Causality::Input => "input",
        Causality::Output => "output",
        Causality::None => "",
    }
}

fn variability_word(v: Variability) -> &'static str {
    match v {
        Variability::Continuous => "continuous",
        Variability::Discrete => "discrete",
        Variability::Parameter => "parameter",
        Variability::Constant => "constant",
    }
}
