//! The solver of a crate `mocca emit` wrote: fixed-step integration of the model in
//! `model.rs`, written once for every model (the generated code is in `model.rs`). It does what
//! `mocca simulate` does, in the same order of operations, so the two agree to rounding.
#![allow(dead_code)]

use crate::dense_lu::DenseLu;
use crate::fixed_step::{self, Count, Factored, StageModel, StageNewton};
use crate::init::{self, InitialSystem};
use crate::mixed::{self, LevelPlan};
use crate::event_driver::EventModel;
use crate::events::{EventStats, Events};
use crate::grid::{self, GridSystem, Side};
pub use crate::grid::grid_time;
pub use crate::fixed_step::Method;
use crate::model;
use crate::newton;
use crate::numfmt::decimal;
use crate::switching;
use crate::weak;
use crate::pair::{HeldPair, Pair};
use crate::pivoting_lu::PivotingLu;
pub use crate::written_lu::{Pieces, Solve, SparseTables};
use crate::written_lu::WrittenLu;
use crate::sparse_factor::Refactor;

/// Why a run stopped.
#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    /// A step of the model (its index in the causal form) did not converge or gave a value
    /// that is not a number, at time `t`.
    Eval { step: usize, t: f64 },
    /// An implicit stage's Newton did not converge at time `t`.
    Stage { t: f64 },
    /// The Newton matrix `I − γJ` is singular at time `t`.
    Singular { t: f64 },
    /// The initial system has not as many conditions as free states.
    InitCount { free: usize, residuals: usize },
    /// Newton on the initial system did not converge.
    InitNoConvergence,
    /// A parameter the model does not have.
    UnknownParameter(String),
    UnknownInput(String),
    /// A parameter the translation used, or initialisation computes: fixed during a run.
    NotTunable(String),
    /// Event iteration at time `t` did not settle.
    EventIteration { t: f64 },
    /// Events accumulate at time `t`: ten in a row, each close to the last.
    Chattering { t: f64 },
    /// A `when` condition that the event at `t` it fired cannot leave.
    Stuck { t: f64 },
    /// The `when` equations that fire at `t` form a loop nothing solves.
    EventLoop { t: f64 },
    /// An error-level `assert` of a `when` clause was false at the event at `t`.
    Assertion { t: f64, message: String },
    /// An error-level `assert` of the equations was false at `t`.
    Violated { t: f64, message: String },
    /// A write of a `when` clause (a print, a MAT file, a removed file) failed at `t`.
    Write { t: f64, message: String },
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Eval { step, t } => {
                write!(f, "step {step} of the model failed at time {t}")
            }
            Failure::Stage { t } => write!(f, "Newton on the implicit stage failed at time {t}"),
            Failure::Singular { t } => write!(f, "the Newton matrix is singular at time {t}"),
            Failure::InitCount { free, residuals } => write!(
                f,
                "the initial system has {residuals} conditions for {free} free states"
            ),
            Failure::InitNoConvergence => f.write_str("the initial system did not converge"),
            Failure::UnknownParameter(name) => write!(f, "the model has no parameter `{name}`"),
            Failure::UnknownInput(name) => write!(f, "the model has no input `{name}`"),
            Failure::EventIteration { t } => write!(
                f,
                "event iteration at time {t} did not settle: the switches keep changing"
            ),
            Failure::Chattering { t } => write!(
                f,
                "events accumulate at time {t}: a relation keeps switching, each event closer \
                 to the last than 1e-6 of the run's length (chattering or a Zeno model)"
            ),
            Failure::Stuck { t } => write!(
                f,
                "the event at time {t} cannot leave the `when` condition it fired: its \
                 crossing is no longer resolved (events accumulate, as a ball's bounces do \
                 past their Zeno time)"
            ),
            Failure::EventLoop { t } => write!(
                f,
                "the `when` equations that fire at time {t} form an algebraic loop that \
                 neither substitution nor Newton solves"
            ),
            Failure::Assertion { t, message } => {
                write!(f, "assertion failed at the event at time {t}: {message}")
            }
            Failure::Violated { t, message } => write!(f, "assertion failed at time {t}: {message}"),
            Failure::Write { t, message } => write!(f, "at the event at time {t}: {message}"),
            Failure::NotTunable(name) => write!(
                f,
                "`{name}` is fixed during a run (the translation used its value, or \
                 initialisation computes it)"
            ),
        }
    }
}

impl std::error::Error for Failure {}

/// What an integration cost (SPEC §6).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub steps: u64,
    pub f_evals: u64,
    pub jac_evals: u64,
    pub newton_iters: u64,
    pub factorizations: u64,
    /// Of a partitioned run, per level (slowest first) the evaluations of `f` its steps made.
    pub level_f_evals: Vec<u64>,
}

/// `b` as a number: 1 or 0.
#[inline(always)]
pub fn truth(b: bool) -> f64 {
    if b { 1.0 } else { 0.0 }
}

#[inline(always)]
pub fn sign(x: f64) -> f64 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        0.0
    }
}

// ---------------------------------------------------------------------------------------
// Newton on the algebraic blocks of the causal form.

/// Work space of the blocks' Newton, and the dense LU of algebraic loops.
#[derive(Clone, Debug)]
pub struct Work {
    newton: newton::Work,
    lu: DenseLu,
}

impl Default for Work {
    fn default() -> Self {
        Work {
            newton: newton::Work::default(),
            lu: DenseLu::new(0),
        }
    }
}

/// A scalar implicit step: `residual` computes its residual register at the current target,
/// `derivative` its derivative.
struct Scalar<'a> {
    r: &'a mut [f64],
    regs: [usize; 3],
    code: [fn(&mut [f64]); 2],
    slope: f64,
}

impl newton::System for Scalar<'_> {
    fn residuals(&mut self, out: &mut [f64]) {
        (self.code[0])(self.r);
        out[0] = self.r[self.regs[1]];
    }
    fn targets(&self, y: &mut [f64]) {
        y[0] = self.r[self.regs[0]];
    }
    fn set_targets(&mut self, y: &[f64]) {
        self.r[self.regs[0]] = y[0];
    }
    fn factor(&mut self) -> bool {
        (self.code[1])(self.r);
        self.slope = self.r[self.regs[2]];
        self.slope != 0.0 && self.slope.is_finite()
    }
    fn solve(&mut self, v: &mut [f64]) {
        v[0] /= self.slope;
    }
}

/// Solves a scalar implicit step: `[target, residual, derivative]` registers, the code of the
/// residual and of the derivative.
pub fn newton_scalar(
    r: &mut [f64],
    work: &mut Work,
    regs: [usize; 3],
    code: [fn(&mut [f64]); 2],
) -> Result<(), f64> {
    let mut system = Scalar {
        r,
        regs,
        code,
        slope: 0.0,
    };
    newton::solve(&mut system, 1, &mut work.newton)
}

/// An algebraic loop: its targets, residuals and Jacobian entries `(row, col, register)`.
pub struct Loop {
    pub targets: &'static [usize],
    pub residuals: &'static [usize],
    pub jacobian: &'static [(usize, usize, usize)],
    pub code: [fn(&mut [f64]); 2],
}

struct LoopSystem<'a> {
    r: &'a mut [f64],
    lu: &'a mut DenseLu,
    block: &'a Loop,
}

impl newton::System for LoopSystem<'_> {
    fn residuals(&mut self, out: &mut [f64]) {
        (self.block.code[0])(self.r);
        for (o, &reg) in out.iter_mut().zip(self.block.residuals) {
            *o = self.r[reg];
        }
    }
    fn targets(&self, y: &mut [f64]) {
        for (yi, &t) in y.iter_mut().zip(self.block.targets) {
            *yi = self.r[t];
        }
    }
    fn set_targets(&mut self, y: &[f64]) {
        for (&yi, &t) in y.iter().zip(self.block.targets) {
            self.r[t] = yi;
        }
    }
    fn factor(&mut self) -> bool {
        (self.block.code[1])(self.r);
        factor_loop(self.lu, self.r, self.block)
    }
    fn solve(&mut self, v: &mut [f64]) {
        self.lu.solve(v);
    }
}

