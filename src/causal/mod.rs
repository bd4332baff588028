//! The causal form (SPEC §4): BLT blocks turned into steps — explicit assignments for blocks
//! affine in their unknown, scalar Newton for other single equations, Newton on the block for
//! algebraic loops — and a reference evaluator of those steps at an operating point.

mod tearing;

use std::collections::HashMap;

use crate::dae::{Dae, VarKind};
use crate::expr::{ExprId, ExprPool, Node, Values, VarId};
use crate::newton;
use crate::structure::{Block, BlockKind, Structure, Unknown};

#[derive(Clone, Debug)]
pub enum Step {
    /// `target := expr`
    Assign {
        target: Unknown,
        expr: ExprId,
        equation: usize,
    },
    /// `residual(target) = 0` by scalar Newton with the symbolic `derivative`.
    Newton {
        target: Unknown,
        residual: ExprId,
        derivative: ExprId,
        equation: usize,
    },
    /// Several residuals for several unknowns, with the block's symbolic Jacobian
    /// `(row, col, ∂r_row/∂target_col)`.
    Loop {
        targets: Vec<Unknown>,
        residuals: Vec<ExprId>,
        jacobian: Vec<(usize, usize, ExprId)>,
        equations: Vec<usize>,
    },
}

impl Step {
    pub fn targets(&self) -> Vec<Unknown> {
        match self {
            Step::Assign { target, .. } | Step::Newton { target, .. } => vec![*target],
            Step::Loop { targets, .. } => targets.clone(),
        }
    }

    /// The expressions the step evaluates: its assignment, or its residuals.
    pub fn exprs(&self) -> &[ExprId] {
        match self {
            Step::Assign { expr, .. } => std::slice::from_ref(expr),
            Step::Newton { residual, .. } => std::slice::from_ref(residual),
            Step::Loop { residuals, .. } => residuals,
        }
    }

    /// The equations of [`Step::exprs`], one for one.
    pub fn equations(&self) -> &[usize] {
        match self {
            Step::Assign { equation, .. } | Step::Newton { equation, .. } => {
                std::slice::from_ref(equation)
            }
            Step::Loop { equations, .. } => equations,
        }
    }
}

/// Weak reads that close a cycle with the other dependencies (see
/// [`Causal::with_weak_reads_after_writers`]): the causal form unchanged, and an equation
/// whose weak read is on such a cycle.
#[derive(Debug)]
pub struct WeakCycle {
    pub causal: Causal,
    pub equation: usize,
}

/// A read `(reader, writer)` of a step by an earlier one (a weak read) on a cycle of reads
/// among the steps a topological sort left `waiting`. Every such step waits for another that
/// waits, so walking from one to a step it waits for comes back to a step already seen; the
/// cycle that closes cannot be all forward reads, whose steps' indices only grow.
fn backward_read_on_a_cycle(before: &[Vec<usize>], waiting: &[usize]) -> (usize, usize) {
    let stuck = |k: usize| waiting[k] > 0;
    let mut seen_at: Vec<Option<usize>> = vec![None; waiting.len()];
    let mut path: Vec<usize> = Vec::new();
    let mut k = (0..waiting.len())
        .find(|&k| stuck(k))
        .expect("a step left waiting");
    while seen_at[k].is_none() {
        seen_at[k] = Some(path.len());
        path.push(k);
        k = *before[k]
            .iter()
            .find(|&&w| stuck(w))
            .expect("a waiting step waits for a waiting step");
    }
    // The cycle is path[seen_at[k]..], each step reading the one after it, the last reading
    // the first.
    let cycle = &path[seen_at[k].unwrap_or(0)..];
    let reads = cycle.iter().zip(cycle.iter().skip(1).chain(cycle.first()));
    reads
        .map(|(&reader, &writer)| (reader, writer))
        .find(|&(reader, writer)| writer > reader)
        .expect("a cycle of reads has a backward one")
}

/// The node an unknown stands for in expressions.
pub fn leaf(u: Unknown) -> Node {
    match u {
        Unknown::Derivative(v) => Node::Der(v),
        Unknown::Algebraic(v) => Node::Var(v),
    }
}

