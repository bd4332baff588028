//! The causal form compiled once into a flat register tape (SPEC §6): every expression node the
//! steps, their Newton derivatives and the symbolic Jacobian entries need becomes one
//! instruction writing one register. The pool is hash-consed, so a common subexpression is one
//! node and is computed once. Evaluating the tape allocates nothing.
//!
//! Register layout: `v` holds variable `v`, `n + v` holds `der(v)`, `2n` holds time, and in
//! [`WeakReads::Exchanged`] mode `2n + 1 + v` holds the last exchanged value of `v`; constants
//! and intermediate nodes follow.
//!
//! Which nodes may be shared between steps: a node whose leaves are all final (parameters,
//! states, time, unknowns already solved) is computed once and reused by later steps of the same
//! group (see [`Groups`]); a node that reads an unknown not yet solved (the target of a Newton
//! step during its iteration, or a weak read of a value computed later) is recomputed where it
//! is needed. Nodes over parameters and constants only go into a setup program run once.
//!
//! Three rewrites save instructions on every evaluation: `a + (−b)` is one subtraction (the
//! same value exactly); `a / b` with `b` fixed for the run is `a · (1/b)`, the reciprocal
//! computed by the setup program (within an ulp); and an assignment's last instruction writes
//! its target instead of a register copied into it.

use crate::expr::hash::FxHashMap as HashMap;
use std::marker::PhantomData;
use std::ops::Range;

use crate::causal::{Causal, EvalFailure, Step};
use crate::dae::{Dae, VarKind};
use crate::expr::{CmpOp, ExprId, ExprPool, Func, Func2, FunctionId, Kids, Node, VarId, homotopy};
use crate::newton;
use crate::structure::Unknown;
use smallvec::SmallVec;

use super::batch::{self, Strides};
use super::functions::{CallSite, Programs};
use super::linear::DenseLu;
use super::pair::Pair;

pub type Reg = u32;

/// How `last(v)` reads compile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WeakReads {
    /// `last(v)` reads `v`'s register: the model integrated as one system (`--partition none`).
    Coupled,
    /// `last(v)` reads a register of its own that the partitioned integrator sets between
    /// subsystems (`--partition weak`).
    Exchanged,
}

/// Which steps may share computed nodes: a step of group `g` reuses nodes computed by earlier
/// steps of `g` or of the input group (evaluated before every group).
#[derive(Clone, Debug)]
pub struct Groups {
    pub of_step: Vec<u32>,
    pub inputs: u32,
}

