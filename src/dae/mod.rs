//! The flat DAE: scalar variables and scalar equations in residual form, each traced to its
//! source span and owning component. The output of flattening, the input of structure.

mod balance;
pub mod hybrid;
mod print;
pub mod relations;

pub use balance::ComponentBalance;
pub use print::Modelica;

use std::hash::BuildHasher;
use std::sync::Arc;

use serde::Serialize;

use crate::expr::hash::FxBuild;
use crate::expr::table::IdTable;
use crate::expr::{Display, ExprId, ExprPool, Node, Value, VarId};
use crate::source::Span;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VarKind {
    /// Appears under `der()`.
    State,
    Algebraic,
    /// A `discrete` variable computed by an equation outside `when` (it behaves as algebraic).
    Discrete,
    /// A discrete-time variable that changes only at events: assigned in `when`, or one of
    /// the flattener's own (`pre(v)`, `sample(…)`, `initial()`). Known to the continuous
    /// part, like a parameter, between events.
    Held,
    Parameter,
    Constant,
    /// A top-level `input`: known, supplied from outside (zero unless given).
    Input,
    /// Eliminated by alias elimination: its `binding` gives it in terms of the representative.
    Alias,
}

impl VarKind {
    /// Unknowns of the DAE: states (through their derivatives) and algebraic variables.
    pub fn is_unknown(self) -> bool {
        matches!(
            self,
            VarKind::State | VarKind::Algebraic | VarKind::Discrete
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScalarType {
    Real,
    Integer,
    Boolean,
    String,
}

impl ScalarType {
    /// The type an expression of this type prints as (a String's value is not an expression).
    pub fn value(self) -> Value {
        match self {
            ScalarType::Integer => Value::Integer,
            ScalarType::Boolean => Value::Boolean,
            ScalarType::Real | ScalarType::String => Value::Real,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ScalarType::Real => "Real",
            ScalarType::Integer => "Integer",
            ScalarType::Boolean => "Boolean",
            ScalarType::String => "String",
        }
    }
}

/// The `stateSelect` attribute: how much the modeller wants the variable as a state when
/// index reduction has to choose (Modelica 3.6 §4.9.5.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StateSelect {
    Never,
    Avoid,
    #[default]
    Default,
    Prefer,
    Always,
}

impl StateSelect {
    const LITERALS: [(StateSelect, &'static str); 5] = [
        (StateSelect::Never, "StateSelect.never"),
        (StateSelect::Avoid, "StateSelect.avoid"),
        (StateSelect::Default, "StateSelect.default"),
        (StateSelect::Prefer, "StateSelect.prefer"),
        (StateSelect::Always, "StateSelect.always"),
    ];

    /// The choice of ordinal `x` (1 for `never` … 5 for `always`).
    pub fn from_ordinal(x: f64) -> Option<StateSelect> {
        let k = x.round();
        (k == x && (1.0..=5.0).contains(&k)).then(|| Self::LITERALS[k as usize - 1].0)
    }

    /// The choice a literal `StateSelect.NAME` names.
    pub fn from_literal(name: &str) -> Option<StateSelect> {
        Self::LITERALS
            .iter()
            .find(|(_, literal)| *literal == name)
            .map(|&(choice, _)| choice)
    }

    /// The literal naming this choice.
    pub fn literal(self) -> &'static str {
        Self::LITERALS
            .iter()
            .find(|&&(choice, _)| choice == self)
            .map_or("StateSelect.default", |&(_, literal)| literal)
    }
}

#[derive(Clone, Debug)]
pub struct Variable {
    /// Flat dotted name: `circuit.R1.v`, `T[3]`.
    pub name: String,
    pub kind: VarKind,
    pub ty: ScalarType,
    /// The value of a parameter or constant (a flat expression over other parameters).
    pub binding: Option<ExprId>,
    pub start: Option<ExprId>,
    pub fixed: Option<bool>,
    pub nominal: Option<ExprId>,
    /// As written between the quotes, escape sequences kept (as are `description`'s and an
    /// assertion's `message`).
    pub unit: Option<String>,
    /// `weak Real x;`: other equations read its last value (SPEC §2.1).
    pub weak: bool,
    /// Declared `flow` in a connector.
    pub flow: bool,
    pub state_select: StateSelect,
    /// A parameter or constant whose value the translation used (an array size, an `if`
    /// condition, a function evaluated, `fixed` or `stateSelect`): changing it at run time
    /// would not change what the translation decided, so it is not tunable.
    pub evaluated: bool,
    /// A top-level `output` of the model (an FMU's output): kept by alias elimination.
    pub output: bool,
    pub description: Option<String>,
    /// The declaration this variable comes from.
    pub span: Span,
    /// The component instance that owns it (`circuit.R1`; empty at top level), shared by all
    /// its variables and equations.
    pub component: Arc<str>,
}

impl Variable {
    /// Whether initialisation solves for this variable's start value (`fixed = true` on a
    /// continuous algebraic variable). On a discrete one (a `discrete Real`, a Boolean, an
    /// Integer) `fixed` fixes `pre(v)` instead, which starts at the start value anyway.
    pub fn is_fixed_algebraic(&self) -> bool {
        self.kind == VarKind::Algebraic && self.ty == ScalarType::Real && self.fixed == Some(true)
    }

    /// A variable of the compiler's own (a dummy derivative, `pre(v)`): no binding,
    /// attributes or marks.
    pub fn derived(name: String, kind: VarKind, ty: ScalarType, span: Span) -> Variable {
        Variable {
            name,
            kind,
            ty,
            binding: None,
            start: None,
            fixed: None,
            nominal: None,
            unit: None,
            weak: false,
            flow: false,
            state_select: StateSelect::Default,
            evaluated: false,
            output: false,
            description: None,
            span,
            component: Arc::from(""),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EquationOrigin {
    /// Written in an equation section.
    Model,
    /// The binding of a non-parameter variable (`Real y = 2*x;`).
    Binding,
    /// Potentials of a connection set are equal.
    ConnectPotential,
    /// Flows of a connection set sum to zero.
    ConnectFlow,
    /// A sub-component's flow connected to nothing is zero.
    UnconnectedFlow,
    /// The potential-weak side of a weak connection reads the other side's potential.
    WeakPotential,
    /// The time derivative of a constraint between states (index reduction).
    Differentiated,
}

/// One additive term of an equation side, for term ranking (SPEC §11).
#[derive(Clone, Debug)]
pub struct Term {
    pub expr: ExprId,
    /// +1 on the left side, −1 on the right (so the residual is Σ sign·expr).
    pub sign: f64,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Equation {
    pub lhs: ExprId,
    pub rhs: ExprId,
    /// `lhs − rhs`.
    pub residual: ExprId,
    pub terms: Vec<Term>,
    pub origin: EquationOrigin,
    pub span: Span,
    pub component: Arc<str>,
}

impl Equation {
    /// `v = value`, its two sides its two terms.
    pub fn assignment(
        pool: &mut ExprPool,
        v: VarId,
        value: ExprId,
        origin: EquationOrigin,
        (span, component): (Span, Arc<str>),
    ) -> Equation {
        let lhs = pool.var(v);
        Equation::between(pool, lhs, value, origin, (span, component))
    }

    /// `lhs = rhs`, its two sides its two terms.
    pub fn between(
        pool: &mut ExprPool,
        lhs: ExprId,
        value: ExprId,
        origin: EquationOrigin,
        (span, component): (Span, Arc<str>),
    ) -> Equation {
        Equation {
            lhs,
            rhs: value,
            residual: pool.sub(lhs, value),
            terms: vec![
                Term {
                    expr: lhs,
                    sign: 1.0,
                    span,
                },
                Term {
                    expr: value,
                    sign: -1.0,
                    span,
                },
            ],
            origin,
            span,
            component,
        }
    }
}

/// A side condition the flattener found (`assert`, equal-parameter checks of connections).
#[derive(Clone, Debug)]
pub struct Assertion {
    pub condition: ExprId,
    pub message: String,
    pub span: Span,
    /// `AssertionLevel.error` (the default) stops a simulation; `warning` is reported only.
    pub is_error: bool,
}

impl Assertion {
    /// The message as a user reads it: `message` keeps the escapes written in the source
    /// (`\"`, `\n`, so that the flat model prints back), which this resolves.
    pub fn text(&self) -> String {
        unescape(&self.message)
    }
}

/// A String literal's text as written (escapes kept) as a user reads it.
pub fn unescape(written: &str) -> String {
    let mut text = String::with_capacity(written.len());
    let mut chars = written.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            text.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => text.push('\n'),
            Some('t') => text.push('\t'),
            Some('r') => text.push('\r'),
            Some('a') => text.push('\u{7}'),
            Some('b') => text.push('\u{8}'),
            Some('f') => text.push('\u{c}'),
            Some('v') => text.push('\u{b}'),
            Some(other) => text.push(other),
            None => text.push('\\'),
        }
    }
    text
}

/// A choice of dummy derivatives that depends on the state (SPEC §4): the Jacobian of
/// differentiated equations with respect to candidate derivatives, and the pivot (the dummy)
/// of each row. A simulation checks it as it runs: when the pivots become poor against the
/// other candidates the choice made at the start no longer holds.
#[derive(Clone, Debug)]
pub struct StateChoice {
    /// Per row, the equation (index into `Dae::equations`) it was differentiated from.
    pub equations: Vec<usize>,
    /// Per column, the derivative it is (a variable or `der` of one).
    pub candidates: Vec<ExprId>,
    /// `(row, column, ∂equation/∂candidate)`.
    pub entries: Vec<(usize, usize, ExprId)>,
    /// Per row, the column chosen as its dummy derivative.
    pub pivots: Vec<usize>,
}

/// The run the model's `experiment` annotation asks for; `None` where it says nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Experiment {
    pub start: Option<f64>,
    pub stop: Option<f64>,
    /// The output interval.
    pub interval: Option<f64>,
    pub tolerance: Option<f64>,
}

#[derive(Clone, Debug, Default)]
pub struct Dae {
    pub model: String,
    /// The model class's `experiment` annotation.
    pub experiment: Experiment,
    /// The model's name where its class is declared.
    pub model_span: Option<Span>,
    pub pool: ExprPool,
    /// Add through [`Dae::add_variable`], which indexes the name.
    pub variables: Vec<Variable>,
    /// The variables by flat name, hashed where the names live (in `variables`), so no name is
    /// stored twice.
    names: IdTable,
    pub equations: Vec<Equation>,
    pub initial_equations: Vec<Equation>,
    pub assertions: Vec<Assertion>,
    /// Index reduction's state-dependent choices of dummy derivatives.
    pub state_choices: Vec<StateChoice>,
    /// `when` clauses and what they need.
    pub hybrid: hybrid::Hybrid,
}

impl Dae {
    pub fn var(&self, id: VarId) -> &Variable {
        &self.variables[id.0 as usize]
    }

    pub fn var_ids(&self) -> impl Iterator<Item = VarId> + '_ {
        (0..self.variables.len() as u32).map(VarId)
    }

    pub fn lookup(&self, name: &str) -> Option<VarId> {
        let variables = &self.variables;
        self.names
            .find(name_hash(name), |v| variables[v as usize].name == name)
            .map(VarId)
    }

    /// Adds `var` under its name, or returns the variable that already has that name.
    pub fn add_variable(&mut self, var: Variable) -> Result<VarId, VarId> {
        let id = VarId(self.variables.len() as u32);
        let variables = &self.variables;
        let hash = name_hash(&var.name);
        self.names
            .find_or_insert(hash, |v| variables[v as usize].name == var.name, id.0)
            .map_err(VarId)?;
        self.variables.push(var);
        Ok(id)
    }

    /// The model's discrete-time variables, in declaration order: Boolean, Integer and
    /// `discrete` variables, whether computed by equations or assigned in `when` clauses (not
    /// the flattener's own `pre`, `sample` and `initial()` stand-ins, nor held relations).
    pub fn discrete_variables(&self) -> impl Iterator<Item = VarId> + '_ {
        self.var_ids().filter(|&v| match self.var(v).kind {
            VarKind::Discrete => true,
            VarKind::Held => {
                self.hybrid.call_of(v).is_none() && !self.hybrid.switches.iter().any(|s| s.var == v)
            }
            _ => false,
        })
    }

    /// An initial equation `v = e` that gives a variable a `when` clause assigns its value at
    /// the start (`initial algorithm count := …;`), or `pre(v) = e` its value before the
    /// initial event: `(v, e)` (`v` the held `pre(v)` in the second case). Such a variable is known to the
    /// continuous part, so the equation is no residual of the initial system; the initial
    /// event assigns it.
    pub fn initial_assignment(&self, eq: &Equation) -> Option<(VarId, ExprId)> {
        let Node::Var(v) = self.pool.node(eq.lhs) else {
            return None;
        };
        let user_held = self.var(v).kind == VarKind::Held
            && matches!(
                self.hybrid.call_of(v),
                None | Some(hybrid::HeldCall::Pre(_))
            );
        user_held.then_some((v, eq.rhs))
    }

    pub fn count(&self, kind: VarKind) -> usize {
        self.variables.iter().filter(|v| v.kind == kind).count()
    }

    /// Parameters with neither a binding nor a start value, which are not computed by the
    /// initial equations (`fixed = false`): their value is the type's default, 0 (`false`).
    pub fn parameters_without_value(&self) -> impl Iterator<Item = VarId> + '_ {
        self.var_ids().filter(|&v| {
            let var = self.var(v);
            var.kind == VarKind::Parameter
                && var.ty != ScalarType::String
                && var.binding.is_none()
                && var.start.is_none()
                && var.fixed != Some(false)
                && !var.flow
        })
    }