/// Factors a loop's Jacobian `∂R/∂Y` from its registers (computed by its derivative code).
fn factor_loop(lu: &mut DenseLu, r: &[f64], block: &Loop) -> bool {
    lu.resize(block.targets.len());
    lu.clear();
    for &(row, col, d) in block.jacobian {
        lu.set(row, col, r[d]);
    }
    lu.factor()
}

pub fn newton_loop(r: &mut [f64], work: &mut Work, block: &Loop) -> Result<(), f64> {
    let n = block.targets.len();
    let mut system = LoopSystem {
        r,
        lu: &mut work.lu,
        block,
    };
    newton::solve(&mut system, n, &mut work.newton)
}

// ---------------------------------------------------------------------------------------
// Linear solves.

/// `M = I − γJ` on a fixed pattern, factored for Newton: dense with partial pivoting up to 64
/// unknowns, the static sparse LU above (the pivoting sparse LU where its diagonal pivots are
/// refused, as in `simulate`).
pub struct NewtonMatrix {
    n: usize,
    /// The Jacobian's pattern, for the pivoting LU a refused static one falls back to.
    pattern: &'static [(usize, usize)],
    kind: Kind,
    contraction: Option<f64>,
}

enum Kind {
    Dense(DenseLu, Vec<usize>),
    Sparse(WrittenLu, Option<PivotingLu>),
}

impl NewtonMatrix {
    /// For `n` unknowns and the Jacobian pattern; `sparse` when the tables were written.
    pub fn new(
        n: usize,
        pattern: &'static [(usize, usize)],
        sparse: Option<&'static SparseTables>,
    ) -> NewtonMatrix {
        let kind = match sparse {
            Some(t) => Kind::Sparse(WrittenLu::new(t), None),
            None => Kind::Dense(
                DenseLu::new(n),
                pattern.iter().map(|&(r, c)| r * n + c).collect(),
            ),
        };
        NewtonMatrix {
            n,
            pattern,
            kind,
            contraction: None,
        }
    }

    pub fn factor(&mut self, gamma: f64, jac: &[f64], pair: Option<&Pair>) -> bool {
        self.contraction = None;
        let (n, pattern) = (self.n, self.pattern);
        match &mut self.kind {
            Kind::Dense(lu, slots) => {
                lu.clear();
                for (&slot, &x) in slots.iter().zip(jac) {
                    lu.subtract_at(slot, gamma * x);
                }
                for i in 0..n {
                    lu.add(i, i, 1.0);
                }
                lu.factor()
            }
            Kind::Sparse(lu, fallback) => {
                // The Jacobian's entries, then the diagonal's.
                let value = |k: usize| jac.get(k).map_or(1.0, |&x| -gamma * x);
                if fallback.is_none() {
                    match lu.factor(value, pair) {
                        Ok(()) => return true,
                        Err(Refactor::Singular) => return false,
                        Err(Refactor::Unstable) => {
                            let entries: Vec<(usize, usize)> = pattern.iter().copied().chain((0..n).map(|i| (i, i))).collect();
                            *fallback = Some(PivotingLu::new(n, &entries, lu.order()));
                        }
                    }
                }
                fallback.as_mut().is_some_and(|pivoting| pivoting.factor(value))
            }
        }
    }

    pub fn solve(&mut self, b: &mut [f64], pair: Option<&Pair>) {
        match &mut self.kind {
            Kind::Dense(lu, _) => lu.solve(b),
            Kind::Sparse(lu, None) => lu.solve(b, pair),
            Kind::Sparse(_, Some(pivoting)) => pivoting.solve(b),
        }
    }
}

impl Factored for NewtonMatrix {
    fn contraction(&mut self, observed: Option<f64>) -> Option<f64> {
        if let Some(rate) = observed.filter(|&r| r < 1.0) {
            self.contraction = Some(rate);
        }
        observed.or(self.contraction)
    }
}

// ---------------------------------------------------------------------------------------
// Programs, systems and their registers.

/// The code of an evaluation over a register file: `Err(step)` names the step that failed.
pub type Code = fn(&mut [f64], &mut Work) -> Result<(), usize>;
/// The code of Jacobian entries, over a register file just evaluated.
pub type JacobianCode = fn(&mut [f64], &mut Work, &mut [f64]);

/// A compiled tape's register layout: its size, where the time (and the time that relations
/// with breakpoints read) lives, the breakpoints' registers, the constants and the setup code.
pub struct Program {
    pub registers: usize,
    pub time: usize,
    pub switch_time: usize,
    /// The homotopy parameter `λ` (1 but while initialisation follows `homotopy()`).
    pub homotopy: usize,
    pub breakpoints: &'static [usize],
    pub constants: &'static [(usize, f64)],
    pub setup: fn(&mut [f64]),
}

/// An ODE over some states of a program: their registers and their derivatives', its
/// right-hand side and Jacobian code, its Newton matrix, and the partition it steps with.
pub struct SystemCode {
    pub states: &'static [usize],
    pub derivatives: &'static [usize],
    pub rhs: Code,
    pub jacobian: JacobianCode,
    pub pattern: &'static [(usize, usize)],
    pub jacobian_constant: bool,
    pub sparse: Option<&'static SparseTables>,
    /// Slowest first; empty for a single method.
    pub levels: &'static [Level],
    /// Whether a level reads the slower ones on the line between their old and new values.
    pub linear: bool,
    pub fast_entries: &'static [usize],
    pub fast_pattern: &'static [(usize, usize)],
    pub fast_sparse: Option<&'static SparseTables>,
    /// Blocks of rows evaluated alone (a level's).
    pub parts: &'static [Part],
    /// Its Jacobian entries through algebraic loops.
    pub implicit: Option<&'static Implicit>,
}

/// A level of a partition: its states (indices into the system's), method, steps per step of
/// the whole, and the part of `SystemCode::parts` that evaluates its rows alone.
pub struct Level {
    pub states: &'static [usize],
    pub method: Method,
    pub rate: u64,
    pub rows: Option<usize>,
}

/// A block of rows evaluated alone, with its own Jacobian entries: the states (indices into
/// the system's) whose derivatives it gives.
pub struct Part {
    pub rhs: Code,
    pub jacobian: JacobianCode,
    pub states: &'static [usize],
    pub implicit: Option<&'static Implicit>,
}

/// Jacobian entries that pass through algebraic loops, computed by a tangent pass per column:
/// the column's state register with its entries `(index, register of the row's derivative)`,
/// the state registers each pass starts from zero, and the pass.
pub struct Implicit {
    pub columns: &'static [(usize, &'static [(usize, usize)])],
    pub seeds: &'static [usize],
    pub tangents: fn(&mut [f64], &mut [f64], &mut Work),
}

impl Implicit {
    /// The entries' values at the point the registers hold, into `values`.
    fn evaluate(&self, regs: &mut Registers, values: &mut [f64]) {
        for &(column, entries) in self.columns {
            for &s in self.seeds {
                regs.t[s] = 0.0;
            }
            regs.t[column] = 1.0;
            (self.tangents)(&mut regs.r, &mut regs.t, &mut regs.work);
            for &(entry, der) in entries {
                values[entry] = regs.t[der];
            }
        }
    }
}

/// The tangents of an algebraic loop's targets from those of its residuals,
/// `dY = −(∂R/∂Y)⁻¹ dR` with `∂R/∂Y` from its registers (where it is singular, the basic
/// solution Newton takes there).
pub fn loop_tangent(r: &[f64], t: &mut [f64], w: &mut Work, block: &Loop) {
    let factored = factor_loop(&mut w.lu, r, block);
    let mut rhs: Vec<f64> = block.residuals.iter().map(|&q| -t[q]).collect();
    if factored {
        w.lu.solve(&mut rhs);
    } else {
        let n = block.targets.len();
        let y: Vec<f64> = block.targets.iter().map(|&q| r[q]).collect();
        let fill = |a: &mut [f64]| {
            for &(row, col, d) in block.jacobian {
                a[row * n + col] = r[d];
            }
        };
        newton::singular_tangents(&y, fill, &mut rhs);
    }
    for (&target, &x) in block.targets.iter().zip(&rhs) {
        t[target] = x;
    }
}

