//! The flat DAE as Modelica text (`mocca flatten`), which mocca parses back to the same DAE.
//! Flat names that are not plain identifiers are quoted (`'R1.p.v'`); a weak read prints as
//! `last(x)`. Strings are kept as written between their quotes, escapes and all, so they print
//! back as they were read.

use std::fmt::Write;

use super::{Dae, Equation, VarKind};
use crate::expr::{Node, Value, VarId};

impl Dae {
    pub fn to_modelica(&self) -> String {
        self.modelica().to_string()
    }

    /// The flat model as Modelica text, written straight into whatever formats it: at 10⁶
    /// equations the text is larger than is worth building in memory first.
    pub fn modelica(&self) -> Modelica<'_> {
        Modelica { dae: self }
    }
}

/// See [`Dae::modelica`].
pub struct Modelica<'d> {
    dae: &'d Dae,
}

impl std::fmt::Display for Modelica<'_> {
    fn fmt(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let dae = self.dae;
        let name = super::quote_name(&dae.model);
        writeln!(out, "model {name}")?;
        for id in dae.var_ids() {
            out.write_str("  ")?;
            declaration(dae, id, out)?;
            out.write_str(";\n")?;
        }
        section(dae, out, "equation", &dae.equations)?;
        for a in &dae.assertions {
            let level = if a.is_error {
                ""
            } else {
                ", AssertionLevel.warning"
            };
            writeln!(
                out,
                "  assert({}, \"{}\"{level});",
                dae.display_as(a.condition, Value::Boolean),
                a.message
            )?;
        }
        section(dae, out, "initial equation", &dae.initial_equations)?;
        writeln!(out, "end {name};")
    }
}

fn section(
    dae: &Dae,
    out: &mut impl Write,
    keyword: &str,
    equations: &[Equation],
) -> std::fmt::Result {
    if equations.is_empty() && keyword != "equation" {
        return Ok(());
    }
    writeln!(out, "{keyword}")?;
    for eq in equations {
        let value = equation_type(dae, eq);
        let lhs = dae.display_as(eq.lhs, value);
        // A left side starting with `if` would read back as an if-equation.
        if matches!(dae.pool.node(eq.lhs), Node::If(..)) {
            write!(out, "  ({lhs})")?;
        } else {
            write!(out, "  {lhs}")?;
        }
        writeln!(out, " = {};", dae.display_as(eq.rhs, value))?;
    }
    Ok(())
}

/// The type an equation's sides print as: an Integer or Boolean variable's on the left makes
/// the equation an Integer or Boolean one.
fn equation_type(dae: &Dae, eq: &Equation) -> Value {
    match dae.pool.node(eq.lhs) {
        Node::Var(v) => dae.var(v).ty.value(),
        _ => Value::Real,
    }
}

fn declaration(dae: &Dae, id: VarId, out: &mut impl Write) -> std::fmt::Result {
    let v = dae.var(id);
    if v.weak {
        out.write_str("weak ")?;
    }
    if v.flow {
        out.write_str("flow ")?;
    }
    out.write_str(match v.kind {
        VarKind::Parameter => "parameter ",
        VarKind::Constant => "constant ",
        VarKind::Discrete if v.ty == super::ScalarType::Real => "discrete ",
        VarKind::Input => "input ",
        _ => "",
    })?;
    write!(out, "{} ", v.ty.name())?;
    super::write_quoted_name(&v.name, out)?;
    let mut separator = "(";
    let mut attribute = |out: &mut dyn Write, text: std::fmt::Arguments<'_>| {
        out.write_str(separator)?;
        separator = ", ";
        out.write_fmt(text)
    };
    let value = v.ty.value();
    if let Some(s) = v.start {
        attribute(out, format_args!("start = {}", dae.display_as(s, value)))?;
    }
    if let Some(f) = v.fixed {
        attribute(out, format_args!("fixed = {f}"))?;
    }
    if let Some(n) = v.nominal {
        attribute(out, format_args!("nominal = {}", dae.display(n)))?;
    }
    if let Some(u) = &v.unit {
        attribute(out, format_args!("unit = \"{u}\""))?;
    }
    if separator != "(" {
        out.write_str(")")?;
    }
    if let Some(b) = v.binding {
        write!(out, " = {}", dae.display_as(b, value))?;
    }
    if let Some(d) = &v.description {
        write!(out, " \"{d}\"")?;
    }
    Ok(())
}
