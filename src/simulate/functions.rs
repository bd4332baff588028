//! The pool's kept functions compiled for the tape: each [`Function`] becomes a [`Program`],
//! straight runs of the tape's own instructions over a register file of its own (its slots
//! first, then constants and intermediate values) inside the function's structured control
//! flow. A call runs the program on a fresh register file; the tangent pass runs it with a
//! second one, each instruction's tangent after its value (forward mode through the loops and
//! branches the values take), so calls are differentiated exactly here as the pool's tangent
//! functions differentiate them symbolically.

use std::ops::Range;

use smallvec::SmallVec;

use crate::expr::function::{Flow, Native};
use crate::expr::hash::FxHashMap as HashMap;
use crate::expr::{ExprId, ExprPool, FunctionId, Node, Stmt};

use super::tape::{Instr, Reg, operation, run, run_tangent};

/// A call the code makes: output `output` of `function` on the values of `args`.
#[derive(Clone, Debug)]
pub struct CallSite {
    pub function: FunctionId,
    pub output: u32,
    pub args: Vec<Reg>,
}

/// One compiled statement of a function's body.
#[derive(Clone, Debug)]
pub enum Op {
    /// Instructions run in order.
    Code(Range<usize>),
    /// Each branch's condition code and register, its body; then the `else` body.
    If(Vec<(Range<usize>, Reg, Vec<Op>)>, Vec<Op>),
    /// The condition's code and register, the body.
    While(Range<usize>, Reg, Vec<Op>),
    Block(Vec<Op>),
    Break,
    Return,
    /// The condition's code and register.
    Assert(Range<usize>, Reg),
    /// A foreign function implemented in Rust on the inputs' registers, into the outputs'.
    Native(Native, Vec<Reg>, Vec<Reg>),
}

/// One function compiled.
#[derive(Clone, Debug)]
pub struct Program {
    pub name: String,
    pub inputs: usize,
    pub outputs: Vec<Reg>,
    pub registers: usize,
    pub constants: Vec<(Reg, f64)>,
    pub instrs: Vec<Instr>,
    /// The calls its code makes ([`Instr::Apply`] indexes them).
    pub sites: Vec<CallSite>,
    pub body: Vec<Op>,
}

/// The compiled functions a tape calls, by [`FunctionId`].
#[derive(Clone, Debug, Default)]
pub struct Programs {
    programs: Vec<Option<Program>>,
}

impl Programs {
    /// Compiles `f` and every function it calls, once each.
    pub fn ensure(&mut self, pool: &ExprPool, f: FunctionId) {
        let at = f.0 as usize;
        if self.programs.len() <= at {
            self.programs
                .resize(pool.functions().len().max(at + 1), None);
        }
        if self.programs[at].is_some() {
            return;
        }
        let program = compile(pool, f);
        let callees: Vec<FunctionId> = program.sites.iter().map(|s| s.function).collect();
        self.programs[at] = Some(program);
        for g in callees {
            self.ensure(pool, g);
        }
    }

    /// Every compiled program with its function's index, in order.
    pub fn compiled(&self) -> impl Iterator<Item = (usize, &Program)> {
        (self.programs.iter().enumerate()).filter_map(|(k, p)| Some((k, p.as_ref()?)))
    }

    fn program(&self, f: FunctionId) -> &Program {
        self.programs[f.0 as usize]
            .as_ref()
            .expect("a called function is compiled with its caller")
    }

    /// Output `site.output` of the call `site`, the value of each argument's register read
    /// by `r`.
    pub fn call(&self, site: &CallSite, r: impl Fn(Reg) -> f64) -> f64 {
        let program = self.program(site.function);
        program.with_registers(|regs| {
            for (k, &a) in site.args.iter().enumerate() {
                regs[k] = r(a);
            }
            let flow = self.execute(program, &program.body, regs, None);
            self.outcome(program, site, regs, flow)
        })
    }

