//! Out-of-subset constructs are reported where they matter: the parser records them, and the
//! flattener reports those that sit in a class the model uses (the innermost class around the
//! construct). A library that uses `algorithm` in one function can still serve the models that
//! do not call it.

use super::classes::{ClassId, ClassTree};
use crate::diagnostics::Diagnostic;
use crate::expr::hash::FxHashSet;
use crate::source::Span;

/// The diagnostics of `unsupported` whose construct lies in a class of `used`, or outside every
/// class.
pub fn relevant(
    tree: &ClassTree<'_>,
    used: &FxHashSet<ClassId>,
    unsupported: &[Diagnostic],
) -> Vec<Diagnostic> {
    unsupported
        .iter()
        .filter(|d| match d.primary.as_ref().map(|(span, _)| *span) {
            Some(span) => innermost_class(tree, span).is_none_or(|c| used.contains(&c)),
            None => true,
        })
        .cloned()
        .collect()
}

/// The smallest class definition whose text holds `span`.
fn innermost_class(tree: &ClassTree<'_>, span: Span) -> Option<ClassId> {
    tree.ids()
        .filter_map(|id| tree.node(id).def.map(|def| (id, def.span)))
        .filter(|(_, s)| s.file == span.file && s.start <= span.start && span.end <= s.end)
        .min_by_key(|(_, s)| s.end - s.start)
        .map(|(id, _)| id)
}
