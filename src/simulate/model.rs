//! A model compiled for simulation: the tape of its causal form and of its Jacobian entries,
//! a register file, and [`OdeSystem`] over the states in `Causal::states` order.
//!
//! A model is evaluated in *parts*: part 0 is the whole model; a partitioned model (see
//! `partition.rs`) adds one part per weak subsystem, each with its own steps, states and
//! Jacobian block.

use crate::causal::{Causal, EvalFailure, Point};
use crate::dae::{Dae, VarKind};
use crate::expr::hash::FxHashMap as HashMap;
use crate::expr::{ExprId, ExprPool, Node, Values, VarId};
use crate::jacobian::OdeJacobian;
use crate::structure::Unknown;

use super::pair::Pair;
use super::system::OdeSystem;
use super::tape::{Groups, LoopScratch, Plan, Reg, StepCode, Tape, WeakReads, compile};

/// The steps, states and Jacobian block one part evaluates.
#[derive(Clone, Debug)]
pub struct Part {
    /// Indices into `Causal::states`.
    pub states: Vec<usize>,
    /// The registers of those states and of their derivatives, in the part's order.
    state_regs: Registers,
    der_regs: Registers,
    /// The Jacobian pattern in the part's own state numbering.
    pattern: Vec<(usize, usize)>,
    /// Per pattern entry: where its value comes from.
    entries: Vec<EntryCode>,
    /// Columns (local) holding entries that pass through a Newton loop, and those entries
    /// `(local entry, register of the row's derivative)`.
    implicit_columns: Vec<(usize, Vec<(usize, Reg)>)>,
    /// The `t` of the last evaluation, while it still holds, and its `x` (kept allocated
    /// when forgotten: evaluations come every step), so a Jacobian at the same point reuses
    /// it.
    evaluated_at: Option<f64>,
    evaluated_x: Vec<f64>,
    /// Every entry depends on parameters and constants only.
    constant_jacobian: bool,
    /// A block of rows of the one system: its evaluation takes every state (its
    /// `evaluated_x` is the whole state), and its tangent passes start from every state.
    rows: bool,
    /// The causal steps it runs, in evaluation order, grouped for evaluation.
    plan: Plan,
}

/// A list of registers, stored as where it starts when it is a run of consecutive ones (as the
/// states of a model are unless partitioned): moving values in and out is then a copy.
#[derive(Clone, Debug)]
enum Registers {
    Run { start: usize, len: usize },
    Scattered(Vec<Reg>),
}

impl Registers {
    fn new(regs: Vec<Reg>) -> Registers {
        let start = regs.first().map_or(0, |&r| r as usize);
        let consecutive = regs
            .iter()
            .enumerate()
            .all(|(k, &r)| r as usize == start + k);
        match consecutive {
            true => Registers::Run {
                start,
                len: regs.len(),
            },
            false => Registers::Scattered(regs),
        }
    }

    /// Writes `values` into the registers.
    fn scatter(&self, values: &[f64], regs: &mut [f64]) {
        match self {
            Registers::Run { start, len } => regs[*start..start + len].copy_from_slice(values),
            Registers::Scattered(list) => {
                for (&r, &x) in list.iter().zip(values) {
                    regs[r as usize] = x;
                }
            }
        }
    }

    /// The `k`-th register.
    fn reg(&self, k: usize) -> Reg {
        match self {
            Registers::Run { start, .. } => (start + k) as Reg,
            Registers::Scattered(list) => list[k],
        }
    }