    /// The value and tangent of the call `site`, its arguments' values read by `r` and their
    /// tangents by `t`.
    pub fn call_tangent(
        &self,
        site: &CallSite,
        r: impl Fn(Reg) -> f64,
        t: impl Fn(Reg) -> f64,
    ) -> (f64, f64) {
        let program = self.program(site.function);
        program.with_registers(|regs| {
            let mut tans: SmallVec<[f64; 64]> = SmallVec::new();
            tans.resize(program.registers, 0.0);
            for (k, &a) in site.args.iter().enumerate() {
                regs[k] = r(a);
                tans[k] = t(a);
            }
            let flow = self.execute(program, &program.body, regs, Some(&mut tans));
            let value = self.outcome(program, site, regs, flow);
            let tangent = if value.is_nan() {
                f64::NAN
            } else {
                tans[program.outputs[site.output as usize] as usize]
            };
            (value, tangent)
        })
    }

    fn outcome(&self, program: &Program, site: &CallSite, regs: &[f64], flow: Flow) -> f64 {
        match flow {
            Flow::Failed => f64::NAN,
            _ => regs[program.outputs[site.output as usize] as usize],
        }
    }

    fn execute(&self, p: &Program, body: &[Op], r: &mut [f64], mut t: Option<&mut [f64]>) -> Flow {
        for op in body {
            let flow = match op {
                Op::Code(code) => {
                    self.straight(p, code.clone(), r, t.as_deref_mut());
                    Flow::Next
                }
                Op::If(branches, otherwise) => {
                    let mut taken = otherwise;
                    for (code, c, then) in branches {
                        self.straight(p, code.clone(), r, t.as_deref_mut());
                        if r[*c as usize] != 0.0 {
                            taken = then;
                            break;
                        }
                    }
                    self.execute(p, taken, r, t.as_deref_mut())
                }
                Op::While(code, c, body) => self.turn(p, (code, *c, body), r, t.as_deref_mut()),
                Op::Block(body) => match self.execute(p, body, r, t.as_deref_mut()) {
                    Flow::Break => Flow::Next,
                    flow => flow,
                },
                Op::Break => Flow::Break,
                Op::Return => Flow::Return,
                Op::Assert(code, c) => {
                    self.straight(p, code.clone(), r, t.as_deref_mut());
                    if r[*c as usize] != 0.0 {
                        Flow::Next
                    } else {
                        Flow::Failed
                    }
                }
                Op::Native(native, inputs, outputs) => {
                    if let Some(t) = t.as_deref_mut() {
                        native_tangent(*native, inputs, outputs, r, t);
                    }
                    native_call(*native, inputs, outputs, r);
                    Flow::Next
                }
            };
            if flow != Flow::Next {
                return flow;
            }
        }
        Flow::Next
    }

    fn turn(
        &self,
        p: &Program,
        (code, c, body): (&Range<usize>, Reg, &[Op]),
        r: &mut [f64],
        mut t: Option<&mut [f64]>,
    ) -> Flow {
        for _ in 0..crate::expr::function::MAX_TURNS {
            self.straight(p, code.clone(), r, t.as_deref_mut());
            if r[c as usize] == 0.0 {
                return Flow::Next;
            }
            match self.execute(p, body, r, t.as_deref_mut()) {
                Flow::Next => {}
                Flow::Break => return Flow::Next,
                flow => return flow,
            }
        }
        Flow::Failed
    }

    /// The instructions `code` of `p`, with their tangents when `t` is given.
    fn straight(&self, p: &Program, code: Range<usize>, r: &mut [f64], t: Option<&mut [f64]>) {
        let instrs = &p.instrs[code];
        match t {
            // SAFETY: `compile` allocated every register the program's instructions name, and
            // `r` has the program's size.
            None => unsafe { run(instrs, r, self, &p.sites) },
            // A statement's instructions write registers of their own but for its last, the
            // copy into its slot: its values can all run before its tangents, the copy last.
            Some(t) => {
                for piece in instrs.split_inclusive(|i| matches!(i, Instr::Copy(..))) {
                    if piece.iter().any(|i| matches!(i, Instr::Apply(..))) {
                        self.interleaved(p, piece, r, t);
                        continue;
                    }
                    let (values, copy) = match piece.split_last() {
                        Some((last @ Instr::Copy(..), rest)) => (rest, Some(last)),
                        _ => (piece, None),
                    };
                    // SAFETY: as above, for both register files of the program's size.
                    unsafe {
                        run(values, r, self, &p.sites);
                        run_tangent(piece, r, t, self, &p.sites);
                        if let Some(copy) = copy {
                            run(std::slice::from_ref(copy), r, self, &p.sites);
                        }
                    }
                }
            }
        }
    }

