//! The front half of the pipeline as one call: sources (with the stdlib) → parse → flatten.

use crate::dae::Dae;
use crate::diagnostics::{self, Diagnostic};
use crate::flatten::{self, Override, Request};
use crate::source::{FileId, SourceMap, Span};
use crate::syntax::ast::{
    ClassBody, ClassDef, ComponentRef, ElementKind, EquationKind, Ident, StoredDefinition,
};
use crate::{load, syntax};

/// A flattened model with the sources its spans point into.
pub struct Flat {
    pub sources: SourceMap,
    pub dae: Dae,
    pub warnings: Vec<Diagnostic>,
}

/// Parses the `user` files of `sources` together with the stdlib and flattens `model` (default:
/// the last class of the last user file) with `params` (`NAME`, `VALUE` text) as overrides.
/// On failure returns the sources and the diagnostics to print.
pub fn flatten_sources(
    sources: SourceMap,
    user: &[FileId],
    model: Option<&str>,
    params: &[(String, String)],
) -> Result<Flat, (SourceMap, Vec<Diagnostic>)> {
    flatten_sources_limited(sources, user, model, params, flatten::DEFAULT_MAX_SIZE)
}

/// [`flatten_sources`] with at most `max_size` scalars per declaration, array expression and
/// model (beyond it, an error at the declaration instead of running out of memory).
pub fn flatten_sources_limited(
    sources: SourceMap,
    user: &[FileId],
    model: Option<&str>,
    params: &[(String, String)],
    max_size: usize,
) -> Result<Flat, (SourceMap, Vec<Diagnostic>)> {
    let loaded = load(sources, user, params, max_size)?;
    match loaded.flatten(model) {
        Ok((dae, warnings)) => Ok(Flat {
            sources: loaded.sources,
            dae,
            warnings,
        }),
        Err(diags) => Err((loaded.sources, diags)),
    }
}

/// Parsed sources, ready to flatten any of their models, one after another or at once.
pub struct Loaded {
    pub sources: SourceMap,
    asts: Vec<StoredDefinition>,
    /// Which of `asts` holds the default model: the last user file that parsed.
    default_file: usize,
    /// The parser's diagnostics that are not "not supported" ones (warnings only).
    diags: Vec<Diagnostic>,
    unsupported: Vec<Diagnostic>,
    overrides: Vec<Override>,
    max_size: usize,
}

/// Parses the `user` files of `sources` together with the stdlib, and `params` (`NAME`,
/// `VALUE` text) as overrides. On failure returns the sources and the diagnostics to print.
pub fn load(
    mut sources: SourceMap,
    user: &[FileId],
    params: &[(String, String)],
    max_size: usize,
) -> Result<Loaded, (SourceMap, Vec<Diagnostic>)> {
    let mut parsed = Parsed::default();
    for p in parse_all(&sources, user) {
        parsed.add(p);
    }
    let with_modelica = !parsed.asts.iter().flatten().any(defines_modelica);
    let stdlib = load::load_stdlib(&mut sources, with_modelica);
    for p in parse_all(&sources, &stdlib) {
        parsed.add(p);
    }
    let Parsed {
        asts: parsed,
        mut diags,
        unsupported,
    } = parsed;
    let overrides = parse_overrides(&mut sources, params, &mut diags);
    if diagnostics::has_errors(&diags) {
        return Err((sources, diags));
    }
    let Some(default_file) = parsed[..user.len()].iter().flatten().count().checked_sub(1) else {
        return Err((
            sources,
            vec![Diagnostic::error("no input file defines a class")],
        ));
    };
    Ok(Loaded {
        sources,
        asts: parsed.into_iter().flatten().collect(),
        default_file,
        diags,
        unsupported,
        overrides,
        max_size,
    })
}

impl Loaded {
    /// The sources, and the syntax trees apart (for a caller that ends the process soon and
    /// need not free them one by one).
    pub fn split(self) -> (SourceMap, Vec<StoredDefinition>) {
        (self.sources, self.asts)
    }

    /// Flattens `model` (default: the last class of the last user file): the flat model with
    /// its warnings, or the diagnostics that say why not.
    pub fn flatten(&self, model: Option<&str>) -> Result<(Dae, Vec<Diagnostic>), Vec<Diagnostic>> {
        let asts: Vec<_> = self.asts.iter().collect();
        self.flatten_files(&asts, &self.asts[self.default_file], model)
    }

    fn flatten_files(
        &self,
        asts: &[&StoredDefinition],
        default_file: &StoredDefinition,
        model: Option<&str>,
    ) -> Result<(Dae, Vec<Diagnostic>), Vec<Diagnostic>> {
        let request = Request {
            files: asts,
            default_file,
            model,
            overrides: &self.overrides,
            unsupported: &self.unsupported,
            max_size: self.max_size,
        };
        let mut diags = self.diags.clone();
        match flatten::flatten(&request) {
            Ok((dae, mut warnings)) => {
                diags.append(&mut warnings);
                Ok((dae, diags))
            }
            Err(mut errors) => {
                diags.append(&mut errors);
                Err(diags)
            }
        }
    }

    /// The `connect` equations the class whose name is at `class` writes in its own equation
    /// section (not those it inherits or its components write), in order.
    pub fn connects_of(&self, class: Span) -> Vec<ConnectSite> {
        let Some(def) = self
            .asts
            .iter()
            .find_map(|ast| find_class(&ast.classes, class))
        else {
            return Vec::new();
        };
        let ClassBody::Long(composition) = &def.body else {
            return Vec::new();
        };
        composition
            .equations
            .iter()
            .filter_map(|eq| match &eq.kind {
                EquationKind::Connect { a, b } => Some(ConnectSite {
                    span: eq.span,
                    a: a.cref.clone(),
                    b: b.cref.clone(),
                    weak: a.weak.is_some() || b.weak.is_some(),
                }),
                _ => None,
            })
            .collect()
    }

