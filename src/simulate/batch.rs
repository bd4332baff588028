//! Runs of structurally identical assignments (one equation of a `for` loop, N times) evaluated
//! instruction by instruction across the run instead of step by step: one dispatch per
//! instruction of the shape instead of one per instruction of every step, and a tight loop the
//! processor overlaps freely.
//!
//! A run qualifies when its steps' codes have the same instructions (operation, function,
//! exponent) and every register operand moves by a fixed stride from one step to the next, and
//! when no step reads a register another step of the run writes: then evaluating instruction by
//! instruction computes exactly what evaluating step by step computes.

use std::ops::Range;

use crate::expr::hash::FxHashMap as HashMap;

use super::tape::{Instr, Reg};

/// Shorter runs are left to the plain interpreter.
pub const MIN_RUN: usize = 4;

/// Per instruction of the shape, the stride of each register operand (destination first).
pub type Strides = [i32; 4];

/// A part of a straight run: `steps` (positions in the run) either batched with `strides` per
/// instruction of the first step's code, or evaluated one after the other.
#[derive(Clone, Debug)]
pub struct Part {
    pub steps: Range<usize>,
    pub strides: Option<Vec<Strides>>,
}

/// The same operation, registers apart.
fn same_operation(x: &Instr, y: &Instr) -> bool {
    match (*x, *y) {
        (Instr::PowI(_, _, j), Instr::PowI(_, _, k)) => j == k,
        (Instr::Call(f, ..), Instr::Call(g, ..)) => f == g,
        (Instr::Call2(f, ..), Instr::Call2(g, ..)) => f == g,
        (Instr::Cmp(p, ..), Instr::Cmp(q, ..)) => p == q,
        // A call reads its site's registers, which strides do not move.
        (Instr::Apply(..), _) | (_, Instr::Apply(..)) => false,
        _ => std::mem::discriminant(x) == std::mem::discriminant(y),
    }
}

/// The strides from code `a` to code `b`, when they have the same shape.
fn strides(a: &[Instr], b: &[Instr]) -> Option<Vec<Strides>> {
    if a.len() != b.len() {
        return None;
    }
    a.iter().zip(b).map(|(x, y)| stride(x, y)).collect()
}

/// Whether code `b` is code `a` with its registers moved by `shape` (as [`strides`] would
/// say, without building the strides).
fn moved_by(a: &[Instr], b: &[Instr], shape: &[Strides]) -> bool {
    a.len() == b.len()
        && (a.iter().zip(b).zip(shape)).all(|((x, y), s)| stride(x, y).as_ref() == Some(s))
}

/// The stride of each register operand from instruction `x` to `y`, when they are the same
/// operation.
fn stride(x: &Instr, y: &Instr) -> Option<Strides> {
    if !same_operation(x, y) {
        return None;
    }
    let (rx, _) = x.registers();
    let (ry, _) = y.registers();
    let mut s = [0i32; 4];
    for k in 0..4 {
        s[k] = i32::try_from(i64::from(ry[k]) - i64::from(rx[k])).ok()?;
    }
    Some(s)
}

/// Whether evaluating `codes` instruction by instruction computes what evaluating them one
/// after the other does: every register is written once, and a register written in the run is
/// read only later in the same step.
fn independent(instrs: &[Instr], codes: &[Range<usize>]) -> bool {
    let written = codes.iter().map(|code| code.len()).sum();
    let mut writer: HashMap<Reg, (usize, usize)> =
        HashMap::with_capacity_and_hasher(written, Default::default());
    for (step, code) in codes.iter().enumerate() {
        for (at, i) in instrs[code.clone()].iter().enumerate() {
            if writer.insert(i.registers().0[0], (step, at)).is_some() {
                return false;
            }
        }
    }
    codes.iter().enumerate().all(|(step, code)| {
        instrs[code.clone()].iter().enumerate().all(|(at, i)| {
            let (regs, named) = i.registers();
            regs[1..named]
                .iter()
                .all(|r| writer.get(r).is_none_or(|&(s, w)| s == step && w < at))
        })
    })
}

