//! Text → tokens → AST. The parser never panics: it returns a tree (possibly partial) and
//! diagnostics for every lexical error, syntax error and out-of-subset construct it met.

pub mod ast;
pub(crate) mod construct;
pub mod lexer;
pub mod summary;

use lalrpop_util::{ErrorRecovery, ParseError, lalrpop_mod};

use crate::diagnostics::Diagnostic;
use crate::source::{FileId, SourceMap, Span};
use ast::StoredDefinition;
use construct::Arena;
use lexer::{LexError, Lexer, Tok};

lalrpop_mod!(
    #[allow(
        clippy::all,
        clippy::pedantic,
        unused_parens,
        unused_imports,
        dead_code
    )]
    grammar,
    "/modelica.rs"
);

/// The result of parsing one file.
pub struct ParsedFile {
    pub file: FileId,
    /// `None` only when the parser could not recover at all.
    pub ast: Option<StoredDefinition>,
    pub diagnostics: Vec<Diagnostic>,
}

impl ParsedFile {
    pub fn is_ok(&self) -> bool {
        self.ast.is_some() && !crate::diagnostics::has_errors(&self.diagnostics)
    }
}

/// Parses one loaded file.
pub fn parse_file(sources: &SourceMap, file: FileId) -> ParsedFile {
    let text = sources.text(file);
    let mut lexer = Lexer::new(text);
    let mut recovered = Vec::new();
    let mut diagnostics = Vec::new();
    let result = grammar::StoredDefinitionParser::new().parse(
        file,
        &mut recovered,
        &mut diagnostics,
        &mut Arena::for_text(text.len()),
        &mut lexer,
    );
    let mut syntax: Vec<Diagnostic> = lexer
        .errors
        .iter()
        .map(|e| lex_diagnostic(file, e))
        .collect();
    // An unterminated comment or string already explains why the file ends early.
    let ends_early = lexer.errors.iter().any(|e| {
        matches!(
            e.kind,
            lexer::LexErrorKind::UnterminatedComment | lexer::LexErrorKind::UnterminatedString
        )
    });
    syntax.extend(
        recovered
            .into_iter()
            .map(|r: ErrorRecovery<_, _, _>| parse_diagnostic(file, text, r.error)),
    );
    let ast = match result {
        Ok(ast) => Some(ast),
        Err(ParseError::UnrecognizedEof { .. }) if ends_early => None,
        Err(e) => {
            syntax.push(parse_diagnostic(file, text, e));
            None
        }
    };
    syntax.append(&mut diagnostics);
    syntax.sort_by_key(|d| d.primary.as_ref().map(|(span, _)| span.start));
    ParsedFile {
        file,
        ast,
        diagnostics: syntax,
    }
}

/// Parses a standalone expression (used by `-p NAME=VALUE` and `--at` options and tests).
pub fn parse_expression(sources: &SourceMap, file: FileId) -> Result<ast::Expr, Vec<Diagnostic>> {
    let text = sources.text(file);
    let mut lexer = Lexer::new(text);
    let mut recovered = Vec::new();
    let mut diagnostics = Vec::new();
    let result = grammar::ExpressionParser::new().parse(
        file,
        &mut recovered,
        &mut diagnostics,
        &mut Arena::default(),
        &mut lexer,
    );
    diagnostics.extend(lexer.errors.iter().map(|e| lex_diagnostic(file, e)));
    diagnostics.extend(
        recovered
            .into_iter()
            .map(|r| parse_diagnostic(file, text, r.error)),
    );
    match result {
        Ok(e) if diagnostics.is_empty() => Ok(e),
        Ok(_) => Err(diagnostics),
        Err(e) => {
            diagnostics.push(parse_diagnostic(file, text, e));
            Err(diagnostics)
        }
    }
}

fn lex_diagnostic(file: FileId, e: &LexError) -> Diagnostic {
    Diagnostic::error(e.kind.to_string()).at(Span::new(file, e.start, e.end), e.kind.to_string())
}