    /// Reads the registers into `values`.
    fn gather(&self, regs: &[f64], values: &mut [f64]) {
        match self {
            Registers::Run { start, len } => values.copy_from_slice(&regs[*start..start + len]),
            Registers::Scattered(list) => {
                for (x, &r) in values.iter_mut().zip(list) {
                    *x = regs[r as usize];
                }
            }
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum EntryCode {
    /// Index into `Tape::extra`.
    Symbolic(usize),
    /// Computed by the tangent pass of its column.
    Implicit,
}

#[derive(Clone)]
pub struct CompiledModel {
    pub tape: Tape,
    regs: Vec<f64>,
    tangents: Vec<f64>,
    scratch: LoopScratch,
    /// Per state (in `Causal::states` order): its register.
    state_regs: Vec<Reg>,
    /// The targets of the Newton steps and loops: their guesses.
    guess_regs: Vec<Reg>,
    /// The guesses at each observed point since the last [`CompiledModel::take_observed`],
    /// one after another.
    observed: Vec<f64>,
    pub states: Vec<VarId>,
    pub parts: Vec<Part>,
    /// The model's breakpoints (the parameter sides of its relations with `time`), ascending.
    breakpoints: Vec<f64>,
    /// The time those relations read, fixed inside the interval the integrator is in; `None`:
    /// the time itself.
    switch_time: Option<f64>,
}

/// How to split the model: `groups` says which steps share computed nodes and `parts` lists
/// the steps and states of each part after the whole model.
pub struct Layout {
    pub mode: WeakReads,
    pub groups: Groups,
    /// `(steps, states)` per extra part.
    pub parts: Vec<(Vec<usize>, Vec<usize>)>,
    /// When the extra parts are blocks of rows of the one system ([`super::rows`]), whose
    /// steps read every state's register: per state, the group of its block.
    pub row_blocks: Option<Vec<u32>>,
}

impl Layout {
    /// The model as one system.
    pub fn whole(causal: &Causal) -> Layout {
        Layout {
            mode: WeakReads::Coupled,
            groups: Groups::single(causal.steps.len()),
            parts: Vec::new(),
            row_blocks: None,
        }
    }
}

impl CompiledModel {
    /// The first time and step (into `Causal::steps`) where an algebraic loop's solution had
    /// a singular Jacobian in this model's evaluations: where its solutions may be many.
    pub fn singular_loop(&self) -> Option<(f64, usize)> {
        self.scratch.singular
    }

    /// The guesses at each point observed since the last call, in order (see
    /// [`OdeSystem::observing`]).
    pub fn take_observed(&mut self) -> Vec<Vec<f64>> {
        let n = self.guess_regs.len();
        let observed = std::mem::take(&mut self.observed);
        if n == 0 {
            return Vec::new();
        }
        observed.chunks(n).map(<[f64]>::to_vec).collect()
    }

    /// Compiles the model; `point` supplies parameter values (and initial register values).
    pub fn new(
        dae: &Dae,
        causal: &Causal,
        jac: &OdeJacobian,
        point: &Point,
        layout: &Layout,
    ) -> CompiledModel {
        let row_group = row_groups(causal, &layout.groups);
        // Blocks of rows: an entry whose row and column share a block is in that block's
        // group, so that the block's Jacobian (its own entries alone) reuses no node computed
        // outside it; the others are in the outputs' group.
        let entry_group = |row: usize, col: usize| match &layout.row_blocks {
            Some(block) if block[row] == block[col] => block[row],
            Some(_) => layout.groups.inputs + 1,
            None => row_group[row],
        };
        let symbolic: Vec<(ExprId, u32)> = jac
            .entries
            .iter()
            .filter_map(|e| e.expr.map(|x| (x, entry_group(e.row, e.col))))
            .collect();
        let tape = compile(dae, causal, layout.mode, &layout.groups, &symbolic);
        let mut codes = Vec::with_capacity(jac.entries.len());
        let mut next = 0;
        for e in &jac.entries {
            codes.push(match e.expr {
                Some(_) => {
                    next += 1;
                    EntryCode::Symbolic(next - 1)
                }
                None => EntryCode::Implicit,
            });
        }
        // Entries of a `for` equation's instances are often one shared expression.
        let mut known: HashMap<ExprId, bool> = HashMap::default();
        let constant: Vec<bool> = jac
            .entries
            .iter()
            .map(|e| {
                e.expr.is_some_and(|x| {
                    *known
                        .entry(x)
                        .or_insert_with(|| reads_parameters_only(dae, x))
                })
            })
            .collect();
        let state_regs: Vec<Reg> = causal.states.iter().map(|&v| tape.var_reg(v)).collect();
        let der_regs: Vec<Reg> = causal.states.iter().map(|&v| tape.der_reg(v)).collect();
        let whole = (
            (0..causal.steps.len()).collect(),
            (0..causal.states.len()).collect(),
        );
        let parts: Vec<Part> = std::iter::once(&whole)
            .chain(&layout.parts)
            .enumerate()
            .map(|(p, (steps, states))| {
                let entries = EntryInfo {
                    codes: &codes,
                    constant: &constant,
                };
                let regs = PartRegisters {
                    states: &state_regs,
                    ders: &der_regs,
                };
                let part = make_part(&tape, jac, entries, regs, steps, states);
                Part {
                    rows: p > 0 && layout.row_blocks.is_some(),
                    ..part
                }
            })
            .collect();
        let guess_regs = tape
            .steps
            .iter()
            .filter(|step| !matches!(step.code, StepCode::Assign))
            .flat_map(|step| step.targets.iter().copied())
            .collect();
        let mut model = CompiledModel {
            guess_regs,
            observed: Vec::new(),
            regs: tape.registers(),
            tangents: vec![0.0; tape.registers],
            scratch: LoopScratch::new(&tape),
            tape,
            state_regs,
            states: causal.states.clone(),
            parts,
            breakpoints: Vec::new(),
            switch_time: None,
        };
        model.load(point);
        model
    }

    /// Loads every variable, derivative and the time from `point` and recomputes what depends
    /// on parameters only.
    pub fn load(&mut self, point: &Point) {
        let n = self.tape.vars;
        self.regs[..n].copy_from_slice(&point.vars);
        self.regs[n..2 * n].copy_from_slice(&point.ders);
        self.set_time(point.time);
        self.tape.run_setup(&mut self.regs);
        self.breakpoints = breakpoint_times(&self.tape, &self.regs);
        self.forget_evaluations();
    }

    /// The homotopy parameter `λ`.
    pub fn homotopy(&self) -> f64 {
        self.regs[self.tape.homotopy as usize]
    }

    /// Sets the homotopy parameter `λ` (1 for the actual model) and recomputes what depends
    /// on parameters only.
    pub fn set_homotopy(&mut self, lambda: f64) {
        self.regs[self.tape.homotopy as usize] = lambda;
        self.tape.run_setup(&mut self.regs);
        self.forget_evaluations();
    }

    /// Writes the time, and the time relations with breakpoints read.
    fn set_time(&mut self, t: f64) {
        self.regs[self.tape.time_reg() as usize] = t;
        self.regs[self.tape.switch_time as usize] = self.switch_time.unwrap_or(t);
    }

    /// Holds the relations with breakpoints at their values inside the interval that ends at
    /// `t` (before a switch at `t`), for the row recorded just before an event there.
    pub fn enter_interval_to(&mut self, t: f64) {
        let before = self.breakpoints.partition_point(|&b| b < t);
        let from = (before.checked_sub(1)).map_or(f64::NEG_INFINITY, |k| self.breakpoints[k]);
        self.enter_interval(from, t);
    }

    /// Holds the relations with breakpoints at their values inside the interval that starts
    /// at `t` (after a switch at `t`, as after an event), for evaluating the model at `t`.
    pub fn enter_interval_from(&mut self, t: f64) {
        let after = self.breakpoints.partition_point(|&b| b <= t);
        let next = self
            .breakpoints
            .get(after)
            .copied()
            .unwrap_or(f64::INFINITY);
        self.enter_interval(t, next);
    }

    /// Registers were written: no part's last evaluation still holds (a Jacobian at its point
    /// must evaluate again).
    fn forget_evaluations(&mut self) {
        for part in &mut self.parts {
            part.evaluated_at = None;
        }
    }

    /// Writes the current values into `point` (of this model's variables).
    pub fn store(&self, point: &mut Point) {
        let n = self.tape.vars;
        point.vars.copy_from_slice(&self.regs[..n]);
        point.ders.copy_from_slice(&self.regs[n..2 * n]);
    }

    /// The current values as a [`Point`] (for reference evaluation and output).
    pub fn point(&self) -> Point {
        let n = self.tape.vars;
        Point {
            vars: self.regs[..n].to_vec(),
            ders: self.regs[n..2 * n].to_vec(),
            time: self.regs[self.tape.time_reg() as usize],
        }
    }

    pub fn value(&self, reg: Reg) -> f64 {
        self.regs[reg as usize]
    }

    pub fn set_value(&mut self, reg: Reg, x: f64) {
        self.regs[reg as usize] = x;
        self.forget_evaluations();
    }

    /// Copies the registers `regs` from `other`, a model compiled from the same inputs.
    pub fn copy_values(&mut self, other: &CompiledModel, regs: &[Reg]) {
        for &r in regs {
            self.regs[r as usize] = other.regs[r as usize];
        }
        self.forget_evaluations();
    }

    /// The value of `e` (over the pool the model was compiled from) at the current values;
    /// NaN where it reads something the tape does not hold.
    pub fn evaluate(&self, pool: &ExprPool, e: ExprId) -> f64 {
        pool.eval(e, &RegisterValues(self)).unwrap_or(f64::NAN)
    }

    /// The current state vector.
    pub fn state_values(&self) -> Vec<f64> {
        self.state_regs.iter().map(|&r| self.value(r)).collect()
    }

    pub fn unknown_reg(&self, u: Unknown) -> Reg {
        self.tape.unknown_reg(u)
    }

    /// Sets time and the part's states, then runs the part's steps (long batched runs in
    /// halves on `pair`'s two threads).
    pub fn evaluate_part(
        &mut self,
        p: usize,
        t: f64,
        x: &[f64],
        pair: Option<&Pair>,
    ) -> Result<(), EvalFailure> {
        self.set_time(t);
        // The time and the part's registers change under the other parts too.
        self.forget_evaluations();
        let part = &mut self.parts[p];
        part.state_regs.scatter(x, &mut self.regs);
        self.tape
            .run_plan(&part.plan, &mut self.regs, &mut self.scratch, pair)?;
        if part.constant_jacobian {
            // Its Jacobian never needs the point (and copying it would cost a pass over x).
            return Ok(());
        }
        part.evaluated_at = Some(t);
        part.evaluated_x.clear();
        part.evaluated_x.extend_from_slice(x);
        Ok(())
    }

    /// Runs steps outside every part (outputs) at the current values.
    pub fn run_steps(&mut self, steps: &[usize]) -> Result<(), EvalFailure> {
        for &k in steps {
            self.tape.run_step(k, &mut self.regs, &mut self.scratch)?;
        }
        Ok(())
    }

    fn part_rhs(
        &mut self,
        p: usize,
        t: f64,
        x: &[f64],
        dx: &mut [f64],
        pair: Option<&Pair>,
    ) -> Result<(), EvalFailure> {
        self.evaluate_part(p, t, x, pair)?;
        self.parts[p].der_regs.gather(&self.regs, dx);
        Ok(())
    }

    /// The Jacobian of part `p` at `(t, x)`, one value per entry of its pattern; `x` is the
    /// part's states, or for a block of rows every state. (All of the part's entries: one
    /// entry's code may reuse a node another entry of the part computed.)
    fn part_jacobian(
        &mut self,
        p: usize,
        (t, x): (f64, &[f64]),
        values: &mut [f64],
    ) -> Result<(), EvalFailure> {
        let part = &self.parts[p];
        // A constant Jacobian's entries read parameters only: no evaluation at the point.
        let fresh =
            part.constant_jacobian || (part.evaluated_at == Some(t) && part.evaluated_x == x);
        if !fresh && part.rows {
            self.evaluate_rows(p, t, x)?;
        } else if !fresh {
            self.evaluate_part(p, t, x, None)?;
        }
        let part = &self.parts[p];
        for (value, code) in values.iter_mut().zip(&part.entries) {
            if let EntryCode::Symbolic(i) = *code {
                *value = self.tape.run_extra(i, &mut self.regs);
            }
        }
        // A block of rows reads every state: each pass starts with all their tangents zero.
        let seeds: &[usize] = if part.rows {
            &self.parts[0].states
        } else {
            &part.states
        };
        for (col, entries) in &part.implicit_columns {
            for &s in seeds {
                self.tangents[self.state_regs[s] as usize] = 0.0;
            }
            self.tangents[self.state_regs[part.states[*col]] as usize] = 1.0;
            self.tape.tangents(
                part.plan.steps(),
                &mut self.regs,
                &mut self.tangents,
                &mut self.scratch,
            );
            for &(entry, der) in entries {
                values[entry] = self.tangents[der as usize];
            }
        }
        Ok(())
    }

    /// Sets time and every state from `x`, then runs block of rows `p`'s steps.
    fn evaluate_rows(&mut self, p: usize, t: f64, x: &[f64]) -> Result<(), EvalFailure> {
        self.set_time(t);
        self.forget_evaluations();
        self.parts[0].state_regs.scatter(x, &mut self.regs);
        let part = &mut self.parts[p];
        self.tape
            .run_plan(&part.plan, &mut self.regs, &mut self.scratch, None)?;
        if !part.constant_jacobian {
            part.evaluated_at = Some(t);
            part.evaluated_x.clear();
            part.evaluated_x.extend_from_slice(x);
        }
        Ok(())
    }

    /// The part as an [`OdeSystem`] over its own states.
    pub fn part(&mut self, p: usize) -> PartSystem<'_> {
        PartSystem { model: self, p }
    }
}

/// What code generation reads of a compiled model's part: its Jacobian pattern and, per
/// entry, the extra expression of the tape computing it (`None`: through an algebraic loop,
/// by a tangent pass), whether those are constant, and the steps it runs in order.
pub struct PartView<'a> {
    pub pattern: &'a [(usize, usize)],
    pub entries: Vec<Option<usize>>,
    pub constant_jacobian: bool,
    pub steps: &'a [usize],
    /// The entries through loops, by column: the column's state register, and per entry its
    /// index in the pattern and the register of its row's derivative.
    pub implicit: Vec<(Reg, Vec<(usize, Reg)>)>,
    /// The state registers whose tangents a column's pass starts from zero: the part's, or
    /// for a block of rows every state's.
    pub seeds: Vec<Reg>,
}

impl CompiledModel {
    /// Part `p`'s states (indices into `Causal::states`).
    pub fn part_states(&self, p: usize) -> &[usize] {
        &self.parts[p].states
    }