impl Groups {
    /// Everything in one group: the model evaluated as a whole.
    pub fn single(steps: usize) -> Groups {
        Groups {
            of_step: vec![0; steps],
            inputs: 0,
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub enum Instr {
    Add(Reg, Reg, Reg),
    Sub(Reg, Reg, Reg),
    Mul(Reg, Reg, Reg),
    Neg(Reg, Reg),
    Div(Reg, Reg, Reg),
    Pow(Reg, Reg, Reg),
    /// `a^k` for a constant integer `k` (cheaper and as exact as `powf`).
    PowI(Reg, Reg, i32),
    Call(Func, Reg, Reg),
    Call2(Func2, Reg, Reg, Reg),
    /// `dst = if c != 0 then a else b`
    Select(Reg, Reg, Reg, Reg),
    /// `dst = homotopy(a, b)` at `λ`: `a` where `λ = 1`, else `λ·a + (1 − λ)·b`.
    Homotopy(Reg, Reg, Reg, Reg),
    Cmp(CmpOp, Reg, Reg, Reg),
    And(Reg, Reg, Reg),
    Or(Reg, Reg, Reg),
    Not(Reg, Reg),
    Copy(Reg, Reg),
    /// `dst = ` the call at this index of the code's call sites (the tape's, or a compiled
    /// function's own): a kept Modelica function, its arguments in the site's registers.
    Apply(Reg, u32),
}

impl Instr {
    /// The registers the instruction names, the destination first (unused slots repeat it),
    /// and how many it names.
    pub fn registers(&self) -> ([Reg; 4], usize) {
        match *self {
            Instr::Add(d, a, b)
            | Instr::Sub(d, a, b)
            | Instr::Mul(d, a, b)
            | Instr::Div(d, a, b)
            | Instr::Pow(d, a, b)
            | Instr::Call2(_, d, a, b)
            | Instr::Cmp(_, d, a, b)
            | Instr::And(d, a, b)
            | Instr::Or(d, a, b) => ([d, a, b, d], 3),
            Instr::Neg(d, a)
            | Instr::PowI(d, a, _)
            | Instr::Call(_, d, a)
            | Instr::Not(d, a)
            | Instr::Copy(d, a) => ([d, a, d, d], 2),
            Instr::Select(d, c, a, b) | Instr::Homotopy(d, c, a, b) => ([d, c, a, b], 4),
            // Its arguments are the call site's, not named here.
            Instr::Apply(d, _) => ([d; 4], 1),
        }
    }

    /// The same operation on the registers `regs` (in [`Instr::registers`]' order).
    pub fn with_registers(&self, regs: [Reg; 4]) -> Instr {
        let [d, a, b, c] = regs;
        match *self {
            Instr::Add(..) => Instr::Add(d, a, b),
            Instr::Sub(..) => Instr::Sub(d, a, b),
            Instr::Mul(..) => Instr::Mul(d, a, b),
            Instr::Div(..) => Instr::Div(d, a, b),
            Instr::Pow(..) => Instr::Pow(d, a, b),
            Instr::Call2(f, ..) => Instr::Call2(f, d, a, b),
            Instr::Cmp(op, ..) => Instr::Cmp(op, d, a, b),
            Instr::And(..) => Instr::And(d, a, b),
            Instr::Or(..) => Instr::Or(d, a, b),
            Instr::Neg(..) => Instr::Neg(d, a),
            Instr::PowI(_, _, k) => Instr::PowI(d, a, k),
            Instr::Call(f, ..) => Instr::Call(f, d, a),
            Instr::Not(..) => Instr::Not(d, a),
            Instr::Copy(..) => Instr::Copy(d, a),
            Instr::Select(..) => Instr::Select(d, a, b, c),
            Instr::Homotopy(..) => Instr::Homotopy(d, a, b, c),
            Instr::Apply(_, site) => Instr::Apply(d, site),
        }
    }
}

/// How one causal step is solved on the tape.
#[derive(Clone, Debug)]
pub enum StepCode {
    /// `pre` computes the expression and copies it into the target.
    Assign,
    /// Scalar Newton: `iter` computes the residual at the current target, `deriv` its
    /// derivative.
    Newton {
        target: Reg,
        residual: Reg,
        derivative: Reg,
        iter: Range<usize>,
        deriv: Range<usize>,
    },
    /// Newton on a block: `iter` computes the residuals, `deriv` the block Jacobian entries.
    Loop {
        targets: Vec<Reg>,
        residuals: Vec<Reg>,
        iter: Range<usize>,
        deriv: Range<usize>,
        jacobian: Vec<(usize, usize, Reg)>,
    },
}

#[derive(Clone, Debug)]
pub struct CompiledStep {
    /// Code that does not depend on the step's own targets, run once before solving.
    pub pre: Range<usize>,
    pub code: StepCode,
    /// Registers the step writes (checked for NaN after it).
    pub targets: Vec<Reg>,
}

/// A list of steps grouped for fast evaluation (see [`Tape::plan`]).
#[derive(Clone, Debug, Default)]
pub struct Plan {
    steps: Vec<usize>,
    segments: Vec<Segment>,
    /// The targets of the straight runs, run by run.
    targets: Vec<Reg>,
    /// Register strides of the batched runs' instructions, run by run.
    strides: Vec<Strides>,
}

impl Plan {
    /// The steps, in evaluation order.
    pub fn steps(&self) -> &[usize] {
        &self.steps
    }
}

#[derive(Clone, Debug)]
struct Batch {
    count: usize,
    strides: Range<usize>,
}

#[derive(Clone, Debug)]
enum Segment {
    /// Assignments: one range of instructions, their positions in `Plan::steps` and their
    /// targets in `Plan::targets`.
    ///
    /// With `batch`, `code` is the first step's code and the run is its `count` instances,
    /// their strides in `Plan::strides` (see [`super::batch`]).
    Straight {
        code: Range<usize>,
        steps: Range<usize>,
        targets: Range<usize>,
        batch: Option<Batch>,
    },
    /// A step solved by Newton, run on its own.
    Solve(usize),
}

/// The compiled program and the initial register file.
#[derive(Clone, Debug)]
pub struct Tape {
    /// Private, and never changed after [`compile`]: `bound` vouches for every register they
    /// name, which lets the interpreter skip its bounds checks.
    instrs: Vec<Instr>,
    /// One more than the largest register any instruction names.
    bound: usize,
    pub steps: Vec<CompiledStep>,
    /// Code over parameters and constants only, run once.
    pub setup: Range<usize>,
    /// Extra expressions compiled after the steps (Jacobian entries), by caller's index.
    pub extra: Vec<(Range<usize>, Reg)>,
    pub registers: usize,
    /// Constant registers and their values.
    pub constants: Vec<(Reg, f64)>,
    pub vars: usize,
    pub mode: WeakReads,
    /// The largest loop block (sizes the scratch space).
    pub max_loop: usize,
    /// The time that relations between `time` and a parameter expression read (`time < t0`):
    /// the integrators hold it inside the interval between two breakpoints, so that such a
    /// relation switches exactly at its breakpoint.
    pub switch_time: Reg,
    /// The register of the homotopy parameter `λ` (1 but while initialisation follows a
    /// homotopy).
    pub homotopy: Reg,
    /// Registers holding each such relation's parameter side (its breakpoint), set by the
    /// setup code.
    pub breakpoints: Vec<Reg>,
    /// The calls of kept functions the code makes ([`Instr::Apply`] indexes them), and the
    /// functions compiled.
    pub sites: Vec<CallSite>,
    pub programs: Programs,
}

impl Tape {
    /// The instructions `code` (a step's, the setup's or an extra expression's range).
    pub fn instructions(&self, code: Range<usize>) -> &[Instr] {
        &self.instrs[code]
    }

    pub fn var_reg(&self, v: VarId) -> Reg {
        v.0
    }

    pub fn der_reg(&self, v: VarId) -> Reg {
        self.vars as Reg + v.0
    }

    pub fn time_reg(&self) -> Reg {
        2 * self.vars as Reg
    }

    /// The register `last(v)` reads.
    pub fn last_reg(&self, v: VarId) -> Reg {
        match self.mode {
            WeakReads::Coupled => v.0,
            WeakReads::Exchanged => 2 * self.vars as Reg + 1 + v.0,
        }
    }

    pub fn unknown_reg(&self, u: Unknown) -> Reg {
        match u {
            Unknown::Derivative(v) => self.der_reg(v),
            Unknown::Algebraic(v) => self.var_reg(v),
        }
    }
}

/// Where a node's value comes from, ordered: a node is as variable as its most variable leaf.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    /// Parameters and constants: computed once.
    Setup,
    /// Final for the rest of the evaluation: shareable.
    Final,
    /// Reads an unknown not yet solved: recomputed where needed.
    Pending,
}

struct Compiler<'a> {
    pool: &'a ExprPool,
    dae: &'a Dae,
    tape: Tape,
    setup_code: Vec<Instr>,
    setup_nodes: NodeTable<Reg>,
    constants: HashMap<u64, Reg>,
    /// Shareable nodes, per group.
    finals: Finals,
    /// The current step's unshareable nodes (cleared at each step).
    local: NodeTable<Reg>,
    /// Per register of an unknown: solved yet?
    solved: Vec<bool>,
    is_unknown: Vec<bool>,
    /// [`Compiler::emit`]'s work space, kept from call to call: tens of thousands of small
    /// expressions (one per equation and per Jacobian entry) would otherwise each grow new
    /// tables.
    emit_stack: Vec<(ExprId, bool)>,
    emitted: NodeTable<(Reg, Class)>,
}

/// A map from the pool's nodes to `V`, dense: the compiler looks each node up several times,
/// and hashing was most of its time. Clearing starts a new generation instead of touching the
/// entries. An entry is one word, generation and value, zero when empty.
struct NodeTable<V> {
    /// Allocated at the first insertion: some tables stay empty (a model without
    /// unshareable nodes leaves the steps' local table so).
    entries: Vec<u64>,
    nodes: usize,
    generation: u64,
    value: PhantomData<V>,
}

/// The bits of a [`NodeTable`] entry its value takes; the generation takes the others.
const VALUE_BITS: u32 = 34;

/// A value a [`NodeTable`] holds, in [`VALUE_BITS`] bits.
trait Packed: Copy {
    fn pack(self) -> u64;
    fn unpack(bits: u64) -> Self;
}

impl Packed for Reg {
    fn pack(self) -> u64 {
        self.into()
    }

    fn unpack(bits: u64) -> Reg {
        bits as Reg
    }
}

impl Packed for (Reg, Class) {
    fn pack(self) -> u64 {
        u64::from(self.0) | (self.1 as u64) << Reg::BITS
    }

    fn unpack(bits: u64) -> (Reg, Class) {
        let class = match bits >> Reg::BITS {
            0 => Class::Setup,
            1 => Class::Final,
            _ => Class::Pending,
        };
        (bits as Reg, class)
    }
}

impl<V: Packed> NodeTable<V> {
    fn new(pool: &ExprPool) -> NodeTable<V> {
        NodeTable {
            entries: Vec::new(),
            nodes: pool.len(),
            generation: 1,
            value: PhantomData,
        }
    }

    fn get(&self, e: ExprId) -> Option<V> {
        let entry = *self.entries.get(e.index())?;
        (entry >> VALUE_BITS == self.generation).then(|| V::unpack(entry & VALUE_MASK))
    }

    fn insert(&mut self, e: ExprId, v: V) {
        if self.entries.is_empty() {
            self.entries = vec![0; self.nodes];
        }
        self.entries[e.index()] = self.generation << VALUE_BITS | v.pack();
    }

    fn clear(&mut self) {
        self.generation += 1;
        if self.generation == LAST_GENERATION {
            self.entries.fill(0);
            self.generation = 1;
        }
    }
}

const VALUE_MASK: u64 = (1 << VALUE_BITS) - 1;
/// The first generation past what an entry holds.
const LAST_GENERATION: u64 = 1 << (u64::BITS - VALUE_BITS);

/// The shareable nodes of each group: a node's register in one group in a dense table, in
/// any further group in a hash map (most nodes are read by one group only, and a dense table
/// per group would cost the pool's size per group).
struct Finals {
    /// Per node, `(group + 1) << 32 | register`, or zero.
    first: Vec<u64>,
    others: HashMap<(usize, ExprId), Reg>,
}

impl Finals {
    fn new(pool: &ExprPool) -> Finals {
        Finals {
            first: vec![0; pool.len()],
            others: HashMap::default(),
        }
    }

