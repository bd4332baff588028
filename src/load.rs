//! Reading inputs: files, Modelica package directories (`package.mo` + `package.order`) and the
//! bundled stdlib, into one [`SourceMap`].

use std::path::{Path, PathBuf};

use crate::diagnostics::Diagnostic;
use crate::source::{FileId, SourceMap, Span};
use crate::syntax;
use crate::syntax::ast::{ClassBody, ElementKind};

/// The stdlib sources embedded at build time: (path below `stdlib/`, text).
const STDLIB: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/stdlib_files.rs"));

/// Loads each path: a `.mo` file, or a package directory (all its `.mo` files, recursively,
/// `package.mo` first and the rest in `package.order` order, then by name).
pub fn load_paths(sources: &mut SourceMap, paths: &[PathBuf]) -> Result<Vec<FileId>, Diagnostic> {
    let mut ids = Vec::new();
    for path in paths {
        if path.is_dir() {
            load_dir(sources, path, &mut ids)?;
        } else {
            ids.push(load_file(sources, path)?);
        }
    }
    Ok(ids)
}

/// Adds the bundled stdlib to the source map: package `Mocca`, and unless `with_modelica` is
/// false, the stand-in package `Modelica` (SI unit types, constants, icons).
pub fn load_stdlib(sources: &mut SourceMap, with_modelica: bool) -> Vec<FileId> {
    STDLIB
        .iter()
        .filter(|(name, _)| with_modelica || !name.starts_with("Modelica/"))
        .map(|(name, text)| sources.add(format!("<stdlib>/{name}"), *text))
        .collect()
}

fn load_file(sources: &mut SourceMap, path: &Path) -> Result<FileId, Diagnostic> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(sources.add(path.display().to_string(), text)),
        Err(e) => Err(Diagnostic::error(format!(
            "cannot read `{}`: {e}",
            path.display()
        ))),
    }
}

fn load_dir(sources: &mut SourceMap, dir: &Path, ids: &mut Vec<FileId>) -> Result<(), Diagnostic> {
    let package = dir.join("package.mo");
    if !package.is_file() {
        return Err(Diagnostic::error(format!(
            "`{}` is a directory without `package.mo`, so it is not a Modelica package",
            dir.display()
        )));
    }
    let package_id = load_file(sources, &package)?;
    ids.push(package_id);
    let (entries, unmatched) = ordered_entries(dir)?;
    check_unmatched_order(sources, dir, package_id, &unmatched)?;
    for entry in entries {
        if entry.is_dir() && entry.join("package.mo").is_file() {
            load_dir(sources, &entry, ids)?;
        } else if entry.extension().is_some_and(|e| e == "mo") && entry != package {
            ids.push(load_file(sources, &entry)?);
        }
    }
    Ok(())
}

/// A name `package.order` lists: its text and its byte range in the file.
struct OrderEntry {
    name: String,
    start: usize,
    end: usize,
}

/// The names of `package.order`, each with its place in the file.
fn order_entries(order: &str) -> Vec<OrderEntry> {
    let mut entries = Vec::new();
    let mut offset = 0;
    for line in order.split_inclusive('\n') {
        let name = line.trim();
        if !name.is_empty() {
            let start = offset + (line.len() - line.trim_start().len());
            entries.push(OrderEntry {
                name: name.to_string(),
                start,
                end: start + name.len(),
            });
        }
        offset += line.len();
    }
    entries
}

/// `package.order` lists the package's classes and constants: those of its own files and
/// directories, and those declared in its `package.mo`. A name that is neither is an error at
/// its line of `package.order` (the file is added to `sources` to show it).
fn check_unmatched_order(
    sources: &mut SourceMap,
    dir: &Path,
    package: FileId,
    unmatched: &[OrderEntry],
) -> Result<(), Diagnostic> {
    if unmatched.is_empty() {
        return Ok(());
    }
    let declared = declared_in_package(sources, package);
    let Some(missing) = unmatched.iter().find(|e| !declared.contains(&e.name)) else {
        return Ok(());
    };
    let path = dir.join("package.order");
    let order = std::fs::read_to_string(&path).unwrap_or_default();
    let file = sources.add(path.display().to_string(), order);
    Err(Diagnostic::error(format!(
        "`package.order` lists `{}`, which is neither a file or directory of `{}` nor declared in its `package.mo`",
        missing.name,
        dir.display()
    ))
    .at(Span::new(file, missing.start, missing.end), "no such class"))
}

/// The names of the classes and components declared in a `package.mo`'s package.
fn declared_in_package(sources: &SourceMap, package: FileId) -> Vec<String> {
    let Some(ast) = syntax::parse_file(sources, package).ast else {
        return Vec::new();
    };
    let mut names = Vec::new();
    for class in &ast.classes {
        let ClassBody::Long(comp) = &class.body else {
            continue;
        };
        for element in &comp.elements {
            match &element.kind {
                ElementKind::Class(def) => names.push(def.name.name.clone()),
                ElementKind::Component(clause) => {
                    names.extend(clause.components.iter().map(|d| d.name.name.clone()))
                }
                _ => {}
            }
        }
    }
    names
}

/// Directory entries in `package.order` order first, then the rest sorted by name; and the
/// names of `package.order` that match no entry.
fn ordered_entries(dir: &Path) -> Result<(Vec<PathBuf>, Vec<OrderEntry>), Diagnostic> {
    let read_error =
        |e: std::io::Error| Diagnostic::error(format!("cannot read `{}`: {e}", dir.display()));
    let mut rest: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(read_error)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    rest.sort();
    let order = std::fs::read_to_string(dir.join("package.order")).unwrap_or_default();
    let mut ordered = Vec::new();
    let mut unmatched = Vec::new();
    for entry in order_entries(&order) {
        let name = &entry.name;
        let found = ordered.len();
        for candidate in [dir.join(format!("{name}.mo")), dir.join(name)] {
            if let Some(pos) = rest.iter().position(|p| *p == candidate) {
                ordered.push(rest.remove(pos));
            }
        }
        if ordered.len() == found {
            unmatched.push(entry);
        }
    }
    ordered.extend(rest);
    Ok((ordered, unmatched))
}