    /// [`Loaded::flatten`] with the `connect` equation at `at` made weak: its first side weak
    /// in `weak[0]`, its second in `weak[1]` (`connect(a(weak v), b(weak i))`).
    pub fn flatten_with_weak(
        &self,
        model: Option<&str>,
        at: Span,
        weak: [&str; 2],
    ) -> Result<(Dae, Vec<Diagnostic>), Vec<Diagnostic>> {
        let edited = self.asts.iter().position(|ast| ast.span.file == at.file);
        let Some(edited) = edited else {
            return self.flatten(model);
        };
        let mut copy = self.asts[edited].clone();
        mark_weak(&mut copy.classes, at, weak);
        let asts: Vec<&StoredDefinition> = (self.asts.iter().enumerate())
            .map(|(i, ast)| if i == edited { &copy } else { ast })
            .collect();
        self.flatten_files(&asts, asts[self.default_file], model)
    }

    /// The models, blocks and classes in `package` (or named `package`) that have an
    /// `experiment` annotation, by full name in declaration order.
    pub fn models_with_experiment(&self, package: &str) -> Vec<String> {
        let asts: Vec<_> = self.asts.iter().collect();
        flatten::models_with_experiment(&asts, package)
    }
}

/// A `connect(a, b)` of a model's equation section.
#[derive(Clone, Debug)]
pub struct ConnectSite {
    /// The whole equation.
    pub span: Span,
    pub a: ComponentRef,
    pub b: ComponentRef,
    /// Whether it is written weak already.
    pub weak: bool,
}

/// The class whose name is at `name`, among `classes` and the classes they hold.
fn find_class(classes: &[ClassDef], name: Span) -> Option<&ClassDef> {
    classes.iter().find_map(|def| {
        if def.name.span == name {
            return Some(def);
        }
        let ClassBody::Long(composition) = &def.body else {
            return None;
        };
        composition.elements.iter().find_map(|e| match &e.kind {
            ElementKind::Class(inner) => find_class(std::slice::from_ref(&**inner), name),
            _ => None,
        })
    })
}

/// Makes the `connect` equation at `at`, wherever it is among `classes`, weak in `weak`.
fn mark_weak(classes: &mut [ClassDef], at: Span, weak: [&str; 2]) {
    for def in classes {
        let ClassBody::Long(composition) = &mut def.body else {
            continue;
        };
        for eq in composition.equations.iter_mut().filter(|eq| eq.span == at) {
            if let EquationKind::Connect { a, b } = &mut eq.kind {
                for (side, name) in [(a, weak[0]), (b, weak[1])] {
                    side.weak = Some(Ident {
                        name: name.to_string(),
                        span: side.cref.span,
                    });
                }
            }
        }
        for element in &mut composition.elements {
            if let ElementKind::Class(inner) = &mut element.kind {
                mark_weak(std::slice::from_mut(&mut **inner), at, weak);
            }
        }
    }
}

/// Parsed files with their diagnostics, "not supported" ones apart: those are reported only
/// if the model uses the class holding the construct.
#[derive(Default)]
struct Parsed {
    asts: Vec<Option<StoredDefinition>>,
    diags: Vec<Diagnostic>,
    unsupported: Vec<Diagnostic>,
}

/// Below this many files one thread parses them all (a thread costs more than it saves).
const PARALLEL_FILES: usize = 64;

/// Each file parsed, in order: a library's thousands of files on every processor.
fn parse_all(sources: &SourceMap, ids: &[FileId]) -> Vec<syntax::ParsedFile> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    if ids.len() < PARALLEL_FILES || threads < 2 {
        return ids
            .iter()
            .map(|&id| syntax::parse_file(sources, id))
            .collect();
    }
    let chunk = ids.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let workers: Vec<_> = ids
            .chunks(chunk)
            .map(|part| {
                std::thread::Builder::new()
                    .stack_size(PARSER_STACK_BYTES)
                    .spawn_scoped(scope, move || {
                        part.iter()
                            .map(|&id| syntax::parse_file(sources, id))
                            .collect::<Vec<_>>()
                    })
            })
            .collect();
        let mut all = Vec::with_capacity(ids.len());
        for (worker, part) in workers.into_iter().zip(ids.chunks(chunk)) {
            // A thread that could not start or that failed: parse its share here.
            match worker.ok().and_then(|w| w.join().ok()) {
                Some(parsed) => all.extend(parsed),
                None => all.extend(part.iter().map(|&id| syntax::parse_file(sources, id))),
            }
        }
        all
    })
}

/// The stack of a parsing thread: deeply nested expressions build deep trees (only the pages
/// used are committed).
const PARSER_STACK_BYTES: usize = 1 << 30;

impl Parsed {
    fn add(&mut self, p: syntax::ParsedFile) {
        for d in p.diagnostics {
            if d.unsupported {
                self.unsupported.push(d);
            } else {
                self.diags.push(d);
            }
        }
        self.asts.push(p.ast);
    }
}

/// Whether a file defines (part of) the top-level package `Modelica`, which then replaces the
/// bundled stand-in.
fn defines_modelica(file: &StoredDefinition) -> bool {
    match &file.within {
        Some(within) => within.parts.first().is_some_and(|p| p.name == "Modelica"),
        None => file.classes.iter().any(|c| c.name.name == "Modelica"),
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
