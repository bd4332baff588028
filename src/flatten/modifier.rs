//! Modifications as a tree keyed by element name, merged so that the outermost wins
//! (use site over declaration over `extends` defaults).

use super::expr::{Ctx, Mode};
use super::instance::InstId;
use crate::diagnostics::Diagnostic;
use crate::expr::hash::FxIndexMap;
use crate::source::Span;
use crate::syntax::ast::{self, Argument, Expr, Ident};

/// An expression together with the instance whose names it refers to, and, for an element of
/// an array component modified without `each`, the element to select from its value.
#[derive(Clone, Debug)]
pub struct Bound<'a> {
    pub expr: &'a Expr,
    pub scope: InstId,
    /// The class in which names not found in the instance are looked up (package constants).
    pub class_scope: super::classes::ClassId,
    pub select: Vec<usize>,
    /// The field of the record value `expr` that this binding is (`medium.rho` of a binding
    /// `medium = m`): empty for the value itself.
    pub field: Vec<String>,
}

impl Bound<'_> {
    /// Where the bound expression's names resolve, keeping parameters symbolic.
    pub fn ctx(&self) -> Ctx<'static> {
        Ctx {
            inst: Some(self.scope),
            class: self.class_scope,
            loops: &[],
            mode: Mode::Symbolic,
            end: None,
            locals: None,
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct Mod<'a> {
    pub binding: Option<Bound<'a>>,
    pub children: FxIndexMap<String, Mod<'a>>,
    pub each: bool,
    pub is_final: bool,
    /// Where this modifier was written (for "no such element" errors).
    pub span: Option<Span>,
    /// `weak v` marks written in this modification (SPEC §2.1, connector form).
    pub weak: Vec<&'a Ident>,
    /// `redeclare Type name(…)`: the element this modifies takes `Type`.
    pub redeclare: Option<Redeclared<'a>>,
}

/// A component redeclared by a modification: its new clause, and the class its type name is
/// looked up in (where the modification is written).
#[derive(Clone, Copy, Debug)]
pub struct Redeclared<'a> {
    pub clause: &'a ast::ComponentClause,
    pub class_scope: super::classes::ClassId,
}

/// An expression's form without where it is written (spans are not serialised).
fn texts(e: &Expr) -> Option<String> {
    serde_json::to_string(e).ok()
}

impl<'a> Mod<'a> {
    /// Whether `self` and `other` are the same modification: the same expressions (written
    /// once, or alike wherever written) bound in the same scopes, the same elements modified
    /// the same way, in the same order.
    pub fn same_as(&self, other: &Mod<'_>) -> bool {
        let same_binding = match (&self.binding, &other.binding) {
            (None, None) => true,
            (Some(a), Some(b)) if std::ptr::eq(a.expr, b.expr) => {
                a.scope == b.scope && a.class_scope == b.class_scope && a.select == b.select
            }
            // Written apart: alike, and naming nothing (a name could mean other things in
            // the two places).
            (Some(a), Some(b)) => {
                a.select == b.select
                    && match (texts(a.expr), texts(b.expr)) {
                        (Some(x), Some(y)) => x == y && !x.contains("\"Ref\""),
                        _ => false,
                    }
            }
            _ => false,
        };
        let same_redeclaration = match (&self.redeclare, &other.redeclare) {
            (None, None) => true,
            (Some(a), Some(b)) => {
                std::ptr::eq(a.clause, b.clause) && a.class_scope == b.class_scope
            }
            _ => false,
        };
        same_binding
            && same_redeclaration
            && self.each == other.each
            && self.is_final == other.is_final
            && self.weak.len() == other.weak.len()
            && self
                .weak
                .iter()
                .zip(&other.weak)
                .all(|(a, b)| std::ptr::eq(*a, *b))
            && self.children.len() == other.children.len()
            && (self.children.iter().zip(&other.children))
                .all(|((n, a), (m, b))| n == m && a.same_as(b))
    }

