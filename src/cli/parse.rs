//! `mocca parse FILE...`: syntax check with a summary of the classes found.

use std::process::ExitCode;

use clap::Args;
use serde_json::json;

use super::{Format, InputArgs};
use crate::load;
use crate::source::SourceMap;
use crate::syntax::{self, summary};

#[derive(Args, Debug)]
pub struct ParseArgs {
    #[command(flatten)]
    pub input: InputArgs,
}

pub fn run(args: &ParseArgs) -> ExitCode {
    let mut sources = SourceMap::new();
    let mut warnings = Vec::new();
    let ids = match load::load_paths_warning(&mut sources, &args.input.files, &mut warnings) {
        Ok(ids) => ids,
        Err(d) => {
            warnings.push(d);
            super::report(&sources, &warnings);
            return super::exit_code(&warnings);
        }
    };
    super::report(&sources, &warnings);
    let parsed: Vec<_> = ids
        .iter()
        .map(|&id| syntax::parse_file(&sources, id))
        .collect();
    let diags: Vec<_> = parsed
        .iter()
        .flat_map(|p| p.diagnostics.iter().cloned())
        .collect();
    super::report(&sources, &diags);
    let files: Vec<_> = parsed
        .iter()
        .map(|p| summary::FileSummary::of(sources.name(p.file), p))
        .collect();
    match args.input.format {
        Format::Json => super::print_json(&json!({
            "files": files,
            "errors": diags.iter().filter(|d| d.is_error()).count(),
        })),
        Format::Text => print_text(&files),
    }
    super::exit_code(&diags)
}

fn print_text(files: &[summary::FileSummary]) {
    for file in files {
        let status = if file.ok { "ok" } else { "errors" };
        outln!("{} ({status})", file.path);
        let width = file.classes.iter().map(|c| c.name.len()).max().unwrap_or(0);
        for c in &file.classes {
            outln!(
                "  {:<width$}  {:<20} {:>5} components {:>5} equations {:>3} initial",
                c.name,
                c.kind,
                c.components,
                c.equations,
                c.initial_equations
            );
        }
    }
}