/// A weak subsystem stepped apart: its system, its states (indices into the model's) and the
/// weak variables it publishes, `(register, exchange register)`.
pub struct Subsystem {
    pub system: &'static SystemCode,
    pub states: &'static [usize],
    pub exchanges: &'static [(usize, usize)],
    /// The registers it computes: its states and its own steps' unknowns.
    pub computed: &'static [usize],
}

/// Weak subsystems stepped apart (SPEC §10) on a program whose weak reads are exchanged.
pub struct Weak {
    pub program: &'static Program,
    pub subsystems: &'static [Subsystem],
    /// The steps outside every subsystem that none reads, run after all of them.
    pub outputs: Code,
    pub output_exchanges: &'static [(usize, usize)],
    /// Every exchange: each subsystem's and the outputs' (set from the initial values, and copied
    /// to a second thread's registers after each step).
    pub exchanges: &'static [(usize, usize)],
    /// Every subsystem reads the values of the previous step (else those published before it).
    pub jacobi: bool,
}

/// A program's register file and what its evaluations keep.
#[derive(Clone)]
pub struct Registers {
    pub r: Vec<f64>,
    /// Tangents of the registers, for Jacobian entries through loops.
    t: Vec<f64>,
    program: &'static Program,
    /// The time relations with breakpoints read inside the current interval.
    switch_time: Option<f64>,
    breakpoints: Vec<f64>,
    work: Work,
}

impl Registers {
    fn new(program: &'static Program) -> Registers {
        let mut r = vec![0.0; program.registers];
        for &(reg, x) in program.constants {
            r[reg] = x;
        }
        Registers {
            t: vec![0.0; r.len()],
            r,
            program,
            switch_time: None,
            breakpoints: Vec::new(),
            work: Work::default(),
        }
    }

    /// Runs the setup code and finds the breakpoints, at time `t`.
    fn setup(&mut self, t: f64) {
        self.switch_time = None;
        self.set_time(t);
        self.rerun_setup();
    }

    /// Takes the values of `other` (a register file of the same program), keeping its own
    /// allocations.
    pub(crate) fn sync_from(&mut self, other: &Registers) {
        self.r.copy_from_slice(&other.r);
        self.switch_time = other.switch_time;
        self.breakpoints.clone_from(&other.breakpoints);
    }

    /// The whole model evaluated at time `t` and states `x` (as the model as one system lays
    /// them out), with the relations of time as they are just after `t`.
    pub(crate) fn evaluate_at(&mut self, t: f64, x: &[f64]) -> Result<(), Failure> {
        self.load_states(x);
        self.evaluate(t)
    }

    /// [`Registers::evaluate_at`] with the relations of time as they are just before `t`.
    pub(crate) fn evaluate_left_of(&mut self, t: f64, x: &[f64]) -> Result<(), Failure> {
        self.load_states(x);
        self.enter_interval_to(t);
        self.evaluate_in_interval(t)
    }

    fn load_states(&mut self, x: &[f64]) {
        for (&reg, &xi) in model::WHOLE.states.iter().zip(x) {
            self.r[reg] = xi;
        }
    }

    /// [`Registers::evaluate_at`] the states the registers hold.
    pub(crate) fn evaluate(&mut self, t: f64) -> Result<(), Failure> {
        self.enter_interval_from(t);
        self.evaluate_in_interval(t)
    }

    /// The model at `t` in the interval of the relations of time entered.
    fn evaluate_in_interval(&mut self, t: f64) -> Result<(), Failure> {
        self.set_time(t);
        (model::WHOLE.rhs)(&mut self.r, &mut self.work).map_err(|step| Failure::Eval { step, t })
    }

    /// Runs the setup code again (an input changed) and finds the breakpoints, the time and
    /// the interval as they were.
    pub(crate) fn rerun_setup(&mut self) {
        (self.program.setup)(&mut self.r);
        let mut times: Vec<f64> = self
            .program
            .breakpoints
            .iter()
            .map(|&reg| decimal(self.r[reg]))
            .filter(|t| t.is_finite())
            .collect();
        times.sort_by(f64::total_cmp);
        times.dedup();
        self.breakpoints = times;
    }

    fn time(&self) -> f64 {
        self.r[self.program.time]
    }

    fn set_time(&mut self, t: f64) {
        self.r[self.program.time] = t;
        self.r[self.program.switch_time] = self.switch_time.unwrap_or(t);
    }

    /// Holds the relations with breakpoints at their values inside `(from, to)`.
    fn enter_interval(&mut self, from: f64, to: f64) {
        self.switch_time = Some(match (from.is_finite(), to.is_finite()) {
            (true, true) => from + (to - from) / 2.0,
            (true, false) => from + from.abs().max(1.0),
            (false, _) => to - to.abs().max(1.0),
        });
        let t = self.time();
        self.set_time(t);
    }

    /// Holds the relations with breakpoints at their values inside the interval that ends at
    /// `t` (just before a switch at `t`).
    fn enter_interval_to(&mut self, t: f64) {
        let before = self.breakpoints.partition_point(|&b| b < t);
        let from = (before.checked_sub(1)).map_or(f64::NEG_INFINITY, |k| self.breakpoints[k]);
        self.enter_interval(from, t);
    }

    pub(crate) fn enter_interval_from(&mut self, t: f64) {
        let after = self.breakpoints.partition_point(|&b| b <= t);
        let next = self.breakpoints.get(after).copied().unwrap_or(f64::INFINITY);
        self.enter_interval(t, next);
    }
}

/// A system of a program over its register file, counting its evaluations in `stats`.
pub struct System<'a> {
    pub regs: &'a mut Registers,
    pub code: &'static SystemCode,
    pub stats: &'a mut Stats,
    /// A second thread for the Newton matrix's pieces.
    pub pair: Option<&'a Pair>,
}