    /// Each instruction's tangent and then its value, a call's both at once.
    fn interleaved(&self, p: &Program, instrs: &[Instr], r: &mut [f64], t: &mut [f64]) {
        for i in instrs {
            match *i {
                Instr::Apply(d, s) => {
                    let site = &p.sites[s as usize];
                    let (value, tangent) =
                        self.call_tangent(site, |a| r[a as usize], |a| t[a as usize]);
                    (r[d as usize], t[d as usize]) = (value, tangent);
                }
                _ => {
                    let one = std::slice::from_ref(i);
                    // SAFETY: as in `straight`.
                    unsafe {
                        run_tangent(one, r, t, self, &p.sites);
                        run(one, r, self, &p.sites);
                    }
                }
            }
        }
    }
}

/// `native` on the registers `inputs` of `r`, into its registers `outputs`.
fn native_call(native: Native, inputs: &[Reg], outputs: &[Reg], r: &mut [f64]) {
    let args: SmallVec<[f64; 64]> = inputs.iter().map(|&k| r[k as usize]).collect();
    let mut values: SmallVec<[f64; 64]> = SmallVec::from_elem(0.0, outputs.len());
    native.call(&args, &mut values);
    for (&k, v) in outputs.iter().zip(values) {
        r[k as usize] = v;
    }
}

/// The tangents into `t` of `native`'s outputs, from its inputs' values in `r` and tangents
/// in `t` (zero where it has no differential).
fn native_tangent(native: Native, inputs: &[Reg], outputs: &[Reg], r: &[f64], t: &mut [f64]) {
    let Some(differential) = native.tangent() else {
        outputs.iter().for_each(|&o| t[o as usize] = 0.0);
        return;
    };
    let args: Vec<f64> = (inputs.iter().map(|&k| r[k as usize]))
        .chain(inputs.iter().map(|&k| t[k as usize]))
        .collect();
    let mut tangents = vec![0.0; outputs.len()];
    differential.call(&args, &mut tangents);
    for (&k, v) in outputs.iter().zip(tangents) {
        t[k as usize] = v;
    }
}

impl Program {
    /// `run` on a fresh register file of the program, its constants set: on the stack when it
    /// is small (calls are frequent and their programs mostly are).
    fn with_registers<T>(&self, run: impl FnOnce(&mut [f64]) -> T) -> T {
        let mut small = [0.0; 64];
        let mut large = Vec::new();
        let regs = if self.registers <= small.len() {
            &mut small[..self.registers]
        } else {
            large.resize(self.registers, 0.0);
            &mut large[..]
        };
        for &(r, x) in &self.constants {
            regs[r as usize] = x;
        }
        run(regs)
    }
}

/// Compiles one function: every statement's expressions into instructions over the slots'
/// registers, nodes shared within a statement (a slot may change between statements).
fn compile(pool: &ExprPool, f: FunctionId) -> Program {
    let function = pool.function(f);
    let mut c = ProgramCompiler {
        pool,
        program: Program {
            name: function.name.clone(),
            inputs: function.inputs as usize,
            outputs: function.outputs.clone(),
            registers: function.slots as usize,
            constants: Vec::new(),
            instrs: Vec::new(),
            sites: Vec::new(),
            body: Vec::new(),
        },
        constants: HashMap::default(),
        emitted: HashMap::default(),
        homotopy: 0,
    };
    // `homotopy(a, b)` inside a function is its actual form: λ is 1.
    let one = c.constant(1.0);
    c.homotopy = one;
    let body = c.body(&function.body);
    c.program.body = body;
    c.program
}

struct ProgramCompiler<'a> {
    pool: &'a ExprPool,
    program: Program,
    constants: HashMap<u64, Reg>,
    /// The current statement's nodes and their registers.
    emitted: HashMap<ExprId, Reg>,
    homotopy: Reg,
}