    /// The group and register of the node's first entry.
    fn first(&self, e: ExprId) -> Option<(usize, Reg)> {
        let entry = self.first[e.index()];
        (entry != 0).then(|| ((entry >> Reg::BITS) as usize - 1, entry as Reg))
    }

    fn get(&self, group: usize, e: ExprId) -> Option<Reg> {
        match self.first(e) {
            Some((g, r)) if g == group => Some(r),
            Some(_) => self.others.get(&(group, e)).copied(),
            None => None,
        }
    }

    fn insert(&mut self, group: usize, e: ExprId, r: Reg) {
        match self.first(e) {
            Some((g, _)) if g != group => {
                self.others.insert((group, e), r);
            }
            _ => self.first[e.index()] = (group as u64 + 1) << Reg::BITS | u64::from(r),
        }
    }
}

/// Per-step emission state: where new instructions go and the step's unshareable nodes.
struct StepEmit {
    group: usize,
    inputs: usize,
    /// Final nodes (computed once before the step is solved).
    pre: Vec<Instr>,
    /// Pending nodes of the expression being emitted.
    pending: Vec<Instr>,
}

impl Compiler<'_> {
    fn alloc(&mut self) -> Reg {
        self.tape.registers += 1;
        (self.tape.registers - 1) as Reg
    }

    fn constant(&mut self, x: f64) -> Reg {
        let bits = x.to_bits();
        if let Some(&r) = self.constants.get(&bits) {
            return r;
        }
        let r = self.alloc();
        self.constants.insert(bits, r);
        self.tape.constants.push((r, x));
        r
    }

    /// The register and class of a leaf.
    fn leaf(&mut self, node: Node) -> (Reg, Class) {
        let t = &self.tape;
        match node {
            Node::Const(bits) => (self.constant(f64::from_bits(bits)), Class::Setup),
            Node::Time => (t.time_reg(), Class::Final),
            Node::Der(v) => {
                let r = t.der_reg(v);
                (r, self.unknown_class(r))
            }
            Node::Last(v) => {
                let r = t.last_reg(v);
                match t.mode {
                    WeakReads::Exchanged => (r, Class::Final),
                    WeakReads::Coupled => (r, self.var_class(v)),
                }
            }
            Node::Var(v) => (t.var_reg(v), self.var_class(v)),
            _ => unreachable!("not a leaf"),
        }
    }

    fn var_class(&self, v: VarId) -> Class {
        match self.dae.var(v).kind {
            // Held variables change only at events, after which the setup code runs again.
            VarKind::Parameter
            | VarKind::Constant
            | VarKind::Input
            | VarKind::Alias
            | VarKind::Held => Class::Setup,
            VarKind::State => Class::Final,
            VarKind::Algebraic | VarKind::Discrete => self.unknown_class(v.0),
        }
    }

    fn unknown_class(&self, r: Reg) -> Class {
        if !self.is_unknown[r as usize] || self.solved[r as usize] {
            Class::Final
        } else {
            Class::Pending
        }
    }

    fn lookup(&self, e: ExprId, s: &StepEmit) -> Option<(Reg, Class)> {
        if let Some(r) = self.setup_nodes.get(e) {
            return Some((r, Class::Setup));
        }
        if let Some(r) = self.local.get(e) {
            return Some((r, Class::Pending));
        }
        let inputs = (s.inputs != s.group).then_some(s.inputs);
        for g in std::iter::once(s.group).chain(inputs) {
            if let Some(r) = self.finals.get(g, e) {
                return Some((r, Class::Final));
            }
        }
        None
    }

    /// Emits `root` (post-order with an explicit stack: expressions can be deep) and returns
    /// its register.
    fn emit(&mut self, root: ExprId, s: &mut StepEmit) -> Reg {
        let mut stack = std::mem::take(&mut self.emit_stack);
        stack.clear();
        self.emitted.clear();
        stack.push((root, false));
        while let Some((e, expanded)) = stack.pop() {
            if self.emitted.get(e).is_some() {
                continue;
            }
            let node = self.pool.node(e);
            // Leaves have registers of their own, never in the tables `lookup` searches.
            if node.is_leaf() {
                let found = self.leaf(node);
                self.emitted.insert(e, found);
                continue;
            }
            if !expanded {
                if let Some(found) = self.lookup(e, s) {
                    self.emitted.insert(e, found);
                    continue;
                }
                stack.push((e, true));
                match node {
                    Node::Apply(f, _, list) => {
                        stack.extend(self.pool.arguments(f, list).into_iter().map(|k| (k, false)))
                    }
                    _ => stack.extend(self.operands(e, node).into_iter().map(|k| (k, false))),
                }
                continue;
            }
            if let Node::Apply(f, output, list) = node {
                self.emit_call(e, (f, output, list), s);
                continue;
            }
            let kids = self.operands(e, node);
            let mut operands = [(0, Class::Setup); 3];
            for (slot, &k) in operands.iter_mut().zip(kids.as_slice()) {
                *slot = self.emitted.get(k).expect("operands are emitted first");
            }
            let args = &mut operands[..kids.as_slice().len()];
            self.switch_on_breakpoint(node, args);
            let class = args.iter().map(|a| a.1).max().unwrap_or(Class::Setup);
            let dst = self.alloc();
            let instr = self.instr(node, dst, args);
            let instr = self.divide_by_reciprocal(instr, args, class);
            self.place(e, (instr, dst, class), s);
        }
        self.emit_stack = stack;
        self.emitted.get(root).expect("the root is emitted").0
    }

    /// Puts the instruction computing node `e` into `dst` where its class says: the setup
    /// code, the step's shareable code or its code that reads unknowns not yet solved.
    fn place(&mut self, e: ExprId, (instr, dst, class): (Instr, Reg, Class), s: &mut StepEmit) {
        match class {
            Class::Setup => {
                self.setup_code.push(instr);
                self.setup_nodes.insert(e, dst);
            }
            Class::Final => {
                s.pre.push(instr);
                self.finals.insert(s.group, e, dst);
            }
            Class::Pending => {
                s.pending.push(instr);
                self.local.insert(e, dst);
            }
        }
        self.emitted.insert(e, (dst, class));
    }

    /// A call of a kept function: its arguments' registers in a call site, the function
    /// compiled, the result as variable as its most variable argument.
    fn emit_call(
        &mut self,
        e: ExprId,
        (f, output, list): (FunctionId, u32, ExprId),
        s: &mut StepEmit,
    ) {
        let args: Vec<(Reg, Class)> = (self.pool.arguments(f, list).into_iter())
            .map(|a| self.emitted.get(a).expect("arguments are emitted first"))
            .collect();
        let class = args.iter().map(|a| a.1).max().unwrap_or(Class::Setup);
        self.tape.programs.ensure(self.pool, f);
        self.tape.sites.push(CallSite {
            function: f,
            output,
            args: args.iter().map(|a| a.0).collect(),
        });
        let dst = self.alloc();
        let instr = Instr::Apply(dst, self.tape.sites.len() as u32 - 1);
        self.place(e, (instr, dst, class), s);
    }

