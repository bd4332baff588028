//! The flat DAE as Modelica text (`mocca flatten`), which mocca parses back to the same DAE.
//! Flat names that are not plain identifiers are quoted (`'R1.p.v'`); a weak read prints as
//! `last(x)`.

use std::fmt::Write;

use super::{Dae, Equation, VarKind};
use crate::expr::VarId;

impl Dae {
    pub fn to_modelica(&self) -> String {
        let mut out = String::new();
        let name = super::quote_name(&self.model);
        let _ = writeln!(out, "model {name}");
        for id in self.var_ids() {
            let _ = writeln!(out, "  {};", self.declaration(id));
        }
        self.section(&mut out, "equation", &self.equations);
        for a in &self.assertions {
            let level = if a.is_error {
                ""
            } else {
                ", AssertionLevel.warning"
            };
            let _ = writeln!(
                out,
                "  assert({}, {:?}{level});",
                self.show(a.condition),
                a.message
            );
        }
        self.section(&mut out, "initial equation", &self.initial_equations);
        let _ = writeln!(out, "end {name};");
        out
    }

    fn section(&self, out: &mut String, keyword: &str, equations: &[Equation]) {
        if equations.is_empty() && keyword != "equation" {
            return;
        }
        let _ = writeln!(out, "{keyword}");
        for eq in equations {
            let _ = writeln!(
                out,
                "  {} = {};",
                self.display(eq.lhs),
                self.display(eq.rhs)
            );
        }
    }

    fn declaration(&self, id: VarId) -> String {
        let v = self.var(id);
        let mut prefix = String::new();
        if v.weak {
            prefix.push_str("weak ");
        }
        if v.flow {
            prefix.push_str("flow ");
        }
        prefix.push_str(match v.kind {
            VarKind::Parameter => "parameter ",
            VarKind::Constant => "constant ",
            VarKind::Discrete if v.ty == super::ScalarType::Real => "discrete ",
            VarKind::Input => "input ",
            _ => "",
        });
        let mut attrs = Vec::new();
        if let Some(s) = v.start {
            attrs.push(format!("start = {}", self.show(s)));
        }
        if let Some(f) = v.fixed {
            attrs.push(format!("fixed = {f}"));
        }
        if let Some(n) = v.nominal {
            attrs.push(format!("nominal = {}", self.show(n)));
        }
        if let Some(u) = &v.unit {
            attrs.push(format!("unit = {u:?}"));
        }
        let mut text = format!("{prefix}{} {}", v.ty.name(), self.printed_name(id));
        if !attrs.is_empty() {
            let _ = write!(text, "({})", attrs.join(", "));
        }
        if let Some(b) = v.binding {
            let _ = write!(text, " = {}", self.show(b));
        }
        if let Some(d) = &v.description {
            let _ = write!(text, " {d:?}");
        }
        text
    }
}