impl ProgramCompiler<'_> {
    fn alloc(&mut self) -> Reg {
        self.program.registers += 1;
        (self.program.registers - 1) as Reg
    }

    fn constant(&mut self, x: f64) -> Reg {
        if let Some(&r) = self.constants.get(&x.to_bits()) {
            return r;
        }
        let r = self.alloc();
        self.constants.insert(x.to_bits(), r);
        self.program.constants.push((r, x));
        r
    }

    fn body(&mut self, body: &[Stmt]) -> Vec<Op> {
        let mut ops = Vec::with_capacity(body.len());
        for s in body {
            match s {
                Stmt::Assign(slot, e) => {
                    let (code, r) = self.code(*e);
                    let mut code = code;
                    self.program.instrs.push(Instr::Copy(*slot, r));
                    code.end += 1;
                    // Consecutive assignments are one straight run.
                    match ops.last_mut() {
                        Some(Op::Code(run)) if run.end == code.start => run.end = code.end,
                        _ => ops.push(Op::Code(code)),
                    }
                }
                Stmt::If(branches, otherwise) => {
                    let branches = branches
                        .iter()
                        .map(|(c, then)| {
                            let (code, r) = self.code(*c);
                            (code, r, self.body(then))
                        })
                        .collect();
                    let otherwise = self.body(otherwise);
                    ops.push(Op::If(branches, otherwise));
                }
                Stmt::While(c, body) => {
                    let (code, r) = self.code(*c);
                    let body = self.body(body);
                    ops.push(Op::While(code, r, body));
                }
                Stmt::Block(body) => {
                    let body = self.body(body);
                    ops.push(Op::Block(body));
                }
                Stmt::Break => ops.push(Op::Break),
                Stmt::Return => ops.push(Op::Return),
                Stmt::Assert(c, _) => {
                    let (code, r) = self.code(*c);
                    ops.push(Op::Assert(code, r));
                }
                Stmt::Native(native, inputs, outputs) => {
                    ops.push(Op::Native(*native, inputs.clone(), outputs.clone()))
                }
            }
        }
        ops
    }

    /// The instructions computing `e` and the register holding it.
    fn code(&mut self, e: ExprId) -> (Range<usize>, Reg) {
        self.emitted.clear();
        let start = self.program.instrs.len();
        let r = self.emit(e);
        (start..self.program.instrs.len(), r)
    }

    fn emit(&mut self, root: ExprId) -> Reg {
        let mut stack = vec![(root, false)];
        while let Some((e, expanded)) = stack.pop() {
            if self.emitted.contains_key(&e) {
                continue;
            }
            let node = self.pool.node(e);
            let leaf = match node {
                Node::Const(bits) => Some(self.constant(f64::from_bits(bits))),
                Node::Local(k) => Some(k),
                _ => None,
            };
            if let Some(r) = leaf {
                self.emitted.insert(e, r);
                continue;
            }
            let operands = self.operands(e, node);
            if !expanded {
                stack.push((e, true));
                stack.extend(operands.iter().map(|&k| (k, false)));
                continue;
            }
            let args: SmallVec<[Reg; 8]> = operands.iter().map(|k| self.emitted[k]).collect();
            let dst = self.alloc();
            let instr = match node {
                Node::Apply(function, output, _) => {
                    let site = CallSite {
                        function,
                        output,
                        args: args.to_vec(),
                    };
                    self.program.sites.push(site);
                    Instr::Apply(dst, self.program.sites.len() as u32 - 1)
                }
                _ => operation(self.pool, node, dst, &args, self.homotopy),
            };
            self.program.instrs.push(instr);
            self.emitted.insert(e, dst);
        }
        self.emitted[&root]
    }

    fn operands(&self, e: ExprId, node: Node) -> SmallVec<[ExprId; 8]> {
        match node {
            Node::Apply(f, _, list) => self.pool.arguments(f, list),
            _ => super::tape::operand_nodes(self.pool, e, node)
                .into_iter()
                .collect(),
        }
    }
}