    /// The register of state `i` (of `Causal::states`).
    pub fn state_reg(&self, i: usize) -> Reg {
        self.state_regs[i]
    }

    /// The register of state `i`'s derivative.
    pub fn der_reg(&self, i: usize) -> Reg {
        self.tape.der_reg(self.states[i])
    }

    pub fn part_view(&self, p: usize) -> PartView<'_> {
        let part = &self.parts[p];
        PartView {
            pattern: &part.pattern,
            entries: part
                .entries
                .iter()
                .map(|e| match *e {
                    EntryCode::Symbolic(i) => Some(i),
                    EntryCode::Implicit => None,
                })
                .collect(),
            constant_jacobian: part.constant_jacobian,
            steps: part.plan.steps(),
            implicit: part
                .implicit_columns
                .iter()
                .map(|(col, entries)| (self.state_regs[part.states[*col]], entries.clone()))
                .collect(),
            seeds: if part.rows {
                &self.parts[0].states
            } else {
                &part.states
            }
            .iter()
            .map(|&s| self.state_regs[s])
            .collect(),
        }
    }
}

/// Per state row: the group of the step that solves its derivative.
fn row_groups(causal: &Causal, groups: &Groups) -> Vec<u32> {
    let mut by_var = std::collections::HashMap::new();
    for (k, step) in causal.steps.iter().enumerate() {
        for u in step.targets() {
            if let Unknown::Derivative(v) = u {
                by_var.insert(v, groups.of_step[k]);
            }
        }
    }
    causal
        .states
        .iter()
        .map(|v| by_var.get(v).copied().unwrap_or(groups.inputs))
        .collect()
}