impl System<'_> {
    pub fn dim(&self) -> usize {
        self.code.states.len()
    }

    /// `f(t, x)` on the rows of part `rows` (every row when `None`) into `dx` at those rows,
    /// not counted.
    fn evaluate(&mut self, rows: Option<usize>, t: f64, x: &[f64], dx: &mut [f64]) -> Result<(), Failure> {
        let code = self.code;
        let regs = &mut *self.regs;
        regs.set_time(t);
        for (&reg, &xi) in code.states.iter().zip(x) {
            regs.r[reg] = xi;
        }
        let fail = |step| Failure::Eval { step, t };
        match rows {
            None => {
                (code.rhs)(&mut regs.r, &mut regs.work).map_err(fail)?;
                for (d, &reg) in dx.iter_mut().zip(code.derivatives) {
                    *d = regs.r[reg];
                }
            }
            Some(p) => {
                let part = &code.parts[p];
                (part.rhs)(&mut regs.r, &mut regs.work).map_err(fail)?;
                for &i in part.states {
                    dx[i] = regs.r[code.derivatives[i]];
                }
            }
        }
        Ok(())
    }

    /// Every Jacobian entry at the point last evaluated: the symbolic ones, then those through
    /// loops.
    fn jacobian(&mut self, values: &mut [f64]) {
        (self.code.jacobian)(&mut self.regs.r, &mut self.regs.work, values);
        if let Some(implicit) = self.code.implicit {
            implicit.evaluate(self.regs, values);
        }
    }

    /// The entries `entries`, by part `rows`'s own code when it has one.
    fn jacobian_block(&mut self, rows: Option<usize>, entries: &[usize], values: &mut [f64]) {
        match rows {
            Some(p) => {
                let part = &self.code.parts[p];
                (part.jacobian)(&mut self.regs.r, &mut self.regs.work, values);
                if let Some(implicit) = part.implicit {
                    implicit.evaluate(self.regs, values);
                }
            }
            None => {
                let mut all = vec![0.0; self.code.pattern.len()];
                self.jacobian(&mut all);
                for (v, &e) in values.iter_mut().zip(entries) {
                    *v = all[e];
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// The model.

/// The model of `model.rs` with its register file: parameters settable until
/// [`Model::initialize`], then stepped by an [`Integrator`].
pub struct Model {
    regs: Registers,
    /// The run's events (none for a model without switches), from [`Model::initialize`].
    events: Option<Events>,
    /// The wall time of each step of the last [`run`] (its events included, recording not).
    step_seconds: Vec<f64>,
    /// Per parameter (in `model::PARAMETERS` order), the value given at run time.
    given: Vec<Option<f64>>,
    /// Per top-level input (in `model::INPUTS` order), the value set, else its start value.
    inputs: Vec<Option<f64>>,
    pub stats: Stats,
    /// At most this many threads step it (see [`Model::set_threads`]).
    threads: usize,
    /// The warning-level asserts that failed: each once, its first time and its number.
    warned: Vec<(f64, usize)>,
}

impl Default for Model {
    fn default() -> Self {
        Model::new()
    }
}

impl Model {
    /// The model with every parameter at its default value.
    pub fn new() -> Model {
        let mut model = Model {
            regs: Registers::new(&model::PROGRAM),
            events: None,
            step_seconds: Vec::new(),
            given: vec![None; model::PARAMETERS.len()],
            inputs: vec![None; model::INPUTS.len()],
            stats: Stats::default(),
            warned: Vec::new(),
            threads: 2,
        };
        model.load(0.0);
        model
    }

    /// At most `threads` threads (at least one) step the model: with two (the default) and two
    /// processors, a Newton matrix written in pieces has them factored and solved at once,
    /// and Jacobi subsystems step at once. The results are the same, bit for bit, whatever
    /// the number. Takes effect for the integrators made after it.
    pub fn set_threads(&mut self, threads: usize) {
        self.threads = threads.max(1);
    }

    /// The parameters settable at run time, in declaration order.
    pub fn parameter_names() -> impl Iterator<Item = &'static str> {
        model::PARAMETERS.iter().map(|&(name, _)| name)
    }

    /// Gives parameter `name` the value `x` (the parameters bound to it follow).
    pub fn set_parameter(&mut self, name: &str, x: f64) -> Result<(), Failure> {
        let k = position(model::PARAMETERS, name)
            .ok_or_else(|| Failure::UnknownParameter(name.to_string()))?;
        self.given[k] = Some(x);
        let t = self.time();
        self.load(t);
        Ok(())
    }

    /// Changes parameter `name` to `x` during a run (a tunable one, `model::TUNABLE`): the
    /// parameters bound to it and the setup code follow, the states stay.
    pub fn tune(&mut self, name: &str, x: f64) -> Result<(), Failure> {
        let k = position(model::PARAMETERS, name)
            .ok_or_else(|| Failure::UnknownParameter(name.to_string()))?;
        if !model::TUNABLE[k] {
            return Err(Failure::NotTunable(name.to_string()));
        }
        self.given[k] = Some(x);
        self.apply_parameters();
        self.regs.rerun_setup();
        Ok(())
    }

    /// The top-level inputs, settable at any time, in declaration order.
    pub fn input_names() -> impl Iterator<Item = &'static str> {
        model::INPUTS.iter().map(|&(name, _)| name)
    }

    /// Gives input `name` the value `x` from now on (a co-simulation master's input, held
    /// until set again): what depends on it only through the setup code is computed again,
    /// the states stay.
    pub fn set_input(&mut self, name: &str, x: f64) -> Result<(), Failure> {
        let k = position(model::INPUTS, name)
            .ok_or_else(|| Failure::UnknownInput(name.to_string()))?;
        self.inputs[k] = Some(x);
        self.regs.r[model::INPUTS[k].1] = x;
        self.regs.rerun_setup();
        Ok(())
    }

    /// The parameters' registers: those given at run time, the others from their bindings.
    fn apply_parameters(&mut self) {
        for (k, &(_, reg)) in model::PARAMETERS.iter().enumerate() {
            if let Some(x) = self.given[k] {
                self.regs.r[reg] = x;
            }
        }
        let given: Vec<bool> = self.given.iter().map(Option::is_some).collect();
        model::parameters(&mut self.regs.r, &given);
    }

    /// Every register from the parameters: constants, parameters, start values, the inputs as
    /// set, the setup code and the breakpoints, at time `t`.
    fn load(&mut self, t: f64) {
        self.regs = Registers::new(&model::PROGRAM);
        self.apply_parameters();
        model::starts(&mut self.regs.r);
        for (k, &(_, reg)) in model::INPUTS.iter().enumerate() {
            if let Some(x) = self.inputs[k] {
                self.regs.r[reg] = x;
            }
        }
        self.regs.setup(t);
    }

    pub fn time(&self) -> f64 {
        self.regs.time()
    }

    /// The current state vector (in `model::STATE_NAMES` order).
    pub fn states(&self) -> Vec<f64> {
        model::WHOLE.states.iter().map(|&reg| self.regs.r[reg]).collect()
    }

    /// The value of a variable by its name, as the model was last evaluated (during a run, at
    /// an implicit stage's point: [`Simulation::value`] gives it at the state).
    pub fn value(&self, name: &str) -> Option<f64> {
        model::VARIABLES
            .iter()
            .find(|&&(n, _)| n == name)
            .map(|&(_, reg)| self.regs.r[reg])
    }

    /// The times where a time input breaks (an FMU's time events).
    pub fn breakpoints(&self) -> &[f64] {
        &self.regs.breakpoints
    }

    /// Holds the relations with breakpoints at their values in the interval from `t` to the
    /// next breakpoint (after an event at `t`).
    pub fn enter_interval_from(&mut self, t: f64) {
        self.regs.enter_interval_from(t);
    }

    /// Register `reg` as the model was last evaluated (before initialisation: its parameter,
    /// start or setup value).
    pub fn register(&self, reg: usize) -> f64 {
        self.regs.r[reg]
    }

    /// The model as one system.
    pub fn system(&mut self) -> System<'_> {
        self.system_with(None)
    }

    /// The model as one system, its Newton matrix's pieces on `pair`'s two threads.
    fn system_with<'a>(&'a mut self, pair: Option<&'a Pair>) -> System<'a> {
        System {
            regs: &mut self.regs,
            code: &model::WHOLE,
            stats: &mut self.stats,
            pair,
        }
    }

    /// `dx = f(t, x)`: the model evaluated at `(t, x)` (not counted).
    pub fn rhs(&mut self, t: f64, x: &[f64], dx: &mut [f64]) -> Result<(), Failure> {
        self.system().evaluate(None, t, x, dx)
    }

    /// Solves the initial system at `t0` (states at their start values, the free ones moved by
    /// Newton until the initial equations hold); returns the state vector. A run to the
    /// default stop time (`model::STOP`): see [`Model::initialize_over`].
    pub fn initialize(&mut self, t0: f64) -> Result<Vec<f64>, Failure> {
        self.initialize_over((t0, model::STOP.max(t0)))
    }

    /// [`Model::initialize`] at `start` for a run to `stop` (events are located to 1e-12 of
    /// the run's length): the switches take their relations' values at the start values,
    /// the initial system is solved, then the initial event settles them.
    pub fn initialize_over(&mut self, (start, stop): (f64, f64)) -> Result<Vec<f64>, Failure> {
        self.load(start);
        self.regs.enter_interval_from(start);
        let mut x = self.states();
        self.events = Events::new(&self.regs, (start, stop));
        self.on_events(start, |events, regs| events.free_at_start(regs, start, &x))?;
        self.solve_initial_system(start, &mut x)?;
        self.on_events(start, |events, _| events.initial(start, &mut x))?;
        Ok(x)
    }

    /// `act` on the run's events (nothing without), then the model takes the values it left
    /// at `t`, failed or not.
    fn on_events(
        &mut self,
        t: f64,
        act: impl FnOnce(&mut Events, &Registers) -> Result<(), Failure>,
    ) -> Result<(), Failure> {
        let Some(mut events) = self.events.take() else {
            return Ok(());
        };
        let acted = act(&mut events, &self.regs);
        self.take_event(events.registers(), t);
        self.events = Some(events);
        acted
    }

    /// The runtime's `init::initialise` over the generated initial system.
    fn solve_initial_system(&mut self, t0: f64, x: &mut Vec<f64>) -> Result<(), Failure> {
        init::initialise(&mut Initial { model: self, t0 }, x).map(|_| ())
    }

    /// Takes the values an event at `t` left in `regs` (held ones among them), from `t` on.
    fn take_event(&mut self, regs: &Registers, t: f64) {
        self.regs.sync_from(regs);
        self.regs.rerun_setup();
        self.regs.enter_interval_from(t);
    }

    /// The wall time of each step of the last run over a grid, in seconds (what a real-time
    /// deadline is set by: the slowest).
    pub fn step_seconds(&self) -> &[f64] {
        &self.step_seconds
    }

    /// The event indicators at `(t, x)` into `out` (`model::EVENT_INDICATORS` of them): per
    /// watched relation (a switch's, or a `when` condition's), its `lhs − rhs`, or for a
    /// stepwise function its argument's distance from each end of the range its held value
    /// holds on. Their signs change where a relation switches (a Model Exchange master
    /// watches them).
    pub fn event_indicators(&mut self, t: f64, x: &[f64], out: &mut [f64]) -> Result<(), Failure> {
        let mut dx = vec![0.0; x.len()];
        self.rhs(t, x, &mut dx)?;
        let mut written = 0;
        for (k, reg) in model::WATCHED.iter().enumerate() {
            let crossing = model::crossing(k, &self.regs.r);
            // A `when` condition's relation is a comparison, whose indicator needs no held value.
            let held = reg.map_or(f64::NAN, |reg| self.regs.r[reg]);
            written += switching::indicators(crossing, held, &mut out[written..]);
        }
        Ok(())
    }

    /// The event at `t` with the states `x` (a Model Exchange master's): event iteration
    /// settles the switches, the model takes the values it leaves. A time event when
    /// `scheduled` (a breakpoint), else a state event.
    pub fn event(&mut self, t: f64, x: &mut [f64], scheduled: bool) -> Result<(), Failure> {
        self.on_events(t, |events, _| events.at(t, x, scheduled))
    }

    /// The next time event after `t`: a breakpoint (a time input's or a relation of time's)
    /// or a `sample` instant; `None` without one.
    pub fn next_time_event(&self, t: f64) -> Option<f64> {
        let clocks = (self.events.as_ref()).map_or(f64::INFINITY, |e| e.next_time_event(t));
        let next = grid::next_after(&self.regs.breakpoints, t).min(clocks);
        next.is_finite().then_some(next)
    }

    /// Evaluates the model at `(t, x)` (with the relations of time on `side` of `t`; output,
    /// not integration: not counted) and checks its `assert`s, as `simulate` does at each
    /// point it records: an error-level one that fails stops the run, a warning-level one is
    /// noted once, at its first time ([`Model::assertion_warnings`]). Nothing to do for a
    /// model without asserts.
    pub fn check_assertions(&mut self, t: f64, x: &[f64], side: Side) -> Result<(), Failure> {
        if model::ASSERTIONS.is_empty() {
            return Ok(());
        }
        match side {
            Side::Before => self.regs.enter_interval_to(t),
            Side::After => self.regs.enter_interval_from(t),
        }
        let mut dx = vec![0.0; x.len()];
        self.rhs(t, x, &mut dx)?;
        let r = std::mem::take(&mut self.regs.r);
        let checked = self.check_registers(t, &r);
        self.regs.r = r;
        checked
    }

    /// Checks the model's `assert`s on the register file `r` at `t` (see
    /// [`Model::check_assertions`]).
    fn check_registers(&mut self, t: f64, r: &[f64]) -> Result<(), Failure> {
        for (k, &(error, message)) in model::ASSERTIONS.iter().enumerate() {
            if model::assertion(k, r) {
                continue;
            }
            if error {
                let message = message.to_string();
                return Err(Failure::Violated { t, message });
            }
            if !self.warned.iter().any(|&(_, w)| w == k) {
                self.warned.push((t, k));
            }
        }
        Ok(())
    }

    /// The warning-level asserts that failed, each with its first time.
    pub fn assertion_warnings(&self) -> Vec<(f64, &'static str)> {
        (self.warned.iter())
            .map(|&(t, k)| (t, model::ASSERTIONS[k].1))
            .collect()
    }

    /// Whether `terminate` in the model has ended the run.
    pub fn terminated(&self) -> bool {
        self.events.as_ref().is_some_and(Events::terminated)
    }

    /// What the events of the run so far cost (none for a model without switches).
    pub fn event_stats(&self) -> Option<EventStats> {
        self.events.as_ref().map(Events::stats)
    }

    /// Seeds the free states before Newton, as `simulate` does: the variables computed from
    /// time and parameters alone are evaluated (`model::SOURCES`, each once what it reads is
    /// known); then, until none is left, each initial equation that reads one free state
    /// besides known values takes one secant step in it, which makes it known too.
    fn seed(&mut self, free: &[usize], x: &mut [f64]) {
        let mut r = self.regs.r.clone();
        for (&reg, &xi) in model::WHOLE.states.iter().zip(x.iter()) {
            r[reg] = xi;
        }
        let mut known = vec![false; r.len()];
        for (k, &(v, reads)) in model::SOURCES.iter().enumerate() {
            if reads.iter().all(|&u| known[u]) {
                let value = model::source(k, &r);
                if value.is_finite() {
                    r[v] = value;
                    known[v] = true;
                }
            }
        }
        let mut done = vec![false; model::SEED_EQUATIONS.len()];
        loop {
            let mut more = false;
            for (e, &(k, reads)) in model::SEED_EQUATIONS.iter().enumerate() {
                let mut unknown = reads.iter().copied().filter(|&u| !known[u]);
                let v = match unknown.next() {
                    Some(v) if !done[e] && unknown.all(|u| u == v) => v,
                    _ => continue,
                };
                let Some(i) = free.iter().copied().find(|&i| model::WHOLE.states[i] == v) else {
                    continue;
                };
                done[e] = true;
                let mut residual_at = |s: f64| {
                    r[v] = s;
                    model::initial_residual(k, &r)
                };
                let (r0, r1) = (residual_at(x[i]), residual_at(x[i] + 1.0));
                let next = x[i] - r0 / (r1 - r0);
                if next.is_finite() {
                    x[i] = next;
                }
                r[v] = x[i];
                known[v] = true;
                more = true;
            }
            if !more {
                break;
            }
        }
    }

    fn init_residuals(&mut self, t0: f64, x: &[f64]) -> Result<Vec<f64>, Failure> {
        let mut dx = vec![0.0; x.len()];
        self.rhs(t0, x, &mut dx)?;
        Ok((0..model::INIT_RESIDUALS)
            .map(|k| model::initial_residual(k, &self.regs.r))
            .collect())
    }

}

/// The model's initial system at `t0`, as the runtime's `init` solves it.
struct Initial<'a> {
    model: &'a mut Model,
    t0: f64,
}