fn parse_diagnostic(
    file: FileId,
    text: &str,
    e: ParseError<usize, Tok<'_>, LexError>,
) -> Diagnostic {
    let len = text.len();
    match e {
        ParseError::InvalidToken { location } => {
            Diagnostic::error("invalid token").at(Span::new(file, location, location), "here")
        }
        ParseError::UnrecognizedEof { expected, .. } => {
            let span = Span::new(file, len, len);
            Diagnostic::error(format!(
                "unexpected end of file, expected {}",
                expectation(&expected)
            ))
            .at(span, "file ends here")
        }
        ParseError::UnrecognizedToken {
            token: (l, tok, r),
            expected,
        } => {
            let found = lexer::describe(&tok);
            if let Some((last_start, last_end)) = missing_semicolon(text, l, &expected) {
                return Diagnostic::error(format!("missing `;` before {found}"))
                    .at(
                        Span::new(file, last_start, last_end),
                        "expected `;` after this",
                    )
                    .with_secondary(Span::new(file, l, r), format!("{found} starts a new line"));
            }
            let d = Diagnostic::error(format!(
                "expected {}, found {found}",
                expectation(&expected)
            ))
            .at(Span::new(file, l, r), format!("unexpected {found}"));
            with_hint(d, &tok)
        }
        ParseError::ExtraToken { token: (l, tok, r) } => {
            let found = lexer::describe(&tok);
            Diagnostic::error(format!(
                "unexpected {found} after the end of the file's classes"
            ))
            .at(Span::new(file, l, r), "unexpected")
        }
        ParseError::User { error } => lex_diagnostic(file, &error),
    }
}

/// Notes for the two places where Modelica's grammar is stricter than people expect.
fn with_hint(d: Diagnostic, tok: &Tok<'_>) -> Diagnostic {
    use lexer::RawTok;
    match tok {
        Tok::Raw(RawTok::Minus | RawTok::Plus) => d.with_note(
            "in Modelica a sign may only open an expression: write `a * (-b)`, not `a * -b`",
        ),
        Tok::Raw(RawTok::Caret) => d.with_note("`^` does not chain in Modelica: write `(a^b)^c`"),
        _ => d,
    }
}

/// When `;` would have been accepted and the unexpected token starts a later line than the
/// previous token, the likeliest mistake is a forgotten `;`: returns the byte range of the
/// previous token's last character.
fn missing_semicolon(text: &str, found_at: usize, expected: &[String]) -> Option<(usize, usize)> {
    if !expected.iter().any(|e| e == "\";\"") {
        return None;
    }
    let before = text.get(..found_at)?;
    let last = before.trim_end();
    let gap = &before[last.len()..];
    let (last_char, c) = last.char_indices().next_back()?;
    gap.contains('\n')
        .then_some((last_char, last_char + c.len_utf8()))
}

/// Turns lalrpop's terminal names into "`;`, `end` or identifier".
fn expectation(expected: &[String]) -> String {
    let mut words: Vec<String> = Vec::new();
    for raw in expected {
        let word = match raw.as_str() {
            "IDENT" | "QIDENT" | "DOTTED" => "identifier".to_string(),
            "INTEGER" | "REAL" => "number".to_string(),
            "STRING" => "string".to_string(),
            // `end` as a subscript is a legal but unhelpful suggestion.
            "END_SUBSCRIPT" => continue,
            "INITIAL_EQUATION" => "`initial equation`".to_string(),
            "INITIAL_ALGORITHM" => "`initial algorithm`".to_string(),
            quoted => format!("`{}`", quoted.trim_matches('"')),
        };
        if !words.contains(&word) {
            words.push(word);
        }
    }
    const SHOWN: usize = 8;
    match words.len() {
        0 => "nothing more".to_string(),
        1 => words[0].clone(),
        n if n <= SHOWN => format!("{} or {}", words[..n - 1].join(", "), words[n - 1]),
        n => format!(
            "{}, or one of {} other tokens",
            words[..SHOWN].join(", "),
            n - SHOWN
        ),
    }
}
