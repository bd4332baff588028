//! The `when` clauses at an event: which branches fire, the event's system (their assignments
//! with the continuous part, solved by substitution, or by Newton on a loop among them), then
//! their `reinit`s, asserts and `terminate`s; and the `sample` clocks. Shared, as `switching`
//! is, by `mocca simulate` and the crates `mocca emit` writes (this very file, std only), over
//! the [`Clauses`] trait each implements on its own evaluation of the model.
//!
//! Conditions are numbered clause by clause, branch by branch, in written order; variables by
//! their index in the flat model.

use crate::dense_lu::DenseLu;
use crate::numfmt::decimal;

/// Newton iterations on a loop among the fired `when` equations.
const LOOP_NEWTON_ITERATIONS: usize = 50;

/// A model's `when` clauses and the values they read and assign.
pub trait Clauses {
    type Error;

    /// How many `when` clauses the model has.
    fn clauses(&self) -> usize;
    /// Whether clause `c` is a `when` statement: it runs again, in each pass of the event's
    /// system, from the values its variables had when the round began.
    fn statement(&self, c: usize) -> bool;
    /// Per branch of clause `c`, how many conditions it has (`when {a, b}` has two).
    fn branch_conditions(&self, c: usize) -> &[usize];
    /// Condition `k` now.
    fn condition(&self, k: usize) -> bool;
    /// Condition `k` at the last event (or round of event iteration).
    fn before(&self, k: usize) -> bool;
    /// Every condition's value now becomes its value before.
    fn remember_conditions(&mut self);
    /// The variables branch `b` of clause `c` assigns, in any branch of its `if`s, each once.
    fn assigned(&self, c: usize, b: usize) -> Vec<usize>;
    fn var(&self, v: usize) -> f64;
    fn set_var(&mut self, v: usize, x: f64);
    /// Every variable's value.
    fn vars(&self) -> Vec<f64>;
    fn is_real(&self, v: usize) -> bool;
    /// Runs the assignments of branch `b` of clause `c` in written order. `Err` holds the
    /// unknowns of equations it solves together (a clocked partition's loop) that Newton
    /// did not solve.
    fn assign(&mut self, c: usize, b: usize) -> Result<(), Vec<usize>>;
    /// At the event's solution, the branch's other actions in written order: its `reinit`s
    /// (gathered into `reinits`, to apply once every branch is done), asserts and
    /// `terminate`s.
    fn effects(
        &mut self,
        t: f64,
        branch: (usize, usize),
        reinits: &mut Vec<(usize, f64)>,
    ) -> Result<(), Self::Error>;
    /// Every variable from the states and held values.
    fn evaluate(&mut self, t: f64) -> Result<(), Self::Error>;
    /// A loop among the fired equations that neither substitution nor Newton settles, with
    /// the variables that kept moving.
    fn loop_failure(&self, t: f64, moving: Vec<usize>) -> Self::Error;
}

/// One round: each clause's first branch whose condition became true fires. The fired
/// branches' assignments and the continuous part are one system (Modelica 8.3.5: the
/// equations of an event are sorted by data dependency, whatever their written order),
/// solved by substitution until no assigned value moves; a branch a solved value makes fire
/// joins it. Then, at the solution, the `reinit`s apply and the asserts and `terminate`s of
/// the fired branches are seen. Whether a branch fired.
pub fn fire<C: Clauses>(m: &mut C, t: f64) -> Result<bool, C::Error> {
    let clauses = m.clauses();
    let mut fired: Vec<Option<usize>> = vec![None; clauses];
    // Only a `when` statement runs again from them.
    let round_start = if (0..clauses).any(|c| m.statement(c)) {
        m.vars()
    } else {
        Vec::new()
    };
    loop {
        let mut any = false;
        let mut first = 0;
        for (c, branch) in fired.iter_mut().enumerate() {
            if branch.is_none() {
                *branch = fired_branch(m, c, first);
                any |= branch.is_some();
            }
            first += m.branch_conditions(c).iter().sum::<usize>();
        }
        if !any {
            break;
        }
        solve_fired(m, t, &fired, &round_start)?;
    }
    let mut reinits = Vec::new();
    for (c, b) in fired.iter().enumerate() {
        if let Some(b) = *b {
            m.effects(t, (c, b), &mut reinits)?;
        }
    }
    if !reinits.is_empty() {
        for (v, x) in reinits {
            m.set_var(v, x);
        }
        m.evaluate(t)?;
    }
    m.remember_conditions();
    Ok(fired.iter().any(Option::is_some))
}

