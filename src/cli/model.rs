//! What every model subcommand shares: load files and the stdlib, parse, apply `-p`
//! overrides, flatten.

use std::path::PathBuf;

use clap::Args;

use super::{Format, InputArgs};
use crate::dae::Dae;
use crate::diagnostics::{self, Diagnostic};
use crate::flatten::{self, Override, Request};
use crate::source::{SourceMap, Span};
use crate::{load, syntax};

/// Inputs of every subcommand that works on one model (SPEC §14).
#[derive(Args, Debug)]
pub struct ModelArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// The model to use (default: the last class of the last file).
    #[arg(long)]
    pub model: Option<String>,
    /// Override a parameter, e.g. `-p N=30` (repeatable).
    #[arg(short = 'p', value_name = "NAME=VALUE", value_parser = parse_override)]
    pub params: Vec<(String, String)>,
}

impl ModelArgs {
    pub fn files(&self) -> &[PathBuf] {
        &self.input.files
    }

    pub fn format(&self) -> Format {
        self.input.format
    }
}

fn parse_override(text: &str) -> Result<(String, String), String> {
    let (name, value) = text.split_once('=').ok_or("expected NAME=VALUE")?;
    let valid = !name.is_empty()
        && name.split('.').all(|p| {
            p.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
    if !valid {
        return Err(format!("`{name}` is not a parameter name"));
    }
    if value.trim().is_empty() {
        return Err("the value is empty".to_string());
    }
    Ok((name.to_string(), value.to_string()))
}

/// A flattened model with the sources its spans point into.
pub struct Flat {
    pub sources: SourceMap,
    pub dae: Dae,
    pub warnings: Vec<Diagnostic>,
}

/// Loads, parses and flattens; on failure returns the sources and the diagnostics to print.
pub fn load_and_flatten(args: &ModelArgs) -> Result<Flat, (SourceMap, Vec<Diagnostic>)> {
    let mut sources = SourceMap::new();
    let user = match load::load_paths(&mut sources, args.files()) {
        Ok(ids) => ids,
        Err(d) => return Err((sources, vec![d])),
    };
    let stdlib = load::load_stdlib(&mut sources);
    let mut diags = Vec::new();
    let mut parsed = Vec::new();
    for &id in user.iter().chain(&stdlib) {
        let p = syntax::parse_file(&sources, id);
        diags.extend(p.diagnostics);
        parsed.push(p.ast);
    }
    let overrides = parse_overrides(&mut sources, &args.params, &mut diags);
    if diagnostics::has_errors(&diags) {
        return Err((sources, diags));
    }
    let asts: Vec<_> = parsed.iter().flatten().collect();
    let Some(default_file) = parsed[..user.len()].iter().rev().flatten().next() else {
        return Err((
            sources,
            vec![Diagnostic::error("no input file defines a class")],
        ));
    };
    let request = Request {
        files: &asts,
        default_file,
        model: args.model.as_deref(),
        overrides: &overrides,
    };
    let result = flatten::flatten(&request);
    match result {
        Ok((dae, mut warnings)) => {
            diags.append(&mut warnings);
            Ok(Flat {
                sources,
                dae,
                warnings: diags,
            })
        }
        Err(mut errors) => {
            diags.append(&mut errors);
            Err((sources, diags))
        }
    }
}

fn parse_overrides(
    sources: &mut SourceMap,
    params: &[(String, String)],
    diags: &mut Vec<Diagnostic>,
) -> Vec<Override> {
    let mut out = Vec::new();
    for (name, value) in params {
        let file = sources.add(format!("-p {name}"), value.clone());
        match syntax::parse_expression(sources, file) {
            Ok(expr) => out.push(Override {
                path: name.split('.').map(str::to_string).collect(),
                value: expr,
                span: Span::new(file, 0, value.len()),
            }),
            Err(mut d) => diags.append(&mut d),
        }
    }
    out
}
