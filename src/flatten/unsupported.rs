//! Out-of-subset constructs are reported where they matter: the parser records them, and the
//! flattener reports those that sit in a class the model uses (the innermost class around the
//! construct). A library that uses `algorithm` in one function can still serve the models that
//! do not call it.

use super::classes::{ClassId, ClassTree};
use crate::diagnostics::Diagnostic;
use crate::expr::hash::{FxHashMap, FxHashSet};
use crate::source::{FileId, Span};

/// The diagnostics of `unsupported` whose construct lies in a class of `used`, or outside every
/// class.
pub fn relevant(
    tree: &ClassTree<'_>,
    used: &FxHashSet<ClassId>,
    unsupported: &[Diagnostic],
) -> Vec<Diagnostic> {
    if unsupported.is_empty() {
        return Vec::new();
    }
    // The class definitions of each file: a library has thousands of each.
    let mut by_file: FxHashMap<FileId, Vec<(ClassId, Span)>> = FxHashMap::default();
    for id in tree.ids() {
        if let Some(def) = tree.node(id).def {
            by_file
                .entry(def.span.file)
                .or_default()
                .push((id, def.span));
        }
    }
    unsupported
        .iter()
        .filter(|d| match d.primary.as_ref().map(|(span, _)| *span) {
            Some(span) => {
                innermost_class(by_file.get(&span.file), span).is_none_or(|c| used.contains(&c))
            }
            None => true,
        })
        .cloned()
        .collect()
}

/// The smallest class definition of `classes` (those of `span`'s file) whose text holds
/// `span`.
fn innermost_class(classes: Option<&Vec<(ClassId, Span)>>, span: Span) -> Option<ClassId> {
    classes?
        .iter()
        .filter(|(_, s)| s.start <= span.start && span.end <= s.end)
        .min_by_key(|(_, s)| s.end - s.start)
        .map(|&(id, _)| id)
}