/// The registers as values of the variables, derivatives and time.
struct RegisterValues<'m>(&'m CompiledModel);

impl Values for RegisterValues<'_> {
    fn var(&self, v: VarId) -> Option<f64> {
        Some(self.0.value(self.0.tape.var_reg(v)))
    }
    fn der(&self, v: VarId) -> Option<f64> {
        Some(self.0.value(self.0.tape.der_reg(v)))
    }
    fn time(&self) -> Option<f64> {
        Some(self.0.value(self.0.tape.time_reg()))
    }
}

/// The finite values of the tape's breakpoint registers at 15 digits, as the sample instants
/// are (so that a ramp's end `0.025 + 0.05` meets a sample at 0.075), ascending, without
/// repeats.
fn breakpoint_times(tape: &Tape, regs: &[f64]) -> Vec<f64> {
    let mut times: Vec<f64> = tape
        .breakpoints
        .iter()
        .map(|&r| crate::numfmt::decimal(regs[r as usize]))
        .filter(|t| t.is_finite())
        .collect();
    times.sort_by(f64::total_cmp);
    times.dedup();
    times
}

/// A time strictly inside `(from, to)` (either may be infinite), where the relations with
/// breakpoints take the values they keep over the whole interval.
fn inside(from: f64, to: f64) -> f64 {
    match (from.is_finite(), to.is_finite()) {
        (true, true) => from + (to - from) / 2.0,
        (true, false) => from + from.abs().max(1.0),
        (false, _) => to - to.abs().max(1.0),
    }
}

