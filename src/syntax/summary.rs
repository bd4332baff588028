//! A per-file summary of what was parsed (classes, their kinds and sizes), for `mocca parse`.

use serde::Serialize;

use super::ParsedFile;
use super::ast::{ClassBody, ClassDef, ElementKind};

#[derive(Serialize, Debug)]
pub struct FileSummary {
    pub path: String,
    pub ok: bool,
    pub classes: Vec<ClassSummary>,
}

#[derive(Serialize, Debug)]
pub struct ClassSummary {
    /// Dotted name inside the file (nested classes as `Outer.Inner`).
    pub name: String,
    pub kind: &'static str,
    /// Component declarations (a `Real a, b;` counts two).
    pub components: usize,
    /// Equations as written (an `if` or `for` equation counts one).
    pub equations: usize,
    pub initial_equations: usize,
}

impl FileSummary {
    pub fn of(path: &str, parsed: &ParsedFile) -> FileSummary {
        let mut classes = Vec::new();
        if let Some(ast) = &parsed.ast {
            for class in &ast.classes {
                summarise(class, "", &mut classes);
            }
        }
        FileSummary {
            path: path.to_string(),
            ok: parsed.is_ok(),
            classes,
        }
    }
}

fn summarise(class: &ClassDef, prefix: &str, out: &mut Vec<ClassSummary>) {
    let name = format!("{prefix}{}", class.name.name);
    let mut summary = ClassSummary {
        name: name.clone(),
        kind: class.kind.keyword(),
        components: 0,
        equations: 0,
        initial_equations: 0,
    };
    let ClassBody::Long(comp) = &class.body else {
        out.push(summary);
        return;
    };
    summary.equations = comp.equations.len();
    summary.initial_equations = comp.initial_equations.len();
    summary.components = comp
        .elements
        .iter()
        .map(|e| match &e.kind {
            ElementKind::Component(c) => c.components.len(),
            _ => 0,
        })
        .sum();
    out.push(summary);
    for element in &comp.elements {
        if let ElementKind::Class(nested) = &element.kind {
            summarise(nested, &format!("{name}."), out);
        }
    }
}