    /// A relation between `time` and an expression of parameters and constants reads
    /// [`Tape::switch_time`] instead of the time, and its parameter side is a breakpoint.
    fn switch_on_breakpoint(&mut self, node: Node, args: &mut [(Reg, Class)]) {
        let Node::Cmp(_, a, b) = node else {
            return;
        };
        let time = self.tape.time_reg();
        let (time_side, other) = match (self.pool.node(a), self.pool.node(b)) {
            (Node::Time, _) => (0, 1),
            (_, Node::Time) => (1, 0),
            _ => return,
        };
        if args[time_side].0 != time || args[other].1 != Class::Setup {
            return;
        }
        args[time_side].0 = self.tape.switch_time;
        self.tape.breakpoints.push(args[other].0);
    }

    /// The nodes an instruction for `e` reads: its children, except that `a + (−b)` and
    /// `(−b) + a` read `a` and `b` and compile to `a − b` (the same value exactly), so a
    /// negation used only in sums costs no instruction.
    fn operands(&self, e: ExprId, node: Node) -> Kids {
        operand_nodes(self.pool, e, node)
    }

    fn instr(&self, node: Node, dst: Reg, args: &[(Reg, Class)]) -> Instr {
        let regs: SmallVec<[Reg; 3]> = args.iter().map(|a| a.0).collect();
        operation(self.pool, node, dst, &regs, self.tape.homotopy)
    }

    /// `a / b` with `b` fixed for the run (parameters and constants) but `a` not, becomes
    /// `a · (1 / b)`, the reciprocal computed once by the setup code: a division costs several
    /// multiplications' time, and dividing by a capacity or a mass is how most right-hand
    /// sides end. The product is within an ulp of the quotient.
    fn divide_by_reciprocal(&mut self, instr: Instr, args: &[(Reg, Class)], class: Class) -> Instr {
        let Instr::Div(dst, a, b) = instr else {
            return instr;
        };
        if args[1].1 != Class::Setup || class == Class::Setup {
            return instr;
        }
        // One reciprocal per division: the setup program runs once, so sharing one per divisor
        // would save only a register and a map.
        let one = self.constant(1.0);
        let reciprocal = self.alloc();
        self.setup_code.push(Instr::Div(reciprocal, one, b));
        Instr::Mul(dst, a, reciprocal)
    }

    /// Ends an assignment's code by writing `target` with the value of `node` (in register
    /// `r`). When the code's last instruction computed the node just now, it writes `target`
    /// instead, and later steps of the group find the node there: one instruction fewer per
    /// assignment. Otherwise (a node computed before, a constant) a copy.
    fn write_target(
        &mut self,
        code: &mut Vec<Instr>,
        node: (ExprId, Reg),
        target: Reg,
        group: usize,
    ) {
        let (e, r) = node;
        if let Some(last) = code.last_mut()
            && last.registers().0[0] == r
        {
            let [_, a, b, c] = last.registers().0;
            *last = last.with_registers([target, a, b, c]);
            if self.finals.get(group, e).is_some() {
                self.finals.insert(group, e, target);
            }
            return;
        }
        code.push(Instr::Copy(target, r));
    }

    /// Appends `code` to the program and returns its range.
    fn append(&mut self, code: Vec<Instr>) -> Range<usize> {
        let start = self.tape.instrs.len();
        self.tape.instrs.extend(code);
        start..self.tape.instrs.len()
    }

    fn step(&mut self, step: &Step, group: usize, inputs: usize) -> CompiledStep {
        let mut s = StepEmit {
            group,
            inputs,
            pre: Vec::new(),
            pending: Vec::new(),
        };
        self.local.clear();
        let targets: Vec<Reg> = step
            .targets()
            .into_iter()
            .map(|u| self.tape.unknown_reg(u))
            .collect();
        let compiled = match step {
            Step::Assign { expr, .. } => {
                let r = self.emit(*expr, &mut s);
                let mut pre = std::mem::take(&mut s.pre);
                pre.append(&mut s.pending);
                self.write_target(&mut pre, (*expr, r), targets[0], group);
                CompiledStep {
                    pre: self.append(pre),
                    code: StepCode::Assign,
                    targets: targets.clone(),
                }
            }
            Step::Newton {
                residual,
                derivative,
                ..
            } => {
                let residual = self.emit(*residual, &mut s);
                let iter_code = std::mem::take(&mut s.pending);
                let derivative = self.emit(*derivative, &mut s);
                let deriv_code = std::mem::take(&mut s.pending);
                let pre = self.append(std::mem::take(&mut s.pre));
                let iter = self.append(iter_code);
                let deriv = self.append(deriv_code);
                CompiledStep {
                    pre,
                    code: StepCode::Newton {
                        target: targets[0],
                        residual,
                        derivative,
                        iter,
                        deriv,
                    },
                    targets: targets.clone(),
                }
            }
            Step::Loop {
                residuals,
                jacobian,
                ..
            } => {
                let residuals: Vec<Reg> = residuals.iter().map(|&r| self.emit(r, &mut s)).collect();
                let iter_code = std::mem::take(&mut s.pending);
                let jacobian: Vec<(usize, usize, Reg)> = jacobian
                    .iter()
                    .map(|&(r, c, d)| (r, c, self.emit(d, &mut s)))
                    .collect();
                let deriv_code = std::mem::take(&mut s.pending);
                let pre = self.append(std::mem::take(&mut s.pre));
                let iter = self.append(iter_code);
                let deriv = self.append(deriv_code);
                self.tape.max_loop = self.tape.max_loop.max(targets.len());
                CompiledStep {
                    pre,
                    code: StepCode::Loop {
                        targets: targets.clone(),
                        residuals,
                        iter,
                        deriv,
                        jacobian,
                    },
                    targets: targets.clone(),
                }
            }
        };
        for &t in &targets {
            self.solved[t as usize] = true;
        }
        compiled
    }

    /// An expression evaluated after every step (all unknowns solved), e.g. a Jacobian entry.
    fn extra(&mut self, e: ExprId, group: usize, inputs: usize) -> (Range<usize>, Reg) {
        let mut s = StepEmit {
            group,
            inputs,
            pre: Vec::new(),
            pending: Vec::new(),
        };
        self.local.clear();
        let r = self.emit(e, &mut s);
        let mut code = s.pre;
        code.append(&mut s.pending);
        (self.append(code), r)
    }
}

/// The nodes an instruction for `e` reads: its children, except that `a + (−b)` and
/// `(−b) + a` read `a` and `b` and compile to `a − b` (the same value exactly), so a
/// negation used only in sums costs no instruction.
pub(super) fn operand_nodes(pool: &ExprPool, e: ExprId, node: Node) -> Kids {
    match difference(pool, node) {
        Some((a, b)) => Kids::pair(a, b),
        None => pool.children(e),
    }
}

/// `(a, b)` when `node` is `a + (−b)` or `(−b) + a`.
fn difference(pool: &ExprPool, node: Node) -> Option<(ExprId, ExprId)> {
    let Node::Add(x, y) = node else {
        return None;
    };
    match (pool.node(x), pool.node(y)) {
        (_, Node::Neg(b)) => Some((x, b)),
        (Node::Neg(b), _) => Some((y, b)),
        _ => None,
    }
}

