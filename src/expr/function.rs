//! Functions kept as code: a Modelica function the translator cannot (or should not) inline
//! becomes a [`Function`] of the pool, a statement program over numbered local slots, and
//! calls of it are [`Node::Apply`] nodes. This module holds the program's form, the reference
//! interpreter that [`ExprPool::eval`] and constant folding use, and the forward-mode tangent
//! function through which the symbolic Jacobian differentiates a call exactly.
//!
//! Slots `0..inputs` hold the inputs (arrays flattened in row-major order), the outputs and the
//! protected variables the slots after them. Body expressions are nodes of the same pool over
//! [`Node::Local`] leaves, constants and calls: a function reads nothing of the model.

use std::cell::Cell;

use smallvec::SmallVec;

pub use mocca_runtime::externals::Native;

use super::{ExprId, ExprPool, Node, Values};

/// Index of a function in its pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FunctionId(pub u32);

/// One statement of a function's body.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// `slot := value`.
    Assign(u32, ExprId),
    /// `if c1 then … elseif c2 then … else … end if`.
    If(Vec<(ExprId, Vec<Stmt>)>, Vec<Stmt>),
    /// `while c loop … end while`.
    While(ExprId, Vec<Stmt>),
    /// A `for` loop unrolled over its known range: a block that `break` leaves.
    Block(Vec<Stmt>),
    /// Leaves the innermost `while` or block.
    Break,
    Return,
    /// `assert(c, message)`: a call whose assertion fails yields NaN outputs, so the step or
    /// the Newton iteration computing it fails visibly.
    Assert(ExprId, String),
    /// A foreign function implemented in Rust: its outputs' slots from its inputs' slots.
    Native(Native, Vec<u32>, Vec<u32>),
}

/// A function kept as code.
#[derive(Clone, Debug)]
pub struct Function {
    /// The Modelica class's path.
    pub name: String,
    /// Slots `0..inputs` are the inputs.
    pub inputs: u32,
    /// The slot of each output value, in order.
    pub outputs: Vec<u32>,
    /// All slots: inputs, outputs, protected variables.
    pub slots: u32,
    pub body: Vec<Stmt>,
    /// The forward-mode tangent function, once made.
    tangent: Option<FunctionId>,
    /// The derivative its `derivative` annotation names, which differentiation calls instead
    /// of the tangent function.
    pub derivative: Option<Derivative>,
}

/// A function's declared derivative (Modelica 12.7.1): a function of the inputs and then the
/// differentials of some of them, giving the differentials of the Real outputs.
#[derive(Clone, Debug)]
pub struct Derivative {
    pub function: FunctionId,
    /// Per input value (slot), whether its differential is an argument of the derivative.
    pub differentiated: Vec<bool>,
    /// Per output value, the derivative's output that is its differential (`None`: an
    /// Integer or Boolean output, whose differential is zero).
    pub outputs: Vec<Option<u32>>,
}

impl Function {
    /// A function without a body yet (its body may call it: recursion).
    pub fn declared(name: String, inputs: u32, outputs: Vec<u32>, slots: u32) -> Function {
        Function {
            name,
            inputs,
            outputs,
            slots,
            body: Vec::new(),
            tangent: None,
            derivative: None,
        }
    }
}

/// Turns of one `while` loop before a call is taken for one that never ends (its outputs NaN).
pub const MAX_TURNS: usize = 10_000_000;
/// Calls nested inside one another at run time before the innermost is refused (NaN).
pub const MAX_DEPTH: usize = 1_000;

thread_local! {
    static DEPTH: Cell<usize> = const { Cell::new(0) };
    /// The last call of a function of several outputs (the pool's and the function's
    /// addresses, the argument bits) with its outputs: each output of one call is its own
    /// expression, and one run serves them all.
    static LAST_CALL: std::cell::RefCell<Option<LastCall>> = const { std::cell::RefCell::new(None) };
}

type LastCall = ((usize, usize), Vec<u64>, SmallVec<[f64; 4]>);

/// How a statement list ended (in the reference interpreter and the tape's).
#[derive(Clone, Copy, PartialEq)]
pub enum Flow {
    Next,
    Break,
    Return,
    Failed,
}

