//! Small constructors the grammar's actions call, kept here so the grammar stays readable.

use lalrpop_util::ParseError;

use crate::diagnostics::Diagnostic;
use crate::source::{FileId, Span};
use crate::syntax::ast::*;
use crate::syntax::lexer::{LexError, LexErrorKind, Tok, is_keyword};

pub fn ident(file: FileId, name: &str, l: usize, r: usize) -> Ident {
    Ident {
        name: name.to_string(),
        span: Span::new(file, l, r),
    }
}

/// Calls `each` with the parts of a `DOTTED` token (`a.b.c` without blanks) starting at byte
/// `start`, each with its own span. A keyword among them (`a.end`) is reported, as a separate
/// `.` token would have been; `weak` may name a component but not a class.
fn dotted_parts(
    file: FileId,
    diags: &mut Vec<Diagnostic>,
    text: &str,
    start: usize,
    weak_allowed: bool,
    mut each: impl FnMut(Ident),
) {
    let mut l = start;
    for part in text.split('.') {
        let r = l + part.len();
        let reserved = could_be_keyword(part) && is_keyword(part);
        if reserved && !(weak_allowed && part == "weak") {
            diags.push(
                Diagnostic::error(format!("`{part}` is a keyword, not a name"))
                    .at(
                        Span::new(file, l, r),
                        "a keyword cannot be part of a dotted name",
                    )
                    .with_note(format!("quote it to use it as a name: `'{part}'`")),
            );
        }
        each(ident(file, part, l, r));
        l = r + 1;
    }
}

/// Every keyword is lowercase letters only and at least two long: the cheap test that spares
/// most parts (`R1`, `p`) the lexer.
fn could_be_keyword(part: &str) -> bool {
    part.len() >= 2 && part.bytes().all(|b| b.is_ascii_lowercase())
}

/// Appends the parts of a class or package name written as one `DOTTED` token.
pub fn dotted_name(
    parts: &mut Vec<Ident>,
    file: FileId,
    diags: &mut Vec<Diagnostic>,
    text: &str,
    start: usize,
) {
    dotted_parts(file, diags, text, start, false, |ident| parts.push(ident));
}

/// Appends the parts of a reference written as one `DOTTED` token; `subscripts` belong to
/// its last part (`a.b[2]`).
pub fn dotted_reference(
    parts: &mut Vec<RefPart>,
    file: FileId,
    diags: &mut Vec<Diagnostic>,
    text: &str,
    start: usize,
    subscripts: Option<Vec<Subscript>>,
) {
    dotted_parts(file, diags, text, start, true, |ident| {
        parts.push(RefPart {
            ident,
            subscripts: Vec::new(),
        })
    });
    if let (Some(last), Some(subscripts)) = (parts.last_mut(), subscripts) {
        last.subscripts = subscripts;
    }
}

/// `first` followed by `rest`, allocated once at the final size.
pub fn list<T>(first: T, rest: Vec<T>) -> Vec<T> {
    let mut v = Vec::with_capacity(1 + rest.len());
    v.push(first);
    v.extend(rest);
    v
}

