//! The flat DAE as Modelica text (`mocca flatten`), which mocca parses back to the same DAE.
//! Flat names that are not plain identifiers are quoted (`'R1.p.v'`); a weak read prints as
//! `last(x)`. Strings are kept as written between their quotes, escapes and all, so they print
//! back as they were read.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::hybrid::{Action, MatFormat, Text, TextPiece, WhenClause, Write as HybridWrite};
use super::{Assertion, Dae, Equation, VarKind};
use crate::expr::{Node, Value, VarId};

impl Dae {
    pub fn to_modelica(&self) -> String {
        self.modelica().to_string()
    }

    /// The flat model as Modelica text, written straight into whatever formats it: at 10⁶
    /// equations the text is larger than is worth building in memory first.
    pub fn modelica(&self) -> Modelica<'_> {
        Modelica {
            dae: self,
            notes: None,
        }
    }

    /// [`Dae::modelica`] with a comment after some equations: `notes[e]` after equation `e`.
    pub fn modelica_with_notes<'d>(&'d self, notes: &'d BTreeMap<usize, String>) -> Modelica<'d> {
        Modelica {
            dae: self,
            notes: Some(notes),
        }
    }
}

/// See [`Dae::modelica`].
pub struct Modelica<'d> {
    dae: &'d Dae,
    notes: Option<&'d BTreeMap<usize, String>>,
}

impl std::fmt::Display for Modelica<'_> {
    fn fmt(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let dae = self.dae;
        let name = super::quote_name(&dae.model);
        writeln!(out, "model {name}")?;
        // The flattener's own held variables print as the calls they stand for.
        for id in dae.var_ids().filter(|&v| dae.hybrid.call_of(v).is_none()) {
            out.write_str("  ")?;
            declaration(dae, id, out)?;
            out.write_str(";\n")?;
        }
        section(dae, out, "equation", &dae.equations, self.notes)?;
        if dae.equations.is_empty() && !dae.hybrid.whens.is_empty() {
            writeln!(out, "equation")?;
        }
        for w in &dae.hybrid.whens {
            when_clause(dae, w, out)?;
        }
        for a in &dae.assertions {
            assertion(dae, a, "  ", out)?;
        }
        section(dae, out, "initial equation", &dae.initial_equations, None)?;
        writeln!(out, "end {name};")
    }
}

impl Dae {
    /// A `when` clause as Modelica text, one line per line of the clause, its first line
    /// unindented.
    pub fn when_lines(&self, w: &WhenClause) -> Vec<String> {
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = when_clause(self, w, &mut text);
        text.lines()
            .map(|l| l.strip_prefix("  ").unwrap_or(l).to_string())
            .collect()
    }
}

fn when_clause(dae: &Dae, w: &WhenClause, out: &mut impl Write) -> std::fmt::Result {
    for (k, branch) in w.branches.iter().enumerate() {
        let keyword = if k == 0 { "  when" } else { "  elsewhen" };
        let conditions: Vec<String> = branch
            .conditions
            .iter()
            .map(|&c| dae.display_as(c, Value::Boolean).to_string())
            .collect();
        match conditions.as_slice() {
            [one] => writeln!(out, "{keyword} {one} then")?,
            many => writeln!(out, "{keyword} {{{}}} then", many.join(", "))?,
        }
        actions(dae, &branch.actions, "    ", out)?;
    }
    writeln!(out, "  end when;")
}

fn actions(dae: &Dae, list: &[Action], indent: &str, out: &mut impl Write) -> std::fmt::Result {
    for action in list {
        match action {
            Action::Assign { var, value, .. } => writeln!(
                out,
                "{indent}{} = {};",
                dae.printed_name(*var),
                dae.display_as(*value, dae.var(*var).ty.value())
            )?,
            Action::Reinit { var, value, .. } => writeln!(
                out,
                "{indent}reinit({}, {});",
                dae.printed_name(*var),
                dae.display(*value)
            )?,
            Action::If {
                branches,
                otherwise,
            } => {
                let inner = format!("{indent}  ");
                for (k, (condition, body)) in branches.iter().enumerate() {
                    let keyword = if k == 0 { "if" } else { "elseif" };
                    let condition = dae.display_as(*condition, Value::Boolean);
                    writeln!(out, "{indent}{keyword} {condition} then")?;
                    actions(dae, body, &inner, out)?;
                }
                if !otherwise.is_empty() {
                    writeln!(out, "{indent}else")?;
                    actions(dae, otherwise, &inner, out)?;
                }
                writeln!(out, "{indent}end if;")?;
            }
            Action::Assert(a) => assertion(dae, a, indent, out)?,
            Action::Terminate { message, .. } => {
                writeln!(out, "{indent}terminate(\"{message}\");")?
            }
            Action::Write { write, .. } => writeln!(out, "{indent}{};", written(dae, write))?,
            Action::Solve(system) => {
                let vars: Vec<String> =
                    (system.vars.iter()).map(|&v| dae.printed_name(v)).collect();
                writeln!(out, "{indent}// solved together for {}:", vars.join(", "))?;
                for &residual in &system.residuals {
                    writeln!(out, "{indent}0 = {};", dae.display(residual))?;
                }
            }
        }
    }
    Ok(())
}

