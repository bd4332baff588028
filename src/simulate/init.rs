//! Initialisation (SPEC §6): states take their `start` values; `fixed = true` and the
//! `initial equation`s form the initial system, whose unknowns are the states that are not
//! fixed (algebraic variables and derivatives follow from the states through the causal form).
//!
//! With no initial equation at all every state is taken as fixed at its start value (what
//! Modelica tools do with a warning; here it is simply the default). Once there is one, a state
//! is fixed only if it says `fixed = true`, and the counts must match.
//!
//! The reduced system `g(s) = 0` is solved by the runtime's `mocca_runtime::init` (the one
//! emitted crates run): Newton with a finite-difference Jacobian and a backtracking line
//! search, then along `homotopy()` where the model writes it, then by a fixed-point homotopy
//! from the start where Newton stalls.

use crate::causal::{Causal, EvalFailure, Point, Step};
use crate::dae::{Dae, ScalarType, VarKind};
use crate::expr::{ExprId, Func2, Node, Values, VarId};
use crate::structure::Unknown;

use mocca_runtime::fixed_step::largest;
use mocca_runtime::init::{self, InitialSystem};

use super::model::CompiledModel;
use super::system::OdeSystem;

/// One residual of the initial system.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum InitialResidual {
    /// `dae.initial_equations[i]`.
    Equation(usize),
    /// A `fixed = true` algebraic variable: `v − start`.
    Fixed(VarId),
}

#[derive(Clone, Debug, PartialEq)]
pub enum InitFailure {
    /// More free states than residuals: these states need `fixed = true` or an equation.
    Underdetermined { free: Vec<VarId>, residuals: usize },
    /// More residuals than free states: these are the surplus ones.
    Overdetermined {
        surplus: Vec<InitialResidual>,
        free: usize,
    },
    /// Newton did not converge; the residuals still largest, largest first.
    NoConvergence { worst: Vec<InitialResidual> },
    /// Evaluating the model failed.
    Eval(EvalFailure),
}

/// Solves the initial system and leaves the model evaluated at the initial state; returns it
/// (in `Causal::states` order) and the Newton iterations spent: `mocca_runtime::init`'s
/// Newton, homotopy and fixed-point homotopy over [`Initial`].
pub fn initialise(
    dae: &Dae,
    causal: &Causal,
    model: &mut CompiledModel,
    t0: f64,
) -> Result<(Vec<f64>, u64), InitFailure> {
    let mut x = model.state_values();
    let mut system = Initial {
        dae,
        causal,
        model,
        t0,
        residuals: residuals(dae),
        defaulted: fixed_by_default(dae, causal),
    };
    let iterations = init::initialise(&mut system, &mut x)?;
    check_released(dae, system.model)?;
    Ok((x, iterations))
}

/// Whether the model writes `homotopy(actual, simplified)`.
pub fn writes_homotopy(dae: &Dae) -> bool {
    (dae.pool).any_node(|n| matches!(n, Node::Call2(Func2::Homotopy, ..)))
}

/// The initial system of a compiled model at `t0`.
struct Initial<'a> {
    dae: &'a Dae,
    causal: &'a Causal,
    model: &'a mut CompiledModel,
    t0: f64,
    residuals: Vec<Residual>,
    /// The states taken as fixed by default ([`fixed_by_default`]).
    defaulted: Vec<VarId>,
}

impl InitialSystem for Initial<'_> {
    type Failure = InitFailure;
    type Saved = Point;

    fn free_states(
        &mut self,
        x: &mut [f64],
        seed: bool,
    ) -> Result<Option<Vec<usize>>, InitFailure> {
        let (dae, causal) = (self.dae, self.causal);
        if self.residuals.is_empty() {
            return Ok(None);
        }
        let free: Vec<usize> = (causal.states.iter().enumerate())
            .filter(|&(_, &v)| dae.var(v).fixed != Some(true) && !self.defaulted.contains(&v))
            .map(|(i, _)| i)
            .collect();
        if free.len() > self.residuals.len() {
            return Err(InitFailure::Underdetermined {
                free: free.iter().map(|&i| causal.states[i]).collect(),
                residuals: self.residuals.len(),
            });
        }
        if free.len() < self.residuals.len() {
            return Err(InitFailure::Overdetermined {
                surplus: self.residuals[free.len()..].iter().map(|r| r.0).collect(),
                free: free.len(),
            });
        }
        if seed {
            seed_explicit_states(dae, causal, self.model, (&free, self.t0), x);
        }
        Ok(Some(free))
    }

    fn residuals(&mut self, x: &[f64]) -> Result<Vec<f64>, InitFailure> {
        values(self.dae, self.model, &self.residuals, self.t0, x)
    }

    fn evaluate(&mut self, x: &[f64]) -> Result<(), InitFailure> {
        evaluate(self.model, self.t0, x)
    }

    fn no_convergence(&self, r: &[f64]) -> InitFailure {
        no_convergence(&self.residuals, r)
    }

    fn stalled(failure: &InitFailure) -> bool {
        matches!(failure, InitFailure::NoConvergence { .. })
    }

    fn writes_homotopy(&self) -> bool {
        writes_homotopy(self.dae)
    }

    fn set_homotopy(&mut self, lambda: f64) {
        self.model.set_homotopy(lambda);
    }

    fn save(&self) -> Point {
        self.model.point()
    }

    fn restore(&mut self, saved: &Point) {
        self.model.load(saved);
    }
}