    /// Builds the tree of an AST modification whose expressions live in `scope`.
    pub fn from_ast(
        m: &'a ast::Modification,
        scope: InstId,
        class_scope: super::classes::ClassId,
        diags: &mut Vec<Diagnostic>,
    ) -> Mod<'a> {
        let mut out = Mod {
            binding: m.binding.as_ref().map(|expr| Bound {
                expr,
                scope,
                class_scope,
                select: Vec::new(),
                field: Vec::new(),
            }),
            span: Some(m.span),
            ..Mod::default()
        };
        for arg in &m.arguments {
            match arg {
                Argument::Modify {
                    each,
                    is_final,
                    name,
                    modification,
                    span,
                    ..
                } => {
                    let mut leaf = match modification {
                        Some(inner) => Mod::from_ast(inner, scope, class_scope, diags),
                        None => Mod::default(),
                    };
                    leaf.each = *each;
                    leaf.is_final = *is_final;
                    leaf.span = Some(*span);
                    // `a.b.c = v` is `a(b(c = v))`.
                    let nested = name.parts[1..].iter().rev().fold(leaf, |inner, part| {
                        let mut m = Mod {
                            span: Some(*span),
                            ..Mod::default()
                        };
                        m.children.insert(part.name.clone(), inner);
                        m
                    });
                    let key = name.parts[0].name.clone();
                    let merged = match out.children.shift_remove(&key) {
                        Some(existing) => merge_siblings(existing, nested, diags),
                        None => nested,
                    };
                    out.children.insert(key, merged);
                }
                Argument::Weak(ident) => out.weak.push(ident),
                Argument::Redeclare(clause) => {
                    let Some(decl) = clause.components.first() else {
                        continue;
                    };
                    let mut leaf = match &decl.modification {
                        Some(inner) => Mod::from_ast(inner, scope, class_scope, diags),
                        None => Mod::default(),
                    };
                    leaf.span = Some(decl.span);
                    leaf.redeclare = Some(Redeclared {
                        clause,
                        class_scope,
                    });
                    let key = decl.name.name.clone();
                    let merged = match out.children.shift_remove(&key) {
                        Some(existing) => merge_siblings(existing, leaf, diags),
                        None => leaf,
                    };
                    out.children.insert(key, merged);
                }
                Argument::Unsupported => {}
            }
        }
        out
    }

    /// Sets nothing: no binding, no attribute, no element modified.
    pub fn is_empty(&self) -> bool {
        self.binding.is_none() && self.children.is_empty()
    }

    pub fn child(&self, name: &str) -> Option<&Mod<'a>> {
        self.children.get(name)
    }

    /// The modification seen by element `index` (row-major) of an array component: bindings
    /// without `each` select that element of their array value.
    pub fn for_element(&self, index: &[usize]) -> Mod<'a> {
        if index.is_empty() {
            return self.clone();
        }
        let mut m = self.clone();
        m.select_in_place(index);
        m
    }

    fn select_in_place(&mut self, index: &[usize]) {
        // `each` applies to the array it is written on: once that array is split into its
        // elements, the value is whole again and the element's own dimensions select from it.
        if self.each {
            self.each = false;
            return;
        }
        if let Some(b) = &mut self.binding {
            b.select.extend_from_slice(index);
        }
        for child in self.children.values_mut() {
            child.select_in_place(index);
        }
    }
}

/// How two modifications of one element meet.
#[derive(Clone, Copy, PartialEq)]
enum Meeting {
    /// One list names the element twice (`a(x = 1), a.y = 2`): parts combine, but giving one
    /// element two values is an error (Modelica 7.2.6).
    Siblings,
    /// An outer modification overrides an inner one, except where the inner is `final`.
    Override,
}

/// `a(x = 1, x(start = 2))`: two modifications of the same element in one list combine.
fn merge_siblings<'a>(a: Mod<'a>, b: Mod<'a>, diags: &mut Vec<Diagnostic>) -> Mod<'a> {
    combine(b, a, Meeting::Siblings, diags)
}

/// `outer` overrides `inner`; overriding a `final` modification is an error.
pub fn merge<'a>(outer: Mod<'a>, inner: Mod<'a>, diags: &mut Vec<Diagnostic>) -> Mod<'a> {
    combine(outer, inner, Meeting::Override, diags)
}

/// `later` meets `earlier` (the inner or first-written one); `later`'s binding wins.
fn combine<'a>(
    later: Mod<'a>,
    earlier: Mod<'a>,
    meeting: Meeting,
    diags: &mut Vec<Diagnostic>,
) -> Mod<'a> {
    if let Some(d) = conflict(&later, &earlier, meeting) {
        diags.push(d);
    }
    let mut children = earlier.children;
    for (name, l) in later.children {
        let merged = match children.shift_remove(&name) {
            Some(e) => combine(l, e, meeting, diags),
            None => l,
        };
        children.insert(name, merged);
    }
    let mut weak = earlier.weak;
    weak.extend(later.weak);
    // `each` belongs with the binding: an outer array value replacing an inner `each` value
    // selects per element again.
    let each = if later.binding.is_some() {
        later.each
    } else {
        later.each || earlier.each
    };
    Mod {
        binding: later.binding.or(earlier.binding),
        children,
        each,
        is_final: later.is_final || earlier.is_final,
        span: later.span.or(earlier.span),
        weak,
        redeclare: later.redeclare.or(earlier.redeclare),
    }
}

fn conflict(later: &Mod<'_>, earlier: &Mod<'_>, meeting: Meeting) -> Option<Diagnostic> {
    let (message, here, there) = match meeting {
        Meeting::Siblings if later.binding.is_some() && earlier.binding.is_some() => (
            "this element is modified twice in one modification",
            "second modification",
            "first modification",
        ),
        // A final element (`final A a(x = 1)`) fixes its whole modification, children included.
        Meeting::Override
            if earlier.is_final && (later.binding.is_some() || !later.children.is_empty()) =>
        {
            (
                "a `final` modification cannot be modified again",
                "modified here",
                "declared final here",
            )
        }
        _ => return None,
    };
    let mut d = Diagnostic::error(message).at(later.span?, here);
    if let Some(span) = earlier.span {
        d = d.with_secondary(span, there);
    }
    Some(d)
}
