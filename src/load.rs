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
    load_paths_warning(sources, paths, &mut Vec::new())
}

/// [`load_paths`], adding to `warnings` what is odd but not wrong: a `package.order` line
/// that names no class of its package.
pub fn load_paths_warning(
    sources: &mut SourceMap,
    paths: &[PathBuf],
    warnings: &mut Vec<Diagnostic>,
) -> Result<Vec<FileId>, Diagnostic> {
    let mut ids = Vec::new();
    for path in paths {
        if path.is_dir() {
            load_dir(sources, path, &mut ids, warnings)?;
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

fn load_dir(
    sources: &mut SourceMap,
    dir: &Path,
    ids: &mut Vec<FileId>,
    warnings: &mut Vec<Diagnostic>,
) -> Result<(), Diagnostic> {
    let package = dir.join("package.mo");
    if !package.is_file() {
        return Err(Diagnostic::error(format!(
            "`{}` is a directory without `package.mo`, so it is not a Modelica package",
            dir.display()
        )));
    }
    ids.push(load_file(sources, &package)?);
    for entry in ordered_entries(sources, dir, warnings)? {
        if entry.is_dir() && entry.join("package.mo").is_file() {
            load_dir(sources, &entry, ids, warnings)?;
        } else if entry.extension().is_some_and(|e| e == "mo") && entry != package {
            ids.push(load_file(sources, &entry)?);
        }
    }
    Ok(())
}

/// Directory entries in `package.order` order first, then the rest sorted by name. A line of
/// `package.order` that names neither a `.mo` file nor a sub-package is warned about at the
/// line (the package loads without it), unless `package.mo` mentions the name (a class
/// declared there).
fn ordered_entries(
    sources: &mut SourceMap,
    dir: &Path,
    warnings: &mut Vec<Diagnostic>,
) -> Result<Vec<PathBuf>, Diagnostic> {
    let read_error =
        |e: std::io::Error| Diagnostic::error(format!("cannot read `{}`: {e}", dir.display()));
    let mut rest: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(read_error)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    rest.sort();
    let order_path = dir.join("package.order");
    let Ok(order) = std::fs::read_to_string(&order_path) else {
        return Ok(rest);
    };
    // A class may also be declared inside `package.mo` itself.
    let package_text = std::fs::read_to_string(dir.join("package.mo")).unwrap_or_default();
    let mut ordered = Vec::new();
    let mut missing = Vec::new();
    let mut offset = 0;
    for line in order.split_inclusive('\n') {
        let name = line.trim();
        let start = offset + (line.len() - line.trim_start().len());
        offset += line.len();
        if name.is_empty() {
            continue;
        }
        let mut found = false;
        for candidate in [dir.join(format!("{name}.mo")), dir.join(name)] {
            if let Some(pos) = rest.iter().position(|p| *p == candidate) {
                ordered.push(rest.remove(pos));
                found = true;
            }
        }
        let listed_before = ordered
            .iter()
            .any(|p| p.file_stem().is_some_and(|s| s == name));
        if !found && !listed_before && !mentions(&package_text, name) {
            missing.push((name.to_string(), start));
        }
    }
    if !missing.is_empty() {
        let file = sources.add(order_path.display().to_string(), order.clone());
        for (name, start) in missing {
            let span = crate::source::Span::new(file, start, start + name.len());
            warnings.push(
                Diagnostic::warning(format!(
                    "`package.order` lists `{name}`, which is not a class of this package"
                ))
                .at(span, "no such file or sub-package"),
            );
        }
    }
    ordered.extend(rest);
    Ok(ordered)
}

/// Whether `text` holds `name` as a whole identifier.
fn mentions(text: &str, name: &str) -> bool {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .any(|word| word == name)
}

/// Where top-level library packages are looked for: each `--lib` directory in order, then
/// the directories of `MODELICAPATH` (separated by `:`, as OpenModelica and Dymola read it).
pub fn library_roots(libs: &[PathBuf], modelicapath: Option<&str>) -> Vec<PathBuf> {
    let from_env = modelicapath
        .into_iter()
        .flat_map(|p| p.split(':'))
        .filter(|d| !d.is_empty())
        .map(PathBuf::from);
    libs.iter().cloned().chain(from_env).collect()
}

/// The top-level package `name` in the first root that has it: `DIR/name/package.mo`,
/// `DIR/name VERSION/package.mo` (the first version by name) or `DIR/name.mo`.
pub fn find_library(roots: &[PathBuf], name: &str) -> Option<PathBuf> {
    roots.iter().find_map(|root| {
        let plain = root.join(name);
        if plain.join("package.mo").is_file() {
            return Some(plain);
        }
        let prefix = format!("{name} ");
        let mut versioned: Vec<PathBuf> = std::fs::read_dir(root)
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&prefix))
                    && p.join("package.mo").is_file()
            })
            .collect();
        versioned.sort();
        versioned
            .into_iter()
            .next()
            .or_else(|| Some(root.join(format!("{name}.mo"))).filter(|f| f.is_file()))
    })
}