/// The first branch of clause `c` (whose conditions start at `first`) with a condition that
/// became true.
fn fired_branch<C: Clauses>(m: &C, c: usize, first: usize) -> Option<usize> {
    let mut k = first;
    for (b, &count) in m.branch_conditions(c).iter().enumerate() {
        for _ in 0..count {
            if m.condition(k) && !m.before(k) {
                return Some(b);
            }
            k += 1;
        }
    }
    None
}

/// The fired branches of a round (per clause), what each assigns, and the values when the
/// round began.
struct FiredSystem<'s> {
    fired: &'s [Option<usize>],
    assigned: Vec<Vec<usize>>,
    round_start: &'s [f64],
}

/// The fired branches' assignments solved with the continuous part by substitution: each
/// branch runs again (a `when` statement from the values its variables had when the round
/// began) until a pass moves no assigned value. An acyclic system, the usual one, settles in
/// at most one pass per branch plus one; one that does not is a loop among the `when`
/// equations, solved by Newton on its Real variables ([`newton_on_loop`]), or an error naming
/// them.
fn solve_fired<C: Clauses>(
    m: &mut C,
    t: f64,
    fired: &[Option<usize>],
    round_start: &[f64],
) -> Result<(), C::Error> {
    let assigned: Vec<Vec<usize>> = (fired.iter().enumerate())
        .map(|(c, b)| b.map_or_else(Vec::new, |b| m.assigned(c, b)))
        .collect();
    let passes = assigned.iter().map(Vec::len).sum::<usize>() + 2;
    let system = FiredSystem {
        fired,
        assigned,
        round_start,
    };
    let mut moving = Vec::new();
    for _ in 0..passes {
        moving = substitute(m, t, &system)?;
        if moving.is_empty() {
            return Ok(());
        }
    }
    moving.sort_unstable();
    moving.dedup();
    if newton_on_loop(m, t, &system, &moving)? {
        return Ok(());
    }
    Err(m.loop_failure(t, moving))
}

/// One pass of substitution: each fired branch runs, the continuous part evaluated again
/// after one that moved a value; the variables that moved.
fn substitute<C: Clauses>(
    m: &mut C,
    t: f64,
    system: &FiredSystem<'_>,
) -> Result<Vec<usize>, C::Error> {
    let mut moving = Vec::new();
    for (c, branch) in system.fired.iter().enumerate() {
        let Some(b) = *branch else { continue };
        let assigned = &system.assigned[c];
        let before: Vec<f64> = assigned.iter().map(|&v| m.var(v)).collect();
        if m.statement(c) {
            for &v in assigned {
                m.set_var(v, system.round_start[v]);
            }
        }
        if let Err(unsolved) = m.assign(c, b) {
            return Err(m.loop_failure(t, unsolved));
        }
        let moved_before = moving.len();
        let moved = (assigned.iter().zip(&before)).filter(|&(&v, &was)| !same(m.var(v), was));
        moving.extend(moved.map(|(&v, _)| v));
        if moving.len() > moved_before {
            m.evaluate(t)?;
        }
    }
    Ok(moving)
}