/// A class with its name and body; the caller sets the kind, prefixes and span.
pub fn class_def(name: Ident, body: ClassBody) -> Box<ClassDef> {
    Box::new(ClassDef {
        kind: ClassKind::Class,
        name,
        prefixes: ElementPrefixes::default(),
        body,
        span: Span::default(),
    })
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
    let mut d = Diagnostic::error(format!("{what} is not supported"))
        .at(span, "outside mocca's Modelica subset")
        .with_note("see SPEC §2 for the supported subset");
    d.unsupported = true;
    diags.push(d);
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

/// About the text one equation or declaration takes (a short line), for [`Arena::for_text`].
const BYTES_PER_VALUE: usize = 48;

/// The index of a value in an [`Arena`].
pub type Slot = u32;

/// Where the grammar's actions put equations, elements and component declarations as they
/// complete. These are too large for lalrpop's symbol stack, whose every entry is as large as
/// the largest value on it, so the stack carries their [`Slot`]s. A list's values are the arena's tail when
/// the list is taken (the parser reduces bottom-up), so a class's lists are cut off the tail,
/// and the outermost one is moved out whole. Values whose slot error recovery dropped from the
/// stack stay behind until a list around them is taken, and are discarded then.
#[derive(Default)]
pub struct Arena {
    equations: Vec<Equation>,
    elements: Vec<Element>,
    declarations: Vec<ComponentDecl>,
}

impl Arena {
    /// An arena with room for the values a text of `bytes` is likely to hold (one per 48
    /// bytes, about a line of Modelica), so that a large file's values are not copied each
    /// time their vectors double; unused room is never touched.
    pub fn for_text(bytes: usize) -> Arena {
        let likely = bytes / BYTES_PER_VALUE;
        Arena {
            equations: Vec::with_capacity(likely),
            elements: Vec::with_capacity(likely),
            declarations: Vec::with_capacity(likely),
        }
    }

    /// Stores an equation; its description and span are set through [`Arena::equation_mut`].
    /// An algorithm section, held as one equation of its section.
    pub fn algorithm(&mut self, body: Vec<Option<Box<Statement>>>, span: Span) -> Slot {
        let slot = self.equation(EquationKind::Algorithm(statements(body)));
        self.equation_mut(slot).span = span;
        slot
    }

    pub fn equation(&mut self, kind: EquationKind) -> Slot {
        self.equations.push(Equation {
            kind,
            description: None,
            span: Span::default(),
        });
        (self.equations.len() - 1) as Slot
    }

    pub fn equation_mut(&mut self, slot: Slot) -> &mut Equation {
        &mut self.equations[slot as usize]
    }

    pub fn element(&mut self, element: Element) -> Slot {
        self.elements.push(element);
        (self.elements.len() - 1) as Slot
    }

    pub fn declaration(&mut self, declaration: ComponentDecl) -> Slot {
        self.declarations.push(declaration);
        (self.declarations.len() - 1) as Slot
    }

    /// Takes the declarations of one component clause.
    pub fn declarations(&mut self, first: Slot, mut rest: Vec<Slot>) -> Vec<ComponentDecl> {
        if rest.is_empty() {
            return take(&mut self.declarations, &[first]);
        }
        rest.insert(0, first);
        take(&mut self.declarations, &rest)
    }

    /// Takes the equations of an equation list (annotations and erroneous items are `None`).
    pub fn equations(&mut self, items: Vec<Option<Slot>>) -> Vec<Equation> {
        let slots: Vec<Slot> = items.into_iter().flatten().collect();
        take(&mut self.equations, &slots)
    }
}

/// Takes the values at `slots` (increasing) off the arena's tail, in order. The values between
/// and after them are orphans of error recovery and are dropped.
fn take<T>(arena: &mut Vec<T>, slots: &[Slot]) -> Vec<T> {
    let (Some(&first), Some(&last)) = (slots.first(), slots.last()) else {
        return Vec::new();
    };
    arena.truncate(last as usize + 1);
    // A list that fills the arena at least half moves out with its buffer (so a file's large
    // equation list is never copied); smaller ones are copied out and the buffer is reused.
    let tail: Vec<T> = if first == 0 && 2 * arena.len() >= arena.capacity() {
        std::mem::take(arena)
    } else {
        arena.drain(first as usize..).collect()
    };
    if tail.len() == slots.len() {
        return tail;
    }
    let mut wanted = slots.iter().map(|&s| (s - first) as usize).peekable();
    tail.into_iter()
        .enumerate()
        .filter(|&(i, _)| wanted.next_if_eq(&i).is_some())
        .map(|(_, v)| v)
        .collect()
}

/// One item of an element list.
pub enum SectionItem {
    Element(Slot),
    Annotation(Box<Modification>),
    Error,
}

/// The statements of a list, without the annotations and errors that stood among them.
pub fn statements(items: Vec<Option<Box<Statement>>>) -> Vec<Statement> {
    items.into_iter().flatten().map(|s| *s).collect()
}

/// One item of an algorithm section: a statement (`None` for an error) or an annotation.
pub type AlgorithmItem = (Option<Box<Statement>>, Option<Box<Modification>>);

/// An algorithm section's items: its statements (`None` for an error), and the last
/// annotation among them.
pub fn algorithm_items(
    items: Vec<AlgorithmItem>,
) -> (Vec<Option<Box<Statement>>>, Option<Box<Modification>>) {
    let mut annotation = None;
    let mut body = Vec::with_capacity(items.len());
    for item in items {
        match item {
            (_, Some(a)) => annotation = Some(a),
            (statement, None) => body.push(statement),
        }
    }
    (body, annotation)
}

/// An equation section from its items: the equations, and the last annotation among them.
pub fn equation_section(initial: bool, items: Vec<SectionItem>) -> Section {
    let mut annotation = None;
    let mut equations = Vec::with_capacity(items.len());
    for item in items {
        match item {
            SectionItem::Element(slot) => equations.push(Some(slot)),
            SectionItem::Annotation(a) => annotation = Some(a),
            SectionItem::Error => equations.push(None),
        }
    }
    Section::Equations(initial, equations, annotation)
}

/// One section of a composition after the leading element list.
pub enum Section {
    Elements(Visibility, Vec<SectionItem>),
    /// `equation` (false) or `initial equation` (true), and an annotation among them (the
    /// class's, when the section ends the class).
    Equations(bool, Vec<Option<Slot>>, Option<Box<Modification>>),
    /// A function's `external` clause.
    External(External),
}

/// Assembles a composition, taking its elements and equations off the arena.
pub fn build_composition(
    arena: &mut Arena,
    description: Option<String>,
    (first, sections): (Vec<SectionItem>, Vec<Section>),
) -> Composition {
    let (mut annotation, mut external) = (None, None);
    // Slots in order, with each element's visibility and whether each equation is initial.
    let (mut elements, mut visibilities) = (Vec::new(), Vec::new());
    let (mut equations, mut initial) = (Vec::new(), Vec::new());
    let mut add_items = |visibility, items: Vec<SectionItem>| {
        for item in items {
            match item {
                SectionItem::Element(slot) => {
                    elements.push(slot);
                    visibilities.push(visibility);
                }
                SectionItem::Annotation(a) => annotation = Some(*a),
                SectionItem::Error => {}
            }
        }
    };
    add_items(Visibility::Public, first);
    let mut eq_sections = Vec::new();
    for section in sections {
        match section {
            Section::Elements(visibility, items) => add_items(visibility, items),
            Section::Equations(is_initial, items, found) => {
                if let Some(a) = found {
                    add_items(Visibility::Public, vec![SectionItem::Annotation(a)]);
                }
                eq_sections.push((is_initial, items));
            }
            Section::External(clause) => external = Some(clause),
        }
    }
    for (is_initial, items) in eq_sections {
        for slot in items.into_iter().flatten() {
            equations.push(slot);
            initial.push(is_initial);
        }
    }
    let mut elements = take(&mut arena.elements, &elements);
    if visibilities.contains(&Visibility::Protected) {
        for (e, visibility) in elements.iter_mut().zip(visibilities) {
            e.visibility = visibility;
        }
    }
    let equations = take(&mut arena.equations, &equations);
    let (equations, initial_equations) = if initial.contains(&true) {
        let mut flags = initial.into_iter();
        equations
            .into_iter()
            .partition(|_| flags.next() == Some(false))
    } else {
        (equations, Vec::new())
    };
    Composition {
        description,
        elements,
        equations,
        initial_equations,
        annotation,
        external,
    }
}

/// `clause` with the class modification of its constraining clause (`constrainedby T(m)`)
/// applied to each of its declarations, under their own: "modifications following the
/// constraining type name are applied in the declaration and in any redeclaration, and the
/// declaration's own modifiers override them" (Modelica 7.3.2). What the declaration
/// modifies itself (the same dotted name) keeps its own modification; the rest merge as
/// sibling modifications do.
pub fn with_constraining_modification(
    mut clause: ComponentClause,
    constraining: Option<Box<Modification>>,
) -> ComponentClause {
    let Some(constraining) = constraining else {
        return clause;
    };
    for decl in &mut clause.components {
        let own = decl.modification.get_or_insert_with(|| {
            Box::new(Modification {
                arguments: Vec::new(),
                binding: None,
                span: constraining.span,
            })
        });
        let modified: Vec<String> = own.arguments.iter().filter_map(modified_name).collect();
        let inherited = (constraining.arguments.iter())
            .filter(|a| modified_name(a).is_none_or(|name| !modified.contains(&name)))
            .cloned();
        let mut arguments: Vec<Argument> = inherited.collect();
        arguments.append(&mut own.arguments);
        own.arguments = arguments;
    }
    clause
}

/// What a modification argument modifies (its dotted name), if it modifies an element.
fn modified_name(argument: &Argument) -> Option<String> {
    match argument {
        Argument::Modify { name, .. } => Some(name.dotted()),
        Argument::Redeclare(clause) => clause.components.first().map(|d| d.name.name.clone()),
        Argument::Weak(_) | Argument::Unsupported => None,
    }
}