/// A write as the library call it came from.
fn written(dae: &Dae, write: &HybridWrite) -> String {
    match write {
        HybridWrite::Print { text, file } => {
            let text = printed_text(dae, text);
            format!("Modelica.Utilities.Streams.print({text}, {})", quoted(file))
        }
        HybridWrite::Matrix {
            file,
            name,
            cols,
            values,
            append,
            format,
            ..
        } => {
            let rows: Vec<String> = (values.chunks(*cols))
                .map(|row| {
                    let row: Vec<String> =
                        row.iter().map(|&e| dae.display(e).to_string()).collect();
                    row.join(", ")
                })
                .collect();
            let format = match format {
                MatFormat::V4 => "4",
                MatFormat::V6 => "6",
                MatFormat::V7 => "7",
            };
            format!(
                "Modelica.Utilities.Streams.writeRealMatrix({}, {}, [{}], append = {append}, format = \"{format}\")",
                quoted(file),
                quoted(name),
                rows.join("; ")
            )
        }
        HybridWrite::Remove { file } => {
            format!("Modelica.Utilities.Files.removeFile({})", quoted(file))
        }
    }
}

fn printed_text(dae: &Dae, text: &Text) -> String {
    let pieces: Vec<String> = (text.0.iter())
        .map(|piece| match piece {
            // Literals keep their escapes as written.
            TextPiece::Literal(s) => format!("\"{s}\""),
            TextPiece::Real {
                value,
                significant,
                min_length,
                left,
            } => format!(
                "String({}, significantDigits = {significant}, minimumLength = {min_length}, leftJustified = {left})",
                dae.display(*value)
            ),
            TextPiece::Integer {
                value,
                min_length,
                left,
            } => format!(
                "String({}, minimumLength = {min_length}, leftJustified = {left})",
                dae.display(*value)
            ),
            TextPiece::Boolean(value) => {
                format!("String({})", dae.display_as(*value, Value::Boolean))
            }
            TextPiece::FullPath(name) => {
                format!("Modelica.Utilities.Files.fullPathName({})", quoted(name))
            }
        })
        .collect();
    if pieces.is_empty() {
        "\"\"".to_string()
    } else {
        pieces.join(" + ")
    }
}

/// `s` as a Modelica string literal.
fn quoted(s: &str) -> String {
    let escaped = s
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n");
    format!("\"{escaped}\"")
}

fn assertion(dae: &Dae, a: &Assertion, indent: &str, out: &mut impl Write) -> std::fmt::Result {
    let level = if a.is_error {
        ""
    } else {
        ", AssertionLevel.warning"
    };
    writeln!(
        out,
        "{indent}assert({}, \"{}\"{level});",
        dae.display_as(a.condition, Value::Boolean),
        a.message
    )
}

fn section(
    dae: &Dae,
    out: &mut impl Write,
    keyword: &str,
    equations: &[Equation],
    notes: Option<&BTreeMap<usize, String>>,
) -> std::fmt::Result {
    if equations.is_empty() && keyword != "equation" {
        return Ok(());
    }
    writeln!(out, "{keyword}")?;
    for (e, eq) in equations.iter().enumerate() {
        let value = equation_type(dae, eq);
        let lhs = dae.display_as(eq.lhs, value);
        // A left side starting with `if` would read back as an if-equation.
        if matches!(dae.pool.node(eq.lhs), Node::If(..)) {
            write!(out, "  ({lhs})")?;
        } else {
            write!(out, "  {lhs}")?;
        }
        write!(out, " = {};", dae.display_as(eq.rhs, value))?;
        match notes.and_then(|n| n.get(&e)) {
            Some(note) => writeln!(out, " // {note}")?,
            None => writeln!(out)?,
        }
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
    if v.state_select != super::StateSelect::Default {
        attribute(
            out,
            format_args!("stateSelect = {}", v.state_select.literal()),
        )?;
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
