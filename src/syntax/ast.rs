//! The abstract syntax tree. Every node carries the [`Span`] of the text it came from.
//! Constructs outside the subset are parsed, reported by the parser as "… is not supported"
//! diagnostics at their span, and left in the tree as `Unsupported` placeholders.

use crate::source::Span;
use serde::Serialize;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Ident {
    pub name: String,
    #[serde(skip)]
    pub span: Span,
}

/// A dotted class or component name such as `Mocca.Electrical.Resistor` (`.A.B` is global).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Name {
    pub global: bool,
    pub parts: Vec<Ident>,
    #[serde(skip)]
    pub span: Span,
}

impl Name {
    pub fn dotted(&self) -> String {
        let joined: Vec<&str> = self.parts.iter().map(|p| p.name.as_str()).collect();
        joined.join(".")
    }
}

/// A parsed file: an optional `within` and its classes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StoredDefinition {
    pub within: Option<Name>,
    pub classes: Vec<ClassDef>,
    #[serde(skip)]
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClassKind {
    Class,
    Model,
    Record,
    OperatorRecord,
    Block,
    Connector,
    ExpandableConnector,
    Type,
    Package,
    Function,
    OperatorFunction,
    Operator,
}

impl ClassKind {
    pub fn keyword(self) -> &'static str {
        match self {
            ClassKind::Class => "class",
            ClassKind::Model => "model",
            ClassKind::Record => "record",
            ClassKind::OperatorRecord => "operator record",
            ClassKind::Block => "block",
            ClassKind::Connector => "connector",
            ClassKind::ExpandableConnector => "expandable connector",
            ClassKind::Type => "type",
            ClassKind::Package => "package",
            ClassKind::Function => "function",
            ClassKind::OperatorFunction => "operator function",
            ClassKind::Operator => "operator",
        }
    }
}

/// Prefixes written before the class keyword or before an element (the out-of-subset ones,
/// `inner`, `replaceable`, …, are reported by the parser and not kept).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ElementPrefixes {
    pub is_final: bool,
    pub partial: bool,
    /// `encapsulated`: names inside the class are looked up in it and through its imports
    /// only, not in the classes around it (Modelica 5.3.1).
    #[serde(skip_serializing_if = "is_false")]
    pub encapsulated: bool,
}

