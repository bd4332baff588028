//! Clocks of synchronous models (Modelica 16), lowered onto the hybrid DAE: a clock is a held
//! Boolean that ticks (a periodic clock is a `sample` of its start and interval, an event
//! clock the Boolean condition that makes it), and each clocked partition becomes one `when`
//! clause on its clock's ticks whose assignments are the partition's equations.
//!
//! While flattening, the clock operators leave marks: `sample(u, c)` and `sample(u)` a
//! variable the partition assigns `u` to at its ticks, `hold(u)` a continuous-side variable
//! assigned the same way, `previous(x)` the `pre` variable of `x`, `subSample`, `superSample`,
//! `shiftSample` and `backSample` of a clocked signal a variable of a partition of its own,
//! and of a clock a derived clock; `interval(u)` a variable assigned the interval. After
//! the connection equations, [`Flattener::clocked_partitions`] infers the partitions (16.7):
//! the variables the marks make clocked and, to a fixed point, those sharing an equation with
//! them; each partition's clock from its `sample(u, c)` and `when c` clauses, or derived from
//! another's (`when Clock()` takes its partition's); then the partition's equations, each
//! solved for the one variable it can give (an if-equation branch by branch), become the
//! actions of its `when` clause, in the order their data dependencies give. `sample(u)`
//! reads u's left limit at the tick: the `pre` of a Real equal to u. A partition whose clock
//! carries a solver method is a discretised continuous one ([`discretise`]).

mod counted;
mod discretise;
mod index;
mod loops;

use crate::expr::hash::{FxHashMap, FxHashSet};

use super::Flattener;
use super::expr::{Ctx, Val};
use super::tree::Tree;
use crate::dae::hybrid::{Action, Sample, WhenBranch, WhenClause};
use crate::dae::{Equation, EquationOrigin, ScalarType, VarKind, Variable};
use crate::diagnostics::Diagnostic;
use crate::expr::{ExprId, Node, VarId};
use crate::source::Span;
use crate::syntax::ast::{Arg, Expr};

/// What flattening noted of a model's clocks.
#[derive(Default)]
pub(super) struct Clocks {
    /// The variables of type `Clock` (declared, and the ticks of constructors).
    pub vars: FxHashSet<VarId>,
    /// Each clock a constructor or a clock operator made: its tick variable and definition.
    ticks: Vec<(VarId, Tick, Span)>,
    marks: Vec<Mark>,
    /// The clocks `Clock()` made: each partition they clock takes its clock from elsewhere.
    inferred: FxHashSet<VarId>,
    /// The if-equations whose conditions are known only at run time, branch by branch: a
    /// clocked partition solves each branch for its own variables.
    if_equations: Vec<IfEquation>,
    /// The `startInterval` of event clocks, by their index in `ticks`: `interval()` at their
    /// first tick (0 without).
    start_intervals: FxHashMap<usize, ExprId>,
    /// The clocks `Clock(c, solverMethod)` gave a solver method, with its span.
    solvers: Vec<(ExprId, discretise::SolverMethod, Span)>,
}

impl Clocks {
    /// An if-equation flattened into the equations of `residuals` (one per row), whose
    /// branches hold the rows as written (`lhs`, `rhs`), the last branch its `else`.
    pub(super) fn note_if_equation(
        &mut self,
        conditions: Vec<ExprId>,
        branches: Vec<Vec<(ExprId, ExprId, Span)>>,
        residuals: Vec<ExprId>,
    ) {
        self.if_equations.push(IfEquation {
            conditions,
            branches,
            residuals,
        });
    }
}

/// An if-equation as [`Clocks::note_if_equation`] keeps it.
struct IfEquation {
    conditions: Vec<ExprId>,
    branches: Vec<Vec<(ExprId, ExprId, Span)>>,
    residuals: Vec<ExprId>,
}

/// How a clock ticks.
#[derive(Clone, Copy)]
enum Tick {
    /// At `start + k·interval` (its `sample` pushed to the hybrid part already).
    Periodic { start: ExprId, interval: ExprId },
    /// Where the clock `base` ticks, sub-sampled (or super-sampled, shifted) by `op`.
    Derived { base: ExprId, op: ClockOp },
    /// When the Boolean condition becomes true.
    Event(ExprId),
    /// At some of the ticks of an event clock, as [`counted`] describes.
    Counted(counted::Counted),
}

/// The clock of one partition relative to another's.
#[derive(Clone, Copy)]
enum ClockOp {
    /// Every `n`-th tick.
    Sub(ExprId),
    /// `n` ticks for every one.
    Super(ExprId),
    /// Later by `k/resolution` of an interval (earlier when `back`); `ticks`, that shift
    /// when it is known at translation.
    Shift {
        k: ExprId,
        resolution: ExprId,
        back: bool,
        ticks: Option<f64>,
    },
    /// `subSample(u)` or `superSample(u)`: the factor inferred, the partition's clock coming
    /// from elsewhere (16.5.2).
    Inferred,
}

/// A clock operator's mark in the flat equations.
enum Mark {
    /// `var` reads as `sample(value, clock)`: the partition of `var` assigns it `value` (a
    /// continuous-time expression) at its ticks.
    Sample {
        var: VarId,
        value: ExprId,
        clock: Option<ExprId>,
        span: Span,
    },
    /// `var` reads as `hold(value)`: continuous-time, assigned by `value`'s partition.
    Hold { var: VarId, value: ExprId },
    /// `pre` reads as `previous(of)`.
    Previous { pre: VarId, of: VarId },
    /// `var` reads as `op(value)`: a partition of its own, whose clock is `op` of `value`'s.
    SubClock {
        var: VarId,
        value: ExprId,
        op: ClockOp,
        span: Span,
    },
    /// `var` reads as `interval(value)`, or as `interval()` of its own partition.
    Interval { var: VarId, value: Option<ExprId> },
    /// `var` reads as `firstTick(value)` (or `firstTick()`): true at the partition's first
    /// tick only, from the held `ticked` (false until that tick) and its `pre`.
    FirstTick {
        var: VarId,
        value: Option<ExprId>,
        ticked: VarId,
        pre_ticked: VarId,
    },
}

