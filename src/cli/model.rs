//! What every model subcommand shares: load files and the stdlib, parse, apply `-p`
//! overrides, flatten.

use std::path::PathBuf;

use clap::Args;

use super::{Format, InputArgs};
use crate::causal::{Causal, WeakCycle};
use crate::dae::Dae;
use crate::diagnostics::Diagnostic;
use crate::frontend::{self, Flat};
use crate::load;
use crate::source::SourceMap;

/// Inputs of every subcommand that works on one model (SPEC §14).
#[derive(Args, Debug)]
pub struct ModelArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// The model to use (default: the last class of the last file). A model of a library
    /// (`Modelica.Electrical.Analog.Examples.CauerLowPassAnalog`) needs no FILE: its
    /// top-level package is loaded from `--lib` or `MODELICAPATH`.
    #[arg(long)]
    pub model: Option<String>,
    /// A directory holding top-level library packages (`DIR/Modelica/package.mo`,
    /// `DIR/Modelica 4.0.0/package.mo`, `DIR/Complex.mo`); repeatable, searched before
    /// `MODELICAPATH`.
    #[arg(long = "lib", value_name = "DIR")]
    pub libs: Vec<PathBuf>,
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

/// Loads, flattens and analyses the structure; on failure prints the diagnostics and returns the
/// exit code.
pub fn load_and_analyse(
    args: &ModelArgs,
) -> Result<(Flat, crate::structure::Structure), std::process::ExitCode> {
    load_holding(args, false).map(|(flat, structure, _)| (flat, structure))
}

/// [`load_and_analyse`] for a simulation: relations on continuously varying values are held
/// between events ([`crate::dae::relations`]).
pub fn load_for_simulation(
    args: &ModelArgs,
) -> Result<(Flat, crate::structure::Structure), std::process::ExitCode> {
    load_holding(args, true).map(|(flat, structure, _)| (flat, structure))
}

/// [`load_for_simulation`], with what choosing the states again needs where index reduction's
/// choice depends on the state.
pub fn load_for_switching(args: &ModelArgs) -> Result<Loaded, std::process::ExitCode> {
    load_holding(args, true)
}

/// A model flattened, reduced and analysed, and what choosing its states again needs.
pub type Loaded = (
    Flat,
    crate::structure::Structure,
    Option<Box<crate::structure::index_reduction::Rechoice>>,
);

fn load_holding(args: &ModelArgs, hold: bool) -> Result<Loaded, std::process::ExitCode> {
    let mut flat = match load_and_flatten(args) {
        Ok(flat) => flat,
        Err((sources, diags)) => {
            super::report(&sources, &diags);
            return Err(super::exit_code(&diags));
        }
    };
    super::report(&flat.sources, &flat.warnings);
    if flat.dae.equations.len() != flat.dae.unknowns() {
        // Said as `check` says it, before the structure passes look for what is missing.
        let diags = [super::check::imbalance(&flat.dae)];
        super::report(&flat.sources, &diags);
        return Err(super::exit_code(&diags));
    }
    if hold {
        crate::dae::relations::hold_relations(&mut flat.dae);
    }
    let rechoice;
    (flat.dae, rechoice) = match crate::structure::prepare(std::mem::take(&mut flat.dae)) {
        Ok((dae, reduction)) => (dae, reduction.rechoice),
        Err(diags) => {
            super::report(&flat.sources, &diags);
            return Err(super::exit_code(&diags));
        }
    };
    match crate::structure::analyse(&flat.dae) {
        Ok(s) => Ok((flat, s, rechoice)),
        Err(diags) => {
            super::report(&flat.sources, &diags);
            Err(super::exit_code(&diags))
        }
    }
}

/// Loads, parses and flattens the model these arguments name.
pub fn load_and_flatten(args: &ModelArgs) -> Result<Flat, (SourceMap, Vec<Diagnostic>)> {
    let (loaded, mut warnings) = load_model_sources(args)?;
    let flat = loaded.flatten(args.model.as_deref());
    // A library's syntax trees are millions of small allocations; the command ends soon after.
    let (sources, trees) = loaded.split();
    super::leave_allocated(trees);
    match flat {
        Ok((dae, mut more)) => {
            warnings.append(&mut more);
            Ok(Flat {
                sources,
                dae,
                warnings,
            })
        }
        Err(mut diags) => {
            warnings.append(&mut diags);
            Err((sources, warnings))
        }
    }
}

/// Loads and parses the input files and the libraries the model needs, with the warnings
/// loading gave.
pub fn load_model_sources(
    args: &ModelArgs,
) -> Result<(frontend::Loaded, Vec<Diagnostic>), (SourceMap, Vec<Diagnostic>)> {
    let mut sources = SourceMap::new();
    let mut warnings = Vec::new();
    let mut user = match load::load_paths_warning(&mut sources, args.files(), &mut warnings) {
        Ok(user) => user,
        Err(d) => return Err((sources, vec![d])),
    };
    match library_of_model(args, &mut sources, &user, &mut warnings) {
        Ok(Some(mut library)) => {
            // The model's library first: the default model stays the user's last class.
            library.append(&mut user);
            user = library;
        }
        Ok(None) => {}
        Err(d) => return Err((sources, vec![d])),
    }
    match frontend::load(sources, &user, &args.params, args.input.max_size) {
        Ok(loaded) => Ok((loaded, warnings)),
        Err((sources, mut diags)) => {
            warnings.append(&mut diags);
            Err((sources, warnings))
        }
    }
}