fn is_false(b: &bool) -> bool {
    !b
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClassDef {
    pub kind: ClassKind,
    pub name: Ident,
    pub prefixes: ElementPrefixes,
    pub body: ClassBody,
    #[serde(skip)]
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum ClassBody {
    /// `model M "description" … end M;`
    Long(Composition),
    /// `type T = prefix Base[dims](mods) "description";`
    Short(ShortClass),
    /// `type E = enumeration(a, b);`
    Enumeration {
        literals: Vec<Ident>,
        description: Option<String>,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ShortClass {
    pub prefixes: TypePrefixes,
    pub base: Name,
    pub dims: Vec<Subscript>,
    pub modification: Option<Modification>,
    pub description: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Composition {
    pub description: Option<String>,
    pub elements: Vec<Element>,
    pub equations: Vec<Equation>,
    pub initial_equations: Vec<Equation>,
    pub annotation: Option<Modification>,
    /// A function's `external` clause (Modelica 12.9).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external: Option<External>,
}

/// `external "C" …;`: the function's body is written in another language.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct External {
    /// `"C"`, `"builtin"`, …; `None` when none is written (then it is C).
    pub language: Option<String>,
    /// The foreign function called (`ModelicaStandardTables_CombiTimeTable_getValue`), when
    /// the clause names one.
    pub function: Option<String>,
    #[serde(skip)]
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Visibility {
    Public,
    Protected,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Element {
    pub visibility: Visibility,
    pub prefixes: ElementPrefixes,
    pub kind: ElementKind,
    #[serde(skip)]
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum ElementKind {
    /// Boxed so that the common component element stays small.
    Extends(Box<Extends>),
    Class(Box<ClassDef>),
    Component(ComponentClause),
    Import(Box<Import>),
    /// An out-of-subset element (reported where it is used).
    Unsupported,
}

/// `import …`: makes classes of another package visible by a short name in the importing
/// class (not in classes that extend it).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Import {
    /// `import A = P.Q;`
    Renamed { alias: Ident, target: Name },
    /// `import P.Q;` (visible as `Q`)
    Qualified(Name),
    /// `import P.*;`
    Unqualified(Name),
    /// `import P.{A, B};`
    Multiple { package: Name, names: Vec<Ident> },
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Extends {
    pub base: Name,
    pub modification: Option<Modification>,
    pub annotation: Option<Modification>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Variability {
    #[default]
    Continuous,
    Discrete,
    Parameter,
    Constant,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Causality {
    #[default]
    None,
    Input,
    Output,
}

/// `weak flow parameter input` and friends, as written before a type name.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TypePrefixes {
    pub weak: bool,
    pub flow: bool,
    pub variability: Variability,
    pub causality: Causality,
}

/// `parameter Real a = 1, b[3](each start = 0);`
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ComponentClause {
    pub prefixes: TypePrefixes,
    pub type_name: Name,
    pub dims: Vec<Subscript>,
    pub components: Vec<ComponentDecl>,
}

/// The optional parts are boxed so that a declaration stays small (most have none of them).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ComponentDecl {
    pub name: Ident,
    pub dims: Vec<Subscript>,
    pub modification: Option<Box<Modification>>,
    /// `if cond`: a conditional component (Modelica 4.4.5).
    pub condition: Option<Box<Expr>>,
    pub description: Option<String>,
    pub annotation: Option<Box<Modification>>,
    #[serde(skip)]
    pub span: Span,
}

/// `(args) = binding`, `= binding` or `(args)`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Modification {
    pub arguments: Vec<Argument>,
    pub binding: Option<Expr>,
    #[serde(skip)]
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Argument {
    /// `each final name(mods) = value "description"`
    Modify {
        each: bool,
        is_final: bool,
        name: Name,
        modification: Option<Modification>,
        description: Option<String>,
        #[serde(skip)]
        span: Span,
    },
    /// `weak v` inside a component's modification: that connector variable is weak.
    Weak(Ident),
    /// `redeclare Type name(mods)`: element `name` of the modified class takes the type
    /// `Type` (one declaration in the clause).
    Redeclare(Box<ComponentClause>),
    /// A class redeclaration, or `replaceable` in a modification (reported as not supported).
    Unsupported,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Equation {
    pub kind: EquationKind,
    pub description: Option<String>,
    #[serde(skip)]
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum EquationKind {
    Simple {
        lhs: Expr,
        rhs: Expr,
    },
    Connect {
        a: ConnectArg,
        b: ConnectArg,
    },
    If {
        branches: Vec<(Expr, Vec<Equation>)>,
        else_branch: Vec<Equation>,
    },
    For {
        indices: Vec<ForIndex>,
        body: Vec<Equation>,
    },
    /// `assert(…)`, `terminate(…)` and other call statements.
    Call {
        name: Name,
        args: Vec<Arg>,
    },
    /// `when c1 then … elsewhen c2 then … end when`: each branch's condition and equations.
    When {
        branches: Vec<(Expr, Vec<Equation>)>,
    },
    /// An `algorithm` section (or `initial algorithm`, in the initial equations): its
    /// statements, in order.
    Algorithm(Vec<Statement>),
    /// A construct reported as not supported while parsing.
    Unsupported,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Statement {
    pub kind: StatementKind,
    #[serde(skip)]
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum StatementKind {
    /// `v := e`
    Assign {
        target: ComponentRef,
        value: Expr,
    },
    /// `(a, , c) := f(x)`: the outputs of a call, in order, to the targets written.
    AssignOutputs {
        targets: Vec<Option<Expr>>,
        call: Expr,
    },
    /// `assert(…)`, `terminate(…)`, `reinit(…)`.
    Call {
        name: Name,
        args: Vec<Arg>,
    },
    Break,
    Return,
    If {
        branches: Vec<(Expr, Vec<Statement>)>,
        else_branch: Vec<Statement>,
    },
    For {
        indices: Vec<ForIndex>,
        body: Vec<Statement>,
    },
    While {
        condition: Expr,
        body: Vec<Statement>,
    },
    When {
        branches: Vec<(Expr, Vec<Statement>)>,
    },
    /// Reported as not supported while parsing.
    Unsupported,
}

/// One side of `connect(a, b)`: a component reference, optionally `a(weak v)`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ConnectArg {
    pub cref: ComponentRef,
    pub weak: Option<Ident>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ForIndex {
    pub name: Ident,
    /// `None` for `for i loop`: the range is deduced from the arrays `i` subscripts.
    pub range: Option<Expr>,
}

/// `a.b[1].c`
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ComponentRef {
    pub global: bool,
    pub parts: Vec<RefPart>,
    #[serde(skip)]
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RefPart {
    pub ident: Ident,
    pub subscripts: Vec<Subscript>,
}

impl ComponentRef {
    /// Dotted text without subscripts (`a.b.c`).
    pub fn dotted(&self) -> String {
        let joined: Vec<&str> = self.parts.iter().map(|p| p.ident.name.as_str()).collect();
        joined.join(".")
    }

    /// The reference as a plain dotted [`Name`], if no part has subscripts.
    pub fn as_name(&self) -> Option<Name> {
        self.parts
            .iter()
            .all(|p| p.subscripts.is_empty())
            .then(|| Name {
                global: self.global,
                parts: self.parts.iter().map(|p| p.ident.clone()).collect(),
                span: self.span,
            })
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Subscript {
    /// `:` (the whole dimension)
    Colon(#[serde(skip)] Span),
    Expr(Expr),
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Expr {
    pub kind: ExprKind,
    #[serde(skip)]
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    ElemAdd,
    ElemSub,
    ElemMul,
    ElemDiv,
    ElemPow,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
}

impl BinOp {
    /// `and`, `or` and the relations: the operators whose result is a Boolean.
    pub fn gives_boolean(self) -> bool {
        matches!(
            self,
            BinOp::And
                | BinOp::Or
                | BinOp::Eq
                | BinOp::Ne
                | BinOp::Lt
                | BinOp::Le
                | BinOp::Gt
                | BinOp::Ge
        )
    }

    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Pow => "^",
            BinOp::ElemAdd => ".+",
            BinOp::ElemSub => ".-",
            BinOp::ElemMul => ".*",
            BinOp::ElemDiv => "./",
            BinOp::ElemPow => ".^",
            BinOp::Eq => "==",
            BinOp::Ne => "<>",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "and",
            BinOp::Or => "or",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum UnOp {
    Neg,
    Plus,
    Not,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum ExprKind {
    Integer(i64),
    Real(f64),
    Bool(bool),
    Str(String),
    Ref(ComponentRef),
    /// `end` inside a subscript.
    End,
    Call {
        func: ComponentRef,
        args: Vec<Arg>,
    },
    Binary {
        op: BinOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    Unary {
        op: UnOp,
        operand: Box<Expr>,
    },
    If {
        branches: Vec<(Expr, Expr)>,
        else_branch: Box<Expr>,
    },
    /// `start : stop` or `start : step : stop`
    Range {
        start: Box<Expr>,
        step: Option<Box<Expr>>,
        stop: Box<Expr>,
    },
    /// `{a, b, c}`
    Array(Vec<Expr>),
    /// `[a, b; c, d]`
    Matrix(Vec<Vec<Expr>>),
    /// `(a, b)` or `(a, , c)`: only meaningful as the left side of a call equation.
    Tuple(Vec<Option<Expr>>),
    /// `{e for i in r, j in s}` (and the argument of a reduction `sum(e for i in r)`): the
    /// last iterator is the outermost dimension (Modelica 10.4.1.2).
    Comprehension {
        body: Box<Expr>,
        indices: Vec<ForIndex>,
    },
    /// `function` partial application, … (reported as not supported).
    Unsupported,
}

/// A function-call argument, positional or named (`x = 1`). The name is boxed so that the
/// common positional argument stays small.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Arg {
    pub name: Option<Box<Ident>>,
    pub value: Expr,
}