/// A running call's slots, read by its body's expressions.
struct Frame(Vec<f64>);

impl Values for Frame {
    fn var(&self, _: super::VarId) -> Option<f64> {
        None
    }
    fn der(&self, _: super::VarId) -> Option<f64> {
        None
    }
    fn time(&self) -> Option<f64> {
        None
    }
    fn local(&self, slot: u32) -> Option<f64> {
        self.0.get(slot as usize).copied()
    }
}

impl ExprPool {
    pub fn add_function(&mut self, f: Function) -> FunctionId {
        self.functions.push(f);
        FunctionId(self.functions.len() as u32 - 1)
    }

    pub fn function(&self, f: FunctionId) -> &Function {
        &self.functions[f.0 as usize]
    }

    pub fn functions(&self) -> &[Function] {
        &self.functions
    }

    /// Gives a declared function its slots and body.
    pub fn set_derivative(&mut self, f: FunctionId, derivative: Derivative) {
        self.functions[f.0 as usize].derivative = Some(derivative);
    }

    pub fn define_function(&mut self, f: FunctionId, slots: u32, body: Vec<Stmt>) {
        let function = &mut self.functions[f.0 as usize];
        function.slots = slots;
        function.body = body;
    }

    /// Output `output` of `f` on `args`: folded to a constant when every argument is one and
    /// the call yields a finite number.
    pub fn apply(&mut self, f: FunctionId, output: u32, args: &[ExprId]) -> ExprId {
        let list = match args.split_last() {
            None => self.zero(),
            Some((&last, rest)) => rest
                .iter()
                .rev()
                .fold(last, |tail, &a| self.intern(Node::Args(a, tail))),
        };
        self.applied(f, output, list)
    }

    /// [`ExprPool::apply`] on an argument list already built.
    pub(super) fn applied(&mut self, f: FunctionId, output: u32, list: ExprId) -> ExprId {
        let args = self.arguments(f, list);
        let known: Option<SmallVec<[f64; 8]>> = args.iter().map(|&a| self.as_const(a)).collect();
        if let Some(values) = known
            && self.function(f).body_is_defined()
            && let Some(&value) = self.run_function(f, &values).get(output as usize)
            && let Some(folded) = self.folded(value)
        {
            return folded;
        }
        self.intern(Node::Apply(f, output, list))
    }

    /// The arguments of a call of `f` whose argument list is `list`.
    pub fn arguments(&self, f: FunctionId, list: ExprId) -> SmallVec<[ExprId; 8]> {
        let n = self.function(f).inputs as usize;
        let mut args = SmallVec::with_capacity(n);
        let mut rest = list;
        for _ in 1..n {
            let Node::Args(a, tail) = self.node(rest) else {
                unreachable!("a call's argument list has one entry per input")
            };
            args.push(a);
            rest = tail;
        }
        if n > 0 {
            args.push(rest);
        }
        args
    }

    /// Output `output` of `f` on `args`: a function of several outputs runs once for all of
    /// them when they are asked for one after another on the same arguments.
    pub fn function_output(&self, f: FunctionId, output: usize, args: &[f64]) -> f64 {
        let function = self.function(f);
        if function.outputs.len() < 2 {
            return self.run_function(f, args)[output];
        }
        let key = (
            std::ptr::from_ref(self) as usize,
            std::ptr::from_ref(function) as usize,
        );
        let bits: Vec<u64> = args.iter().map(|x| x.to_bits()).collect();
        let cached = LAST_CALL.with(|last| match &*last.borrow() {
            Some((k, b, outputs)) if *k == key && *b == bits => Some(outputs[output]),
            _ => None,
        });
        if let Some(value) = cached {
            return value;
        }
        let outputs = self.run_function(f, args);
        let value = outputs[output];
        LAST_CALL.with(|last| *last.borrow_mut() = Some((key, bits, outputs)));
        value
    }