#[derive(Clone, Debug)]
pub struct Causal {
    pub steps: Vec<Step>,
    /// The states, in variable order; row/column `i` of the ODE Jacobian is `states[i]`.
    pub states: Vec<VarId>,
    /// Per step: the BLT block (index into `Structure::blocks`) it solves part or all of. A
    /// torn loop is several steps: Newton on its tearing variables, then an assignment per
    /// unknown computed from them.
    pub block_of_step: Vec<usize>,
}

/// Builds the causal form. The pool grows with solved forms and derivatives.
pub fn causal_form(dae: &mut Dae, structure: &Structure) -> Causal {
    let mut steps = Vec::with_capacity(structure.blocks.len());
    let mut block_of_step = Vec::with_capacity(structure.blocks.len());
    let mut parameters = HashMap::new();
    for (b, block) in structure.blocks.iter().enumerate() {
        let solved = match block.kind {
            BlockKind::Explicit => vec![explicit_step(dae, block.equations[0], block.unknowns[0])],
            BlockKind::Loop => loop_steps(dae, block, &mut parameters),
        };
        block_of_step.extend(std::iter::repeat_n(b, solved.len()));
        steps.extend(solved);
    }
    let states = dae
        .var_ids()
        .filter(|&v| dae.var(v).kind == VarKind::State)
        .collect();
    Causal {
        steps,
        states,
        block_of_step,
    }
}

/// Equation `e` solved for `target`: assigned where it is affine in it, else by scalar Newton.
fn explicit_step(dae: &mut Dae, e: usize, target: Unknown) -> Step {
    let residual = dae.equations[e].residual;
    match dae.pool.solve_affine(residual, leaf(target)) {
        Some(expr) => Step::Assign {
            target,
            expr,
            equation: e,
        },
        None => {
            let derivative = dae.pool.diff(residual, leaf(target));
            Step::Newton {
                target,
                residual,
                derivative,
                equation: e,
            }
        }
    }
}

/// An algebraic loop: Newton on all its unknowns where it is linear in them (one iteration
/// solves it), else torn where tearing leaves fewer unknowns to Newton.
/// `parameters` caches the parameters' values that tearing reads.
fn loop_steps(dae: &mut Dae, block: &Block, parameters: &mut HashMap<VarId, f64>) -> Vec<Step> {
    let (equations, unknowns) = (&block.equations, &block.unknowns);
    let residuals: Vec<ExprId> = equations
        .iter()
        .map(|&e| dae.equations[e].residual)
        .collect();
    let jacobian = loop_jacobian(&mut dae.pool, &residuals, unknowns);
    let has_weak = unknowns.iter().any(|u| dae.var(u.var()).weak);
    let torn = if has_weak || is_linear(&dae.pool, &jacobian, unknowns) {
        None
    } else {
        tearing::tear(dae, &residuals, unknowns, parameters)
    };
    let Some(torn) = torn else {
        return vec![Step::Loop {
            targets: unknowns.to_vec(),
            residuals,
            jacobian,
            equations: equations.to_vec(),
        }];
    };
    let torn_residuals = tearing::residuals_in_tears(&mut dae.pool, &residuals, unknowns, &torn);
    let tears: Vec<Unknown> = torn.tears.iter().map(|&v| unknowns[v]).collect();
    let mut steps = vec![Step::Loop {
        jacobian: loop_jacobian(&mut dae.pool, &torn_residuals, &tears),
        targets: tears,
        residuals: torn_residuals,
        equations: torn
            .residual_equations
            .iter()
            .map(|&e| equations[e])
            .collect(),
    }];
    steps.extend(torn.inner.iter().map(|&(e, v, expr)| Step::Assign {
        target: unknowns[v],
        expr,
        equation: equations[e],
    }));
    steps
}

/// The symbolic Jacobian `(row, col, ∂residuals[row]/∂targets[col])` of a loop, its
/// structural zeros left out.
fn loop_jacobian(
    pool: &mut ExprPool,
    residuals: &[ExprId],
    targets: &[Unknown],
) -> Vec<(usize, usize, ExprId)> {
    let mut jacobian = Vec::new();
    for (r, &res) in residuals.iter().enumerate() {
        for (c, &u) in targets.iter().enumerate() {
            if pool.depends_on(res, leaf(u)) {
                let d = pool.diff(res, leaf(u));
                jacobian.push((r, c, d));
            }
        }
    }
    jacobian
}