impl InitialSystem for Initial<'_> {
    type Failure = Failure;
    type Saved = Vec<f64>;

    fn free_states(&mut self, x: &mut [f64], seed: bool) -> Result<Option<Vec<usize>>, Failure> {
        let m = model::INIT_RESIDUALS;
        if m == 0 {
            return Ok(None);
        }
        let free: Vec<usize> = (0..x.len()).filter(|&i| !model::FIXED[i]).collect();
        if free.len() != m {
            return Err(Failure::InitCount {
                free: free.len(),
                residuals: m,
            });
        }
        if seed {
            self.model.seed(&free, x);
        }
        Ok(Some(free))
    }

    fn residuals(&mut self, x: &[f64]) -> Result<Vec<f64>, Failure> {
        self.model.init_residuals(self.t0, x)
    }

    fn evaluate(&mut self, x: &[f64]) -> Result<(), Failure> {
        let mut dx = vec![0.0; x.len()];
        self.model.rhs(self.t0, x, &mut dx)
    }

    fn no_convergence(&self, _: &[f64]) -> Failure {
        Failure::InitNoConvergence
    }

    fn stalled(failure: &Failure) -> bool {
        *failure == Failure::InitNoConvergence
    }

    fn writes_homotopy(&self) -> bool {
        model::WRITES_HOMOTOPY
    }

    fn set_homotopy(&mut self, lambda: f64) {
        let regs = &mut self.model.regs;
        regs.r[regs.program.homotopy] = lambda;
        regs.rerun_setup();
    }

    fn save(&self) -> Vec<f64> {
        self.model.regs.r.clone()
    }

    fn restore(&mut self, saved: &Vec<f64>) {
        self.model.regs.r.copy_from_slice(saved);
    }
}