/// Whether `root` reads no time, state, derivative, algebraic or weak value: only parameters,
/// constants and literals, fixed for a run.
fn reads_parameters_only(dae: &Dae, root: ExprId) -> bool {
    let mut fixed = true;
    dae.pool.visit_leaves(root, |leaf| {
        fixed &= matches!(leaf, Node::Var(v)
            if matches!(dae.var(v).kind, VarKind::Parameter | VarKind::Constant));
    });
    fixed
}

/// Per Jacobian entry: how its value is computed and whether it is constant.
#[derive(Clone, Copy)]
struct EntryInfo<'a> {
    codes: &'a [EntryCode],
    constant: &'a [bool],
}

/// Per state of the model: its register and its derivative's.
#[derive(Clone, Copy)]
struct PartRegisters<'a> {
    states: &'a [Reg],
    ders: &'a [Reg],
}

fn make_part(
    tape: &Tape,
    jac: &OdeJacobian,
    info: EntryInfo<'_>,
    regs: PartRegisters<'_>,
    steps: &[usize],
    states: &[usize],
) -> Part {
    let der_regs = regs.ders;
    let mut local = vec![usize::MAX; der_regs.len()];
    for (i, &s) in states.iter().enumerate() {
        local[s] = i;
    }
    let mut pattern = Vec::new();
    let mut entries = Vec::new();
    let mut implicit: std::collections::BTreeMap<usize, Vec<(usize, Reg)>> = Default::default();
    let mut constant_jacobian = true;
    // Entries whose column lies outside the part are weak reads, held during its step.
    for ((e, code), &constant) in jac.entries.iter().zip(info.codes).zip(info.constant) {
        let (r, c) = (local[e.row], local[e.col]);
        if r == usize::MAX || c == usize::MAX {
            continue;
        }
        constant_jacobian &= constant;
        if let EntryCode::Implicit = code {
            implicit
                .entry(c)
                .or_default()
                .push((pattern.len(), der_regs[e.row]));
        }
        pattern.push((r, c));
        entries.push(*code);
    }
    Part {
        plan: tape.plan(steps),
        states: states.to_vec(),
        state_regs: Registers::new(states.iter().map(|&s| regs.states[s]).collect()),
        der_regs: Registers::new(states.iter().map(|&s| der_regs[s]).collect()),
        pattern,
        entries,
        implicit_columns: implicit.into_iter().collect(),
        evaluated_at: None,
        evaluated_x: Vec::new(),
        constant_jacobian,
        rows: false,
    }
}