/// Splits a straight run of steps (`codes`, one per step, in evaluation order) into batched
/// runs of at least [`MIN_RUN`] steps and the steps between them. Linear in the code's length
/// (a run that fails the dependency test is not retried in parts).
pub fn split(instrs: &[Instr], codes: &[Range<usize>]) -> Vec<Part> {
    let mut parts: Vec<Part> = Vec::new();
    let single = |parts: &mut Vec<Part>, k: usize| match parts.last_mut() {
        Some(Part {
            steps,
            strides: None,
        }) if steps.end == k => steps.end = k + 1,
        _ => parts.push(Part {
            steps: k..k + 1,
            strides: None,
        }),
    };
    let mut start = 0;
    while start < codes.len() {
        let code = |k: usize| &instrs[codes[k].clone()];
        let shape = (start + 1 < codes.len())
            .then(|| strides(code(start), code(start + 1)))
            .flatten()
            .filter(|s| !s.is_empty());
        let Some(shape) = shape else {
            single(&mut parts, start);
            start += 1;
            continue;
        };
        let mut end = start + 2;
        while end < codes.len() && moved_by(code(end - 1), code(end), &shape) {
            end += 1;
        }
        if end - start >= MIN_RUN && independent(instrs, &codes[start..end]) {
            parts.push(Part {
                steps: start..end,
                strides: Some(shape),
            });
        } else {
            (start..end).for_each(|k| single(&mut parts, k));
        }
        start = end;
    }
    parts
}

/// Register `reg` of instance `i`.
fn at(reg: Reg, stride: i32, i: usize) -> usize {
    (reg as isize + stride as isize * i as isize) as usize
}

