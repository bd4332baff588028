//! `mocca flatten`: prints the flat model as Modelica, or as JSON for scripts.

use std::process::ExitCode;

use serde_json::{Value, json};

use super::Format;
use super::model::{ModelArgs, load_and_flatten};
use crate::dae::{Dae, Equation};
use crate::diagnostics::place;
use crate::source::{SourceMap, Span};

pub fn run(args: &ModelArgs) -> ExitCode {
    match load_and_flatten(args) {
        Ok(flat) => {
            super::report(&flat.sources, &flat.warnings);
            match args.format() {
                Format::Text => super::print_buffered(flat.dae.modelica()),
                Format::Json => super::print_json(&dae_json(&flat.dae, &flat.sources)),
            }
            super::leave_allocated(flat);
            ExitCode::SUCCESS
        }
        Err((sources, diags)) => {
            super::report(&sources, &diags);
            super::exit_code(&diags)
        }
    }
}

/// The flat DAE: variables with their kind and attributes (expressions as Modelica text),
/// equations as text with their origin and source position.
fn dae_json(dae: &Dae, sources: &SourceMap) -> Value {
    let text = |e: Option<crate::expr::ExprId>| e.map(|e| dae.show(e));
    let variables: Vec<Value> = dae
        .variables
        .iter()
        .map(|v| {
            json!({
                "name": v.name,
                "kind": v.kind,
                "type": v.ty,
                "binding": text(v.binding),
                "start": text(v.start),
                "fixed": v.fixed,
                "nominal": text(v.nominal),
                "unit": v.unit,
                "weak": v.weak,
                "flow": v.flow,
                "description": v.description,
                "component": &*v.component,
                "source": position(sources, v.span),
            })
        })
        .collect();
    let equations = |list: &[Equation]| -> Vec<Value> {
        list.iter()
            .map(|e| {
                json!({
                    "text": format!("{} = {}", dae.show(e.lhs), dae.show(e.rhs)),
                    "origin": e.origin,
                    "component": &*e.component,
                    "source": position(sources, e.span),
                })
            })
            .collect()
    };
    json!({
        "model": dae.model,
        "variables": variables,
        "equations": equations(&dae.equations),
        "initial_equations": equations(&dae.initial_equations),
    })
}

pub(super) fn position(sources: &SourceMap, span: Span) -> Value {
    let (file, line, column) = place(sources, span);
    json!({ "file": file, "line": line, "column": column })
}