/// One part of a compiled model seen as an ODE over the part's states.
pub struct PartSystem<'m> {
    pub model: &'m mut CompiledModel,
    p: usize,
}

impl OdeSystem for PartSystem<'_> {
    fn dim(&self) -> usize {
        self.model.parts[self.p].states.len()
    }

    fn rhs(&mut self, t: f64, x: &[f64], dx: &mut [f64]) -> Result<(), EvalFailure> {
        self.model.part_rhs(self.p, t, x, dx, None)
    }

    fn rhs_on(
        &mut self,
        t: f64,
        x: &[f64],
        dx: &mut [f64],
        pair: Option<&Pair>,
    ) -> Result<(), EvalFailure> {
        self.model.part_rhs(self.p, t, x, dx, pair)
    }

    fn jacobian_pattern(&self) -> &[(usize, usize)] {
        &self.model.parts[self.p].pattern
    }

    fn jacobian(&mut self, t: f64, x: &[f64], values: &mut [f64]) -> Result<(), EvalFailure> {
        self.model.part_jacobian(self.p, (t, x), values)
    }

    fn jacobian_is_constant(&self) -> bool {
        self.model.parts[self.p].constant_jacobian
    }

    fn breakpoints(&self) -> &[f64] {
        self.model.breakpoints()
    }

    fn enter_interval(&mut self, from: f64, to: f64) {
        self.model.enter_interval(from, to);
    }
}