/// The files of the library that `--model`'s top-level package comes from, when no input file
/// defines that package (`Modelica` for `--model Modelica.Blocks.Examples.PID_Controller`),
/// and of the packages the input files' `uses` annotations name or their dotted names start
/// with (`Modelica.Math.Vectors.interpolate`), with the libraries each uses; `None` when the input files define them all, or no library has them and there are
/// input files to look in.
fn library_of_model(
    args: &ModelArgs,
    sources: &mut SourceMap,
    user: &[crate::source::FileId],
    warnings: &mut Vec<Diagnostic>,
) -> Result<Option<Vec<crate::source::FileId>>, Diagnostic> {
    let modelicapath = std::env::var("MODELICAPATH").ok();
    let roots = load::library_roots(&args.libs, modelicapath.as_deref());
    let mut loaded = Vec::new();
    // The packages the input files' `uses` annotations name, when no input defines them.
    let mut used: Vec<load::Use> = Vec::new();
    for &f in user {
        used.extend(load::used_packages(sources.text(f)));
    }
    // And the first names of their names that a library has: a top-level name no input
    // defines is looked up in the library path (Modelica 13.3.3), `uses` or not.
    if !roots.is_empty() {
        let libraries = load::available_libraries(&roots);
        for &f in user {
            for name in load::library_roots_named(sources.text(f), &libraries) {
                if !used.iter().any(|u| u.package == name) {
                    used.push(load::Use::any_version(&name));
                }
            }
        }
    }
    used.retain(|u| {
        !user
            .iter()
            .any(|&f| defines_top_level(sources.text(f), &u.package))
    });
    let mut from_uses: Option<Vec<crate::source::FileId>> = None;
    for package in used {
        if loaded.contains(&package.package) {
            continue;
        }
        if let Some(ids) = load::load_library(sources, &roots, &package, &mut loaded, warnings)? {
            from_uses.get_or_insert_with(Vec::new).extend(ids);
        }
    }
    let Some(model) = &args.model else {
        return Ok(from_uses);
    };
    let top = model.split('.').next().unwrap_or(model);
    if loaded.iter().any(|p| p == top)
        || user
            .iter()
            .any(|&f| defines_top_level(sources.text(f), top))
    {
        return Ok(from_uses);
    }
    let found = load::load_library(
        sources,
        &roots,
        &load::Use::any_version(top),
        &mut loaded,
        warnings,
    )?;
    let found = match (found, from_uses) {
        (Some(mut a), Some(b)) => {
            a.extend(b);
            Some(a)
        }
        (a, b) => a.or(b),
    };
    if found.is_none() && user.is_empty() {
        let looked = if roots.is_empty() {
            "no `--lib` directory is given and `MODELICAPATH` is not set".to_string()
        } else {
            let dirs: Vec<String> = roots.iter().map(|r| format!("`{}`", r.display())).collect();
            format!("looked in {}", dirs.join(", "))
        };
        return Err(Diagnostic::error(format!(
            "no library has the package `{top}` of `--model {model}`: {looked}"
        )));
    }
    Ok(found)
}

/// Whether Modelica text declares the class `name` (or a class within it) at its top level:
/// `within name…;` or a class declaration named `name`.
fn defines_top_level(text: &str, name: &str) -> bool {
    let words: Vec<&str> = text
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.' || c == ';'))
        .filter(|w| !w.is_empty())
        .collect();
    words.windows(2).any(|pair| match pair {
        ["within", rest] => rest.trim_end_matches(';').split('.').next() == Some(name),
        [keyword, declared] => {
            matches!(
                *keyword,
                "model"
                    | "package"
                    | "block"
                    | "class"
                    | "connector"
                    | "record"
                    | "type"
                    | "function"
            ) && *declared == name
        }
        _ => false,
    })
}

/// The causal form with every weak read after the step that solves its variable, so that it
/// reads the current value (`Ok`). When the weak reads close a cycle with the other
/// dependencies there is no such order: a warning at an equation on the cycle says so, with
/// `consequence` (what the command does instead), and the form comes back unchanged (`Err`).
pub fn weak_reads_after_writers(
    causal: Causal,
    dae: &Dae,
    sources: &SourceMap,
    consequence: &str,
) -> Result<Causal, Causal> {
    causal
        .with_weak_reads_after_writers(dae)
        .map_err(|WeakCycle { causal, equation }| {
            let warning = Diagnostic::warning(format!(
                "the weak reads close a cycle with the model's other dependencies: {consequence}"
            ))
            .at(
                dae.equations[equation].span,
                "a weak read on the cycle, in this equation",
            );
            super::report(sources, &[warning]);
            causal
        })
}