/// The instruction computing `node` into `dst` from its operands' registers `a` (in
/// [`operand_nodes`]' order); `homotopy` is the register of λ.
pub(super) fn operation(pool: &ExprPool, node: Node, dst: Reg, a: &[Reg], homotopy: Reg) -> Instr {
    match node {
        Node::Add(..) if difference(pool, node).is_some() => Instr::Sub(dst, a[0], a[1]),
        Node::Add(..) => Instr::Add(dst, a[0], a[1]),
        Node::Mul(..) => Instr::Mul(dst, a[0], a[1]),
        Node::Neg(_) => Instr::Neg(dst, a[0]),
        Node::Div(..) => Instr::Div(dst, a[0], a[1]),
        Node::Pow(_, k) => match pool.as_const(k) {
            Some(x) if x.fract() == 0.0 && x.abs() <= 64.0 => Instr::PowI(dst, a[0], x as i32),
            _ => Instr::Pow(dst, a[0], a[1]),
        },
        Node::Call(f, _) => Instr::Call(f, dst, a[0]),
        Node::Call2(Func2::Homotopy, ..) => Instr::Homotopy(dst, homotopy, a[0], a[1]),
        Node::Call2(f, ..) => Instr::Call2(f, dst, a[0], a[1]),
        Node::If(..) => Instr::Select(dst, a[0], a[1], a[2]),
        Node::Cmp(op, ..) => Instr::Cmp(op, dst, a[0], a[1]),
        Node::And(..) => Instr::And(dst, a[0], a[1]),
        Node::Or(..) => Instr::Or(dst, a[0], a[1]),
        Node::Not(_) => Instr::Not(dst, a[0]),
        Node::Apply(..) | Node::Args(..) => unreachable!("calls are compiled with their sites"),
        Node::Const(_)
        | Node::Var(_)
        | Node::Der(_)
        | Node::Last(_)
        | Node::Time
        | Node::Local(_) => unreachable!("leaves take no instruction"),
    }
}

/// Compiles the steps of `causal` and then the `extra` expressions `(expr, group)`.
pub fn compile(
    dae: &Dae,
    causal: &Causal,
    mode: WeakReads,
    groups: &Groups,
    extra: &[(ExprId, u32)],
) -> Tape {
    let n = dae.variables.len();
    let base = 2 * n + 1 + if mode == WeakReads::Exchanged { n } else { 0 };
    let switch_time = base as Reg;
    let homotopy = base as Reg + 1;
    let mut is_unknown = vec![false; base];
    for v in dae.var_ids() {
        match dae.var(v).kind {
            VarKind::State => is_unknown[n + v.0 as usize] = true,
            VarKind::Algebraic | VarKind::Discrete => is_unknown[v.0 as usize] = true,
            _ => {}
        }
    }
    let mut c = Compiler {
        pool: &dae.pool,
        dae,
        tape: Tape {
            instrs: Vec::new(),
            bound: 0,
            steps: Vec::with_capacity(causal.steps.len()),
            setup: 0..0,
            extra: Vec::with_capacity(extra.len()),
            registers: base + 2,
            constants: vec![(homotopy, 1.0)],
            vars: n,
            mode,
            max_loop: 0,
            switch_time,
            homotopy,
            breakpoints: Vec::new(),
            sites: Vec::new(),
            programs: Programs::default(),
        },
        setup_code: Vec::new(),
        setup_nodes: NodeTable::new(&dae.pool),
        constants: HashMap::default(),
        finals: Finals::new(&dae.pool),
        local: NodeTable::new(&dae.pool),
        solved: vec![false; base],
        is_unknown,
        emit_stack: Vec::new(),
        emitted: NodeTable::new(&dae.pool),
    };
    let inputs = groups.inputs as usize;
    for (k, step) in causal.steps.iter().enumerate() {
        let compiled = c.step(step, groups.of_step[k] as usize, inputs);
        c.tape.steps.push(compiled);
    }
    for &(e, g) in extra {
        let compiled = c.extra(e, g as usize, inputs);
        c.tape.extra.push(compiled);
    }
    let setup = std::mem::take(&mut c.setup_code);
    c.tape.setup = c.append(setup);
    let arguments = c.tape.sites.iter().flat_map(|s| s.args.iter().copied());
    c.tape.bound = (c.tape.instrs.iter().flat_map(registers_named))
        .chain(arguments)
        .max()
        .map_or(0, |r| r as usize + 1);
    c.tape
}

/// The registers an instruction reads or writes.
fn registers_named(i: &Instr) -> impl Iterator<Item = Reg> {
    let (regs, named) = i.registers();
    regs.into_iter().take(named)
}

/// Scratch space of Newton blocks, allocated once.
#[derive(Clone, Debug)]
pub struct LoopScratch {
    lu: DenseLu,
    rhs: Vec<f64>,
    newton: newton::Work,
    /// The first time and step where a loop's solution had a singular Jacobian (one of
    /// several solutions, perhaps).
    pub singular: Option<(f64, usize)>,
}

impl LoopScratch {
    pub fn new(tape: &Tape) -> LoopScratch {
        LoopScratch {
            lu: DenseLu::new(tape.max_loop),
            rhs: vec![0.0; tape.max_loop],
            newton: newton::Work::new(tape.max_loop.max(1)),
            singular: None,
        }
    }
}

/// A scalar implicit step as a Newton system: `regs_of` are its target, residual and
/// derivative registers, `code` the instructions computing the residual and the derivative.
struct ScalarBlock<'a> {
    tape: &'a Tape,
    regs: &'a mut [f64],
    regs_of: [Reg; 3],
    code: [&'a Range<usize>; 2],
    slope: f64,
}

impl newton::System for ScalarBlock<'_> {
    fn residuals(&mut self, r: &mut [f64]) {
        self.tape.exec(self.code[0].clone(), self.regs);
        r[0] = self.regs[self.regs_of[1] as usize];
    }
    fn targets(&self, y: &mut [f64]) {
        y[0] = self.regs[self.regs_of[0] as usize];
    }
    fn set_targets(&mut self, y: &[f64]) {
        self.regs[self.regs_of[0] as usize] = y[0];
    }
    fn factor(&mut self) -> bool {
        self.tape.exec(self.code[1].clone(), self.regs);
        self.slope = self.regs[self.regs_of[2] as usize];
        self.slope != 0.0 && self.slope.is_finite()
    }
    fn solve(&mut self, v: &mut [f64]) {
        v[0] /= self.slope;
    }
}

/// Factors a loop's Jacobian `∂R/∂Y` from its registers (computed by its `deriv` code).
fn factor_loop(lu: &mut DenseLu, regs: &[f64], n: usize, jacobian: &[(usize, usize, Reg)]) -> bool {
    lu.resize(n);
    lu.clear();
    for &(r, c, d) in jacobian {
        lu.set(r, c, regs[d as usize]);
    }
    lu.factor()
}

/// The registers and code of an algebraic loop.
#[derive(Clone, Copy)]
struct LoopBlock<'a> {
    targets: &'a [Reg],
    residuals: &'a [Reg],
    iter: &'a Range<usize>,
    deriv: &'a Range<usize>,
    jacobian: &'a [(usize, usize, Reg)],
}

/// An algebraic loop as a Newton system, its Jacobian factored densely.
struct LoopSystem<'a> {
    tape: &'a Tape,
    regs: &'a mut [f64],
    lu: &'a mut DenseLu,
    block: LoopBlock<'a>,
}