/// The whole model as an ODE over `Causal::states`.
impl OdeSystem for CompiledModel {
    fn dim(&self) -> usize {
        self.states.len()
    }

    fn guesses(&self, out: &mut Vec<f64>) {
        out.clear();
        out.extend(self.guess_regs.iter().map(|&r| self.regs[r as usize]));
    }

    fn set_guesses(&mut self, guesses: &[f64]) {
        for (&r, &g) in self.guess_regs.iter().zip(guesses) {
            self.regs[r as usize] = g;
        }
    }

    fn observing(&mut self) {
        let regs = &self.regs;
        self.observed
            .extend(self.guess_regs.iter().map(|&r| regs[r as usize]));
    }

    fn rhs(&mut self, t: f64, x: &[f64], dx: &mut [f64]) -> Result<(), EvalFailure> {
        self.part_rhs(0, t, x, dx, None)
    }

    fn rhs_on(
        &mut self,
        t: f64,
        x: &[f64],
        dx: &mut [f64],
        pair: Option<&Pair>,
    ) -> Result<(), EvalFailure> {
        self.part_rhs(0, t, x, dx, pair)
    }

    fn jacobian_pattern(&self) -> &[(usize, usize)] {
        &self.parts[0].pattern
    }

    fn jacobian(&mut self, t: f64, x: &[f64], values: &mut [f64]) -> Result<(), EvalFailure> {
        self.part_jacobian(0, (t, x), values)
    }

    fn jacobian_entries(
        &mut self,
        block: Option<usize>,
        (t, x): (f64, &[f64]),
        entries: &[usize],
        values: &mut [f64],
    ) -> Result<(), EvalFailure> {
        match block {
            // The block's own pattern holds exactly these entries, in this order.
            Some(p) => self.part_jacobian(p, (t, x), values),
            None => {
                let mut all = vec![0.0; self.parts[0].pattern.len()];
                self.part_jacobian(0, (t, x), &mut all)?;
                super::system::pick(&all, entries, values);
                Ok(())
            }
        }
    }

    fn rows_block(&self, states: &[usize]) -> Option<usize> {
        self.parts.iter().position(|p| p.rows && p.states == states)
    }

    fn rhs_rows(
        &mut self,
        block: Option<usize>,
        t: f64,
        x: &[f64],
        dx: &mut [f64],
    ) -> Result<(), EvalFailure> {
        let Some(p) = block else {
            return self.rhs(t, x, dx);
        };
        self.evaluate_rows(p, t, x)?;
        let part = &self.parts[p];
        for (k, &i) in part.states.iter().enumerate() {
            dx[i] = self.regs[part.der_regs.reg(k) as usize];
        }
        Ok(())
    }

    fn jacobian_is_constant(&self) -> bool {
        self.parts[0].constant_jacobian
    }

    fn breakpoints(&self) -> &[f64] {
        &self.breakpoints
    }

    fn enter_interval(&mut self, from: f64, to: f64) {
        self.switch_time = Some(inside(from, to));
        let t = self.regs[self.tape.time_reg() as usize];
        self.set_time(t);
        self.forget_evaluations();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_registers_are_a_run_and_move_as_listed() {
        let run = Registers::new(vec![5, 6, 7]);
        assert!(matches!(run, Registers::Run { start: 5, len: 3 }));
        let scattered = Registers::new(vec![5, 7, 6]);
        assert!(matches!(scattered, Registers::Scattered(_)));
        for (registers, order) in [(run, [5, 6, 7]), (scattered, [5, 7, 6])] {
            let mut regs = vec![0.0; 9];
            registers.scatter(&[1.0, 2.0, 3.0], &mut regs);
            for (k, &r) in order.iter().enumerate() {
                assert_eq!(regs[r], k as f64 + 1.0);
            }
            let mut back = [0.0; 3];
            registers.gather(&regs, &mut back);
            assert_eq!(back, [1.0, 2.0, 3.0]);
        }
    }
}