// ---------------------------------------------------------------------------------------
// Fixed-step methods: the runtime's steppers over the generated code.

impl StageModel<NewtonMatrix> for System<'_> {
    type Failure = Failure;

    fn count(&mut self, what: Count) {
        let counter = match what {
            Count::Evaluation => &mut self.stats.f_evals,
            Count::Jacobian => &mut self.stats.jac_evals,
            Count::Factorization => &mut self.stats.factorizations,
            Count::NewtonIteration => &mut self.stats.newton_iters,
            Count::Step => &mut self.stats.steps,
        };
        *counter += 1;
    }

    fn evaluations(&self) -> u64 {
        self.stats.f_evals
    }

    fn level_evaluations(&mut self) -> &mut Vec<u64> {
        &mut self.stats.level_f_evals
    }

    fn eval(&mut self, rows: Option<usize>, t: f64, x: &[f64], dx: &mut [f64]) -> Result<(), Failure> {
        self.evaluate(rows, t, x, dx)
    }

    fn jacobian(
        &mut self,
        rows: Option<usize>,
        entries: Option<&[usize]>,
        _at: (f64, &[f64]),
        values: &mut [f64],
    ) -> Result<(), Failure> {
        match entries {
            None => System::jacobian(self, values),
            Some(entries) => self.jacobian_block(rows, entries, values),
        }
        Ok(())
    }

    fn jacobian_is_constant(&self) -> bool {
        self.code.jacobian_constant
    }

    fn factor(&mut self, matrix: &mut NewtonMatrix, gamma: f64, jac: &[f64]) -> bool {
        matrix.factor(gamma, jac, self.pair)
    }

    fn solve(&mut self, matrix: &mut NewtonMatrix, b: &mut [f64]) {
        matrix.solve(b, self.pair);
    }

    fn stage_failure(&self, t: f64, _worst: Vec<usize>) -> Failure {
        Failure::Stage { t }
    }

    fn singular(&self, t: f64) -> Failure {
        Failure::Singular { t }
    }
}

/// A fixed-step integrator of one system: one method over every state, or a partition's
/// levels.
pub trait FixedStep: Send {
    fn step(&mut self, sys: &mut System<'_>, t: f64, h: f64, x: &mut [f64]) -> Result<(), Failure>;

    /// Factors the Newton matrix afresh at the next step: a parameter or an input the
    /// Jacobian reads changed, so one factored once for the run no longer holds.
    fn forget_factorization(&mut self);
}

/// One method over every state of a system.
pub struct Stepper(fixed_step::Stepper<NewtonMatrix>);

impl Stepper {
    pub fn new(code: &'static SystemCode, method: Method, tol: f64) -> Stepper {
        let n = code.states.len();
        let newton = method.is_implicit().then(|| {
            let matrix = NewtonMatrix::new(n, code.pattern, code.sparse);
            StageNewton::whole(n, code.pattern.len(), matrix)
        });
        Stepper(fixed_step::Stepper::new(method, n, tol, newton))
    }
}

impl FixedStep for Stepper {
    fn forget_factorization(&mut self) {
        self.0.work.forget_factorization();
    }

    fn step(&mut self, sys: &mut System<'_>, t: f64, h: f64, x: &mut [f64]) -> Result<(), Failure> {
        self.0.step(sys, t, h, x)
    }
}

/// A partition's levels (SPEC §10), slowest first: each steps its own states, then the faster
/// levels take their substeps over the same interval, reading the slower ones through the
/// interpolation; Newton on the fast level only.
pub struct MixedStepper(mixed::MixedStepper<NewtonMatrix>);

impl MixedStepper {
    pub fn new(code: &'static SystemCode, tol: f64) -> MixedStepper {
        let n = code.states.len();
        let levels: Vec<LevelPlan> = code
            .levels
            .iter()
            .map(|level| LevelPlan {
                states: level.states.to_vec(),
                method: level.method,
                rate: level.rate,
                rows: level.rows,
            })
            .collect();
        let fast = code.levels.last().expect("a fast level");
        let newton = (!fast.states.is_empty()).then(|| {
            let matrix = NewtonMatrix::new(fast.states.len(), code.fast_pattern, code.fast_sparse);
            if fast.states.len() == n {
                StageNewton::whole(n, code.fast_pattern.len(), matrix)
            } else {
                let entries = code.fast_entries.to_vec();
                StageNewton::block(fast.states.to_vec(), entries, fast.rows, matrix)
            }
        });
        MixedStepper(mixed::MixedStepper::new(n, &levels, code.linear, tol, newton))
    }
}

impl FixedStep for MixedStepper {
    fn forget_factorization(&mut self) {
        self.0.work.forget_factorization();
    }

    fn step(&mut self, sys: &mut System<'_>, t: f64, h: f64, x: &mut [f64]) -> Result<(), Failure> {
        self.0.step(sys, t, h, x)
    }
}

// ---------------------------------------------------------------------------------------
// Weak subsystems stepped apart.

/// Each weak subsystem stepped with its own stepper and Newton on its own states, reading the
/// others' weak variables from exchange registers, by the runtime's [`weak::WeakStepper`]:
/// Gauss–Seidel publishes a subsystem's values as soon as it has stepped, Jacobi after every
/// one has. In a Jacobi model of [`THREADED_STATES`] states or more the later subsystems step
/// on a second thread, on their own copy of the registers: the results are the same bit for
/// bit.
pub struct WeakStepper {
    split: weak::WeakStepper<Subsystems>,
    pair: Option<HeldPair>,
}

/// A Jacobi model this large steps its subsystems on two threads (the helper spins while it
/// waits: for a small model's step it would only burn the second processor).
pub const THREADED_STATES: usize = 256;

/// The registers of weak subsystems stepped apart, as [`weak::WeakStepper`] steps them, and
/// the counters of their steps.
#[derive(Clone)]
struct Subsystems {
    weak: &'static Weak,
    regs: Registers,
    stats: Stats,
}

impl weak::WeakModel for Subsystems {
    type Stepper = MixedStepper;
    type Failure = Failure;

    fn subsystems(&self) -> usize {
        self.weak.subsystems.len()
    }

    fn states(&self, s: usize) -> &[usize] {
        self.weak.subsystems[s].states
    }

    fn advance(&mut self, stepper: &mut MixedStepper, s: usize, (t, h): (f64, f64), x: &mut [f64]) -> Result<(), Failure> {
        let sub = &self.weak.subsystems[s];
        let mut xs: Vec<f64> = sub.states.iter().map(|&i| x[i]).collect();
        let mut sys = System {
            regs: &mut self.regs,
            code: sub.system,
            stats: &mut self.stats,
            pair: None,
        };
        stepper.step(&mut sys, t, h, &mut xs)?;
        let mut dx = vec![0.0; xs.len()];
        sys.evaluate(None, t + h, &xs, &mut dx)?;
        for (&i, &xi) in sub.states.iter().zip(&xs) {
            x[i] = xi;
        }
        Ok(())
    }

    fn publish(&mut self, list: usize) {
        let weak = self.weak;
        let exchanges = weak.subsystems.get(list).map_or(weak.output_exchanges, |sub| sub.exchanges);
        for &(reg, last) in exchanges {
            self.regs.r[last] = self.regs.r[reg];
        }
    }

    fn outputs(&mut self, t: f64) -> Result<(), Failure> {
        let regs = &mut self.regs;
        (self.weak.outputs)(&mut regs.r, &mut regs.work).map_err(|step| Failure::Eval { step, t })
    }

    fn take_computed(&mut self, copy: &mut Subsystems, first: usize) {
        for sub in &self.weak.subsystems[first..] {
            for &reg in sub.computed {
                self.regs.r[reg] = copy.regs.r[reg];
            }
        }
        add_stats(&mut self.stats, &mut copy.stats);
    }

