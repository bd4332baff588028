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
            if let Some(d) = too_large_to_write(&flat.dae) {
                super::report(&flat.sources, &[d]);
                return ExitCode::from(1);
            }
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

/// The most nodes an expression may have written out as text (a tree).
const WRITTEN_LIMIT: u64 = 10_000_000;

/// The first equation, binding or start value that written out would exceed
/// [`WRITTEN_LIMIT`] nodes, as an error at it: an expression is a DAG, and one that a function
/// with a loop inlined (a root finder reading each turn's values several times) is
/// exponentially larger as text than in memory.
fn too_large_to_write(dae: &Dae) -> Option<crate::diagnostics::Diagnostic> {
    let mut sizes = crate::expr::hash::FxHashMap::default();
    let equations = dae.equations.iter().chain(&dae.initial_equations);
    let mut roots = equations
        .flat_map(|e| [(e.lhs, e.span), (e.rhs, e.span)])
        .chain((dae.variables.iter()).flat_map(|v| {
            [v.binding, v.start]
                .into_iter()
                .flatten()
                .map(|e| (e, v.span))
        }));
    let (_, span) = roots.find(|&(e, _)| written_size(dae, e, &mut sizes) > WRITTEN_LIMIT)?;
    Some(
        crate::diagnostics::Diagnostic::error(
            "written out, this expression is more than 10⁷ nodes (in memory its nodes are \
             shared): `flatten` does not print it",
        )
        .at(span, "here")
        .with_note(
            "a function inlined with a loop (a root finder) reuses each turn's values; the \
             other commands evaluate it node by node",
        ),
    )
}

/// The number of nodes of `e` written out as a tree, saturating; `sizes` keeps each node's.
fn written_size(
    dae: &Dae,
    e: crate::expr::ExprId,
    sizes: &mut crate::expr::hash::FxHashMap<crate::expr::ExprId, u64>,
) -> u64 {
    if let Some(&n) = sizes.get(&e) {
        return n;
    }
    let kids = dae.pool.children(e);
    let n =
        (kids.as_slice().iter()).fold(1u64, |n, &k| n.saturating_add(written_size(dae, k, sizes)));
    sizes.insert(e, n);
    n
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