/// The dropped `fixed = true` conditions must hold where the constraints put their
/// variables (they were redundant, as other tools accept them); one that does not is a
/// conflict.
fn check_released(dae: &Dae, model: &CompiledModel) -> Result<(), InitFailure> {
    let released = released_fixed(dae);
    if released.is_empty() {
        return Ok(());
    }
    let point = model.point();
    let conflicting: Vec<InitialResidual> = released
        .into_iter()
        .filter(|&v| {
            let start = dae
                .var(v)
                .start
                .map_or(Ok(0.0), |e| dae.pool.eval(e, &point));
            let start = start.unwrap_or(f64::NAN);
            let gap = point.vars[v.0 as usize] - start;
            gap.is_nan() || gap.abs() > 1e-6 * (1.0 + start.abs())
        })
        .map(InitialResidual::Fixed)
        .collect();
    if conflicting.is_empty() {
        return Ok(());
    }
    let free = (dae.var_ids())
        .filter(|&v| dae.var(v).kind == VarKind::State && dae.var(v).fixed != Some(true))
        .count();
    Err(InitFailure::Overdetermined {
        surplus: conflicting,
        free,
    })
}

/// The states an under-determined initial system takes as fixed at their start values, as
/// other Modelica tools do (with a warning): states whose `fixed` is not written, those no
/// initial equation reads first, as many as the conditions are short of the free states.
pub fn fixed_by_default(dae: &Dae, causal: &Causal) -> Vec<VarId> {
    let conditions = residuals(dae).len();
    if conditions == 0 {
        return Vec::new();
    }
    let free: Vec<VarId> = (causal.states.iter().copied())
        .filter(|&v| dae.var(v).fixed != Some(true))
        .collect();
    let Some(surplus) = free.len().checked_sub(conditions).filter(|&n| n > 0) else {
        return Vec::new();
    };
    let mut read = vec![false; dae.variables.len()];
    // What the initial equations and the fixed aliases read (`x = s` with `x` fixed fixes `s`).
    let aliases = (dae.var_ids()).filter(|&v| fixed_alias_of_unknown(dae, v));
    let bindings = aliases.filter_map(|v| dae.var(v).binding);
    for e in dae
        .initial_equations
        .iter()
        .map(|eq| eq.residual)
        .chain(bindings)
    {
        dae.pool.visit_leaves(e, |n| {
            if let Node::Var(v) | Node::Der(v) = n {
                read[v.0 as usize] = true;
            }
        });
    }
    let mut unwritten: Vec<VarId> = free
        .into_iter()
        .filter(|&v| dae.var(v).fixed.is_none())
        .collect();
    unwritten.sort_by_key(|&v| read[v.0 as usize]);
    unwritten.truncate(surplus);
    unwritten
}