/// Whether no entry of a loop's Jacobian depends on one of its unknowns.
fn is_linear(pool: &ExprPool, jacobian: &[(usize, usize, ExprId)], unknowns: &[Unknown]) -> bool {
    let leaves: std::collections::HashSet<Node> = unknowns.iter().map(|&u| leaf(u)).collect();
    jacobian.iter().all(|&(_, _, d)| {
        let mut varies = false;
        pool.visit_leaves(d, |l| varies |= leaves.contains(&l));
        !varies
    })
}

/// Values of every variable and derivative at one instant.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Point {
    pub vars: Vec<f64>,
    pub ders: Vec<f64>,
    pub time: f64,
}

impl Values for Point {
    fn var(&self, v: VarId) -> Option<f64> {
        self.vars.get(v.0 as usize).copied()
    }
    fn der(&self, v: VarId) -> Option<f64> {
        self.ders.get(v.0 as usize).copied()
    }
    fn time(&self) -> Option<f64> {
        Some(self.time)
    }
}

impl Point {
    pub fn get(&self, u: Unknown) -> f64 {
        match u {
            Unknown::Derivative(v) => self.ders[v.0 as usize],
            Unknown::Algebraic(v) => self.vars[v.0 as usize],
        }
    }

    pub fn set(&mut self, u: Unknown, x: f64) {
        match u {
            Unknown::Derivative(v) => self.ders[v.0 as usize] = x,
            Unknown::Algebraic(v) => self.vars[v.0 as usize] = x,
        }
    }
}

/// Why evaluating the causal form failed.
#[derive(Clone, Debug, PartialEq)]
pub enum EvalFailure {
    /// Newton did not converge on this step (index into `Causal::steps`), leaving this
    /// largest residual.
    NoConvergence { step: usize, residual: f64 },
    /// A value became NaN or infinite on this step.
    NotFinite(usize),
    /// A parameter's value could not be computed (its binding refers to itself).
    Parameter(VarId),
}

/// Parameters, constants and inputs evaluated, states at their start values (default 0).
pub fn initial_point(dae: &Dae) -> Result<Point, EvalFailure> {
    let n = dae.variables.len();
    let mut point = Point {
        vars: vec![0.0; n],
        ders: vec![0.0; n],
        time: 0.0,
    };
    let mut known: HashMap<VarId, f64> = HashMap::new();
    for v in dae.var_ids() {
        let var = dae.var(v);
        let value = match var.kind {
            VarKind::Parameter | VarKind::Constant => parameter_value(dae, v, &mut known, 0)?,
            _ => match var.start {
                Some(s) => eval_known(dae, s, &mut known, 0)?,
                None => 0.0,
            },
        };
        point.vars[v.0 as usize] = value;
    }
    Ok(point)
}

fn parameter_value(
    dae: &Dae,
    v: VarId,
    known: &mut HashMap<VarId, f64>,
    depth: usize,
) -> Result<f64, EvalFailure> {
    if let Some(&x) = known.get(&v) {
        return Ok(x);
    }
    if depth > 256 {
        return Err(EvalFailure::Parameter(v));
    }
    let var = dae.var(v);
    let x = match var.binding.or(var.start) {
        Some(b) => eval_known(dae, b, known, depth + 1)?,
        None => 0.0,
    };
    known.insert(v, x);
    Ok(x)
}

/// Evaluates an expression over parameters only.
fn eval_known(
    dae: &Dae,
    e: ExprId,
    known: &mut HashMap<VarId, f64>,
    depth: usize,
) -> Result<f64, EvalFailure> {
    let mut params = Vec::new();
    dae.pool.visit_leaves(e, |n| {
        if let Node::Var(v) = n {
            params.push(v);
        }
    });
    for v in params {
        parameter_value(dae, v, known, depth + 1)?;
    }
    struct Known<'k>(&'k HashMap<VarId, f64>);
    impl Values for Known<'_> {
        fn var(&self, v: VarId) -> Option<f64> {
            Some(self.0.get(&v).copied().unwrap_or(0.0))
        }
        fn der(&self, _: VarId) -> Option<f64> {
            Some(0.0)
        }
        fn time(&self) -> Option<f64> {
            Some(0.0)
        }
    }
    Ok(dae.pool.eval(e, &Known(known)).unwrap_or(f64::NAN))
}