impl newton::System for LoopSystem<'_> {
    fn residuals(&mut self, r: &mut [f64]) {
        self.tape.exec(self.block.iter.clone(), self.regs);
        for (ri, &reg) in r.iter_mut().zip(self.block.residuals) {
            *ri = self.regs[reg as usize];
        }
    }
    fn targets(&self, y: &mut [f64]) {
        for (yi, &t) in y.iter_mut().zip(self.block.targets) {
            *yi = self.regs[t as usize];
        }
    }
    fn set_targets(&mut self, y: &[f64]) {
        for (&yi, &t) in y.iter().zip(self.block.targets) {
            self.regs[t as usize] = yi;
        }
    }
    fn factor(&mut self) -> bool {
        self.tape.exec(self.block.deriv.clone(), self.regs);
        let n = self.block.targets.len();
        factor_loop(self.lu, self.regs, n, self.block.jacobian)
    }
    fn solve(&mut self, v: &mut [f64]) {
        self.lu.solve(v);
    }
}

impl Tape {
    /// A register file with constants set and everything else zero.
    pub fn registers(&self) -> Vec<f64> {
        let mut regs = vec![0.0; self.registers];
        for &(r, x) in &self.constants {
            regs[r as usize] = x;
        }
        regs
    }

    /// Runs the setup code (after parameters are loaded into their registers).
    pub fn run_setup(&self, regs: &mut [f64]) {
        self.exec(self.setup.clone(), regs);
    }

    /// Runs the instructions `code` on `regs`.
    fn exec(&self, code: Range<usize>, regs: &mut [f64]) {
        assert!(
            regs.len() >= self.bound,
            "a register file smaller than its tape"
        );
        // SAFETY: every register the tape's instructions name is below `bound` (computed once
        // they were all compiled, and they never change), and `regs` holds that many.
        unsafe { run(&self.instrs[code], regs, &self.programs, &self.sites) }
    }

    /// `count` instances of the instructions `code`, moved by `strides` (see [`batch::run`]);
    /// a long run's two halves at once on `pair`'s two threads.
    fn exec_batch(
        &self,
        (code, strides): (Range<usize>, &[Strides]),
        count: usize,
        regs: &mut [f64],
        pair: Option<&Pair>,
    ) {
        assert!(
            regs.len() >= self.bound,
            "a register file smaller than its tape"
        );
        let code = &self.instrs[code];
        let file = RegisterFile::new(regs);
        // SAFETY (each call): the batch's instances are the tape's own instructions (checked
        // by `batch::split` when the plan was made), so every register they name is below
        // `bound`. They write registers no other instance of the run writes or reads
        // (`batch::split`'s dependency check), so two threads running different instances
        // do not race; what they read from before the run was written before the join.
        // The exclusive borrow of `regs` keeps everything else out.
        match pair.filter(|_| count >= SPLIT_RUN) {
            None => unsafe { batch::run(code, strides, 0..count, file.start()) },
            Some(pair) => {
                let half = count / 2;
                pair.join(
                    || unsafe { batch::run(code, strides, 0..half, file.start()) },
                    || unsafe { batch::run(code, strides, half..count, file.start()) },
                );
            }
        }
    }

    /// The tangent pass of the instructions `code` (see [`run_tangent`]).
    fn exec_tangent(&self, code: Range<usize>, regs: &[f64], tan: &mut [f64]) {
        assert!(
            regs.len() >= self.bound && tan.len() >= self.bound,
            "a register file smaller than its tape"
        );
        // SAFETY: as in `exec`, for both register files.
        unsafe { run_tangent(&self.instrs[code], regs, tan, &self.programs, &self.sites) }
    }

    /// Groups `steps` for [`Tape::run_plan`]: consecutive assignments whose code is contiguous
    /// become one straight run of instructions.
    pub fn plan(&self, steps: &[usize]) -> Plan {
        let mut plan = Plan {
            steps: steps.to_vec(),
            ..Plan::default()
        };
        let mut run: Vec<usize> = Vec::new();
        for (at, &k) in steps.iter().enumerate() {
            let step = &self.steps[k];
            let joins = |run: &[usize]| {
                run.last()
                    .is_some_and(|&prev| self.steps[steps[prev]].pre.end == step.pre.start)
            };
            if !matches!(step.code, StepCode::Assign) || !joins(&run) {
                self.plan_straight(&mut plan, &std::mem::take(&mut run));
            }
            if matches!(step.code, StepCode::Assign) {
                run.push(at);
            } else {
                plan.segments.push(Segment::Solve(k));
            }
        }
        self.plan_straight(&mut plan, &run);
        plan
    }

    /// Adds the segments of a run of assignments at positions `run` of the plan's steps (their
    /// code contiguous): batched parts and straight parts (see [`super::batch::split`]).
    fn plan_straight(&self, plan: &mut Plan, run: &[usize]) {
        let codes: Vec<Range<usize>> = run
            .iter()
            .map(|&at| self.steps[plan.steps[at]].pre.clone())
            .collect();
        for part in batch::split(&self.instrs, &codes) {
            let ats = &run[part.steps.clone()];
            let first = plan.targets.len();
            for &at in ats {
                plan.targets
                    .extend_from_slice(&self.steps[plan.steps[at]].targets);
            }
            let code = match &part.strides {
                Some(_) => codes[part.steps.start].clone(),
                None => codes[part.steps.start].start..codes[part.steps.end - 1].end,
            };
            let batch = part.strides.map(|strides| {
                let start = plan.strides.len();
                plan.strides.extend(strides);
                Batch {
                    count: ats.len(),
                    strides: start..plan.strides.len(),
                }
            });
            plan.segments.push(Segment::Straight {
                code,
                steps: ats[0]..ats[ats.len() - 1] + 1,
                targets: first..plan.targets.len(),
                batch,
            });
        }
    }

    /// Runs a plan: the same values and failures as [`Tape::run_step`] on each of its steps,
    /// without the per-step dispatch. A non-finite value is reported at the first step (in
    /// evaluation order) that produced one.
    pub fn run_plan(
        &self,
        plan: &Plan,
        regs: &mut [f64],
        scratch: &mut LoopScratch,
        pair: Option<&Pair>,
    ) -> Result<(), EvalFailure> {
        for segment in &plan.segments {
            match segment {
                Segment::Solve(k) => self.run_step(*k, regs, scratch)?,
                Segment::Straight {
                    code,
                    steps,
                    targets,
                    batch,
                } => {
                    match batch {
                        None => self.exec(code.clone(), regs),
                        Some(b) => self.exec_batch(
                            (code.clone(), &plan.strides[b.strides.clone()]),
                            b.count,
                            regs,
                            pair,
                        ),
                    }
                    let written = &plan.targets[targets.clone()];
                    if written.iter().all(|&t| regs[t as usize].is_finite()) {
                        continue;
                    }
                    let ks = &plan.steps[steps.clone()];
                    let finite = |k: &usize| {
                        self.steps[*k]
                            .targets
                            .iter()
                            .all(|&t| regs[t as usize].is_finite())
                    };
                    if let Some(&k) = ks.iter().find(|k| !finite(k)) {
                        return Err(EvalFailure::NotFinite(k));
                    }
                }
            }
        }
        Ok(())
    }