    /// The outputs of `f` on `args` (the reference interpreter): NaN for each when an
    /// assertion fails, a loop does not end or calls nest too deep.
    pub fn run_function(&self, f: FunctionId, args: &[f64]) -> SmallVec<[f64; 4]> {
        let function = self.function(f);
        let failed = || function.outputs.iter().map(|_| f64::NAN).collect();
        let depth = DEPTH.with(|d| d.get());
        if depth >= MAX_DEPTH {
            return failed();
        }
        DEPTH.with(|d| d.set(depth + 1));
        let mut frame = Frame(vec![0.0; function.slots as usize]);
        frame.0[..args.len()].copy_from_slice(args);
        let flow = self.execute(&function.body, &mut frame);
        DEPTH.with(|d| d.set(depth));
        if flow == Flow::Failed {
            return failed();
        }
        function
            .outputs
            .iter()
            .map(|&s| frame.0[s as usize])
            .collect()
    }

    fn execute(&self, body: &[Stmt], frame: &mut Frame) -> Flow {
        for s in body {
            let flow = match s {
                Stmt::Assign(slot, e) => match self.eval(*e, frame) {
                    Ok(v) => {
                        frame.0[*slot as usize] = v;
                        Flow::Next
                    }
                    Err(_) => Flow::Failed,
                },
                Stmt::If(branches, otherwise) => {
                    let mut taken = None;
                    for (c, then) in branches {
                        match self.eval(*c, frame) {
                            Ok(x) if x != 0.0 => {
                                taken = Some(then);
                                break;
                            }
                            Ok(_) => {}
                            Err(_) => return Flow::Failed,
                        }
                    }
                    self.execute(taken.unwrap_or(otherwise), frame)
                }
                Stmt::While(c, body) => self.turn(*c, body, frame),
                Stmt::Block(body) => match self.execute(body, frame) {
                    Flow::Break => Flow::Next,
                    flow => flow,
                },
                Stmt::Break => Flow::Break,
                Stmt::Return => Flow::Return,
                Stmt::Assert(c, _) => match self.eval(*c, frame) {
                    Ok(x) if x != 0.0 => Flow::Next,
                    _ => Flow::Failed,
                },
                Stmt::Native(native, inputs, outputs) => {
                    let args: Vec<f64> = inputs.iter().map(|&k| frame.0[k as usize]).collect();
                    let mut values = vec![0.0; outputs.len()];
                    native.call(&args, &mut values);
                    for (&k, v) in outputs.iter().zip(values) {
                        frame.0[k as usize] = v;
                    }
                    Flow::Next
                }
            };
            if flow != Flow::Next {
                return flow;
            }
        }
        Flow::Next
    }

    fn turn(&self, c: ExprId, body: &[Stmt], frame: &mut Frame) -> Flow {
        for _ in 0..MAX_TURNS {
            match self.eval(c, frame) {
                Ok(0.0) => return Flow::Next,
                Ok(_) => {}
                Err(_) => return Flow::Failed,
            }
            match self.execute(body, frame) {
                Flow::Next => {}
                Flow::Break => return Flow::Next,
                flow => return flow,
            }
        }
        Flow::Failed
    }

    /// The functions `root` calls, each once, in order of first call.
    pub fn called_functions(&self, root: ExprId) -> Vec<FunctionId> {
        let (mut found, mut seen, mut stack) = (Vec::new(), Vec::new(), vec![root]);
        while let Some(e) = stack.pop() {
            if seen.contains(&e) {
                continue;
            }
            seen.push(e);
            if let Node::Apply(f, ..) = self.node(e)
                && !found.contains(&f)
            {
                found.push(f);
            }
            stack.extend(self.children(e));
        }
        found
    }

    /// The forward-mode tangent function of `f`: its inputs are `f`'s inputs and then their
    /// tangents, its outputs the tangents of `f`'s outputs. Made once per function.
    pub fn tangent_function(&mut self, f: FunctionId) -> FunctionId {
        if let Some(t) = self.function(f).tangent {
            return t;
        }
        let function = self.function(f).clone();
        let (n, s) = (function.inputs, function.slots);
        let layout = TangentLayout { n, s };
        let outputs = function
            .outputs
            .iter()
            .map(|&o| layout.tangent(o))
            .collect();
        let name = format!("{}.tangent", function.name);
        let t = self.add_function(Function::declared(name, 2 * n, outputs, 2 * s));
        self.functions[f.0 as usize].tangent = Some(t);
        let body = self.tangent_body(&function.body, layout);
        self.define_function(t, 2 * s, body);
        t
    }