impl Causal {
    /// The steps reordered so that a step reading `last(v)`, or a weak variable `v`, comes
    /// after the step that solves `v`, for simulating the model as one system, where such a
    /// read is of `v` itself (`--partition none`). The causal order leaves weak reads out
    /// (SPEC §2.1), so a reader may come first, and would then read the value `v` had at the
    /// previous evaluation: the right-hand side would not be a function of the time and the
    /// states.
    ///
    /// Steps keep their order where the dependencies allow (a smallest-index-first
    /// topological sort). `Err` with the form unchanged when the weak reads close a cycle
    /// with the other dependencies: there is then no order in which every read is current.
    pub fn with_weak_reads_after_writers(self, dae: &Dae) -> Result<Causal, WeakCycle> {
        // Most models have no weak read: a pass over the variables and the nodes says so
        // without hashing every step's leaves.
        if !(dae.variables.iter().any(|v| v.weak) || dae.pool.has_last_reads()) {
            return Ok(self);
        }
        let pool = &dae.pool;
        let mut writer: HashMap<Node, usize> = HashMap::new();
        for (k, step) in self.steps.iter().enumerate() {
            for u in step.targets() {
                writer.insert(leaf(u), k);
            }
        }
        let n = self.steps.len();
        // The steps whose targets expression `e` of step `k` reads, other than `k`.
        let writers_read = |k: usize, e: ExprId, reads: &mut Vec<usize>| {
            pool.visit_leaves(e, |l| {
                let read = match l {
                    Node::Last(v) => Node::Var(v),
                    other => other,
                };
                if let Some(&w) = writer.get(&read).filter(|&&w| w != k) {
                    reads.push(w);
                }
            });
        };
        let mut after: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut before: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut waiting = vec![0usize; n];
        for (k, step) in self.steps.iter().enumerate() {
            let mut reads: Vec<usize> = Vec::new();
            for &e in step.exprs() {
                writers_read(k, e, &mut reads);
            }
            reads.sort_unstable();
            reads.dedup();
            waiting[k] = reads.len();
            for &w in &reads {
                after[w].push(k);
            }
            before[k] = reads;
        }
        // Only a weak read (of `last(v)` or of a weak variable) can come before its writer:
        // the causal order follows every other read.
        let out_of_order = before
            .iter()
            .enumerate()
            .any(|(k, reads)| reads.iter().any(|&w| w > k));
        if !out_of_order {
            return Ok(self);
        }
        let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<usize>> = (0..n)
            .filter(|&k| waiting[k] == 0)
            .map(std::cmp::Reverse)
            .collect();
        let mut order = Vec::with_capacity(n);
        while let Some(std::cmp::Reverse(k)) = ready.pop() {
            order.push(k);
            for &next in &after[k] {
                waiting[next] -= 1;
                if waiting[next] == 0 {
                    ready.push(std::cmp::Reverse(next));
                }
            }
        }
        if order.len() < n {
            let (reader, writer) = backward_read_on_a_cycle(&before, &waiting);
            let step = &self.steps[reader];
            let equation = (step.exprs().iter().zip(step.equations()))
                .find(|&(&e, _)| {
                    let mut reads = Vec::new();
                    writers_read(reader, e, &mut reads);
                    reads.contains(&writer)
                })
                .map_or(step.equations()[0], |(_, &eq)| eq);
            return Err(WeakCycle {
                causal: self,
                equation,
            });
        }
        let mut steps: Vec<Option<Step>> = self.steps.into_iter().map(Some).collect();
        Ok(Causal {
            steps: order.iter().filter_map(|&k| steps[k].take()).collect(),
            states: self.states,
            block_of_step: order.iter().map(|&k| self.block_of_step[k]).collect(),
        })
    }

