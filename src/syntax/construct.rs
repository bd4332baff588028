//! Small constructors the grammar's actions call, kept here so the grammar stays readable.

use lalrpop_util::ParseError;

use crate::diagnostics::Diagnostic;
use crate::source::{FileId, Span};
use crate::syntax::ast::*;
use crate::syntax::lexer::{LexError, LexErrorKind, Tok};

pub fn ident(file: FileId, name: &str, l: usize, r: usize) -> Ident {
    Ident {
        name: name.to_string(),
        span: Span::new(file, l, r),
    }
}

pub fn expr(file: FileId, l: usize, r: usize, kind: ExprKind) -> Expr {
    Expr {
        kind,
        span: Span::new(file, l, r),
    }
}

pub fn binary(file: FileId, l: usize, r: usize, op: BinOp, lhs: Expr, rhs: Expr) -> Expr {
    expr(
        file,
        l,
        r,
        ExprKind::Binary {
            op,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
        },
    )
}

pub fn unary(file: FileId, l: usize, r: usize, op: UnOp, operand: Expr) -> Expr {
    expr(
        file,
        l,
        r,
        ExprKind::Unary {
            op,
            operand: Box::new(operand),
        },
    )
}

pub fn integer<'a>(
    file: FileId,
    text: &str,
    l: usize,
    r: usize,
) -> Result<Expr, ParseError<usize, Tok<'a>, LexError>> {
    match text.parse::<i64>() {
        Ok(v) => Ok(expr(file, l, r, ExprKind::Integer(v))),
        Err(_) => Err(ParseError::User {
            error: LexError {
                kind: LexErrorKind::IntegerTooLarge,
                start: l,
                end: r,
            },
        }),
    }
}

/// The lexer only produces well-formed literals, so parsing cannot fail (a literal too large for
/// a double becomes infinity, which the flattener reports where it matters).
pub fn real_value(text: &str) -> f64 {
    text.parse().unwrap_or(f64::INFINITY)
}

/// `"a" + "b"` in a description string.
pub fn concat_strings(first: &str, rest: Vec<&str>) -> String {
    let mut s = first.to_string();
    for part in rest {
        s.push_str(part);
    }
    s
}

pub fn not_supported(diags: &mut Vec<Diagnostic>, what: &str, span: Span) {
    diags.push(
        Diagnostic::error(format!("{what} is not supported"))
            .at(span, "outside mocca's Modelica subset")
            .with_note("see SPEC §2 for the supported subset"),
    );
}

pub fn purity_not_supported(diags: &mut Vec<Diagnostic>, purity: Option<((), Span)>) {
    if let Some((_, span)) = purity {
        not_supported(diags, "a `pure`/`impure` function", span);
    }
}

pub fn check_end_name(diags: &mut Vec<Diagnostic>, name: &Ident, end: &Ident) {
    if name.name != end.name {
        diags.push(
            Diagnostic::error(format!(
                "class `{}` is closed by `end {}`",
                name.name, end.name
            ))
            .at(end.span, format!("expected `end {}`", name.name))
            .with_secondary(name.span, "class opened here"),
        );
    }
}

/// One item of an element list.
pub enum SectionItem {
    Element(Element),
    Annotation(Modification),
    Error,
}

/// One section of a composition after the leading element list.
pub enum Section {
    Elements(Visibility, Vec<SectionItem>),
    /// `equation` (false) or `initial equation` (true).
    Equations(bool, Vec<Option<Equation>>),
    /// Already reported as not supported.
    Unsupported,
}

pub fn build_composition(first: Vec<SectionItem>, sections: Vec<Section>) -> Composition {
    let mut comp = Composition::default();
    add_elements(&mut comp, Visibility::Public, first);
    for section in sections {
        match section {
            Section::Elements(vis, items) => add_elements(&mut comp, vis, items),
            Section::Equations(false, eqs) => comp.equations.extend(eqs.into_iter().flatten()),
            Section::Equations(true, eqs) => {
                comp.initial_equations.extend(eqs.into_iter().flatten())
            }
            Section::Unsupported => {}
        }
    }
    comp
}

fn add_elements(comp: &mut Composition, visibility: Visibility, items: Vec<SectionItem>) {
    for item in items {
        match item {
            SectionItem::Element(mut e) => {
                e.visibility = visibility;
                comp.elements.push(e);
            }
            SectionItem::Annotation(a) => comp.annotation = Some(a),
            SectionItem::Error => {}
        }
    }
}
