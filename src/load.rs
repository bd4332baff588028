//! Reading inputs: files, Modelica package directories (`package.mo` + `package.order`) and the
//! bundled stdlib, into one [`SourceMap`].

use std::path::{Path, PathBuf};

use crate::diagnostics::Diagnostic;
use crate::source::{FileId, SourceMap};

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
    ids.push(load_file(sources, &package)?);
    for entry in ordered_entries(dir)? {
        if entry.is_dir() && entry.join("package.mo").is_file() {
            load_dir(sources, &entry, ids)?;
        } else if entry.extension().is_some_and(|e| e == "mo") && entry != package {
            ids.push(load_file(sources, &entry)?);
        }
    }
    Ok(())
}

/// Directory entries in `package.order` order first, then the rest sorted by name.
fn ordered_entries(dir: &Path) -> Result<Vec<PathBuf>, Diagnostic> {
    let read_error =
        |e: std::io::Error| Diagnostic::error(format!("cannot read `{}`: {e}", dir.display()));
    let mut rest: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(read_error)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    rest.sort();
    let order = std::fs::read_to_string(dir.join("package.order")).unwrap_or_default();
    let mut ordered = Vec::new();
    for name in order.lines().map(str::trim).filter(|l| !l.is_empty()) {
        for candidate in [dir.join(format!("{name}.mo")), dir.join(name)] {
            if let Some(pos) = rest.iter().position(|p| *p == candidate) {
                ordered.push(rest.remove(pos));
            }
        }
    }
    ordered.extend(rest);
    Ok(ordered)
}