    pub fn unknowns(&self) -> usize {
        self.variables
            .iter()
            .filter(|v| v.kind.is_unknown())
            .count()
    }

    /// The name as Modelica text: plain if it is a simple identifier, else quoted.
    pub fn printed_name(&self, id: VarId) -> String {
        quote_name(&self.var(id).name)
    }

    pub fn show(&self, id: ExprId) -> String {
        self.display(id).to_string()
    }

    /// `id` as Modelica text, written straight into whatever formats it.
    pub fn display(&self, id: ExprId) -> ShownExpr<'_> {
        self.display_as(id, Value::Real)
    }

    /// `id` as Modelica text of type `value` (see [`Value`]).
    pub fn display_as(&self, id: ExprId, value: Value) -> ShownExpr<'_> {
        ShownExpr {
            dae: self,
            id,
            value,
        }
    }
}

/// An expression of a [`Dae`] with its variables' printed names; see [`Dae::display`].
pub struct ShownExpr<'d> {
    dae: &'d Dae,
    id: ExprId,
    value: Value,
}

impl std::fmt::Display for ShownExpr<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let dae = self.dae;
        let names = |v: VarId, f: &mut std::fmt::Formatter<'_>| match dae.hybrid.call_of(v) {
            None => write_quoted_name(&dae.var(v).name, f),
            Some(hybrid::HeldCall::Pre(of)) => {
                f.write_str("pre(")?;
                write_quoted_name(&dae.var(of).name, f)?;
                f.write_str(")")
            }
            Some(hybrid::HeldCall::Sample(k)) => {
                let s = &dae.hybrid.samples[k];
                write!(
                    f,
                    "sample({}, {})",
                    dae.display(s.start),
                    dae.display(s.interval)
                )
            }
            Some(hybrid::HeldCall::Initial) => f.write_str("initial()"),
            Some(hybrid::HeldCall::Terminal) => f.write_str("terminal()"),
        };
        Display::typed(&self.dae.pool, self.id, &names, self.value).fmt(f)
    }
}