    /// Runs step `k`; `Err` names it when Newton fails or a target is not finite.
    pub fn run_step(
        &self,
        k: usize,
        regs: &mut [f64],
        scratch: &mut LoopScratch,
    ) -> Result<(), EvalFailure> {
        let step = &self.steps[k];
        self.exec(step.pre.clone(), regs);
        let solved = match &step.code {
            StepCode::Assign => Ok(()),
            StepCode::Newton {
                target,
                residual,
                derivative,
                iter,
                deriv,
            } => self.newton_scalar(
                regs,
                &mut scratch.newton,
                (*target, *residual, *derivative),
                (iter, deriv),
            ),
            StepCode::Loop {
                targets,
                residuals,
                iter,
                deriv,
                jacobian,
            } => {
                let block = LoopBlock {
                    targets,
                    residuals,
                    iter,
                    deriv,
                    jacobian,
                };
                let solved = self.newton_loop(regs, scratch, block);
                if solved.is_ok() && scratch.newton.singular_at_root() && scratch.singular.is_none()
                {
                    scratch.singular = Some((regs[self.time_reg() as usize], k));
                }
                solved
            }
        };
        if let Err(residual) = solved {
            return Err(EvalFailure::NoConvergence { step: k, residual });
        }
        if step.targets.iter().any(|&t| !regs[t as usize].is_finite()) {
            return Err(EvalFailure::NotFinite(k));
        }
        Ok(())
    }

    fn newton_scalar(
        &self,
        regs: &mut [f64],
        work: &mut newton::Work,
        (target, residual, derivative): (Reg, Reg, Reg),
        (iter, deriv): (&Range<usize>, &Range<usize>),
    ) -> Result<(), f64> {
        let mut system = ScalarBlock {
            tape: self,
            regs,
            regs_of: [target, residual, derivative],
            code: [iter, deriv],
            slope: 0.0,
        };
        newton::solve(&mut system, 1, work)
    }

    fn newton_loop(
        &self,
        regs: &mut [f64],
        scratch: &mut LoopScratch,
        block: LoopBlock<'_>,
    ) -> Result<(), f64> {
        let n = block.targets.len();
        let LoopScratch { lu, newton, .. } = scratch;
        let mut system = LoopSystem {
            tape: self,
            regs,
            lu,
            block,
        };
        newton::solve(&mut system, n, newton)
    }

    /// Tangents (forward-mode derivatives) of every register the steps compute, for the seed
    /// already set in `tan` (e.g. `tan[state j] = 1`). Runs after the steps at the same point;
    /// Newton steps and loops get their targets' tangents by the implicit function theorem,
    /// `dY = −(∂R/∂Y)⁻¹ ∂R/∂x·dx`. Only steps listed in `steps` are visited.
    pub fn tangents(
        &self,
        steps: &[usize],
        regs: &mut [f64],
        tan: &mut [f64],
        scratch: &mut LoopScratch,
    ) {
        for &k in steps {
            let step = &self.steps[k];
            self.exec_tangent(step.pre.clone(), regs, tan);
            match &step.code {
                StepCode::Assign => {}
                StepCode::Newton {
                    target,
                    residual,
                    derivative,
                    iter,
                    deriv,
                } => {
                    tan[*target as usize] = 0.0;
                    self.exec_tangent(iter.clone(), regs, tan);
                    self.exec(deriv.clone(), regs);
                    tan[*target as usize] = -tan[*residual as usize] / regs[*derivative as usize];
                    self.exec_tangent(iter.clone(), regs, tan);
                }
                StepCode::Loop {
                    targets,
                    residuals,
                    iter,
                    deriv,
                    jacobian,
                } => {
                    for &t in targets {
                        tan[t as usize] = 0.0;
                    }
                    self.exec_tangent(iter.clone(), regs, tan);
                    self.exec(deriv.clone(), regs);
                    let n = targets.len();
                    let factored = factor_loop(&mut scratch.lu, regs, n, jacobian);
                    for (i, &r) in residuals.iter().enumerate() {
                        scratch.rhs[i] = -tan[r as usize];
                    }
                    if factored {
                        scratch.lu.solve(&mut scratch.rhs[..n]);
                    } else {
                        let y: Vec<f64> = targets.iter().map(|&t| regs[t as usize]).collect();
                        let fill = |a: &mut [f64]| {
                            for &(r, c, d) in jacobian {
                                a[r * n + c] = regs[d as usize];
                            }
                        };
                        newton::singular_tangents(&y, fill, &mut scratch.rhs[..n]);
                    }
                    for (i, &t) in targets.iter().enumerate() {
                        tan[t as usize] = scratch.rhs[i];
                    }
                    self.exec_tangent(iter.clone(), regs, tan);
                }
            }
        }
    }

    pub fn run_extra(&self, i: usize, regs: &mut [f64]) -> f64 {
        let (code, r) = &self.extra[i];
        self.exec(code.clone(), regs);
        regs[*r as usize]
    }
}

fn truth(x: bool) -> f64 {
    if x { 1.0 } else { 0.0 }
}

/// Batched runs at least this long run in two halves on two threads, when there are two.
const SPLIT_RUN: usize = 512;

/// A register file's start, handed to the threads that run the halves of a batched run.
#[derive(Clone, Copy)]
pub(super) struct RegisterFile(*mut f64);

// SAFETY: only a pointer; what the threads do through it is justified where they do it
// (`Tape::exec_batch`).
unsafe impl Send for RegisterFile {}
unsafe impl Sync for RegisterFile {}

impl RegisterFile {
    pub(super) fn new(regs: &mut [f64]) -> RegisterFile {
        RegisterFile(regs.as_mut_ptr())
    }

    /// The start (a method, so that closures capture the whole `RegisterFile`).
    pub(super) fn start(self) -> *mut f64 {
        self.0
    }
}

/// The interpreter loop. Unchecked register access: the bounds checks (two or three per
/// instruction) cost a third of the evaluation of a large explicit model.
///
/// # Safety
/// Every register an instruction of `code` names is below `r.len()`.
pub(super) unsafe fn run(code: &[Instr], r: &mut [f64], calls: &Programs, sites: &[CallSite]) {
    // SAFETY: the caller vouches for the registers, and the exclusive borrow keeps every other
    // access out.
    unsafe { run_at(code, r.as_mut_ptr(), calls, sites) }
}

/// [`run`] on a register file given by where it starts.
///
/// # Safety
/// Every register an instruction of `code` names is inside the register file at `p`, and no
/// other thread meanwhile writes a register `code` reads or touches one it writes.
pub(super) unsafe fn run_at(code: &[Instr], p: *mut f64, calls: &Programs, sites: &[CallSite]) {
    // SAFETY (both): the caller vouches that every register index is in bounds and that no
    // other thread races on them.
    let get = |i: Reg| unsafe { *p.add(i as usize) };
    let set = |i: Reg, x: f64| unsafe { *p.add(i as usize) = x };
    for &i in code {
        match i {
            Instr::Add(d, a, b) => set(d, get(a) + get(b)),
            Instr::Sub(d, a, b) => set(d, get(a) - get(b)),
            Instr::Mul(d, a, b) => set(d, get(a) * get(b)),
            Instr::Neg(d, a) => set(d, -get(a)),
            Instr::Div(d, a, b) => set(d, get(a) / get(b)),
            Instr::Pow(d, a, b) => set(d, get(a).powf(get(b))),
            Instr::PowI(d, a, k) => set(d, get(a).powi(k)),
            Instr::Call(f, d, a) => set(d, f.apply(get(a))),
            Instr::Call2(f, d, a, b) => set(d, f.apply(get(a), get(b))),
            Instr::Select(d, c, a, b) => set(d, if get(c) != 0.0 { get(a) } else { get(b) }),
            Instr::Homotopy(d, l, a, b) => set(d, homotopy(get(l), get(a), get(b))),
            Instr::Cmp(op, d, a, b) => set(d, truth(op.apply(get(a), get(b)))),
            Instr::And(d, a, b) => set(d, truth(get(a) != 0.0 && get(b) != 0.0)),
            Instr::Or(d, a, b) => set(d, truth(get(a) != 0.0 || get(b) != 0.0)),
            Instr::Not(d, a) => set(d, truth(get(a) == 0.0)),
            Instr::Copy(d, a) => set(d, get(a)),
            Instr::Apply(d, s) => set(d, calls.call(&sites[s as usize], get)),
        }
    }
}