/// Evaluates `instances` of `code`, instance `i` with every register moved by `i` times
/// its stride, instruction by instruction: the arithmetic in tight loops, the rarer operations
/// instance by instance through the interpreter.
///
/// # Safety
/// Every register of every instance (`reg + i·stride`) is inside the register file at `p`:
/// true of a [`split`] batch, whose instances are the tape's own instructions. No other
/// thread meanwhile writes a register these instances read or touches one they write.
pub unsafe fn run(code: &[Instr], strides: &[Strides], instances: Range<usize>, p: *mut f64) {
    for (instr, s) in code.iter().zip(strides) {
        // SAFETY (both): the caller vouches for every instance's registers.
        let get = |k: usize| unsafe { *p.add(k) };
        let set = |k: usize, x: f64| unsafe { *p.add(k) = x };
        macro_rules! lanes {
            ($d:expr, $a:expr, $b:expr, |$x:ident, $y:ident| $e:expr) => {
                for i in instances.clone() {
                    let $x = get(at($a, s[1], i));
                    let $y = get(at($b, s[2], i));
                    set(at($d, s[0], i), $e);
                }
            };
        }
        match *instr {
            Instr::Add(d, a, b) => lanes!(d, a, b, |x, y| x + y),
            Instr::Sub(d, a, b) => lanes!(d, a, b, |x, y| x - y),
            Instr::Mul(d, a, b) => lanes!(d, a, b, |x, y| x * y),
            Instr::Div(d, a, b) => lanes!(d, a, b, |x, y| x / y),
            Instr::Neg(d, a) => lanes!(d, a, a, |x, _y| -x),
            Instr::Copy(d, a) => lanes!(d, a, a, |x, _y| x),
            _ => {
                let (regs, _) = instr.registers();
                for i in instances.clone() {
                    let moved =
                        instr.with_registers(std::array::from_fn(|k| at(regs[k], s[k], i) as Reg));
                    // SAFETY: the moved instruction names this instance's registers.
                    // A batched run holds no calls (`same_operation`): no call sites to pass.
                    let no_calls = super::functions::Programs::default();
                    unsafe { super::tape::run_at(std::slice::from_ref(&moved), p, &no_calls, &[]) };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::pair::{Pair, both};
    use super::super::tape::RegisterFile;
    use super::*;

    /// `count` copies of `shape`, copy `i` with registers moved by `i · stride`.
    fn instances(shape: &[Instr], strides: &[[i32; 4]], count: usize) -> Vec<Instr> {
        (0..count)
            .flat_map(|i| {
                shape.iter().zip(strides).map(move |(instr, s)| {
                    let (regs, _) = instr.registers();
                    instr.with_registers(std::array::from_fn(|k| at(regs[k], s[k], i) as Reg))
                })
            })
            .collect()
    }

    fn codes(len: usize, count: usize) -> Vec<Range<usize>> {
        (0..count).map(|i| i * len..(i + 1) * len).collect()
    }

    #[test]
    fn independent_instances_batch_and_run_as_in_order() {
        // r[100 + 2i] = r[i] · r[50]; r[101 + 2i] = r[100 + 2i] + r[20 − i]
        let shape = [Instr::Mul(100, 0, 50), Instr::Add(101, 100, 20)];
        let strides = [[2, 1, 0, 2], [2, 2, -1, 2]];
        let instrs = instances(&shape, &strides, 6);
        let parts = split(&instrs, &codes(2, 6));
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].strides.as_deref(), Some(&strides[..]));
        let mut batched: Vec<f64> = (0..120).map(|k| (k as f64).sin()).collect();
        let mut in_order = batched.clone();
        unsafe {
            run(&shape, &strides, 0..6, batched.as_mut_ptr());
            super::super::tape::run(&instrs, &mut in_order, &Default::default(), &[]);
        }
        assert_eq!(batched, in_order);
    }

    #[test]
    fn a_batch_in_two_ranges_on_two_threads_runs_as_in_order() {
        // r[2000 + i] = r[i] · r[1500] − r[999 − i], 1000 instances.
        let shape = [Instr::Mul(3000, 0, 1500), Instr::Sub(2000, 3000, 999)];
        let strides = [[1, 1, 0, 1], [1, 1, -1, 1]];
        let count = 1000;
        let instrs = instances(&shape, &strides, count);
        let parts = split(&instrs, &codes(2, count));
        assert_eq!(parts.len(), 1, "one batch");
        let mut halves: Vec<f64> = (0..4000).map(|k| (k as f64).cos()).collect();
        let mut in_order = halves.clone();
        let file = RegisterFile::new(&mut halves);
        Pair::with(true, |pair| {
            both(
                pair,
                || run_shared(file, &shape, &strides, 0..400),
                || run_shared(file, &shape, &strides, 400..count),
            )
        });
        unsafe { super::super::tape::run(&instrs, &mut in_order, &Default::default(), &[]) };
        assert_eq!(halves, in_order);
    }

    /// [`run`] on `instances`, from either of the test's threads.
    fn run_shared(
        file: RegisterFile,
        code: &[Instr],
        strides: &[Strides],
        instances: Range<usize>,
    ) {
        // SAFETY: the test's register file holds every register the instances name, and the
        // instances of the two ranges write disjoint registers and read none the other writes.
        unsafe { run(code, strides, instances, file.start()) }
    }

    #[test]
    fn a_chain_through_the_instances_is_not_batched() {
        // r[10 + i] = r[9 + i] + r[0]: each instance reads the one before.
        let shape = [Instr::Add(10, 9, 0)];
        let strides = [[1, 1, 0, 1]];
        let instrs = instances(&shape, &strides, 8);
        let parts = split(&instrs, &codes(1, 8));
        assert!(parts.iter().all(|p| p.strides.is_none()), "{parts:?}");
        assert_eq!(parts.len(), 1, "one straight part");
    }

    #[test]
    fn short_runs_and_different_shapes_stay_straight() {
        let shape = [Instr::Mul(100, 0, 50)];
        let mut instrs = instances(&shape, &[[1, 1, 0, 1]], MIN_RUN - 1);
        instrs.push(Instr::Neg(200, 1));
        let parts = split(&instrs, &codes(1, MIN_RUN));
        assert!(parts.iter().all(|p| p.strides.is_none()));
    }
}
