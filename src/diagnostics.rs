//! Diagnostics: what mocca tells a user about their input, always pointing at source text.

use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label};
use codespan_reporting::term::{self, termcolor::WriteColor};

use crate::source::{SourceMap, Span};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Note,
    Warning,
    Error,
}

/// One message with a primary span, optional secondary spans and notes.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub message: String,
    /// The main location; `None` only for problems that concern no text (e.g. an empty model).
    pub primary: Option<(Span, String)>,
    pub secondary: Vec<(Span, String)>,
    pub notes: Vec<String>,
    /// A construct outside mocca's subset: when flattening, reported only if the class holding
    /// it is used, so a library can be loaded whole.
    pub unsupported: bool,
}

impl Diagnostic {
    pub fn error(message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            message: message.into(),
            primary: None,
            secondary: Vec::new(),
            notes: Vec::new(),
            unsupported: false,
        }
    }

    pub fn warning(message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(message)
        }
    }

    /// Information a run reports, such as `terminate`'s message.
    pub fn note(message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Note,
            ..Diagnostic::error(message)
        }
    }

    pub fn at(mut self, span: Span, label: impl Into<String>) -> Diagnostic {
        self.primary = Some((span, label.into()));
        self
    }

    pub fn with_secondary(mut self, span: Span, label: impl Into<String>) -> Diagnostic {
        self.secondary.push((span, label.into()));
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    fn to_codespan(&self) -> CsDiagnostic<crate::source::FileId> {
        let base = match self.severity {
            Severity::Error => CsDiagnostic::error(),
            Severity::Warning => CsDiagnostic::warning(),
            Severity::Note => CsDiagnostic::note(),
        };
        let mut labels = Vec::new();
        if let Some((span, text)) = &self.primary {
            labels.push(Label::primary(span.file, span.range()).with_message(text));
        }
        for (span, text) in &self.secondary {
            labels.push(Label::secondary(span.file, span.range()).with_message(text));
        }
        base.with_message(&self.message)
            .with_labels(labels)
            .with_notes(self.notes.clone())
    }
}

/// Renders diagnostics with codespan-reporting (colour decided by the writer).
pub fn emit(out: &mut dyn WriteColor, sources: &SourceMap, diagnostics: &[Diagnostic]) {
    let config = term::Config::default();
    for d in diagnostics {
        // A failed write to the terminal is not the user's input being wrong; ignore it.
        let _ = term::emit_to_write_style(out, &config, sources, &d.to_codespan());
    }
}

/// Renders diagnostics to a plain string (tests and snapshots).
pub fn render_plain(sources: &SourceMap, diagnostics: &[Diagnostic]) -> String {
    let config = term::Config::default();
    let mut out = String::new();
    for d in diagnostics {
        // Spans always come from the same SourceMap, so rendering cannot fail on a lookup.
        if let Ok(text) = term::emit_into_string(&config, sources, &d.to_codespan()) {
            out.push_str(&text);
        }
    }
    out
}

/// A span's file name, and its start's line and column (1-based; `None` if out of range).
pub fn place(sources: &SourceMap, span: Span) -> (String, Option<usize>, Option<usize>) {
    use codespan_reporting::files::Files as _;
    let location = sources.location(span.file, span.start as usize).ok();
    (
        sources.name(span.file).to_string(),
        location.as_ref().map(|l| l.line_number),
        location.as_ref().map(|l| l.column_number),
    )
}

/// Diagnostics as one JSON object for scripts: `{"errors":[{"severity","message","file",
/// "line","column","labels":[..],"notes":[..]}]}`, lines and columns 1-based; `file`, `line`
/// and `column` are those of the primary label (null without one).
pub fn to_json(sources: &SourceMap, diagnostics: &[Diagnostic]) -> serde_json::Value {
    let place = |span: Span| place(sources, span);
    let label = |(span, text): &(Span, String), primary: bool| {
        let (file, line, column) = place(*span);
        serde_json::json!({
            "file": file, "line": line, "column": column,
            "message": text, "primary": primary,
        })
    };
    let errors: Vec<serde_json::Value> = diagnostics
        .iter()
        .map(|d| {
            let (file, line, column) = match &d.primary {
                Some((span, _)) => {
                    let (f, l, c) = place(*span);
                    (Some(f), l, c)
                }
                None => (None, None, None),
            };
            let labels: Vec<serde_json::Value> = d
                .primary
                .iter()
                .map(|l| label(l, true))
                .chain(d.secondary.iter().map(|l| label(l, false)))
                .collect();
            serde_json::json!({
                "severity": match d.severity {
                    Severity::Error => "error",
                    Severity::Warning => "warning",
                    Severity::Note => "note",
                },
                "message": d.message,
                "file": file, "line": line, "column": column,
                "labels": labels,
                "notes": d.notes,
            })
        })
        .collect();
    serde_json::json!({ "errors": errors })
}

/// True if any diagnostic is an error.
pub fn has_errors(diagnostics: &[Diagnostic]) -> bool {
    diagnostics.iter().any(Diagnostic::is_error)
}