    fn tangent_body(&mut self, body: &[Stmt], layout: TangentLayout) -> Vec<Stmt> {
        let mut out = Vec::with_capacity(2 * body.len());
        for s in body {
            match s {
                Stmt::Assign(slot, e) => {
                    let e = self.renamed(*e, layout);
                    let de = self.directional(e, layout);
                    // The tangent first: it reads the slot's value before the assignment.
                    out.push(Stmt::Assign(layout.tangent(*slot), de));
                    out.push(Stmt::Assign(layout.value(*slot), e));
                }
                Stmt::If(branches, otherwise) => {
                    let branches = branches
                        .iter()
                        .map(|(c, then)| {
                            (self.renamed(*c, layout), self.tangent_body(then, layout))
                        })
                        .collect();
                    let otherwise = self.tangent_body(otherwise, layout);
                    out.push(Stmt::If(branches, otherwise));
                }
                Stmt::While(c, body) => {
                    let c = self.renamed(*c, layout);
                    out.push(Stmt::While(c, self.tangent_body(body, layout)));
                }
                Stmt::Block(body) => out.push(Stmt::Block(self.tangent_body(body, layout))),
                Stmt::Break => out.push(Stmt::Break),
                Stmt::Return => out.push(Stmt::Return),
                Stmt::Assert(c, message) => {
                    out.push(Stmt::Assert(self.renamed(*c, layout), message.clone()))
                }
                Stmt::Native(native, inputs, outputs) => {
                    let value = |ks: &[u32]| ks.iter().map(|&k| layout.value(k)).collect();
                    let tangent = |ks: &[u32]| -> Vec<u32> {
                        ks.iter().map(|&k| layout.tangent(k)).collect()
                    };
                    match native.tangent() {
                        Some(differential) => {
                            let mut args: Vec<u32> = value(inputs);
                            args.extend(tangent(inputs));
                            out.push(Stmt::Native(differential, args, tangent(outputs)));
                        }
                        None => {
                            let zero = self.zero();
                            out.extend(tangent(outputs).into_iter().map(|k| Stmt::Assign(k, zero)));
                        }
                    }
                    out.push(Stmt::Native(*native, value(inputs), value(outputs)));
                }
            }
        }
        out
    }

    /// `e` over the tangent function's slots for the values.
    fn renamed(&mut self, e: ExprId, layout: TangentLayout) -> ExprId {
        self.substitute(e, &mut |pool, n| match n {
            Node::Local(k) => Some(pool.local(layout.value(k))),
            _ => None,
        })
    }

    /// The directional derivative of `e` (over value slots) along the tangent slots.
    fn directional(&mut self, e: ExprId, layout: TangentLayout) -> ExprId {
        let mut slots = Vec::new();
        self.visit_leaves(e, |n| {
            if let Node::Local(k) = n {
                slots.push(k);
            }
        });
        slots.sort_unstable();
        let mut sum = self.zero();
        for k in slots {
            let partial = self.diff(e, Node::Local(k));
            let tangent = self.local(layout.tangent(layout.original(k)));
            let term = self.mul(partial, tangent);
            sum = self.add(sum, term);
        }
        sum
    }
}

impl Function {
    fn body_is_defined(&self) -> bool {
        !self.body.is_empty() || self.outputs.is_empty()
    }
}

/// Where the tangent function keeps a function's slots: the inputs first, then the inputs'
/// tangents, then the other slots' values and their tangents.
#[derive(Clone, Copy)]
struct TangentLayout {
    n: u32,
    s: u32,
}

impl TangentLayout {
    fn value(self, slot: u32) -> u32 {
        if slot < self.n { slot } else { slot + self.n }
    }

    fn tangent(self, slot: u32) -> u32 {
        if slot < self.n {
            self.n + slot
        } else {
            self.s + slot
        }
    }

    /// The function's slot whose value the tangent function keeps in `slot`.
    fn original(self, slot: u32) -> u32 {
        if slot < self.n { slot } else { slot - self.n }
    }
}