/// The names in Modelica `text` that are the first part of a name (`Modelica` of
/// `Modelica.Math.Vectors.interpolate(…)`, `Complex` of `Complex c;`) and that `libraries`
/// holds, each once, in order: the top-level names a model may look up in the library path
/// (Modelica 13.3.3) when no loaded class defines them. Comments, strings and quoted
/// identifiers are skipped.
pub fn library_roots_named(
    text: &str,
    libraries: &std::collections::BTreeSet<String>,
) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut roots: Vec<String> = Vec::new();
    let mut k = 0;
    let ident_start = |b: u8| b.is_ascii_alphabetic() || b == b'_';
    while k < bytes.len() {
        match bytes[k] {
            b'/' if bytes.get(k + 1) == Some(&b'/') => {
                k = text[k..].find('\n').map_or(bytes.len(), |n| k + n);
            }
            b'/' if bytes.get(k + 1) == Some(&b'*') => {
                k = text[k + 2..].find("*/").map_or(bytes.len(), |n| k + n + 4);
            }
            quote @ (b'"' | b'\'') => {
                k += 1;
                while k < bytes.len() && bytes[k] != quote {
                    k += if bytes[k] == b'\\' { 2 } else { 1 };
                }
                k += 1;
            }
            b if ident_start(b) => {
                let start = k;
                while k < bytes.len() && (bytes[k].is_ascii_alphanumeric() || bytes[k] == b'_') {
                    k += 1;
                }
                let first = start == 0 || bytes[start - 1] != b'.';
                let name = &text[start..k];
                if first && libraries.contains(name) && !roots.iter().any(|r| r == name) {
                    roots.push(name.to_string());
                }
            }
            _ => k += 1,
        }
    }
    roots
}

/// The names of the top-level packages the `roots` hold (as [`find_library`] finds them),
/// each directory read once.
pub fn available_libraries(roots: &[PathBuf]) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    for entry in roots
        .iter()
        .filter_map(|r| std::fs::read_dir(r).ok())
        .flatten()
    {
        let Ok(entry) = entry else { continue };
        let path = entry.path();
        let Some(file) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if path.join("package.mo").is_file() {
            names.insert(file.split(' ').next().unwrap_or(file).to_string());
        } else if let Some(stem) = file.strip_suffix(".mo")
            && path.is_file()
        {
            names.insert(stem.to_string());
        }
    }
    names
}

/// A package a `uses` annotation names, with the version it asks for.
#[derive(Clone, Debug, PartialEq)]
pub struct Use {
    pub package: String,
    pub version: Option<String>,
}

impl Use {
    /// A package asked for by name alone (`--model Modelica.…`).
    pub fn any_version(package: &str) -> Use {
        Use {
            package: package.to_string(),
            version: None,
        }
    }
}

/// Loads the library package `wanted` from `roots` and, transitively, the packages its
/// `uses` annotation names that the roots have; `loaded` lists the top-level names already
/// there (the user's files' and the libraries loaded so far). `None` when no root has it. A
/// library whose `version` annotation differs from the one asked for is loaded with a
/// warning.
pub fn load_library(
    sources: &mut SourceMap,
    roots: &[PathBuf],
    wanted: &Use,
    loaded: &mut Vec<String>,
    warnings: &mut Vec<Diagnostic>,
) -> Result<Option<Vec<FileId>>, Diagnostic> {
    let name = wanted.package.as_str();
    let Some(path) = find_library(roots, name) else {
        return Ok(None);
    };
    loaded.push(name.to_string());
    let mut ids = load_paths_warning(sources, std::slice::from_ref(&path), warnings)?;
    let package = if path.is_dir() {
        path.join("package.mo")
    } else {
        path.clone()
    };
    let text = std::fs::read_to_string(&package).unwrap_or_default();
    if let (Some(asked), Some(found)) = (&wanted.version, library_version(&text))
        && *asked != found
    {
        warnings.push(Diagnostic::warning(format!(
            "version {asked} of `{name}` is asked for (a `uses` annotation), but `{}` is version {found}: it is used as it is",
            path.display()
        )));
    }
    for used in used_packages(&text) {
        if loaded.contains(&used.package) {
            continue;
        }
        if let Some(more) = load_library(sources, roots, &used, loaded, warnings)? {
            ids.extend(more);
        }
    }
    Ok(Some(ids))
}

/// The version a library's top-level annotation gives (`version = "4.0.0"`): the first
/// quoted one before its `uses(…)`.
fn library_version(text: &str) -> Option<String> {
    let without_uses = match text.find("uses(") {
        Some(at) => &text[..at],
        None => text,
    };
    let mut rest = without_uses;
    while let Some(at) = rest.find("version") {
        let after = rest[at + "version".len()..].trim_start();
        let preceded = rest[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        // A quoted value only: `version = \"4.0.1\"` inside a documentation string is not it.
        if !preceded
            && let Some(value) = after.strip_prefix('=')
            && let Some(value) = value.trim_start().strip_prefix('"')
        {
            return value.split('"').next().map(str::to_string);
        }
        rest = &rest[at + "version".len()..];
    }
    None
}

/// The packages a `uses(A(version = "…"), B(…))` annotation in `text` names, with the
/// versions it asks for.
pub fn used_packages(text: &str) -> Vec<Use> {
    let Some(at) = text.find("uses(") else {
        return Vec::new();
    };
    let mut uses = Vec::new();
    let mut depth = 0usize;
    let mut word = String::new();
    let mut inside = String::new();
    for c in text[at + "uses(".len()..].chars() {
        match c {
            '(' => {
                if depth == 0 && !word.is_empty() {
                    uses.push(Use::any_version(&std::mem::take(&mut word)));
                    inside.clear();
                } else if depth > 0 {
                    inside.push(c);
                }
                depth += 1;
            }
            ')' if depth == 0 => break,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    if let Some(last) = uses.last_mut() {
                        last.version = library_version(&inside);
                    }
                } else {
                    inside.push(c);
                }
            }
            c if depth == 0 && (c.is_alphanumeric() || c == '_') => word.push(c),
            _ if depth == 0 => word.clear(),
            c => inside.push(c),
        }
    }
    uses
}
