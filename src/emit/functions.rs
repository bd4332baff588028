//! The model's functions kept as code, as Rust: one `fn f{K}(args, output) -> f64` per
//! compiled [`Program`] and its tangent mode `f{K}_t(args, tangents, output) -> (f64, f64)`,
//! each the program's instructions as statements on a register file of its own inside its
//! control flow, so an emitted call computes what the tape's call computes.

use super::code::Code;
use super::rust::{call_site, literal, statement, tangent};
use crate::expr::function::Native;
use crate::expr::{ExprPool, FunctionId, function::MAX_TURNS};
use crate::simulate::functions::{Op, Program, Programs};
use crate::simulate::tape::{Instr, Reg};

/// Every function of the pool compiled: those the tape calls and those the model's other
/// expressions (events, initial values, assertions) call.
pub fn all_programs(pool: &ExprPool, tape_programs: &Programs) -> Programs {
    let mut programs = tape_programs.clone();
    for k in 0..pool.functions().len() {
        programs.ensure(pool, FunctionId(k as u32));
    }
    programs
}

/// `f{K}` and `f{K}_t` for every program.
pub fn functions(code: &mut Code, programs: &Programs) {
    for (k, program) in programs.compiled() {
        code.line(format_args!("/// `{}`", program.name));
        for tangents in [false, true] {
            function(code, k, program, tangents);
        }
    }
}

fn function(code: &mut Code, k: usize, p: &Program, tangents: bool) {
    let outputs: Vec<String> = p.outputs.iter().map(|o| o.to_string()).collect();
    if tangents {
        code.open(format_args!(
            "pub fn f{k}_t(x: &[f64], dx: &[f64], output: usize) -> (f64, f64)"
        ));
    } else {
        code.open(format_args!("pub fn f{k}(x: &[f64], output: usize) -> f64"));
    }
    code.line(format_args!(
        "const OUT: [usize; {}] = [{}];",
        outputs.len(),
        outputs.join(", ")
    ));
    code.line(format_args!("let mut r = [0.0_f64; {}];", p.registers));
    code.line(format_args!("r[..{}].copy_from_slice(x);", p.inputs));
    if tangents {
        code.line(format_args!("let mut t = [0.0_f64; {}];", p.registers));
        code.line(format_args!("t[..{}].copy_from_slice(dx);", p.inputs));
    }
    for &(r, x) in &p.constants {
        code.line(format_args!("r[{r}] = {};", literal(x)));
    }
    let mut body = Body {
        code,
        program: p,
        tangents,
        labels: 0,
        loops: Vec::new(),
    };
    body.ops(&p.body);
    let result = if tangents {
        "(r[OUT[output]], t[OUT[output]])"
    } else {
        "r[OUT[output]]"
    };
    code.line(result);
    code.close().blank();
}

/// Writes a program's body.
struct Body<'c, 'p> {
    code: &'c mut Code,
    program: &'p Program,
    tangents: bool,
    /// Labels made so far (each loop, block and `if` has one).
    labels: usize,
    /// The labels `break` leaves, innermost last.
    loops: Vec<String>,
}

impl Body<'_, '_> {
    fn label(&mut self) -> String {
        self.labels += 1;
        format!("'l{}", self.labels)
    }