/// Newton on a loop among the fired `when` equations that substitution does not settle: the
/// Real variables `vars` that kept moving are the unknowns of `x = g(x)`, `g` one pass of
/// substitution, with a Jacobian by finite differences (the loop is small). Whether it
/// converged (then the model holds the solution); a loop through an Integer or Boolean is
/// left to the caller's error.
fn newton_on_loop<C: Clauses>(
    m: &mut C,
    t: f64,
    system: &FiredSystem<'_>,
    vars: &[usize],
) -> Result<bool, C::Error> {
    if vars.iter().any(|&v| !m.is_real(v)) {
        return Ok(false);
    }
    let n = vars.len();
    let mut x: Vec<f64> = vars.iter().map(|&v| m.var(v)).collect();
    // Of the values Newton starts from: a scale that iterates running away cannot grow.
    let scale = 1.0 + x.iter().fold(0.0f64, |s, v| s.max(v.abs()));
    let mut lu = DenseLu::new(n);
    for _ in 0..LOOP_NEWTON_ITERATIONS {
        let g = pass_from(m, t, system, vars, &x)?;
        let residual: Vec<f64> = x.iter().zip(&g).map(|(a, b)| a - b).collect();
        if residual.iter().all(|r| r.abs() <= 1e-10 * scale) {
            // One more pass leaves every assigned value consistent with the solution.
            pass_from(m, t, system, vars, &g)?;
            return Ok(true);
        }
        lu.clear();
        for j in 0..n {
            let step = 1e-7 * (1.0 + x[j].abs());
            let mut moved = x.clone();
            moved[j] += step;
            let g_moved = pass_from(m, t, system, vars, &moved)?;
            for i in 0..n {
                let identity = if i == j { 1.0 } else { 0.0 };
                lu.set(i, j, identity - (g_moved[i] - g[i]) / step);
            }
        }
        let mut delta: Vec<f64> = residual.iter().map(|r| -r).collect();
        // A singular loop (no solution, or a manifold) gives no step, or a huge one from the
        // rounding in its finite differences.
        if !lu.factor() {
            return Ok(false);
        }
        lu.solve(&mut delta);
        if delta.iter().any(|d| d.is_nan() || d.abs() > 1e6 * scale) {
            return Ok(false);
        }
        for (xi, d) in x.iter_mut().zip(&delta) {
            *xi += d;
        }
        if x.iter().any(|v| !v.is_finite()) {
            return Ok(false);
        }
    }
    Ok(false)
}

/// `g(x)`: the loop's variables set to `x`, the model evaluated, one pass of substitution;
/// their values after it.
fn pass_from<C: Clauses>(
    m: &mut C,
    t: f64,
    system: &FiredSystem<'_>,
    vars: &[usize],
    x: &[f64],
) -> Result<Vec<f64>, C::Error> {
    for (&v, &value) in vars.iter().zip(x) {
        m.set_var(v, value);
    }
    m.evaluate(t)?;
    substitute(m, t, system)?;
    Ok(vars.iter().map(|&v| m.var(v)).collect())
}

/// Equal values, NaN equal to NaN (a value that stays NaN has settled).
fn same(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

/// `sample(start, interval)`: the variable holding its Boolean and its next instant.
#[derive(Clone, Debug)]
pub struct Clock {
    pub var: usize,
    pub start: f64,
    pub interval: f64,
    pub next: u64,
}

impl Clock {
    /// Instant `k`, rounded as the output grid's times are (so that `sample(0, 0.1)`'s third
    /// is the grid's 0.3, not 0.30000000000000004).
    pub fn instant(&self, k: u64) -> f64 {
        decimal(self.start + k as f64 * self.interval)
    }

    /// Starts the clock at `t`: its first instant at or after `t`. Whether that instant is
    /// `t` itself (within `tolerance`): its Boolean is then true during initialisation, where
    /// only `initial()` makes a clause fire (Modelica 8.6).
    pub fn start_at(&mut self, t: f64, tolerance: f64) -> bool {
        let k = ((t - self.start) / self.interval).ceil().max(0.0) as u64;
        let at_start = (self.instant(k) - t).abs() <= tolerance;
        self.next = k + u64::from(at_start);
        at_start
    }

    /// Whether `t` is the clock's next instant (within `tolerance`); if so the clock moves to
    /// the one after.
    pub fn tick(&mut self, t: f64, tolerance: f64) -> bool {
        let due = (self.instant(self.next) - t).abs() <= tolerance;
        self.next += u64::from(due);
        due
    }
}

/// The next instant of `clocks` after `t` (infinite without one).
pub fn next_instant(clocks: &[Clock], t: f64) -> f64 {
    clocks
        .iter()
        .map(|c| c.instant(c.next))
        .filter(|&s| s > t)
        .fold(f64::INFINITY, f64::min)
}
