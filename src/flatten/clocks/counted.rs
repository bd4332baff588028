//! Sub-clocks of an event clock (Modelica 16.5.2): an event clock's ticks are not known in
//! advance, so a clock derived from one ticks at some of its ticks, chosen by counting them.
//! `subSample(u, n)` ticks at the first tick and every n-th after it; `shiftSample(u, k)`
//! from the k-th tick after the first on (an event clock is shifted by whole ticks only:
//! `resolution = 1`). Super-sampling an event clock and `backSample` of one are errors, as
//! the specification has them.
//!
//! A counted clock's partition is a `when` clause on the event clock's condition whose
//! actions run under a guard on the count of the ticks before (`pre(count)`); one more
//! clause on the condition counts the ticks.

use super::{Action, ClockOp, Flattener, Tick};
use crate::dae::ScalarType;
use crate::dae::hybrid::{WhenBranch, WhenClause};
use crate::diagnostics::Diagnostic;
use crate::expr::{CmpOp, ExprId, VarId};
use crate::source::Span;

/// A clock ticking at the ticks of the event clock `condition` where `guard` holds.
#[derive(Clone, Copy)]
pub(in crate::flatten) struct Counted {
    /// The event clock's condition.
    pub condition: ExprId,
    /// The ticks counted so far (for a sub-sample, modulo its factor).
    count: VarId,
    /// Whether the clock ticks at this tick of the event clock, from `pre(count)`.
    guard: ExprId,
    /// `count` after this tick.
    next: ExprId,
}

/// The error for a clock derived from a counted one.
pub(super) fn of_counted(span: Span) -> Diagnostic {
    Diagnostic::error(
        "a clock derived from a sub-sampled or shifted event clock is not supported: derive it from the event clock itself",
    )
    .at(span, "here")
}

impl Flattener<'_> {
    /// The clock `op` makes of the event clock `condition`.
    pub(super) fn counted_tick(
        &mut self,
        condition: ExprId,
        op: ClockOp,
        span: Span,
    ) -> Result<Tick, Diagnostic> {
        let count = self.count_variable(span);
        let before = self.pre_variable(count);
        let pool = &mut self.dae.pool;
        let before = pool.var(before);
        let one = pool.one();
        let zero = pool.zero();
        let incremented = pool.add(before, one);
        let (guard, next) = match op {
            ClockOp::Sub(n) => {
                let wraps = pool.cmp(CmpOp::Ge, incremented, n);
                let next = pool.if_then_else(wraps, zero, incremented);
                (pool.cmp(CmpOp::Eq, before, zero), next)
            }
            ClockOp::Shift {
                back: false,
                ticks: Some(k),
                ..
            } if k >= 0.0 && k.fract() == 0.0 => {
                let k = pool.constant(k);
                (pool.cmp(CmpOp::Ge, before, k), incremented)
            }
            ClockOp::Shift { back: false, .. } => {
                return Err(Diagnostic::error(
                    "`shiftSample` of an event clock shifts by whole ticks: its shift must be a whole number known at translation, with resolution 1 (Modelica 16.5.2)",
                )
                .at(span, "here"));
            }
            ClockOp::Shift { back: true, .. } => {
                return Err(Diagnostic::error(
                    "`backSample` of an event clock is not supported: its ticks are not known in advance",
                )
                .at(span, "here"));
            }
            ClockOp::Super(_) | ClockOp::Inferred => {
                return Err(Diagnostic::error(
                    "an event clock cannot be super-sampled: its interval is not known in advance (Modelica 16.5.2)",
                )
                .at(span, "here"));
            }
        };
        Ok(Tick::Counted(Counted {
            condition,
            count,
            guard,
            next,
        }))
    }

    /// `interval()` in a partition on the event clock `tick` (or one counted from it) as
    /// actions assigning `var`: the time since the partition's previous tick, and at its
    /// first tick the clock's `startInterval` (Modelica 16.9).
    pub(super) fn event_interval(&mut self, var: VarId, tick: usize, span: Span) -> Vec<Action> {
        let last = self.lowering_variable("lastTick", ScalarType::Real, span);
        let ticked = self.lowering_variable("ticked", ScalarType::Boolean, span);
        let pool = &mut self.dae.pool;
        let zero = pool.zero();
        self.dae.variables[last.0 as usize].start = Some(zero);
        self.dae.variables[ticked.0 as usize].start = Some(zero);
        let (pre_last, pre_ticked) = (self.pre_variable(last), self.pre_variable(ticked));
        let start = self.clocks.start_intervals.get(&tick).copied();
        let pool = &mut self.dae.pool;
        let now = pool.time();
        let before = pool.var(pre_last);
        let since = pool.sub(now, before);
        let has_ticked = pool.var(pre_ticked);
        let first = start.unwrap_or(zero);
        let interval = pool.if_then_else(has_ticked, since, first);
        let yes = pool.one();
        let assign = |var, value| Action::Assign { var, value, span };
        vec![
            assign(var, interval),
            assign(last, now),
            assign(ticked, yes),
        ]
    }

    /// A counter of an event clock's ticks, 0 before the first.
    fn count_variable(&mut self, span: Span) -> VarId {
        let var = self.lowering_variable("ticks", ScalarType::Integer, span);
        self.dae.variables[var.0 as usize].start = Some(self.dae.pool.zero());
        var
    }

    /// A counted clock's partition's `actions` under its guard.
    pub(super) fn counted_actions(counted: Counted, actions: Vec<Action>) -> Vec<Action> {
        vec![Action::If {
            branches: vec![(counted.guard, actions)],
            otherwise: Vec::new(),
        }]
    }

    /// The clause counting the ticks of a counted clock's event clock: one for all the
    /// partitions on it.
    pub(super) fn counter_clause(counted: Counted, span: Span) -> WhenClause {
        WhenClause {
            branches: vec![WhenBranch {
                conditions: vec![counted.condition],
                actions: vec![Action::Assign {
                    var: counted.count,
                    value: counted.next,
                    span,
                }],
            }],
            span,
            statement: false,
        }
    }
}