/// The derivative of `f` at `x`.
fn func_derivative(f: Func, x: f64) -> f64 {
    match f {
        Func::Sin => x.cos(),
        Func::Cos => -x.sin(),
        Func::Tan => 1.0 + x.tan().powi(2),
        Func::Asin => 1.0 / (1.0 - x * x).sqrt(),
        Func::Acos => -1.0 / (1.0 - x * x).sqrt(),
        Func::Atan => 1.0 / (1.0 + x * x),
        Func::Sinh => x.cosh(),
        Func::Cosh => x.sinh(),
        Func::Tanh => 1.0 - x.tanh().powi(2),
        Func::Exp => x.exp(),
        Func::Log => 1.0 / x,
        Func::Log10 => 1.0 / (x * std::f64::consts::LN_10),
        Func::Sqrt => 0.5 / x.sqrt(),
        Func::Abs => Func::Sign.apply(x),
        Func::NoEvent => 1.0,
        Func::Sign | Func::Floor | Func::Ceil | Func::Trunc => 0.0,
    }
}

/// Forward-mode pass: the tangent of each instruction's result from its arguments' values
/// (already computed in `r`) and tangents. Unchecked register access, as in [`run`].
///
/// # Safety
/// Every register an instruction of `code` names is below `r.len()` and `t.len()`.
pub(super) unsafe fn run_tangent(
    code: &[Instr],
    r: &[f64],
    t: &mut [f64],
    calls: &Programs,
    sites: &[CallSite],
) {
    let (rp, tp) = (r.as_ptr(), t.as_mut_ptr());
    // SAFETY (all three): the caller vouches for the indices; `r` and `t` are distinct slices
    // and `t` is not used otherwise while `tp` is.
    let r = |i: Reg| unsafe { *rp.add(i as usize) };
    let t = |i: Reg| unsafe { *tp.add(i as usize) };
    let set = |i: Reg, x: f64| unsafe { *tp.add(i as usize) = x };
    for &i in code {
        let (d, dt) = match i {
            Instr::Add(d, a, b) => (d, t(a) + t(b)),
            Instr::Sub(d, a, b) => (d, t(a) - t(b)),
            Instr::Mul(d, a, b) => (d, t(a) * r(b) + r(a) * t(b)),
            Instr::Neg(d, a) => (d, -t(a)),
            Instr::Div(d, a, b) => {
                let (x, y) = (r(a), r(b));
                (d, (t(a) * y - x * t(b)) / (y * y))
            }
            Instr::Pow(d, a, b) => {
                let (x, y) = (r(a), r(b));
                let mut dt = y * x.powf(y - 1.0) * t(a);
                if t(b) != 0.0 {
                    dt += x.powf(y) * x.ln() * t(b);
                }
                (d, dt)
            }
            Instr::PowI(d, a, k) => {
                let x = r(a);
                (d, k as f64 * x.powi(k - 1) * t(a))
            }
            Instr::Call(f, d, a) => (d, func_derivative(f, r(a)) * t(a)),
            Instr::Call2(f, d, a, b) => {
                let (x, y, dx, dy) = (r(a), r(b), t(a), t(b));
                let dt = match f {
                    Func2::Atan2 => (y * dx - x * dy) / (x * x + y * y),
                    Func2::Min => {
                        if x <= y {
                            dx
                        } else {
                            dy
                        }
                    }
                    Func2::Max => {
                        if x >= y {
                            dx
                        } else {
                            dy
                        }
                    }
                    // As `apply`: the actual model (the tape compiles it to `Homotopy`).
                    Func2::Homotopy => dx,
                };
                (d, dt)
            }
            Instr::Select(d, c, a, b) => (d, if r(c) != 0.0 { t(a) } else { t(b) }),
            Instr::Homotopy(d, l, a, b) => (d, homotopy(r(l), t(a), t(b))),
            Instr::Cmp(_, d, ..) | Instr::And(d, ..) | Instr::Or(d, ..) | Instr::Not(d, _) => {
                (d, 0.0)
            }
            Instr::Copy(d, a) => (d, t(a)),
            Instr::Apply(d, s) => (d, calls.call_tangent(&sites[s as usize], r, t).1),
        };
        set(d, dt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes(n: usize) -> (ExprPool, Vec<ExprId>) {
        let mut pool = ExprPool::new();
        let ids = (0..n).map(|k| pool.constant(k as f64 + 0.5)).collect();
        (pool, ids)
    }

    #[test]
    fn a_cleared_node_table_forgets_its_entries() {
        let (pool, ids) = nodes(3);
        let mut table = NodeTable::<Reg>::new(&pool);
        table.insert(ids[1], 7);
        assert_eq!((table.get(ids[1]), table.get(ids[0])), (Some(7), None));
        table.clear();
        assert_eq!(table.get(ids[1]), None);
        table.insert(ids[0], 3);
        assert_eq!(table.get(ids[0]), Some(3));
        // The generation wraps: the entries of every earlier generation are forgotten.
        table.generation = LAST_GENERATION - 1;
        table.insert(ids[2], 9);
        table.clear();
        assert_eq!(
            ids.iter().map(|&e| table.get(e)).collect::<Vec<_>>(),
            [None; 3]
        );
    }

    #[test]
    fn an_entry_keeps_its_register_and_class_apart_from_the_generation() {
        let (pool, ids) = nodes(1);
        let mut table = NodeTable::<(Reg, Class)>::new(&pool);
        table.generation = LAST_GENERATION - 1;
        for class in [Class::Setup, Class::Final, Class::Pending] {
            for reg in [0, 1, Reg::MAX] {
                table.insert(ids[0], (reg, class));
                assert_eq!(table.get(ids[0]), Some((reg, class)));
            }
        }
    }

    #[test]
    fn a_node_has_a_register_per_group() {
        let (pool, ids) = nodes(2);
        let mut finals = Finals::new(&pool);
        finals.insert(0, ids[0], 10);
        finals.insert(2, ids[0], 20);
        finals.insert(5, ids[1], Reg::MAX);
        assert_eq!(finals.get(5, ids[1]), Some(Reg::MAX));
        finals.insert(0, ids[0], 11);
        finals.insert(2, ids[0], 21);
        let seen = [(0, 0), (2, 0), (1, 0), (0, 1)].map(|(g, k)| finals.get(g, ids[k]));
        assert_eq!(seen, [Some(11), Some(21), None, None]);
    }
}