    fn take_exchanged(&mut self, main: &Subsystems) {
        for &(_, last) in self.weak.exchanges {
            self.regs.r[last] = main.regs.r[last];
        }
    }
}

impl WeakStepper {
    /// From the initialised `model`'s values (its variables, derivatives and time).
    pub fn new(weak: &'static Weak, model: &Model) -> WeakStepper {
        let mut regs = Registers::new(weak.program);
        let n = model::VARS;
        regs.r[..2 * n].copy_from_slice(&model.regs.r[..2 * n]);
        regs.setup(model.time());
        for &(reg, last) in weak.exchanges {
            regs.r[last] = regs.r[reg];
        }
        let steppers = weak
            .subsystems
            .iter()
            .map(|s| MixedStepper::new(s.system, model::TOL))
            .collect();
        let main = Subsystems {
            weak,
            regs,
            stats: Stats::default(),
        };
        let states: usize = weak.subsystems.iter().map(|s| s.states.len()).sum();
        let threaded = weak.jacobi && weak.subsystems.len() > 1 && states >= THREADED_STATES && model.threads >= 2;
        let pair = threaded.then(HeldPair::start).flatten();
        let helper = pair.is_some().then(|| (weak::second_share(&main), main.clone()));
        WeakStepper {
            split: weak::WeakStepper::new(main, steppers, weak.jacobi, helper),
            pair,
        }
    }

    /// Takes every parameter's and input's value from `model` (their registers are their
    /// variables', the same in every program) and runs the setup code again, in every copy.
    fn take_parameters_and_inputs(&mut self, model: &Model) {
        let inputs = model::INPUTS.iter().map(|&(_, reg)| reg);
        let known: Vec<usize> = model::PARAMETER_REGISTERS.iter().copied().chain(inputs).collect();
        for copy in self.split.each_copy() {
            for &reg in &known {
                copy.regs.r[reg] = model.regs.r[reg];
            }
            copy.regs.rerun_setup();
        }
    }

    fn regs(&self) -> &Registers {
        &self.split.model.regs
    }

    /// The weak values exchanged (their `last` registers).
    fn exchanged(&self) -> Vec<f64> {
        let main = &self.split.model;
        main.weak.exchanges.iter().map(|&(_, last)| main.regs.r[last]).collect()
    }

    /// Sets the weak values exchanged back to `saved` ([`WeakStepper::exchanged`]).
    fn set_exchanged(&mut self, saved: &[f64]) {
        for copy in self.split.each_copy() {
            for (&(_, last), &x) in copy.weak.exchanges.iter().zip(saved) {
                copy.regs.r[last] = x;
            }
        }
    }

    /// After an event at `t`: takes every variable and derivative of `regs` (the model as one
    /// system after the event) and publishes the weak values, so that the next step starts
    /// from values consistent at `t`, as `simulate`'s `Partitioned::resume` does.
    fn resume(&mut self, regs: &Registers, t: f64) {
        let n = 2 * model::VARS;
        for copy in self.split.each_copy() {
            copy.regs.r[..n].copy_from_slice(&regs.r[..n]);
            copy.regs.set_time(t);
            copy.regs.rerun_setup();
            copy.regs.enter_interval_from(t);
            for &(reg, last) in copy.weak.exchanges {
                copy.regs.r[last] = copy.regs.r[reg];
            }
        }
    }

    fn enter_interval(&mut self, from: f64, to: f64) {
        for copy in self.split.each_copy() {
            copy.regs.enter_interval(from, to);
        }
    }

    fn forget_factorizations(&mut self) {
        self.split.steppers.iter_mut().for_each(|s| s.forget_factorization());
    }

    /// One step of every subsystem, its counters added to `stats`.
    fn step(&mut self, stats: &mut Stats, t: f64, h: f64, x: &mut [f64]) -> Result<(), Failure> {
        let pair = self.pair.as_ref().map(HeldPair::pair);
        let result = self.split.step((t, h), x, pair);
        add_stats(stats, &mut self.split.model.stats);
        result?;
        stats.f_evals += self.split.model.weak.subsystems.len() as u64;
        stats.steps += 1;
        Ok(())
    }
}

/// Adds `from`'s counters to `to` and zeroes them (its steps are each subsystem's).
fn add_stats(to: &mut Stats, from: &mut Stats) {
    to.f_evals += from.f_evals;
    to.jac_evals += from.jac_evals;
    to.newton_iters += from.newton_iters;
    to.factorizations += from.factorizations;
    if to.level_f_evals.len() < from.level_f_evals.len() {
        to.level_f_evals.resize(from.level_f_evals.len(), 0);
    }
    for (sum, &x) in to.level_f_evals.iter_mut().zip(&from.level_f_evals) {
        *sum += x;
    }
    *from = Stats::default();
}

// ---------------------------------------------------------------------------------------
// What a run steps.

/// The model as one system (a single method or a partition's levels), or its weak subsystems
/// apart.
pub enum Integrator {
    /// With a helper thread when its Newton matrix is in pieces and two threads may run.
    Whole(Box<dyn FixedStep>, Option<HeldPair>),
    Weak(Box<WeakStepper>),
}

impl Integrator {
    /// The integrator the crate was emitted with, for the initialised `model`.
    pub fn new(model: &Model) -> Integrator {
        match model::WEAK {
            Some(weak) => Integrator::Weak(Box::new(WeakStepper::new(weak, model))),
            None => {
                let code = &model::WHOLE;
                let stepper: Box<dyn FixedStep> = if code.levels.is_empty() {
                    Box::new(Stepper::new(code, model::METHOD, model::TOL))
                } else {
                    Box::new(MixedStepper::new(code, model::TOL))
                };
                let in_pieces = [code.sparse, code.fast_sparse]
                    .iter()
                    .any(|t| t.is_some_and(|t| matches!(t.solve, Solve::Pieces(_))));
                let helper = (in_pieces && model.threads >= 2).then(HeldPair::start).flatten();
                Integrator::Whole(stepper, helper)
            }
        }
    }

    /// Factors every Newton matrix afresh at the next step (see
    /// [`FixedStep::forget_factorization`]).
    fn forget_factorizations(&mut self) {
        match self {
            Integrator::Whole(stepper, _) => stepper.forget_factorization(),
            Integrator::Weak(w) => w.forget_factorizations(),
        }
    }

    fn breakpoints(&self, model: &Model) -> Vec<f64> {
        match self {
            Integrator::Whole(..) => model.regs.breakpoints.clone(),
            Integrator::Weak(w) => w.regs().breakpoints.clone(),
        }
    }

    fn enter_interval(&mut self, model: &mut Model, from: f64, to: f64) {
        match self {
            Integrator::Whole(..) => model.regs.enter_interval(from, to),
            Integrator::Weak(w) => w.enter_interval(from, to),
        }
    }

    /// What stepping again from a step's start needs besides its states: the weak values
    /// exchanged (none for the model as one system, whose one-step methods need only them).
    fn checkpoint(&self) -> Vec<f64> {
        match self {
            Integrator::Whole(..) => Vec::new(),
            Integrator::Weak(w) => w.exchanged(),
        }
    }

    /// Back to a [`Integrator::checkpoint`], to step again from where it was taken.
    fn rewind(&mut self, saved: &[f64]) {
        if let Integrator::Weak(w) = self {
            w.set_exchanged(saved);
        }
    }

    /// Continues from the event at `t` whose values `regs` holds (the model as one system
    /// takes them in [`Model::take_event`]; weak subsystems here).
    fn resume(&mut self, regs: &Registers, t: f64) {
        if let Integrator::Weak(w) = self {
            w.resume(regs, t);
        }
    }