    /// Computes every unknown from the states, parameters and time in `point`.
    pub fn evaluate(&self, pool: &ExprPool, point: &mut Point) -> Result<(), EvalFailure> {
        for (k, step) in self.steps.iter().enumerate() {
            match step {
                Step::Assign { target, expr, .. } => {
                    let x = pool.eval(*expr, point).unwrap_or(f64::NAN);
                    point.set(*target, x);
                }
                Step::Newton {
                    target,
                    residual,
                    derivative,
                    ..
                } => {
                    let mut block = ScalarBlock {
                        pool,
                        point,
                        target: *target,
                        exprs: [*residual, *derivative],
                        slope: 0.0,
                    };
                    newton::solve(&mut block, 1, &mut newton::Work::new(1))
                        .map_err(|residual| EvalFailure::NoConvergence { step: k, residual })?;
                }
                Step::Loop {
                    targets,
                    residuals,
                    jacobian,
                    ..
                } => {
                    let mut block = LoopBlock {
                        pool,
                        point,
                        targets,
                        residuals,
                        jacobian,
                        lu: None,
                    };
                    newton::solve(
                        &mut block,
                        targets.len(),
                        &mut newton::Work::new(targets.len()),
                    )
                    .map_err(|residual| EvalFailure::NoConvergence { step: k, residual })?;
                }
            }
            if step.targets().iter().any(|&u| !point.get(u).is_finite()) {
                return Err(EvalFailure::NotFinite(k));
            }
        }
        Ok(())
    }
}

/// A scalar implicit step as a Newton system over the reference evaluator.
struct ScalarBlock<'a> {
    pool: &'a ExprPool,
    point: &'a mut Point,
    target: Unknown,
    /// The residual and its derivative by the target.
    exprs: [ExprId; 2],
    slope: f64,
}

impl newton::System for ScalarBlock<'_> {
    fn residuals(&mut self, r: &mut [f64]) {
        r[0] = self
            .pool
            .eval(self.exprs[0], self.point)
            .unwrap_or(f64::NAN);
    }
    fn targets(&self, y: &mut [f64]) {
        y[0] = self.point.get(self.target);
    }
    fn set_targets(&mut self, y: &[f64]) {
        self.point.set(self.target, y[0]);
    }
    fn factor(&mut self) -> bool {
        self.slope = self
            .pool
            .eval(self.exprs[1], self.point)
            .unwrap_or(f64::NAN);
        self.slope != 0.0 && self.slope.is_finite()
    }
    fn solve(&mut self, v: &mut [f64]) {
        v[0] /= self.slope;
    }
}

/// An algebraic loop as a Newton system over the reference evaluator.
struct LoopBlock<'a> {
    pool: &'a ExprPool,
    point: &'a mut Point,
    targets: &'a [Unknown],
    residuals: &'a [ExprId],
    jacobian: &'a [(usize, usize, ExprId)],
    lu: Option<nalgebra::LU<f64, nalgebra::Dyn, nalgebra::Dyn>>,
}

impl newton::System for LoopBlock<'_> {
    fn residuals(&mut self, r: &mut [f64]) {
        for (ri, &e) in r.iter_mut().zip(self.residuals) {
            *ri = self.pool.eval(e, self.point).unwrap_or(f64::NAN);
        }
    }
    fn targets(&self, y: &mut [f64]) {
        for (yi, &u) in y.iter_mut().zip(self.targets) {
            *yi = self.point.get(u);
        }
    }
    fn set_targets(&mut self, y: &[f64]) {
        for (&yi, &u) in y.iter().zip(self.targets) {
            self.point.set(u, yi);
        }
    }
    fn factor(&mut self) -> bool {
        let n = self.targets.len();
        let mut j = nalgebra::DMatrix::<f64>::zeros(n, n);
        for &(row, col, d) in self.jacobian {
            j[(row, col)] = self.pool.eval(d, self.point).unwrap_or(f64::NAN);
        }
        let lu = j.lu();
        let usable = is_usable(&lu);
        self.lu = Some(lu);
        usable
    }
    fn solve(&mut self, v: &mut [f64]) {
        let solved = self.lu.as_ref().and_then(|lu| {
            let mut x = nalgebra::DVector::from_column_slice(v);
            lu.solve_mut(&mut x).then_some(x)
        });
        match solved {
            Some(x) => v.copy_from_slice(x.as_slice()),
            None => v.fill(f64::NAN),
        }
    }
}

/// Whether a factorization is invertible with finite entries.
fn is_usable(lu: &nalgebra::LU<f64, nalgebra::Dyn, nalgebra::Dyn>) -> bool {
    lu.is_invertible() && lu.u().iter().all(|x| x.is_finite())
}