impl<'a> Flattener<'a> {
    /// The clock constructors and operators (`Clock`, `sample` of a signal, `hold`,
    /// `previous`, `subSample`, `superSample`, `shiftSample`, `backSample`, `interval`,
    /// `firstTick`); `None` for other names. `args` are all the arguments, `positional` those
    /// without a name.
    pub(super) fn clock_call(
        &mut self,
        name: &str,
        (positional, args): (&[&'a Expr], &'a [Arg]),
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Option<Result<Val, Diagnostic>> {
        const OPERATORS: [&str; 11] = [
            "Clock",
            "sample",
            "hold",
            "previous",
            "interval",
            "subSample",
            "superSample",
            "shiftSample",
            "backSample",
            "firstTick",
            "noClock",
        ];
        if ctx.mode == super::expr::Mode::Constant && OPERATORS.contains(&name) {
            // Nothing clocked is known at translation; probing must leave no marks behind
            // (an if-equation's condition is tried as a constant first).
            return (name != "sample"
                || positional.len() != 2
                || self.is_clock(positional[1], ctx))
            .then(|| {
                Err(
                    Diagnostic::error(format!("`{name}` is not known at translation"))
                        .at(span, "here"),
                )
            });
        }
        let result = match name {
            "Clock" => self.clock_constructor((positional, args), span, ctx),
            "sample" if positional.len() == 1 => {
                self.clocked_sample(positional[0], None, span, ctx)
            }
            "sample" if positional.len() == 2 && self.is_clock(positional[1], ctx) => {
                self.clocked_sample(positional[0], Some(positional[1]), span, ctx)
            }
            "hold" => self
                .one_argument(name, positional, span)
                .and_then(|u| self.hold(u, span, ctx)),
            "previous" => self
                .one_argument(name, positional, span)
                .and_then(|u| self.previous(u, ctx)),
            "interval" => match positional {
                [] => Ok(self.interval_of(None, span)),
                [u] => self
                    .scalar_argument(u, ctx)
                    .map(|value| self.interval_of(Some(value), span)),
                _ => {
                    Err(Diagnostic::error("`interval` takes at most one argument").at(span, "here"))
                }
            },
            "subSample" | "superSample" | "shiftSample" | "backSample" => {
                self.sub_clock(name, positional, span, ctx)
            }
            "firstTick" => {
                match positional {
                    [] => Ok(self.first_tick(None, span)),
                    [u] => self
                        .scalar_argument(u, ctx)
                        .map(|value| self.first_tick(Some(value), span)),
                    _ => Err(Diagnostic::error("`firstTick` takes at most one argument")
                        .at(span, "here")),
                }
            }
            "noClock" => self
                .one_argument(name, positional, span)
                .and_then(|u| self.no_clock(u, span, ctx)),
            _ => return None,
        };
        Some(result)
    }

    /// The variables of a component of type `Clock`.
    pub(super) fn note_clocks(&mut self, vars: &[VarId]) {
        self.clocks.vars.extend(vars.iter().copied());
    }

    fn one_argument(
        &self,
        name: &str,
        positional: &[&'a Expr],
        span: Span,
    ) -> Result<&'a Expr, Diagnostic> {
        match positional {
            [u] => Ok(u),
            _ => Err(Diagnostic::error(format!("`{name}` takes one argument")).at(span, "here")),
        }
    }

    /// Whether `e` is a clock: a constructor, a clock operator of a clock, or a variable of
    /// type `Clock`.
    pub(super) fn is_clock(&mut self, e: &'a Expr, ctx: &Ctx<'_>) -> bool {
        use crate::syntax::ast::ExprKind;
        match &e.kind {
            ExprKind::Call { func, args } => {
                let name = func.dotted();
                name == "Clock"
                    || matches!(
                        name.as_str(),
                        "subSample" | "superSample" | "shiftSample" | "backSample"
                    ) && args.first().is_some_and(|a| self.is_clock(&a.value, ctx))
            }
            ExprKind::Ref(_) => match self.flatten_expr(e, ctx) {
                Ok(Tree::Leaf(x)) => match self.dae.pool.node(x) {
                    Node::Var(v) => self.clocks.vars.contains(&v),
                    _ => false,
                },
                _ => false,
            },
            _ => false,
        }
    }

    /// A scalar argument of a clock operator, flattened.
    fn scalar_argument(&mut self, e: &'a Expr, ctx: &Ctx<'_>) -> Result<ExprId, Diagnostic> {
        match self.flatten_expr(e, ctx)? {
            Tree::Leaf(x) => Ok(x),
            Tree::Node(_) => {
                Err(Diagnostic::error("a clock operator takes a scalar here")
                    .at(e.span, "an array"))
            }
        }
    }

    /// A parameter argument of a clock constructor or operator, flattened.
    fn parameter_argument(&mut self, e: &'a Expr, ctx: &Ctx<'_>) -> Result<ExprId, Diagnostic> {
        let x = self.scalar_argument(e, ctx)?;
        if self.reads_parameters_only(x) {
            Ok(x)
        } else {
            Err(
                Diagnostic::error("this argument of a clock must be a parameter expression")
                    .at(e.span, "not a parameter expression"),
            )
        }
    }

    /// `Clock(interval)`, `Clock(intervalCounter, resolution)`, the event clock
    /// `Clock(condition)` and `Clock(c, solverMethod)`.
    fn clock_constructor(
        &mut self,
        (positional, args): (&[&'a Expr], &'a [Arg]),
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<Val, Diagnostic> {
        match positional {
            [] => {
                let name = format!("inferredClock({})", self.clocks.inferred.len() + 1);
                let var = Variable::derived(name, VarKind::Held, ScalarType::Boolean, span);
                let clock = (self.dae.add_variable(var)).unwrap_or_else(|existing| existing);
                self.clocks.vars.insert(clock);
                self.clocks.inferred.insert(clock);
                Ok(Tree::Leaf(self.dae.pool.var(clock)))
            }
            [c] if self.is_clock(c, ctx) => self.solver_clock(c, args, span, ctx),
            [condition] if self.static_type(condition, ctx) == Some(ScalarType::Boolean) => {
                let condition = self.scalar_argument(condition, ctx)?;
                if let Some(a) = named_argument(args, "startInterval") {
                    let value = self.parameter_argument(&a.value, ctx)?;
                    let k = self.clocks.ticks.len();
                    self.clocks.start_intervals.insert(k, value);
                }
                let tick = self.tick_variable(span);
                // Its partitions' `when` clauses fire as the condition becomes true.
                self.clocks.ticks.push((tick, Tick::Event(condition), span));
                Ok(Tree::Leaf(self.dae.pool.var(tick)))
            }
            [interval] => {
                let interval = self.parameter_argument(interval, ctx)?;
                Ok(Tree::Leaf(self.periodic_clock(interval, span)))
            }
            [counter, resolution] => {
                let counter = self.parameter_argument(counter, ctx)?;
                let resolution = self.parameter_argument(resolution, ctx)?;
                let interval = self.dae.pool.div(counter, resolution);
                Ok(Tree::Leaf(self.periodic_clock(interval, span)))
            }
            _ => Err(Diagnostic::error("`Clock` takes at most two arguments").at(span, "here")),
        }
    }

    /// A periodic clock ticking from time 0 every `interval`: its tick variable.
    fn periodic_clock(&mut self, interval: ExprId, span: Span) -> ExprId {
        let start = self.dae.pool.constant(0.0);
        let tick = self.new_periodic_clock((start, interval), span);
        self.dae.pool.var(tick)
    }

    /// A new clock ticking at `start + k·interval`: its tick, a `sample` of the hybrid part.
    fn new_periodic_clock(&mut self, (start, interval): (ExprId, ExprId), span: Span) -> VarId {
        let tick = self.tick_variable(span);
        self.make_periodic(tick, (start, interval), span);
        self.clocks
            .ticks
            .push((tick, Tick::Periodic { start, interval }, span));
        tick
    }

    /// The tick `var` made to tick at `start + k·interval`.
    fn make_periodic(&mut self, var: VarId, (start, interval): (ExprId, ExprId), span: Span) {
        self.dae.hybrid.samples.push(Sample {
            var,
            start,
            interval,
            span,
        });
    }

    /// A new clock's tick: a held Boolean, itself a clock.
    fn tick_variable(&mut self, span: Span) -> VarId {
        let name = format!("clock({})", self.clocks.ticks.len() + 1);
        let var = Variable::derived(name, VarKind::Held, ScalarType::Boolean, span);
        let tick = self
            .dae
            .add_variable(var)
            .unwrap_or_else(|existing| existing);
        self.clocks.vars.insert(tick);
        tick
    }

    /// A variable a clock operator's mark reads as, of `ty`.
    fn mark_variable(&mut self, what: &str, ty: ScalarType, span: Span) -> VarId {
        let name = format!("{what}#{}", self.clocks.marks.len() + 1);
        self.algebraic_variable(name, ty, span)
    }

    /// A variable the lowering of the partitions needs, of `ty`, named apart from the marks'
    /// (no marks are made then, so their count cannot tell two apart).
    fn lowering_variable(&mut self, what: &str, ty: ScalarType, span: Span) -> VarId {
        let name = format!("{what}#v{}", self.dae.variables.len() + 1);
        self.algebraic_variable(name, ty, span)
    }

    /// The algebraic variable `name` of `ty`, new unless it exists.
    fn algebraic_variable(&mut self, name: String, ty: ScalarType, span: Span) -> VarId {
        let var = Variable::derived(name, VarKind::Algebraic, ty, span);
        self.dae
            .add_variable(var)
            .unwrap_or_else(|existing| existing)
    }

    /// `sample(u, clock)`, or `sample(u)` with the clock inferred.
    fn clocked_sample(
        &mut self,
        u: &'a Expr,
        clock: Option<&'a Expr>,
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<Val, Diagnostic> {
        let ty = self.static_type(u, ctx).unwrap_or(ScalarType::Real);
        let clock = clock.map(|c| self.scalar_argument(c, ctx)).transpose()?;
        let values = self.flatten_expr(u, ctx)?;
        values.map(&mut |&value| {
            // An element's own type where it is a variable (an array's is not known above).
            let ty = match self.dae.pool.node(value) {
                Node::Var(v) => self.dae.var(v).ty,
                _ => ty,
            };
            let value = self.left_limit(value, ty, span);
            let var = self.mark_variable("sample", ty, span);
            self.clocks.marks.push(Mark::Sample {
                var,
                value,
                clock,
                span,
            });
            Ok(self.dae.pool.var(var))
        })
    }

    /// What `sample` takes of `value` at a tick: its left limit there, the `pre` of a
    /// variable equal to it (Modelica 16.5.1: the value just before the tick's event, so a
    /// step at a tick is sampled on the next one); at the start, its value before the
    /// clocked partitions first run.
    fn left_limit(&mut self, value: ExprId, ty: ScalarType, span: Span) -> ExprId {
        if self.reads_parameters_only(value) {
            return value;
        }
        let of = match self.dae.pool.node(value) {
            Node::Var(v) if ty == ScalarType::Real => v,
            // A Boolean or Integer through a Real: the `pre` of a Real is its left limit at
            // every event, the initial one included, where a discrete `pre` keeps its start.
            _ => {
                let v = self.mark_variable("sampled", ScalarType::Real, span);
                let place = (span, self.dae.var(v).component.clone());
                let pool = &mut self.dae.pool;
                let eq = Equation::assignment(pool, v, value, EquationOrigin::Model, place);
                self.dae.equations.push(eq);
                v
            }
        };
        let pre = self.pre_variable(of);
        self.dae.pool.var(pre)
    }

    fn hold(&mut self, u: &'a Expr, span: Span, ctx: &Ctx<'_>) -> Result<Val, Diagnostic> {
        let ty = self.static_type(u, ctx).unwrap_or(ScalarType::Real);
        let values = self.flatten_expr(u, ctx)?;
        values.map(&mut |&value| {
            let var = self.mark_variable("hold", ty, span);
            // Before the first tick, hold gives its argument's start value.
            self.dae.variables[var.0 as usize].start = self.start_of(value);
            self.clocks.marks.push(Mark::Hold { var, value });
            Ok(self.dae.pool.var(var))
        })
    }

    /// The start value of `e` when it is a variable with one.
    fn start_of(&self, e: ExprId) -> Option<ExprId> {
        match self.dae.pool.node(e) {
            Node::Var(v) => self.dae.var(v).start,
            _ => None,
        }
    }

    fn previous(&mut self, u: &'a Expr, ctx: &Ctx<'_>) -> Result<Val, Diagnostic> {
        let values = self.flatten_expr(u, ctx)?;
        values.map(&mut |&x| {
            let Node::Var(of) = self.dae.pool.node(x) else {
                return Err(
                    Diagnostic::error("`previous` takes a variable").at(u.span, "not a variable")
                );
            };
            let pre = self.pre_variable(of);
            self.clocks.marks.push(Mark::Previous { pre, of });
            Ok(self.dae.pool.var(pre))
        })
    }

    /// `firstTick(value)`, or `firstTick()` of the partition it is in.
    fn first_tick(&mut self, value: Option<ExprId>, span: Span) -> Val {
        let var = self.mark_variable("firstTick", ScalarType::Boolean, span);
        let ticked = self.mark_variable("ticked", ScalarType::Boolean, span);
        self.dae.variables[ticked.0 as usize].start = Some(self.dae.pool.constant(0.0));
        let pre_ticked = self.pre_variable(ticked);
        self.clocks.marks.push(Mark::FirstTick {
            var,
            value,
            ticked,
            pre_ticked,
        });
        Tree::Leaf(self.dae.pool.var(var))
    }

    /// `interval(value)`, or `interval()` of the partition it is in.
    fn interval_of(&mut self, value: Option<ExprId>, span: Span) -> Val {
        let var = self.mark_variable("interval", ScalarType::Real, span);
        self.clocks.marks.push(Mark::Interval { var, value });
        Tree::Leaf(self.dae.pool.var(var))
    }

    /// `noClock(u)`: a signal whose clock is always inferred, of the same base clock as u's,
    /// with u's value from u's last tick (16.5.2), as `superSample(u)` without a factor
    /// gives it.
    fn no_clock(&mut self, u: &'a Expr, span: Span, ctx: &Ctx<'_>) -> Result<Val, Diagnostic> {
        if self.is_clock(u, ctx) {
            return Err(
                Diagnostic::error("`noClock` takes a clocked signal, not a clock").at(span, "here"),
            );
        }
        self.clocked_signal("noClock", u, ClockOp::Inferred, span, ctx)
    }

    /// `subSample(u, factor)`, `superSample(u, factor)`, `shiftSample(u, k, resolution)` and
    /// `backSample(u, k, resolution)`, of a clock or of a clocked signal.
    fn sub_clock(
        &mut self,
        name: &str,
        positional: &[&'a Expr],
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<Val, Diagnostic> {
        let (u, rest) = positional.split_first().ok_or_else(|| {
            Diagnostic::error(format!("`{name}` takes a signal or a clock first")).at(span, "here")
        })?;
        let mut parameters = Vec::with_capacity(rest.len());
        for e in rest {
            parameters.push(self.parameter_argument(e, ctx)?);
        }
        let known: Vec<Option<f64>> = rest.iter().map(|e| self.known_number(e, ctx)).collect();
        let ticks = match known.as_slice() {
            [Some(k)] => Some(*k),
            [Some(k), Some(resolution)] => Some(k / resolution),
            _ => None,
        };
        let one = self.dae.pool.constant(1.0);
        let op = match (name, parameters.as_slice()) {
            ("subSample", [n]) => ClockOp::Sub(*n),
            ("superSample", [n]) => ClockOp::Super(*n),
            ("subSample" | "superSample", []) => ClockOp::Inferred,
            ("shiftSample" | "backSample", [k]) => ClockOp::Shift {
                k: *k,
                resolution: one,
                back: name == "backSample",
                ticks,
            },
            ("shiftSample" | "backSample", [k, resolution]) => ClockOp::Shift {
                k: *k,
                resolution: *resolution,
                back: name == "backSample",
                ticks,
            },
            _ => {
                return Err(Diagnostic::error(format!(
                    "`{name}` takes a signal or clock and its factor (or shift and resolution)"
                ))
                .at(span, "here"));
            }
        };
        if self.is_clock(u, ctx) {
            if matches!(op, ClockOp::Inferred) {
                return Err(Diagnostic::error(format!(
                    "`{name}` of a clock takes its factor (only a clocked signal's is inferred)"
                ))
                .at(span, "here"));
            }
            let base = self.scalar_argument(u, ctx)?;
            let tick = self.tick_variable(span);
            self.clocks
                .ticks
                .push((tick, Tick::Derived { base, op }, span));
            return Ok(Tree::Leaf(self.dae.pool.var(tick)));
        }
        self.clocked_signal(name, u, op, span, ctx)
    }

    /// `var = op(u)` for each element of the clocked signal `u`: a partition of its own.
    fn clocked_signal(
        &mut self,
        name: &str,
        u: &'a Expr,
        op: ClockOp,
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<Val, Diagnostic> {
        let ty = self.static_type(u, ctx).unwrap_or(ScalarType::Real);
        let values = self.flatten_expr(u, ctx)?;
        values.map(&mut |&value| {
            let var = self.mark_variable(name, ty, span);
            self.clocks.marks.push(Mark::SubClock {
                var,
                value,
                op,
                span,
            });
            Ok(self.dae.pool.var(var))
        })
    }
}

/// The argument of a call named `key` (`Clock(c, solverMethod = "ImplicitEuler")`).
fn named_argument<'a>(args: &'a [Arg], key: &str) -> Option<&'a Arg> {
    args.iter()
        .find(|a| a.name.as_ref().is_some_and(|n| n.name == key))
}

/// Union–find over variables, by index.
struct Sets(Vec<u32>);

impl Sets {
    fn new(n: usize) -> Sets {
        Sets((0..n as u32).collect())
    }

    /// The representative of `v`'s set; a variable made after the sets is alone in its own.
    fn find(&mut self, v: VarId) -> u32 {
        let mut x = v.0;
        if x as usize >= self.0.len() {
            self.0.extend(self.0.len() as u32..=x);
        }
        while self.0[x as usize] != x {
            let up = self.0[self.0[x as usize] as usize];
            self.0[x as usize] = up;
            x = up;
        }
        x
    }

    fn union(&mut self, a: VarId, b: VarId) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            self.0[ra.max(rb) as usize] = ra.min(rb);
        }
    }
}

/// The clocked partitions by their sets' representatives, in order.
type Partitions = std::collections::BTreeMap<u32, Partition>;

/// A clocked partition as it is lowered: its clock's tick and the actions at its ticks.
#[derive(Default)]
struct Partition {
    tick: Option<usize>,
    /// Its actions, each with the span of what it came from.
    actions: Vec<(Action, Span)>,
    span: Option<Span>,
}

/// The partitions as their actions are gathered, and the variables assigned so far.
struct Assigning<'p> {
    assigned: Vec<bool>,
    partitions: &'p mut Partitions,
}

impl Assigning<'_> {
    /// `action` into the partition of `key`.
    fn add(&mut self, sets: &mut Sets, key: VarId, action: Action, span: Span) {
        self.mark(&action);
        let part = self.partitions.entry(sets.find(key)).or_default();
        part.span.get_or_insert(span);
        part.actions.push((action, span));
    }

    /// What `action` assigns marked as assigned.
    fn mark(&mut self, action: &Action) {
        for var in Action::assigned(std::slice::from_ref(action)) {
            if var.0 as usize >= self.assigned.len() {
                self.assigned.resize(var.0 as usize + 1, false);
            }
            self.assigned[var.0 as usize] = true;
        }
    }
}

impl Flattener<'_> {
    /// Infers the clocked partitions and lowers each to a `when` clause on its clock (see the
    /// module's documentation). Run after the connection equations, before the states and
    /// held variables are marked.
    pub(super) fn clocked_partitions(&mut self) {
        if self.clocks.ticks.is_empty() && self.clocks.marks.is_empty() {
            return;
        }
        if let Err(d) = self.lower_clocks() {
            self.diags.push(d);
        }
    }

    fn lower_clocks(&mut self) -> Result<(), Diagnostic> {
        let n = self.dae.variables.len();
        let mut clock_sets = Sets::new(n);
        let clock_equation: Vec<bool> = (self.dae.equations.iter())
            .map(|eq| {
                let sides = [eq.lhs, eq.rhs].map(|e| self.clock_var(e));
                if let [Some(a), Some(b)] = sides {
                    clock_sets.union(a, b);
                }
                sides.iter().any(Option::is_some)
            })
            .collect();
        self.derive_ticks(&mut clock_sets)?;
        let tick_of_set = self.tick_of_set(&mut clock_sets)?;
        let mut resolve = |f: &Self, clock: ExprId| -> Option<usize> {
            let v = f.clock_var(clock)?;
            tick_of_set.get(&clock_sets.find(v)).copied()
        };

        // Which variables are clocked, and which share a partition.
        let mut sets = Sets::new(n);
        let mut clocked = vec![false; n];
        let mut constraints: Vec<(VarId, ExprId, Span)> = Vec::new();
        let holds: FxHashSet<VarId> = (self.clocks.marks.iter())
            .filter_map(|m| match m {
                Mark::Hold { var, .. } => Some(*var),
                _ => None,
            })
            .collect();
        for mark in &self.clocks.marks {
            match *mark {
                Mark::Sample {
                    var, clock, span, ..
                } => {
                    clocked[var.0 as usize] = true;
                    if let Some(c) = clock {
                        constraints.push((var, c, span));
                    }
                }
                Mark::Hold { value, .. } | Mark::SubClock { value, .. } => {
                    let reads = self.partition_reads(value, &holds);
                    self.join(&mut sets, &mut clocked, &reads);
                    if let Mark::SubClock { var, .. } = *mark {
                        clocked[var.0 as usize] = true;
                    }
                }
                Mark::Previous { pre, of } => self.join(&mut sets, &mut clocked, &[pre, of]),
                Mark::Interval { var, value } => {
                    let mut reads =
                        value.map_or_else(Vec::new, |v| self.partition_reads(v, &holds));
                    reads.push(var);
                    self.join(&mut sets, &mut clocked, &reads);
                }
                Mark::FirstTick {
                    var, value, ticked, ..
                } => {
                    let mut reads =
                        value.map_or_else(Vec::new, |v| self.partition_reads(v, &holds));
                    reads.extend([var, ticked]);
                    self.join(&mut sets, &mut clocked, &reads);
                }
            }
        }
        let clock_whens = self.clock_whens();
        for &w in &clock_whens {
            let clause = &self.dae.hybrid.whens[w];
            let clock = clause.branches[0].conditions[0];
            let mut vars = Vec::new();
            Action::walk(&clause.branches[0].actions, &mut |a| {
                if let Action::Assign { var, value, .. } = a {
                    vars.push(*var);
                    vars.extend(self.partition_reads(*value, &holds));
                }
            });
            if let Some(&first) = vars.first() {
                constraints.push((first, clock, clause.span));
            }
            self.join(&mut sets, &mut clocked, &vars);
        }
        let mut in_partition = self.spread(&mut sets, &mut clocked, &clock_equation, &holds);

        // Each partition's clock.
        let mut partitions = Partitions::new();
        for &(var, clock, span) in &constraints {
            if self
                .clock_var(clock)
                .is_some_and(|c| self.clocks.inferred.contains(&c))
            {
                continue;
            }
            let Some(tick) = resolve(self, clock) else {
                return Err(Diagnostic::error(
                    "this clock is never defined by a clock constructor",
                )
                .at(span, "its clock"));
            };
            let part = partitions.entry(sets.find(var)).or_default();
            match part.tick {
                Some(other) if other != tick => {
                    return Err(Diagnostic::error(
                        "a clocked partition is given two different clocks (Modelica 16.7.5)",
                    )
                    .at(span, "another clock")
                    .with_secondary(self.clocks.ticks[other].2, "the first"));
                }
                _ => part.tick = Some(tick),
            }
            part.span.get_or_insert(span);
        }
        self.sub_clock_partitions(&mut sets, &mut partitions)?;
        let mut methods = FxHashMap::default();
        for &(clock, method, span) in &self.clocks.solvers {
            let Some(tick) = resolve(self, clock) else {
                continue;
            };
            if methods
                .insert(tick, method)
                .is_some_and(|other| other != method)
            {
                return Err(Diagnostic::error(
                    "a clock is given two different solver methods (Modelica 16.8.4)",
                )
                .at(span, "another solver method"));
            }
        }
        self.discretise(&mut sets, &partitions, &mut in_partition, &methods)?;
        self.partition_actions(&mut sets, &mut partitions, &in_partition, &holds)?;
        self.replace_with_clauses(partitions, &in_partition, &clock_whens)
    }

    /// The clock variable `e` is, if it is one.
    fn clock_var(&self, e: ExprId) -> Option<VarId> {
        match self.dae.pool.node(e) {
            Node::Var(v) if self.clocks.vars.contains(&v) => Some(v),
            _ => None,
        }
    }

    /// Each clock set's tick (a set of clock variables equal through equations has one).
    fn tick_of_set(&self, clock_sets: &mut Sets) -> Result<FxHashMap<u32, usize>, Diagnostic> {
        let mut tick_of_set: FxHashMap<u32, usize> = FxHashMap::default();
        for (k, &(tick, _, span)) in self.clocks.ticks.iter().enumerate() {
            if let Some(&other) = tick_of_set.get(&clock_sets.find(tick)) {
                let first = self.clocks.ticks[other].2;
                return Err(Diagnostic::error("two clocks are made equal")
                    .at(span, "this clock")
                    .with_secondary(first, "and this one"));
            }
            tick_of_set.insert(clock_sets.find(tick), k);
        }
        Ok(tick_of_set)
    }

    /// The clocks derived from others by `subSample`, … of a clock, made periodic from their
    /// base's start and interval.
    fn derive_ticks(&mut self, clock_sets: &mut Sets) -> Result<(), Diagnostic> {
        loop {
            let tick_of_set = self.tick_of_set(clock_sets)?;
            let mut progress = false;
            let mut pending = None;
            for k in 0..self.clocks.ticks.len() {
                let (tick, Tick::Derived { base, op }, span) = self.clocks.ticks[k] else {
                    continue;
                };
                let base_tick = self
                    .clock_var(base)
                    .and_then(|v| tick_of_set.get(&clock_sets.find(v)).copied());
                match base_tick.map(|b| self.clocks.ticks[b].1) {
                    Some(Tick::Periodic { start, interval }) => {
                        let (start, interval) = self.derived_timing((start, interval), op);
                        self.make_periodic(tick, (start, interval), span);
                        self.clocks.ticks[k].1 = Tick::Periodic { start, interval };
                        progress = true;
                    }
                    Some(Tick::Event(condition)) => {
                        self.clocks.ticks[k].1 = self.counted_tick(condition, op, span)?;
                        progress = true;
                    }
                    Some(Tick::Counted(_)) => {
                        return Err(counted::of_counted(span));
                    }
                    Some(Tick::Derived { .. }) => pending = pending.or(Some(span)),
                    None => {
                        return Err(Diagnostic::error(
                            "the clock this derives from is never defined",
                        )
                        .at(span, "here"));
                    }
                }
            }
            match pending {
                None => return Ok(()),
                Some(span) if !progress => {
                    return Err(Diagnostic::error(
                        "these clocks derive from each other in a cycle",
                    )
                    .at(span, "here"));
                }
                Some(_) => {}
            }
        }
    }

    /// The clock whose `op` is the periodic clock `derived` (`superSample(u, n)` ticking
    /// with `derived` makes u tick every n-th of its ticks): the index of a new tick.
    fn inverse_clock(
        &mut self,
        derived: usize,
        op: ClockOp,
        span: Span,
    ) -> Result<usize, Diagnostic> {
        let inverse = match op {
            ClockOp::Sub(n) => ClockOp::Super(n),
            ClockOp::Super(n) => ClockOp::Sub(n),
            ClockOp::Shift {
                k,
                resolution,
                back,
                ticks,
            } => ClockOp::Shift {
                k,
                resolution,
                back: !back,
                ticks,
            },
            ClockOp::Inferred => {
                return Err(Diagnostic::error(
                    "the clock of this signal cannot be inferred from the partition it feeds: give its factor",
                )
                .at(span, "here"));
            }
        };
        let Tick::Periodic { start, interval } = self.clocks.ticks[derived].1 else {
            return Err(Diagnostic::error(
                "the clock of this signal would come from an event clock's sub-clock, which is not supported",
            )
            .at(span, "here"));
        };
        let timing = self.derived_timing((start, interval), inverse);
        self.new_periodic_clock(timing, span);
        Ok(self.clocks.ticks.len() - 1)
    }

    /// The start and interval of the clock `op` makes of a periodic one.
    fn derived_timing(
        &mut self,
        (start, interval): (ExprId, ExprId),
        op: ClockOp,
    ) -> (ExprId, ExprId) {
        let pool = &mut self.dae.pool;
        match op {
            ClockOp::Sub(n) => (start, pool.mul(interval, n)),
            // Never derived: its partition's clock is another's.
            ClockOp::Inferred => (start, interval),
            ClockOp::Super(n) => (start, pool.div(interval, n)),
            ClockOp::Shift {
                k,
                resolution,
                back,
                ..
            } => {
                let fraction = pool.div(k, resolution);
                let shift = pool.mul(fraction, interval);
                let start = if back {
                    pool.sub(start, shift)
                } else {
                    pool.add(start, shift)
                };
                (start, interval)
            }
        }
    }

    /// The variables of `e` a partition shares: not parameters, constants, clocks or the
    /// continuous-time outputs of `hold`.
    fn partition_reads(&self, e: ExprId, holds: &FxHashSet<VarId>) -> Vec<VarId> {
        let mut vars = Vec::new();
        self.dae.pool.visit_leaves(e, |node| {
            if let Node::Var(v) = node
                && !holds.contains(&v)
                && !self.clocks.vars.contains(&v)
                && !matches!(self.dae.var(v).kind, VarKind::Parameter | VarKind::Constant)
                && !vars.contains(&v)
            {
                vars.push(v);
            }
        });
        vars
    }

    /// Puts `vars` in one partition, clocked.
    fn join(&self, sets: &mut Sets, clocked: &mut [bool], vars: &[VarId]) {
        for &v in vars {
            clocked[v.0 as usize] = true;
            sets.union(vars[0], v);
        }
    }

    /// The `when` clauses on a clock (`when c then`): one branch, one condition, a clock.
    fn clock_whens(&self) -> Vec<usize> {
        (self.dae.hybrid.whens.iter().enumerate())
            .filter(|(_, w)| {
                w.branches.len() == 1
                    && w.branches[0].conditions.len() == 1
                    && self.clock_var(w.branches[0].conditions[0]).is_some()
            })
            .map(|(k, _)| k)
            .collect()
    }

    /// The equations that read a clocked variable, to a fixed point: each is in its
    /// partition, and so are the variables it reads.
    fn spread(
        &self,
        sets: &mut Sets,
        clocked: &mut [bool],
        clock_equation: &[bool],
        holds: &FxHashSet<VarId>,
    ) -> Vec<bool> {
        let reads: Vec<Vec<VarId>> = (self.dae.equations.iter().zip(clock_equation))
            .map(|(eq, &clock)| {
                if clock {
                    return Vec::new();
                }
                let mut vars = self.partition_reads(eq.lhs, holds);
                for v in self.partition_reads(eq.rhs, holds) {
                    if !vars.contains(&v) {
                        vars.push(v);
                    }
                }
                vars
            })
            .collect();
        let mut equations_of: Vec<Vec<usize>> = vec![Vec::new(); clocked.len()];
        for (k, vars) in reads.iter().enumerate() {
            for v in vars {
                equations_of[v.0 as usize].push(k);
            }
        }
        let mut in_partition = vec![false; reads.len()];
        let mut work: Vec<usize> = (0..clocked.len()).filter(|&v| clocked[v]).collect();
        while let Some(v) = work.pop() {
            for &k in &equations_of[v] {
                if in_partition[k] {
                    continue;
                }
                in_partition[k] = true;
                for &u in &reads[k] {
                    sets.union(reads[k][0], u);
                    if !clocked[u.0 as usize] {
                        clocked[u.0 as usize] = true;
                        work.push(u.0 as usize);
                    }
                }
            }
        }
        in_partition
    }

    /// The partitions of sub-clocked signals (`subSample(u, n)` of a clocked `u`), each
    /// clocked by a clock derived from its argument's partition's, to a fixed point.
    fn sub_clock_partitions(
        &mut self,
        sets: &mut Sets,
        partitions: &mut Partitions,
    ) -> Result<(), Diagnostic> {
        let subs: Vec<(VarId, ExprId, ClockOp, Span)> = (self.clocks.marks.iter())
            .filter_map(|m| match *m {
                Mark::SubClock {
                    var,
                    value,
                    op,
                    span,
                } => Some((var, value, op, span)),
                _ => None,
            })
            .collect();
        let holds = FxHashSet::default();
        let mut done = vec![false; subs.len()];
        loop {
            let mut progress = false;
            for (k, &(var, value, op, span)) in subs.iter().enumerate() {
                if done[k] {
                    continue;
                }
                if matches!(op, ClockOp::Inferred) {
                    // Done once another gives its partition a clock.
                    if partitions
                        .get(&sets.find(var))
                        .is_some_and(|p| p.tick.is_some())
                    {
                        done[k] = true;
                        progress = true;
                    }
                    continue;
                }
                let Some(&from) = self.partition_reads(value, &holds).first() else {
                    return Err(Diagnostic::error("this sub-sampled signal is not clocked")
                        .at(span, "not clocked"));
                };
                let base = partitions.get(&sets.find(from)).and_then(|p| p.tick);
                let Some(base) = base else {
                    // The clock may come the other way: from the partition `op` makes.
                    let derived = partitions.get(&sets.find(var)).and_then(|p| p.tick);
                    if let Some(derived) = derived {
                        let tick = self.inverse_clock(derived, op, span)?;
                        let part = partitions.entry(sets.find(from)).or_default();
                        part.tick = Some(tick);
                        part.span.get_or_insert(span);
                        done[k] = true;
                        progress = true;
                    }
                    continue;
                };
                match self.clocks.ticks[base].1 {
                    Tick::Periodic { start, interval } => {
                        let timing = self.derived_timing((start, interval), op);
                        self.new_periodic_clock(timing, span);
                    }
                    Tick::Event(condition) => {
                        let tick = self.counted_tick(condition, op, span)?;
                        let var = self.tick_variable(span);
                        self.clocks.ticks.push((var, tick, span));
                    }
                    Tick::Counted(_) => return Err(counted::of_counted(span)),
                    Tick::Derived { .. } => continue,
                }
                let part = partitions.entry(sets.find(var)).or_default();
                if part.tick.is_some() {
                    return Err(Diagnostic::error(
                        "a sub-sampled partition is given a clock of its own as well (Modelica 16.7.5)",
                    )
                    .at(span, "here"));
                }
                part.tick = Some(self.clocks.ticks.len() - 1);
                part.span.get_or_insert(span);
                done[k] = true;
                progress = true;
            }
            if !progress {
                return match subs.iter().zip(&done).find(|(_, d)| !**d) {
                    None => Ok(()),
                    Some((&(_, _, _, span), _)) => Err(Diagnostic::error(
                        "the clock of this sub-sampled signal's partition cannot be inferred",
                    )
                    .at(span, "here")),
                };
            }
        }
    }

    /// Each partition's actions: the marks' assignments, the `when c` clauses' actions, and
    /// its equations, each solved for the one variable of a side that nothing else assigns.
    fn partition_actions(
        &mut self,
        sets: &mut Sets,
        partitions: &mut Partitions,
        in_partition: &[bool],
        holds: &FxHashSet<VarId>,
    ) -> Result<(), Diagnostic> {
        let mut to = Assigning {
            assigned: vec![false; self.dae.variables.len()],
            partitions,
        };
        let marks = std::mem::take(&mut self.clocks.marks);
        for mark in &marks {
            let (key, var, value, span) = match *mark {
                Mark::Sample {
                    var, value, span, ..
                } => (var, var, value, span),
                Mark::SubClock {
                    var, value, span, ..
                } => (var, var, value, span),
                Mark::Hold { var, value } => {
                    let span = self.dae.var(var).span;
                    let Some(&key) = self.partition_reads(value, holds).first() else {
                        return Err(Diagnostic::error("`hold` of a signal that is not clocked")
                            .at(span, "here"));
                    };
                    (key, var, value, span)
                }
                Mark::Interval { var, .. } => {
                    let span = self.dae.var(var).span;
                    let tick = to.partitions.get(&sets.find(var)).and_then(|p| p.tick);
                    match tick.map(|t| (t, self.clocks.ticks[t].1)) {
                        Some((_, Tick::Periodic { interval, .. })) => (var, var, interval, span),
                        Some((t, Tick::Event(_) | Tick::Counted(_))) => {
                            for action in self.event_interval(var, t, span) {
                                to.add(sets, var, action, span);
                            }
                            continue;
                        }
                        _ => {
                            return Err(Diagnostic::error(
                                "`interval` of a signal whose clock is not known",
                            )
                            .at(span, "here"));
                        }
                    }
                }
                Mark::FirstTick {
                    var,
                    ticked,
                    pre_ticked,
                    ..
                } => {
                    let span = self.dae.var(var).span;
                    let before = self.dae.pool.var(pre_ticked);
                    let first = self.dae.pool.not(before);
                    let now = self.dae.pool.constant(1.0);
                    let assign = |var, value| Action::Assign { var, value, span };
                    to.add(sets, var, assign(var, first), span);
                    to.add(sets, var, assign(ticked, now), span);
                    continue;
                }
                Mark::Previous { .. } => continue,
            };
            to.add(sets, key, Action::Assign { var, value, span }, span);
        }
        self.clocks.marks = marks;
        for w in self.clock_whens() {
            let clause = &self.dae.hybrid.whens[w];
            let span = clause.span;
            let actions = clause.branches[0].actions.clone();
            let key = Action::assigned(&actions).first().copied();
            for action in actions {
                if let Some(key) = key {
                    to.add(sets, key, action, span);
                }
            }
        }
        let if_of: FxHashMap<ExprId, usize> = (self.clocks.if_equations.iter().enumerate())
            .flat_map(|(g, ifs)| ifs.residuals.iter().map(move |&r| (r, g)))
            .collect();
        let mut open: Vec<usize> = (0..self.dae.equations.len())
            .filter(|&k| in_partition[k])
            .collect();
        // Each equation is solved for a variable alone on one of its sides where it has one,
        // which is a matching of equations to unknowns but not always one that can be
        // completed: when what is left cannot be, all of them are matched at once.
        let before_equations = to.assigned.clone();
        let mut by_assignment = Vec::new();
        let mut solved = Vec::new();
        let mut through_if = false;
        while !open.is_empty() {
            let before = open.len();
            let mut left = Vec::new();
            for k in open {
                let eq = &self.dae.equations[k];
                match self.solved(eq.lhs, eq.rhs, eq.span, &to.assigned) {
                    Some((var, action)) => {
                        to.mark(&action);
                        by_assignment.push(k);
                        solved.push((var, action, eq.span));
                    }
                    None => left.push(k),
                }
            }
            if left.len() == before {
                // The rows of an if-equation, solved branch by branch.
                let eq = &self.dae.equations[left[0]];
                let Some(&g) = left
                    .iter()
                    .find_map(|&k| if_of.get(&self.dae.equations[k].residual))
                else {
                    let together = match self.solved_together(&left, &to.assigned) {
                        Err(_) if !through_if && !by_assignment.is_empty() => {
                            solved.clear();
                            let mut rows = std::mem::take(&mut by_assignment);
                            rows.extend(left);
                            rows.sort_unstable();
                            to.assigned = before_equations;
                            self.solved_together(&rows, &to.assigned)?
                        }
                        solved => solved?,
                    };
                    for (action, span) in together {
                        to.mark(&action);
                        let key = Action::assigned(std::slice::from_ref(&action))[0];
                        solved.push((key, action, span));
                    }
                    break;
                };
                through_if = true;
                let pending: FxHashSet<ExprId> = left
                    .iter()
                    .map(|&k| self.dae.equations[k].residual)
                    .collect();
                let ifs = &self.clocks.if_equations[g];
                let rows: Vec<usize> = (0..ifs.residuals.len())
                    .filter(|&k| pending.contains(&ifs.residuals[k]))
                    .collect();
                let taken: FxHashSet<ExprId> = rows.iter().map(|&k| ifs.residuals[k]).collect();
                let span = left
                    .iter()
                    .map(|&k| &self.dae.equations[k])
                    .find(|e| taken.contains(&e.residual))
                    .map_or(eq.span, |e| e.span);
                left.retain(|&k| !taken.contains(&self.dae.equations[k].residual));
                let action = self.if_action(g, &rows, &to.assigned)?;
                let Some(&key) = Action::assigned(std::slice::from_ref(&action)).first() else {
                    return Err(
                        Diagnostic::error("this clocked if-equation assigns nothing")
                            .at(span, "here"),
                    );
                };
                to.mark(&action);
                solved.push((key, action, span));
            }
            open = left;
        }
        for (key, action, span) in solved {
            to.add(sets, key, action, span);
        }
        for part in to.partitions.values_mut() {
            part.actions = self.in_dependency_order(std::mem::take(&mut part.actions))?;
        }
        Ok(())
    }

    /// The variable `e` is, when it can be solved for in a clocked partition: one of its
    /// unknowns that nothing has assigned yet (not a parameter, a clock, a `pre` or
    /// `previous` value).
    fn unknown(&self, e: ExprId, assigned: &[bool]) -> Option<VarId> {
        match self.dae.pool.node(e) {
            Node::Var(v) if self.is_unknown(v, assigned) => Some(v),
            _ => None,
        }
    }

    /// Whether `v` is an unknown of a clocked partition that nothing has assigned yet.
    fn is_unknown(&self, v: VarId, assigned: &[bool]) -> bool {
        !assigned.get(v.0 as usize).copied().unwrap_or(false)
            && !self.clocks.vars.contains(&v)
            && !matches!(
                self.dae.var(v).kind,
                VarKind::Parameter | VarKind::Constant | VarKind::Held
            )
    }

    /// `lhs = rhs` as the assignment of its one side that is an unknown alone.
    fn solved(
        &self,
        lhs: ExprId,
        rhs: ExprId,
        span: Span,
        assigned: &[bool],
    ) -> Option<(VarId, Action)> {
        let (var, value) = match (self.unknown(lhs, assigned), self.unknown(rhs, assigned)) {
            (Some(var), None) => (var, rhs),
            (None, Some(var)) => (var, lhs),
            _ => return None,
        };
        Some((var, Action::Assign { var, value, span }))
    }

    /// The rows `rows` of if-equation `g` as one `if` action, each branch's rows solved for
    /// their own unknowns (given those `assigned` already) and put in order.
    fn if_action(
        &mut self,
        g: usize,
        rows: &[usize],
        assigned: &[bool],
    ) -> Result<Action, Diagnostic> {
        let ifs = &self.clocks.if_equations[g];
        let (conditions, branches) = (ifs.conditions.clone(), ifs.branches.clone());
        let mut solved = Vec::with_capacity(branches.len());
        for branch in &branches {
            let mut assigned = assigned.to_vec();
            let mut open: Vec<usize> = rows.to_vec();
            let mut actions = Vec::new();
            while !open.is_empty() {
                let before = open.len();
                open.retain(|&k| {
                    let (lhs, rhs, span) = branch[k];
                    let Some((var, action)) = self.solved(lhs, rhs, span, &assigned) else {
                        return true;
                    };
                    assigned[var.0 as usize] = true;
                    actions.push((action, span));
                    false
                });
                if open.len() == before {
                    return Err(unsolvable(
                        branch[open[0]].2,
                        "this equation of a clocked if-equation",
                    ));
                }
            }
            let ordered = self.in_dependency_order(actions)?;
            solved.push(ordered.into_iter().map(|(a, _)| a).collect());
        }
        let otherwise = solved.pop().unwrap_or_default();
        Ok(Action::If {
            branches: conditions.into_iter().zip(solved).collect(),
            otherwise,
        })
    }

    /// `actions` ordered so that each comes after those assigning what it reads (by written
    /// order among those free to go), as a clocked partition evaluates its equations.
    fn in_dependency_order(
        &mut self,
        actions: Vec<(Action, Span)>,
    ) -> Result<Vec<(Action, Span)>, Diagnostic> {
        use std::cmp::Reverse;
        let actions = self.cycles_solved_together(actions)?;
        let mut writer: FxHashMap<VarId, usize> = FxHashMap::default();
        for (k, (action, _)) in actions.iter().enumerate() {
            for var in Action::assigned(std::slice::from_ref(action)) {
                writer.insert(var, k);
            }
        }
        let mut waiting = vec![0usize; actions.len()];
        let mut readers: Vec<Vec<usize>> = vec![Vec::new(); actions.len()];
        for (k, (action, _)) in actions.iter().enumerate() {
            let mut reads = Vec::new();
            self.action_reads(action, &mut reads);
            for v in reads {
                if let Some(&w) = writer.get(&v)
                    && w != k
                {
                    readers[w].push(k);
                    waiting[k] += 1;
                }
            }
        }
        let mut ready: std::collections::BinaryHeap<Reverse<usize>> = (0..actions.len())
            .filter(|&k| waiting[k] == 0)
            .map(Reverse)
            .collect();
        let mut order = Vec::with_capacity(actions.len());
        while let Some(Reverse(k)) = ready.pop() {
            order.push(k);
            for &r in &readers[k] {
                waiting[r] -= 1;
                if waiting[r] == 0 {
                    ready.push(Reverse(r));
                }
            }
        }
        debug_assert_eq!(order.len(), actions.len(), "the cycles are merged");
        let mut slots: Vec<Option<(Action, Span)>> = actions.into_iter().map(Some).collect();
        Ok(order.into_iter().filter_map(|k| slots[k].take()).collect())
    }

    /// The variables `action` reads: its values' and its conditions'.
    fn action_reads(&self, action: &Action, reads: &mut Vec<VarId>) {
        let of = |e: ExprId, reads: &mut Vec<VarId>| {
            self.dae.pool.visit_leaves(e, |node| {
                if let Node::Var(v) = node {
                    reads.push(v);
                }
            });
        };
        match action {
            Action::Assign { value, .. } | Action::Reinit { value, .. } => of(*value, reads),
            Action::If {
                branches,
                otherwise,
            } => {
                for (condition, body) in branches {
                    of(*condition, reads);
                    body.iter().for_each(|a| self.action_reads(a, reads));
                }
                otherwise.iter().for_each(|a| self.action_reads(a, reads));
            }
            Action::Assert(assertion) => of(assertion.condition, reads),
            Action::Terminate { .. } => {}
            Action::Write { write, .. } => write.exprs().into_iter().for_each(|e| of(e, reads)),
            Action::Solve(system) => system.residuals.iter().for_each(|&r| of(r, reads)),
        }
    }

    /// The partitions as `when` clauses on their clocks, in place of their equations and of
    /// the `when c` clauses they took in.
    fn replace_with_clauses(
        &mut self,
        partitions: Partitions,
        in_partition: &[bool],
        clock_whens: &[usize],
    ) -> Result<(), Diagnostic> {
        let mut clauses = Vec::new();
        let mut counted_ticks = Vec::new();
        for part in partitions.into_values() {
            let span = part.span.unwrap_or(Span::default());
            let Some(tick) = part.tick else {
                return Err(Diagnostic::error(
                    "the clock of this clocked partition cannot be inferred: no `sample(u, clock)`, `when clock` or sub-sampled clock gives it one (Modelica 16.7)",
                )
                .at(span, "in this partition"));
            };
            if part.actions.is_empty() {
                continue;
            }
            let mut actions: Vec<Action> = part.actions.into_iter().map(|(a, _)| a).collect();
            let conditions = match self.clocks.ticks[tick] {
                (_, Tick::Event(condition), _) => vec![condition],
                (_, Tick::Counted(counted), _) => {
                    actions = Self::counted_actions(counted, actions);
                    if !counted_ticks.contains(&tick) {
                        counted_ticks.push(tick);
                        clauses.push(Self::counter_clause(counted, span));
                    }
                    vec![counted.condition]
                }
                (var, ..) => {
                    // A clock ticking at the start ticks in the initial event, where only a
                    // condition reading `initial()` fires (Modelica 8.6).
                    let ticks = self.dae.pool.var(var);
                    let initial = self.flag_variable(super::when::Flag::Initial, span);
                    let at_start = self.dae.pool.and(initial, ticks);
                    vec![ticks, at_start]
                }
            };
            clauses.push(WhenClause {
                branches: vec![WhenBranch {
                    conditions,
                    actions,
                }],
                span,
                statement: false,
            });
        }
        let mut k = 0;
        self.dae.equations.retain(|_| {
            k += 1;
            !in_partition[k - 1]
        });
        let mut w = 0;
        self.dae.hybrid.whens.retain(|_| {
            w += 1;
            !clock_whens.contains(&(w - 1))
        });
        self.dae.hybrid.whens.extend(clauses);
        Ok(())
    }
}

/// A clocked equation no variable can be solved from.
fn unsolvable(span: Span, label: &str) -> Diagnostic {
    Diagnostic::error(
        "mocca solves each clocked equation for a variable alone on one of its sides, which this one has not (or has two)",
    )
    .at(span, label)
}