    /// Advances `x` from `t` to `t + h`.
    pub fn step(&mut self, model: &mut Model, t: f64, h: f64, x: &mut [f64]) -> Result<(), Failure> {
        match self {
            Integrator::Whole(stepper, helper) => {
                let pair = helper.as_ref().map(HeldPair::pair);
                stepper.step(&mut model.system_with(pair), t, h, x)
            }
            Integrator::Weak(w) => w.step(&mut model.stats, t, h, x),
        }
    }
}

// ---------------------------------------------------------------------------------------
// A run over an output grid.

/// Integrates from `start` to `stop` in `steps` equal steps (each ending at the breakpoints on
/// its way, and at the events inside it), calling `record(t, x)` at the start, after every
/// step, and just before and just after each event; each step's wall time goes to
/// `model.step_seconds`.
pub fn run(
    model: &mut Model,
    integrator: &mut Integrator,
    grid: (f64, f64, u64),
    x: &mut [f64],
    record: impl FnMut(f64, &[f64]),
) -> Result<(), Failure> {
    let mut events = model.events.take();
    let mut seconds = std::mem::take(&mut model.step_seconds);
    seconds.clear();
    // Room for every step before the run: no reallocation between two of its steps.
    seconds.reserve(usize::try_from(grid.2).unwrap_or(0));
    let mut run = Run {
        model: &mut *model,
        integrator,
        record,
    };
    let ran = grid::run(&mut run, events.as_mut(), grid, model::EVENTS, x, &mut |_, s| {
        seconds.push(s)
    });
    model.events = events;
    model.step_seconds = seconds;
    ran
}

/// What the runtime's grid loop steps: the model with its integrator, and what records its
/// points.
struct Run<'a, R> {
    model: &'a mut Model,
    integrator: &'a mut Integrator,
    record: R,
}

impl<R: FnMut(f64, &[f64])> GridSystem for Run<'_, R> {
    type Events = Events;
    type Error = Failure;

    fn breakpoints(&self) -> Vec<f64> {
        self.integrator.breakpoints(self.model)
    }

    fn step_over(&mut self, breakpoints: &[f64], span: (f64, f64), x: &mut [f64]) -> Result<(), Failure> {
        step_over(self.model, self.integrator, breakpoints, span, x)
    }

    fn checkpoint(&self) -> Vec<f64> {
        self.integrator.checkpoint()
    }

    fn rewind(&mut self, saved: &[f64]) {
        self.integrator.rewind(saved);
    }

    fn records_last_step(&self) -> bool {
        matches!(self.integrator, Integrator::Weak(_))
    }

    /// Records `(t, x)` as `simulate` records a point, its `assert`s checked first
    /// ([`check_point`]).
    fn record(&mut self, at: (f64, Side), x: &[f64]) -> Result<(), Failure> {
        check_point(self.model, self.integrator, at, x)?;
        (self.record)(at.0, x);
        Ok(())
    }

    fn resume(&mut self, events: &Events, t: f64) {
        resume(self.model, self.integrator, events, t);
    }
}

/// Continues from the event at `t` whose values `events` holds: the model takes them, and weak
/// subsystems too.
fn resume(model: &mut Model, integrator: &mut Integrator, events: &Events, t: f64) {
    model.take_event(events.registers(), t);
    integrator.resume(events.registers(), t);
}

/// Checks the model's `assert`s at the point `(t, x)` as `simulate` does where it records it:
/// the model as one system evaluated there ([`Model::check_assertions`]); weak subsystems on
/// their registers, which hold every value after a step (those of the step that ended,
/// before any event there).
fn check_point(
    model: &mut Model,
    integrator: &Integrator,
    (t, side): (f64, Side),
    x: &[f64],
) -> Result<(), Failure> {
    match integrator {
        Integrator::Whole(..) => model.check_assertions(t, x, side),
        Integrator::Weak(w) => model.check_registers(t, &w.regs().r),
    }
}

/// Steps `x` from `t` by `h`, ending a step at each breakpoint on the way.
fn step_over(
    model: &mut Model,
    integrator: &mut Integrator,
    breakpoints: &[f64],
    (t, h): (f64, f64),
    x: &mut [f64],
) -> Result<(), Failure> {
    for (a, b, step) in grid::split_step(breakpoints, t, h) {
        integrator.enter_interval(model, a, b);
        integrator.step(model, a, step, x)?;
    }
    Ok(())
}

/// A model a rig steps itself: initialised at construction, then advanced one step at a time.
pub struct Simulation {
    pub model: Model,
    integrator: Integrator,
    x: Vec<f64>,
    t: f64,
    breakpoints: Vec<f64>,
}

impl Simulation {
    /// Initialises `model` (its parameters as set) at `t0`.
    pub fn new(mut model: Model, t0: f64) -> Result<Simulation, Failure> {
        let x = model.initialize(t0)?;
        let integrator = Integrator::new(&model);
        let breakpoints = integrator.breakpoints(&model);
        Ok(Simulation {
            model,
            integrator,
            x,
            t: t0,
            breakpoints,
        })
    }

    /// Advances by `h` with the crate's method, ending a step at each breakpoint and event on
    /// the way; then checks the model's `assert`s there ([`Model::check_assertions`]).
    pub fn step(&mut self, h: f64) -> Result<(), Failure> {
        let (t, end) = (self.t, self.t + h);
        let mut events = self.model.events.take();
        let mut run = Run {
            model: &mut self.model,
            integrator: &mut self.integrator,
            record: |_: f64, _: &[f64]| {},
        };
        let span = (t, end, h);
        let stepped = grid::step(&mut run, events.as_mut(), &self.breakpoints, span, model::EVENTS, &mut self.x);
        self.model.events = events;
        self.t = stepped?;
        check_point(&mut self.model, &self.integrator, (self.t, Side::After), &self.x)
    }

    /// Whether `terminate` has ended the run (a step then advances nothing).
    pub fn terminated(&self) -> bool {
        self.model.terminated()
    }

    pub fn time(&self) -> f64 {
        self.t
    }

    /// Changes tunable parameter `name` to `x` from now on (see [`Model::tune`]).
    pub fn tune(&mut self, name: &str, x: f64) -> Result<(), Failure> {
        self.model.tune(name, x)?;
        self.integrator_follows();
        Ok(())
    }

    /// Sets input `name` to `x` from now on (see [`Model::set_input`]).
    pub fn set_input(&mut self, name: &str, x: f64) -> Result<(), Failure> {
        self.model.set_input(name, x)?;
        self.integrator_follows();
        Ok(())
    }

    /// After a parameter or an input changed in the model: the weak stepper's registers take
    /// it, and no Newton matrix factored once for the run is kept.
    fn integrator_follows(&mut self) {
        if let Integrator::Weak(w) = &mut self.integrator {
            w.take_parameters_and_inputs(&self.model);
        }
        if let Some(events) = self.model.events.as_mut() {
            events.take_parameters(&self.model.regs);
        }
        self.integrator.forget_factorizations();
    }

    /// The states (in `model::STATE_NAMES` order).
    pub fn states(&self) -> &[f64] {
        &self.x
    }

    /// The value of a variable by its name at the current time and state.
    pub fn value(&mut self, name: &str) -> Result<Option<f64>, Failure> {
        let Some(&(_, reg)) = model::VARIABLES.iter().find(|&&(n, _)| n == name) else {
            return Ok(None);
        };
        Ok(self.registers_at_state(&[reg])?.first().copied())
    }

    /// Registers `regs` at the current time and state (the model evaluated there once).
    pub fn registers_at_state(&mut self, regs: &[usize]) -> Result<Vec<f64>, Failure> {
        let file = match &self.integrator {
            // The registers hold the last evaluation, a stage's: evaluate at the state.
            Integrator::Whole(..) => {
                let mut dx = vec![0.0; self.x.len()];
                self.model.rhs(self.t, &self.x, &mut dx)?;
                &self.model.regs.r
            }
            // After a step every subsystem was evaluated at its new state, then the outputs.
            Integrator::Weak(w) => &w.regs().r,
        };
        Ok(regs.iter().map(|&reg| file[reg]).collect())
    }
}

/// Where `name` is in a `(name, register)` table of `model.rs`.
fn position(table: &[(&str, usize)], name: &str) -> Option<usize> {
    table.iter().position(|&(n, _)| n == name)
}

/// The shortest text that reads back to `x`, with an exponent for very small or large ones.
pub fn number(x: f64) -> String {
    let magnitude = x.abs();
    if x == 0.0 {
        "0".to_string()
    } else if !x.is_finite() || (1e-4..1e16).contains(&magnitude) {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}