/// Initial equations that fix one free state from parameters and time alone (`omega =
/// omega_ref`, or `s = s_ref` with `s_ref` a ramp's output) are solved first, by one secant
/// step, so Newton does not start where the model cannot be evaluated (a state that divides,
/// left at a start value of 0). Then those that fix one
/// more from parameters and the states so seeded, until none is left: a chain of
/// `fixed = false` parameters (a filter's `cr` from a function, then `r = -w*cr`) is
/// computed in order, so that Newton does not start with `r = 0` where the steady-state
/// equations `der(x) = r*(x - u) = 0` leave its Jacobian singular.
fn seed_explicit_states(
    dae: &Dae,
    causal: &Causal,
    model: &CompiledModel,
    (free, t0): (&[usize], f64),
    x: &mut [f64],
) {
    let mut point = model.point();
    point.time = t0;
    let mut seeded = of_time_and_parameters(dae, causal, &mut point);
    let mut done = vec![false; dae.initial_equations.len()];
    loop {
        let mut more = false;
        for (k, eq) in dae.initial_equations.iter().enumerate() {
            if done[k] {
                continue;
            }
            let mut state = None;
            let mut other = false;
            dae.pool.visit_leaves(eq.residual, |n| match n {
                crate::expr::Node::Var(v)
                    if matches!(dae.var(v).kind, VarKind::Parameter | VarKind::Constant)
                        || seeded[v.0 as usize] => {}
                crate::expr::Node::Var(v) if state.is_none_or(|s| s == v) => state = Some(v),
                _ => other = true,
            });
            let Some(v) = state.filter(|_| !other) else {
                continue;
            };
            let Some(i) = free.iter().copied().find(|&i| causal.states[i] == v) else {
                continue;
            };
            done[k] = true;
            let mut residual_at = |s: f64| {
                point.vars[v.0 as usize] = s;
                dae.pool.eval(eq.residual, &point).unwrap_or(f64::NAN)
            };
            let (r0, r1) = (residual_at(x[i]), residual_at(x[i] + 1.0));
            let next = x[i] - r0 / (r1 - r0);
            if next.is_finite() {
                x[i] = next;
            }
            point.vars[v.0 as usize] = x[i];
            seeded[v.0 as usize] = true;
            more = true;
        }
        if !more {
            break;
        }
    }
}

/// Each variable the causal form assigns, and each alias, with the expression that gives it,
/// in the order seeding evaluates them: those that read time and parameters alone (a
/// source's output) are known before any state is.
pub fn assignments<'a>(
    dae: &'a Dae,
    causal: &'a Causal,
) -> impl Iterator<Item = (VarId, ExprId)> + 'a {
    let assigned = causal.steps.iter().filter_map(|step| match step {
        Step::Assign {
            target: Unknown::Algebraic(v),
            expr,
            ..
        } => Some((*v, *expr)),
        _ => None,
    });
    // An alias (`s_ref` of a connected source's `y`) is its representative's binding.
    let aliases = dae.var_ids().filter_map(|v| {
        let var = dae.var(v);
        var.binding
            .filter(|_| var.kind == VarKind::Alias)
            .map(|b| (v, b))
    });
    assigned.chain(aliases)
}

/// The variables the causal form assigns from time and parameters alone (a source's output),
/// each evaluated into `point` in order: they are known before any state is.
fn of_time_and_parameters(dae: &Dae, causal: &Causal, point: &mut Point) -> Vec<bool> {
    let mut known = vec![false; dae.variables.len()];
    for (v, expr) in assignments(dae, causal) {
        let mut fixed = true;
        dae.pool.visit_leaves(expr, |n| {
            fixed &= match n {
                Node::Var(u) => {
                    known[u.0 as usize]
                        || matches!(dae.var(u).kind, VarKind::Parameter | VarKind::Constant)
                }
                Node::Time => true,
                _ => false,
            };
        });
        if !fixed {
            continue;
        }
        let value = dae.pool.eval(expr, &*point).unwrap_or(f64::NAN);
        if value.is_finite() {
            point.vars[v.0 as usize] = value;
            known[v.0 as usize] = true;
        }
    }
    known
}

/// A residual and the expression it evaluates: the equation's `lhs − rhs`, or the fixed
/// variable's start value (default 0).
/// A residual of the initial system and the expression it reads (an equation's residual, a
/// fixed variable's start value).
pub type Residual = (InitialResidual, Option<ExprId>);

/// The residuals of the initial system: initial equations, then fixed algebraic variables.
/// Whether initialisation has a system to solve; without one the states keep their start
/// values.
pub fn has_initial_system(dae: &Dae) -> bool {
    !residuals(dae).is_empty()
}

/// The initial system's residuals: the initial equations (but those that assign a `when`
/// variable's start) and `fixed = true` on variables that are not states (but those released
/// where the system is over-determined).
pub fn residuals(dae: &Dae) -> Vec<Residual> {
    let released = released_fixed(dae);
    conditions(dae)
        .into_iter()
        .filter(|(r, _)| !matches!(r, InitialResidual::Fixed(v) if released.contains(v)))
        .collect()
}

