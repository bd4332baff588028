//! Every `.mo` file of the conformance corpora (read from `../shared/conformance`, skipped
//! with a message when absent) is parsed or rejected with a diagnostic — never a panic — and
//! every file expected to be correct parses unless it uses a construct outside the subset.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mocca::diagnostics::{Diagnostic, Severity};
use mocca::source::SourceMap;
use mocca::syntax::parse_file;

fn corpus() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance");
    if dir.is_dir() {
        Some(dir)
    } else {
        println!("skipped: {} is absent", dir.display());
        None
    }
}

fn mo_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            mo_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "mo") {
            out.push(path);
        }
    }
}

/// `path → expected to be accepted`, from a manifest's `path` and the named column.
fn expectations(manifest: &Path, column: &str, accepted: &str) -> BTreeMap<String, bool> {
    let text = std::fs::read_to_string(manifest).unwrap_or_default();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split('\t').collect();
    let (Some(p), Some(c)) = (
        header.iter().position(|h| *h == "path"),
        header.iter().position(|h| *h == column),
    ) else {
        return BTreeMap::new();
    };
    lines
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .filter(|f| f.len() > p.max(c))
        .map(|f| (f[p].to_string(), f[c] == accepted))
        .collect()
}

enum Outcome {
    Parsed,
    /// Rejected only because of constructs outside the subset.
    OutOfSubset,
    Rejected(Vec<Diagnostic>),
    Panicked,
}

fn parse(path: &Path) -> Outcome {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let result = std::panic::catch_unwind(|| {
        let mut sources = SourceMap::new();
        let id = sources.add(path.display().to_string(), text.clone());
        let parsed = parse_file(&sources, id);
        (parsed.ast.is_some(), parsed.diagnostics)
    });
    match result {
        Err(_) => Outcome::Panicked,
        Ok((true, diags)) if diags.iter().all(|d| d.severity != Severity::Error) => Outcome::Parsed,
        Ok((_, diags)) => {
            let errors: Vec<Diagnostic> = diags
                .into_iter()
                .filter(|d| d.severity == Severity::Error)
                .collect();
            if errors
                .iter()
                .all(|d| d.message.contains("is not supported"))
            {
                Outcome::OutOfSubset
            } else {
                Outcome::Rejected(errors)
            }
        }
    }
}

#[test]
fn every_corpus_file_parses_or_is_rejected_with_a_diagnostic() {
    let Some(root) = corpus() else { return };
    let omc = expectations(
        &root.join("omc-flattening/MANIFEST.tsv"),
        "status",
        "correct",
    );
    let compliance = expectations(&root.join("compliance/MANIFEST.tsv"), "shouldPass", "True");
    println!(
        "{:<22} {:>6} {:>7} {:>14} {:>9} {:>8}",
        "folder", "files", "parsed", "not-supported", "rejected", "panics"
    );
    let mut failures = Vec::new();
    let mut panics = 0;
    for (folder, expected) in [
        ("omc-flattening", &omc),
        ("compliance", &compliance),
        ("scalable/original", &BTreeMap::new()),
    ] {
        let dir = root.join(folder);
        let mut files = Vec::new();
        mo_files(&dir, &mut files);
        let (mut parsed, mut unsupported, mut rejected) = (0, 0, 0);
        for path in &files {
            let rel = path
                .strip_prefix(&dir)
                .unwrap_or(path)
                .to_string_lossy()
                .to_string();
            match parse(path) {
                Outcome::Parsed => parsed += 1,
                Outcome::OutOfSubset => unsupported += 1,
                Outcome::Panicked => {
                    panics += 1;
                    failures.push(format!("{folder}/{rel}: panicked"));
                }
                Outcome::Rejected(errors) => {
                    rejected += 1;
                    if errors.iter().any(|d| d.primary.is_none()) {
                        failures.push(format!("{folder}/{rel}: a diagnostic without a span"));
                    }
                    if expected.get(&rel).copied().unwrap_or(false) {
                        failures.push(format!(
                            "{folder}/{rel}: expected correct, but: {}",
                            errors[0].message
                        ));
                    }
                }
            }
        }
        println!(
            "{folder:<22} {:>6} {parsed:>7} {unsupported:>14} {rejected:>9} {:>8}",
            files.len(),
            0
        );
    }
    assert_eq!(panics, 0);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