/// `x` stays `x`; `a.b[1]` becomes `'a.b[1]'`.
pub fn quote_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 2);
    let _ = write_quoted_name(name, &mut out);
    out
}

/// Writes `name` as [`quote_name`] spells it, without building a string first.
pub fn write_quoted_name(name: &str, out: &mut impl std::fmt::Write) -> std::fmt::Result {
    let bytes = name.as_bytes();
    let simple = bytes
        .first()
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
        && bytes
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'_');
    if simple && !crate::syntax::lexer::is_keyword(name) {
        return out.write_str(name);
    }
    out.write_char('\'')?;
    // Written in runs between the characters that need a backslash (rarely any).
    let mut rest = name;
    while let Some(k) = rest.bytes().position(|b| b == b'\\' || b == b'\'') {
        out.write_str(&rest[..k])?;
        out.write_char('\\')?;
        out.write_str(&rest[k..=k])?;
        rest = &rest[k + 1..];
    }
    out.write_str(rest)?;
    out.write_char('\'')
}

fn name_hash(name: &str) -> u32 {
    FxBuild::default().hash_one(name) as u32
}

/// `dae` without the variables `removed` (which nothing reads any more, the hybrid part
/// included), the others renumbered in order, in the hybrid part too.
pub fn without_variables(dae: Dae, removed: &std::collections::BTreeSet<VarId>) -> Dae {
    let mut renumbered = vec![None; dae.variables.len()];
    let mut out = Dae {
        model: dae.model.clone(),
        model_span: dae.model_span,
        pool: dae.pool.clone(),
        ..Dae::default()
    };
    for v in dae.var_ids().filter(|v| !removed.contains(v)) {
        let id = out
            .add_variable(dae.var(v).clone())
            .unwrap_or_else(|same| same);
        renumbered[v.0 as usize] = Some(id);
    }
    let mut done = crate::expr::Substituted::default();
    let pool = &mut out.pool;
    let mut map = |pool: &mut crate::expr::ExprPool, n: Node| {
        let new = |v: VarId| renumbered[v.0 as usize].unwrap_or(v);
        Some(match n {
            Node::Var(v) => pool.var(new(v)),
            Node::Der(v) => pool.der(new(v)),
            Node::Last(v) => pool.last(new(v)),
            _ => return None,
        })
    };
    let mut each = |e: &mut crate::expr::ExprId| *e = pool.substitute_with(*e, &mut map, &mut done);
    for var in &mut out.variables {
        for e in [&mut var.binding, &mut var.start, &mut var.nominal]
            .into_iter()
            .flatten()
        {
            each(e);
        }
    }
    let mut equations = dae.equations;
    let mut initial = dae.initial_equations;
    for eq in equations.iter_mut().chain(&mut initial) {
        each(&mut eq.lhs);
        each(&mut eq.rhs);
        each(&mut eq.residual);
        for t in &mut eq.terms {
            each(&mut t.expr);
        }
    }
    let mut assertions = dae.assertions;
    for a in &mut assertions {
        each(&mut a.condition);
    }
    let mut hybrid = dae.hybrid;
    hybrid.exprs_mut(&mut each);
    hybrid.vars_mut(&mut |v| {
        *v = renumbered[v.0 as usize].expect("no removed variable in the hybrid part")
    });
    out.equations = equations;
    out.initial_equations = initial;
    out.assertions = assertions;
    out.hybrid = hybrid;
    out
}
