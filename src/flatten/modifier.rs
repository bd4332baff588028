//! Modifications as a tree keyed by element name, merged so that the outermost wins
//! (use site over declaration over `extends` defaults).

use indexmap::IndexMap;

use super::expr::{Ctx, Mode};
use super::instance::InstId;
use crate::diagnostics::Diagnostic;
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
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct Mod<'a> {
    pub binding: Option<Bound<'a>>,
    pub children: IndexMap<String, Mod<'a>>,
    pub each: bool,
    pub is_final: bool,
    /// Where this modifier was written (for "no such element" errors).
    pub span: Option<Span>,
    /// `weak v` marks written in this modification (SPEC §2.1, connector form).
    pub weak: Vec<&'a Ident>,
}

impl<'a> Mod<'a> {
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
                Argument::Unsupported => {}
            }
        }
        out
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

/// `a(x = 1, x(start = 2))`: two modifications of the same element in one list combine.
fn merge_siblings<'a>(a: Mod<'a>, b: Mod<'a>, diags: &mut Vec<Diagnostic>) -> Mod<'a> {
    // `a(x = 1), a.y = 2` is fine; giving one element two values is not (Modelica 7.2.6).
    if a.binding.is_some()
        && b.binding.is_some()
        && let Some(span) = b.span
    {
        let mut d = Diagnostic::error("this element is modified twice in one modification")
            .at(span, "second modification");
        if let Some(first) = a.span {
            d = d.with_secondary(first, "first modification");
        }
        diags.push(d);
    }
    let mut children = a.children;
    for (name, m) in b.children {
        let merged = match children.shift_remove(&name) {
            Some(existing) => merge_siblings(existing, m, diags),
            None => m,
        };
        children.insert(name, merged);
    }
    let mut weak = a.weak;
    weak.extend(b.weak);
    Mod {
        binding: a.binding.or(b.binding),
        children,
        each: a.each || b.each,
        is_final: a.is_final || b.is_final,
        span: a.span.or(b.span),
        weak,
    }
}

/// `outer` overrides `inner`; overriding a `final` modification is an error.
pub fn merge<'a>(outer: Mod<'a>, inner: Mod<'a>, diags: &mut Vec<Diagnostic>) -> Mod<'a> {
    // A final element (`final A a(x = 1)`) fixes its whole modification, children included.
    if inner.is_final
        && (outer.binding.is_some() || !outer.children.is_empty())
        && let Some(o) = outer.span
    {
        let mut d = Diagnostic::error("a `final` modification cannot be modified again")
            .at(o, "modified here");
        if let Some(i) = inner.span {
            d = d.with_secondary(i, "declared final here");
        }
        diags.push(d);
    }
    let mut children = inner.children;
    for (name, o) in outer.children {
        let merged = match children.shift_remove(&name) {
            Some(i) => merge(o, i, diags),
            None => o,
        };
        children.insert(name, merged);
    }
    let mut weak = inner.weak;
    weak.extend(outer.weak);
    Mod {
        binding: outer.binding.or(inner.binding),
        children,
        each: outer.each || inner.each,
        is_final: outer.is_final || inner.is_final,
        span: outer.span.or(inner.span),
        weak,
    }
}