    fn returned(&self) -> &'static str {
        if self.tangents {
            "return (r[OUT[output]], t[OUT[output]]);"
        } else {
            "return r[OUT[output]];"
        }
    }

    fn failed(&self) -> &'static str {
        if self.tangents {
            "return (f64::NAN, f64::NAN);"
        } else {
            "return f64::NAN;"
        }
    }

    fn ops(&mut self, ops: &[Op]) {
        for op in ops {
            match op {
                Op::Code(range) => self.straight(range.clone()),
                Op::If(branches, otherwise) => {
                    let label = self.label();
                    self.code.open(format_args!("{label}:"));
                    for (range, c, then) in branches {
                        self.straight(range.clone());
                        self.code.open(format_args!("if r[{c}] != 0.0"));
                        self.ops(then);
                        self.code.line(format_args!("break {label};"));
                        self.code.close();
                    }
                    self.ops(otherwise);
                    self.code.close();
                }
                Op::While(range, c, body) => {
                    let label = self.label();
                    let turns = format!("turns_{}", &label[1..]);
                    self.code.line(format_args!("let mut {turns} = 0_usize;"));
                    self.code.open(format_args!("{label}: loop"));
                    let failed = self.failed();
                    self.code
                        .line(format_args!("if {turns} == {MAX_TURNS} {{ {failed} }}"));
                    self.code.line(format_args!("{turns} += 1;"));
                    self.straight(range.clone());
                    self.code
                        .line(format_args!("if r[{c}] == 0.0 {{ break {label}; }}"));
                    self.loops.push(label);
                    self.ops(body);
                    self.loops.pop();
                    self.code.close();
                }
                Op::Block(body) => {
                    let label = self.label();
                    self.code.open(format_args!("{label}:"));
                    self.loops.push(label);
                    self.ops(body);
                    self.loops.pop();
                    self.code.close();
                }
                Op::Break => {
                    let label = self.loops.last().expect("a break is inside a loop");
                    self.code.line(format_args!("break {label};"));
                }
                Op::Return => {
                    let line = self.returned();
                    self.code.line(line);
                }
                Op::Assert(range, c) => {
                    self.straight(range.clone());
                    let failed = self.failed();
                    self.code
                        .line(format_args!("if r[{c}] == 0.0 {{ {failed} }}"));
                }
                Op::Native(native, inputs, outputs) => self.native(*native, inputs, outputs),
            }
        }
    }

    /// A foreign function implemented in the crate's `externals`; in tangent mode its
    /// outputs' tangents first (by its differential, or zero).
    fn native(&mut self, native: Native, inputs: &[Reg], outputs: &[Reg]) {
        let values: Vec<String> = inputs.iter().map(|k| format!("r[{k}]")).collect();
        if self.tangents {
            match native.tangent() {
                Some(differential) => {
                    let tangents = inputs.iter().map(|k| format!("t[{k}]"));
                    let args: Vec<String> = values.iter().cloned().chain(tangents).collect();
                    self.native_into(differential, &args, outputs, "t");
                }
                None => {
                    for o in outputs {
                        self.code.line(format_args!("t[{o}] = 0.0;"));
                    }
                }
            }
        }
        self.native_into(native, &values, outputs, "r");
    }

    /// `native` called on `args`, its outputs copied into `registers[outputs]`.
    fn native_into(&mut self, native: Native, args: &[String], outputs: &[Reg], registers: &str) {
        let out = format!("out_{}", &self.label()[2..]);
        self.code.line(format_args!(
            "let mut {out} = [0.0_f64; {}];",
            outputs.len()
        ));
        self.code.line(format_args!(
            "crate::externals::Native::{native:?}.call(&[{}], &mut {out});",
            args.join(", ")
        ));
        for (k, o) in outputs.iter().enumerate() {
            self.code
                .line(format_args!("{registers}[{o}] = {out}[{k}];"));
        }
    }

    /// The instructions `range`, each one's tangent before its value in tangent mode (a
    /// call gives both at once).
    fn straight(&mut self, range: std::ops::Range<usize>) {
        let sites = &self.program.sites;
        for i in &self.program.instrs[range] {
            if !self.tangents {
                self.code.line(statement(i, sites));
                continue;
            }
            if let Instr::Apply(d, s) = *i {
                let call = call_site(&sites[s as usize], "r", Some("t"));
                self.code.line(format_args!("(r[{d}], t[{d}]) = {call};"));
                continue;
            }
            self.code.line(tangent(i, sites));
            self.code.line(statement(i, sites));
        }
    }
}