/// Every condition written for the start: initial equations, then `fixed = true` on
/// variables that are not states.
fn conditions(dae: &Dae) -> Vec<Residual> {
    let equations = (dae.initial_equations.iter().enumerate())
        .filter(|(_, e)| dae.initial_assignment(e).is_none())
        .map(|(i, e)| (InitialResidual::Equation(i), Some(e.residual)));
    let fixed = dae
        .var_ids()
        .filter(|&v| dae.var(v).is_fixed_algebraic() || fixed_alias_of_unknown(dae, v))
        .map(|v| (InitialResidual::Fixed(v), dae.var(v).start));
    equations.chain(fixed).collect()
}

/// `fixed = true` on a Real that alias elimination replaced by an expression of unknowns
/// (`x(start = x_min, fixed = true)` with `x = flange.s`): its start is a condition on them.
fn fixed_alias_of_unknown(dae: &Dae, v: VarId) -> bool {
    let var = dae.var(v);
    let Some(binding) = var.binding.filter(|_| {
        var.kind == VarKind::Alias && var.ty == ScalarType::Real && var.fixed == Some(true)
    }) else {
        return false;
    };
    let mut unknown = false;
    dae.pool.visit_leaves(binding, |n| {
        if let Node::Var(w) = n {
            unknown |= dae.var(w).kind.is_unknown();
        }
    });
    unknown
}

/// The `fixed = true` conditions an over-determined initial system drops, as other
/// Modelica tools do (with a warning): those on states index reduction made algebraic
/// (their derivative a dummy), whose values the constraints give, as many as the
/// conditions exceed the states left free. Each must still hold at the solution
/// (`check_released`): dropped, not ignored.
pub fn released_fixed(dae: &Dae) -> Vec<VarId> {
    let all = conditions(dae);
    let free = (dae.var_ids())
        .filter(|&v| dae.var(v).kind == VarKind::State && dae.var(v).fixed != Some(true))
        .count();
    let Some(surplus) = all.len().checked_sub(free).filter(|&n| n > 0) else {
        return Vec::new();
    };
    let mut demoted: Vec<VarId> = all
        .iter()
        .filter_map(|(r, _)| match *r {
            InitialResidual::Fixed(v) => Some(v),
            InitialResidual::Equation(_) => None,
        })
        .filter(|&v| dae.lookup(&format!("der({})", dae.var(v).name)).is_some())
        .collect();
    demoted.truncate(surplus);
    demoted
}

fn evaluate(model: &mut CompiledModel, t: f64, x: &[f64]) -> Result<(), InitFailure> {
    let mut dx = vec![0.0; x.len()];
    model.rhs(t, x, &mut dx).map_err(InitFailure::Eval)
}

/// The residual values at state `x`.
fn values(
    dae: &Dae,
    model: &mut CompiledModel,
    residuals: &[Residual],
    t: f64,
    x: &[f64],
) -> Result<Vec<f64>, InitFailure> {
    evaluate(model, t, x)?;
    let point = model.point();
    let at = AtHomotopy {
        point: &point,
        lambda: model.homotopy(),
    };
    Ok(residuals
        .iter()
        .map(|&(what, e)| {
            let value = e.map_or(Ok(0.0), |e| dae.pool.eval(e, &at));
            let value = value.unwrap_or(f64::NAN);
            match what {
                InitialResidual::Fixed(v) => current(dae, &point, v) - value,
                InitialResidual::Equation(_) => value,
            }
        })
        .collect())
}

/// A point of the model where `homotopy(actual, simplified)` reads `λ`.
struct AtHomotopy<'a> {
    point: &'a Point,
    lambda: f64,
}

impl Values for AtHomotopy<'_> {
    fn var(&self, v: VarId) -> Option<f64> {
        self.point.var(v)
    }
    fn der(&self, v: VarId) -> Option<f64> {
        self.point.der(v)
    }
    fn time(&self) -> Option<f64> {
        self.point.time()
    }
    fn homotopy(&self) -> f64 {
        self.lambda
    }
}

/// A variable's value at `point`: an alias's through its binding (nothing computes it).
fn current(dae: &Dae, point: &Point, v: VarId) -> f64 {
    let var = dae.var(v);
    match (var.kind, var.binding) {
        (VarKind::Alias, Some(b)) => dae.pool.eval(b, point).unwrap_or(f64::NAN),
        _ => point.vars[v.0 as usize],
    }
}

fn no_convergence(residuals: &[Residual], r: &[f64]) -> InitFailure {
    InitFailure::NoConvergence {
        worst: (largest(r, 3).into_iter())
            .map(|i| residuals[i].0)
            .collect(),
    }
}
