//! One compiled tape as generated code: its register layout and setup (a `Program`), and the
//! ODE systems over its states (`SystemCode`: the right-hand side as straight-line code split
//! into functions, the Jacobian entries, the Newton matrix's ordering and fill, the levels of
//! a partition). The functions the runtime calls take the register file as a slice and view it
//! as the program's fixed-size array, so register indices are checked when the crate builds.

use super::code::Code;
use super::rust::{literal, statement, tangent};
use crate::partition::{Interpolation, Partition};
use crate::simulate::linear::is_sparse;
use crate::simulate::model::{CompiledModel, PartView};
use crate::simulate::static_lu::StaticLu;
use crate::simulate::tape::{Reg, StepCode, Tape};

/// Instructions per generated function: rustc's time and memory grow faster than linearly
/// with a function's size.
const CHUNK: usize = 2000;

/// `PROGRAM` and the code every system of the tape shares: the setup and the solved steps'
/// Newton code.
pub fn program(code: &mut Code, tape: &Tape) {
    code.line(format_args!(
        "pub const REGISTERS: usize = {};",
        tape.registers
    ));
    code.line("pub type Regs = [f64; REGISTERS];");
    code.table("BREAKPOINTS", "usize", &tape.breakpoints);
    let constants: Vec<String> = tape
        .constants
        .iter()
        .map(|&(r, x)| format!("({r}, {})", literal(x)))
        .collect();
    code.table("CONSTANTS", "(usize, f64)", &constants);
    code.open("pub const PROGRAM: Program = Program");
    code.line("registers: REGISTERS,");
    code.line(format_args!("time: {},", tape.time_reg()));
    code.line(format_args!("switch_time: {},", tape.switch_time));
    code.line(format_args!("homotopy: {},", tape.homotopy));
    code.line("breakpoints: BREAKPOINTS,");
    code.line("constants: CONSTANTS,");
    code.line("setup,");
    code.close_with(";").blank();
    straight(code, "setup", tape, std::slice::from_ref(&tape.setup));
    for k in 0..tape.steps.len() {
        newton_code(code, tape, k);
    }
}

/// The registers of the program's file as the generated functions see it.
fn view_line(code: &mut Code) {
    code.line("let r: &mut Regs = r.try_into().expect(\"a register file of REGISTERS\");");
}

/// What one system of the tape is: its part of the compiled model and how it steps.
pub struct System<'a> {
    pub name: &'a str,
    pub compiled: &'a CompiledModel,
    /// The compiled model's part this system is.
    pub part: usize,
    /// Its Newton matrix is factored (an implicit method over all of it).
    pub implicit: bool,
    /// A partition of its states, when it steps one.
    pub partition: Option<&'a Partition>,
    /// Parts of the compiled model that evaluate blocks of its rows alone.
    pub row_parts: &'a [usize],
}

/// `{NAME}: SystemCode` with its functions and tables.
pub fn system(code: &mut Code, s: &System<'_>) {
    let tape = &s.compiled.tape;
    let view = s.compiled.part_view(s.part);
    let upper = s.name.to_uppercase();
    let states = s.compiled.part_states(s.part);
    let regs: Vec<Reg> = states.iter().map(|&i| s.compiled.state_reg(i)).collect();
    let ders: Vec<Reg> = states.iter().map(|&i| s.compiled.der_reg(i)).collect();
    code.table(&format!("{upper}_STATES"), "usize", &regs);
    code.table(&format!("{upper}_DERIVATIVES"), "usize", &ders);
    let pattern: Vec<String> = view
        .pattern
        .iter()
        .map(|&(r, c)| format!("({r}, {c})"))
        .collect();
    code.table(&format!("{upper}_PATTERN"), "(usize, usize)", &pattern);
    rhs(code, &format!("{}_rhs", s.name), tape, view.steps);
    jacobian(code, &format!("{}_jacobian", s.name), tape, &view);
    let own_implicit = implicit(code, s.name, tape, &view);
    sparse_tables(
        code,
        &format!("{upper}_"),
        s.implicit,
        regs.len(),
        view.pattern,
    );
    let mut parts = Vec::new();
    for &p in s.row_parts {
        let part = s.compiled.part_view(p);
        let name = format!("{}_rows_{p}", s.name);
        rhs(code, &name, tape, part.steps);
        jacobian(code, &format!("{name}_jacobian"), tape, &part);
        let part_implicit = implicit(code, &name, tape, &part);
        let local: Vec<String> = s
            .compiled
            .part_states(p)
            .iter()
            .map(|i| i.to_string())
            .collect();
        parts.push(format!(
            "Part {{ rhs: {name}, jacobian: {name}_jacobian, states: &[{}], implicit: {part_implicit} }}",
            local.join(", ")
        ));
    }
    code.table(&format!("{upper}_PARTS"), "Part", &parts);
    levels(code, s, &upper, &view);
    code.open(format_args!("pub const {upper}: SystemCode = SystemCode"));
    code.line(format_args!("states: {upper}_STATES,"));
    code.line(format_args!("derivatives: {upper}_DERIVATIVES,"));
    code.line(format_args!("rhs: {}_rhs,", s.name));
    code.line(format_args!("jacobian: {}_jacobian,", s.name));
    code.line(format_args!("pattern: {upper}_PATTERN,"));
    code.line(format_args!(
        "jacobian_constant: {},",
        view.constant_jacobian
    ));
    code.line(format_args!("sparse: {upper}_SPARSE,"));
    code.line(format_args!("levels: {upper}_LEVELS,"));
    code.line(format_args!("linear: {upper}_LINEAR,"));
    code.line(format_args!("fast_entries: {upper}_FAST_ENTRIES,"));
    code.line(format_args!("fast_pattern: {upper}_FAST_PATTERN,"));
    code.line(format_args!("fast_sparse: {upper}_FAST_SPARSE,"));
    code.line(format_args!("parts: {upper}_PARTS,"));
    code.line(format_args!("implicit: {own_implicit},"));
    code.close_with(";").blank();
}

/// The Jacobian entries of `view` that pass through algebraic loops: a tangent pass over its
/// steps (one function whatever the column, seeded by the runtime), the columns with their
/// entries, and the seeds. `None` (as Rust text) when it has none.
fn implicit(code: &mut Code, name: &str, tape: &Tape, view: &PartView<'_>) -> String {
    if view.implicit.is_empty() {
        return "None".to_string();
    }
    let upper = name.to_uppercase();
    let columns: Vec<String> = view
        .implicit
        .iter()
        .map(|(col, entries)| {
            let entries: Vec<String> = entries.iter().map(|(e, d)| format!("({e}, {d})")).collect();
            format!("({col}, &[{}])", entries.join(", "))
        })
        .collect();
    code.table(
        &format!("{upper}_COLUMNS"),
        "(usize, &[(usize, usize)])",
        &columns,
    );
    code.table(&format!("{upper}_SEEDS"), "usize", &view.seeds);
    let shape = Shape {
        params: ", t: &mut [f64], w: &mut Work",
        args: ", t, w",
        fallible: false,
    };
    let groups = view.steps.iter().map(|&k| step_tangent(tape, k));
    chunked(code, &format!("{name}_tangents"), &shape, groups, &[]);
    code.line(format_args!(
        "pub const {upper}_IMPLICIT: Implicit = Implicit {{ columns: {upper}_COLUMNS, seeds: {upper}_SEEDS, tangents: {name}_tangents }};"
    ));
    format!("Some(&{upper}_IMPLICIT)")
}

/// Step `k`'s tangent pass: its code's tangents; a solved step's targets by the implicit
/// function theorem, `dY = −(∂R/∂Y)⁻¹ ∂R/∂x·dx`, as the tape's pass does.
fn step_tangent(tape: &Tape, k: usize) -> Vec<String> {
    let step = &tape.steps[k];
    let tangents = |range: &std::ops::Range<usize>| -> Vec<String> {
        tape.instructions(range.clone())
            .iter()
            .map(|i| tangent(i, &tape.sites))
            .collect()
    };
    let values = |range: &std::ops::Range<usize>| -> Vec<String> {
        tape.instructions(range.clone())
            .iter()
            .map(|i| statement(i, &tape.sites))
            .collect()
    };
    let mut lines = tangents(&step.pre);
    match &step.code {
        StepCode::Assign => {}
        StepCode::Newton {
            target,
            residual,
            derivative,
            iter,
            deriv,
        } => {
            lines.push(format!("t[{target}] = 0.0;"));
            lines.extend(tangents(iter));
            lines.extend(values(deriv));
            lines.push(format!("t[{target}] = -t[{residual}] / r[{derivative}];"));
            lines.extend(tangents(iter));
        }
        StepCode::Loop {
            targets,
            iter,
            deriv,
            ..
        } => {
            lines.extend(targets.iter().map(|t| format!("t[{t}] = 0.0;")));
            lines.extend(tangents(iter));
            lines.extend(values(deriv));
            lines.push(format!("loop_tangent(r, t, w, &STEP_{k});"));
            lines.extend(tangents(iter));
        }
    }
    lines
}

/// The levels of the system's partition (none for a single method): each level's states,
/// method, rate and the part evaluating its rows alone; how levels read slower ones; the fast
/// level's block of the Jacobian and its Newton matrix.
fn levels(code: &mut Code, s: &System<'_>, upper: &str, view: &PartView<'_>) {
    let Some(partition) = s.partition else {
        code.line(format_args!("pub const {upper}_LEVELS: &[Level] = &[];"));
        code.line(format_args!("pub const {upper}_LINEAR: bool = true;"));
        code.line(format_args!(
            "pub const {upper}_FAST_ENTRIES: &[usize] = &[];"
        ));
        code.line(format_args!(
            "pub const {upper}_FAST_PATTERN: &[(usize, usize)] = &[];"
        ));
        code.line(format_args!(
            "pub const {upper}_FAST_SPARSE: Option<&SparseTables> = None;"
        ));
        return;
    };
    let n = s.compiled.part_states(s.part).len();
    let mut levels = Vec::new();
    for (k, level) in partition.levels().iter().enumerate() {
        let name = format!("{upper}_LEVEL_{k}");
        code.table(&name, "usize", &level.states);
        let rows = s
            .row_parts
            .iter()
            .position(|&p| s.compiled.part_states(p) == level.states.as_slice())
            .filter(|_| level.states.len() < n);
        levels.push(format!(
            "Level {{ states: {name}, method: Method::{}, rate: {}, rows: {rows:?} }}",
            super::variant(partition.method_of(k)),
            level.rate
        ));
    }
    code.table(&format!("{upper}_LEVELS"), "Level", &levels);
    code.line(format_args!(
        "pub const {upper}_LINEAR: bool = {};",
        partition.interpolation == Interpolation::Linear
    ));
    let fast = partition.fast();
    let mut position = vec![None; n];
    for (k, &i) in fast.iter().enumerate() {
        position[i] = Some(k);
    }
    let block: Vec<(usize, (usize, usize))> = view
        .pattern
        .iter()
        .enumerate()
        .filter_map(|(e, &(r, c))| Some((e, (position[r]?, position[c]?))))
        .collect();
    let entries: Vec<usize> = block.iter().map(|&(e, _)| e).collect();
    let pattern: Vec<(usize, usize)> = block.iter().map(|&(_, rc)| rc).collect();
    let text: Vec<String> = pattern.iter().map(|(r, c)| format!("({r}, {c})")).collect();
    code.table(&format!("{upper}_FAST_ENTRIES"), "usize", &entries);
    code.table(&format!("{upper}_FAST_PATTERN"), "(usize, usize)", &text);
    let prefix = format!("{upper}_FAST_");
    sparse_tables(code, &prefix, !fast.is_empty(), fast.len(), &pattern);
}

/// `{prefix}SPARSE` and its tables for a Newton matrix of `n` unknowns and `pattern`, when it
/// is factored and sparse.
fn sparse_tables(
    code: &mut Code,
    prefix: &str,
    factored: bool,
    n: usize,
    pattern: &[(usize, usize)],
) {
    if !factored || !is_sparse(n) {
        code.line(format_args!(
            "pub const {prefix}SPARSE: Option<&SparseTables> = None;"
        ));
        return;
    }
    let entries: Vec<(usize, usize)> = pattern
        .iter()
        .copied()
        .chain((0..n).map(|i| (i, i)))
        .collect();
    let lu = StaticLu::new(n, &entries);
    let names = ["PERM", "L_PTR", "L_COL", "U_PTR", "U_COL", "UPDATE_SLOTS"];
    for (name, table) in names.iter().zip(lu.tables()) {
        code.table(&format!("{prefix}{name}"), "usize", table);
    }
    code.table(&format!("{prefix}SLOTS"), "usize", &lu.slots(&entries));
    let solve = format!("{}solve", prefix.to_lowercase());
    let solve_value = match lu.threaded_pieces() {
        None => {
            straight_solve(code, &solve, lu.tables());
            format!("Solve::Whole({solve})")
        }
        Some([a, b]) => {
            solve_in_pieces(code, &solve, lu.tables(), [a, b]);
            code.open(format_args!("pub const {prefix}PIECES: Pieces = Pieces"));
            code.line(format_args!("starts: [{a}, {b}],"));
            code.line(format_args!(
                "forward: [{solve}_forward_first, {solve}_forward_second],"
            ));
            code.line(format_args!("separator: {solve}_separator,"));
            code.line(format_args!(
                "backward: [{solve}_backward_first, {solve}_backward_second],"
            ));
            code.close_with(";").blank();
            format!("Solve::Pieces(&{prefix}PIECES)")
        }
    };
    code.open(format_args!(
        "pub const {prefix}SPARSE: Option<&SparseTables> = Some(&SparseTables"
    ));
    code.line(format_args!("solve: {solve_value},"));
    for (field, name) in [
        ("perm", "PERM"),
        ("l_ptr", "L_PTR"),
        ("l_col", "L_COL"),
        ("u_ptr", "U_PTR"),
        ("u_col", "U_COL"),
        ("update_slots", "UPDATE_SLOTS"),
        ("slots", "SLOTS"),
    ] {
        code.line(format_args!("{field}: {prefix}{name},"));
    }
    code.close_with(");");
}

/// The signature of a chunked function after its register file: parameters, the arguments
/// passing them on, and whether it fails with a step's index.
pub struct Shape {
    pub params: &'static str,
    pub args: &'static str,
    pub fallible: bool,
}

pub const PLAIN: Shape = Shape {
    params: "",
    args: "",
    fallible: false,
};

/// `pub fn NAME(r: &mut [f64]PARAMS)` running `groups` of lines in order (a group is never
/// split), in functions of about [`CHUNK`] lines. Each function is in a module of its own and
/// never inlined, so rustc splits the code into units it compiles in parallel, and no function
/// grows with the model. `tail` ends the caller (a fallible one returns `Ok(())` without).
pub fn chunked(
    code: &mut Code,
    name: &str,
    shape: &Shape,
    groups: impl IntoIterator<Item = Vec<String>>,
    tail: &[String],
) {
    let mut chunks: Vec<Vec<String>> = vec![Vec::new()];
    for group in groups {
        let last = chunks.last_mut().expect("one");
        if !last.is_empty() && last.len() + group.len() > CHUNK {
            chunks.push(Vec::new());
        }
        chunks.last_mut().expect("one").extend(group);
    }
    chunks.retain(|c| !c.is_empty());
    let (params, args) = (shape.params, shape.args);
    let ret = if shape.fallible {
        " -> Result<(), usize>"
    } else {
        ""
    };
    let call = if shape.fallible { "?" } else { "" };
    code.open(format_args!("pub fn {name}(r: &mut [f64]{params}){ret}"));
    view_line(code);
    for k in 0..chunks.len() {
        code.line(format_args!("{name}_{k}::run(r{args}){call};"));
    }
    for line in tail {
        code.line(line);
    }
    if shape.fallible && tail.is_empty() {
        code.line("Ok(())");
    }
    code.close().blank();
    for (k, chunk) in chunks.iter().enumerate() {
        code.open(format_args!("mod {name}_{k}"));
        code.line("use super::*;");
        code.line("#[inline(never)]");
        code.open(format_args!("pub(super) fn run(r: &mut Regs{params}){ret}"));
        for line in chunk {
            code.line(line);
        }
        if shape.fallible {
            code.line("Ok(())");
        }
        code.close().close().blank();
    }
}

/// `pub fn NAME(v, b, y)`: the triangular solves of a factored static LU as straight-line code
/// (`v` its values, `b` the right-hand side and then the solution, `y` work space), the same
/// operations in the same order as the table-driven solve, without its index loads.
fn straight_solve(
    code: &mut Code,
    name: &str,
    [perm, l_ptr, l_col, u_ptr, u_col, _]: [&[usize]; 6],
) {
    let n = perm.len();
    let u_start = l_col.len();
    let diag_start = u_start + u_col.len();
    let forward = (0..n).map(|i| {
        let mut line = format!("y[{i}] = b[{}]", perm[i]);
        let row = l_ptr[i]..l_ptr[i + 1];
        for (p, col) in row.clone().zip(&l_col[row]) {
            line.push_str(&format!(" - v[{p}] * y[{col}]"));
        }
        line.push(';');
        line
    });
    let backward = (0..n).rev().map(|i| {
        let mut line = format!("let s = y[{i}] * v[{}]", diag_start + i);
        let row = u_ptr[i]..u_ptr[i + 1];
        for (p, col) in row.clone().zip(&u_col[row]).rev() {
            line.push_str(&format!(" - v[{}] * y[{col}]", u_start + p));
        }
        line.push_str(&format!("; y[{i}] = s; b[{}] = s;", perm[i]));
        line
    });
    let vectors = [("b", true, n), ("y", true, n)];
    straight_over_factors(
        code,
        name,
        diag_start + n,
        &vectors,
        forward.chain(backward).collect(),
    );
}

/// The triangular solves of a static LU ordered piece, piece, separator (`starts`: where the
/// second piece and the separator start) as five straight-line functions over the permuted
/// right-hand side, split at the starts (`first`, `second`, `separator`): each piece's
/// forward rows, the separator's forward and backward rows, each piece's backward rows. The
/// pieces' functions read only their own piece (and, backward, the separator), so the two of
/// each pair can run at once; the operations are those of [`straight_solve`], row by row.
fn solve_in_pieces(
    code: &mut Code,
    name: &str,
    [perm, l_ptr, l_col, u_ptr, u_col, _]: [&[usize]; 6],
    [a, b]: [usize; 2],
) {
    let n = perm.len();
    let u_start = l_col.len();
    let diag_start = u_start + u_col.len();
    let values = diag_start + n;
    // Row `i`'s entry in the vector of its part.
    let at = |i: usize| match i {
        i if i < a => format!("first[{i}]"),
        i if i < b => format!("second[{}]", i - a),
        i => format!("separator[{}]", i - b),
    };
    let forward = |rows: std::ops::Range<usize>| -> Vec<String> {
        rows.map(|i| {
            let mut line = format!("{0} = {0}", at(i));
            let row = l_ptr[i]..l_ptr[i + 1];
            for (p, &col) in row.clone().zip(&l_col[row]) {
                line.push_str(&format!(" - v[{p}] * {}", at(col)));
            }
            line.push(';');
            line
        })
        .collect()
    };
    let backward = |rows: std::ops::Range<usize>| -> Vec<String> {
        rows.rev()
            .map(|i| {
                let mut line = format!("{} = {} * v[{}]", at(i), at(i), diag_start + i);
                let row = u_ptr[i]..u_ptr[i + 1];
                for (p, &col) in row.clone().zip(&u_col[row]).rev() {
                    line.push_str(&format!(" - v[{}] * {}", u_start + p, at(col)));
                }
                line.push(';');
                line
            })
            .collect()
    };
    let (first, second, separator) = (("first", a), ("second", b - a), ("separator", n - b));
    let mutable = |(name, size): (&'static str, usize)| (name, true, size);
    let shared = |(name, size): (&'static str, usize)| (name, false, size);
    let parts: [(&str, Vec<_>, Vec<String>); 5] = [
        ("forward_first", vec![mutable(first)], forward(0..a)),
        ("forward_second", vec![mutable(second)], forward(a..b)),
        (
            "separator",
            vec![shared(first), shared(second), mutable(separator)],
            [forward(b..n), backward(b..n)].concat(),
        ),
        (
            "backward_first",
            vec![shared(separator), mutable(first)],
            backward(0..a),
        ),
        (
            "backward_second",
            vec![shared(separator), mutable(second)],
            backward(a..b),
        ),
    ];
    for (part, vectors, lines) in parts {
        straight_over_factors(code, &format!("{name}_{part}"), values, &vectors, lines);
    }
}

/// `pub fn NAME(v, VECTORS...)` running `lines` in chunk modules of [`CHUNK`] lines, each
/// viewing the factors `v` (`values` of them) and the vectors, `(name, mutable, size)`, as
/// fixed-size arrays, so every index is checked when the crate builds.
fn straight_over_factors(
    code: &mut Code,
    name: &str,
    values: usize,
    vectors: &[(&str, bool, usize)],
    lines: Vec<String>,
) {
    let params: String = vectors
        .iter()
        .map(|&(v, mutable, _)| format!(", {v}: &{}[f64]", if mutable { "mut " } else { "" }))
        .collect();
    let args: String = vectors.iter().map(|&(v, _, _)| format!(", {v}")).collect();
    code.open(format_args!("pub fn {name}(v: &[f64]{params})"));
    for k in 0..lines.len().div_ceil(CHUNK) {
        code.line(format_args!("{name}_{k}::run(v{args});"));
    }
    code.close().blank();
    for (k, chunk) in lines.chunks(CHUNK).enumerate() {
        code.open(format_args!("mod {name}_{k}"));
        code.line("#[inline(never)]");
        code.open(format_args!("pub(super) fn run(v: &[f64]{params})"));
        code.line(format_args!(
            "let v: &[f64; {values}] = v.try_into().expect(\"the factors\");"
        ));
        for &(v, mutable, size) in vectors {
            let m = if mutable { "mut " } else { "" };
            code.line(format_args!(
                "let {v}: &{m}[f64; {size}] = {v}.try_into().expect(\"a vector of {size}\");"
            ));
        }
        for line in chunk {
            code.line(line);
        }
        code.close().close().blank();
    }
}

/// `pub fn NAME(r)`: the instructions of `ranges`.
fn straight(code: &mut Code, name: &str, tape: &Tape, ranges: &[std::ops::Range<usize>]) {
    let lines = ranges
        .iter()
        .flat_map(|r| tape.instructions(r.clone()))
        .map(|i| vec![statement(i, &tape.sites)]);
    chunked(code, name, &PLAIN, lines, &[]);
}

/// `NAME(r, w)`: `steps` in order, straight-line, each solved step through the runtime's
/// Newton; `Err(step)` names the first step that failed or left a value that is no number.
pub fn rhs(code: &mut Code, name: &str, tape: &Tape, steps: &[usize]) {
    let targets: Vec<String> = steps
        .iter()
        .flat_map(|&k| {
            tape.steps[k]
                .targets
                .iter()
                .map(move |t| format!("({t}, {k})"))
        })
        .collect();
    let table = format!("{}_TARGETS", name.to_uppercase());
    code.table(&table, "(usize, usize)", &targets);
    let shape = Shape {
        params: ", w: &mut Work",
        args: ", w",
        fallible: true,
    };
    let tail = [
        format!("match {table}.iter().find(|&&(t, _)| !r[t].is_finite()) {{"),
        "    Some(&(_, step)) => Err(step),".to_string(),
        "    None => Ok(()),".to_string(),
        "}".to_string(),
    ];
    let groups = steps.iter().map(|&k| solved_step(tape, k));
    chunked(code, name, &shape, groups, &tail);
}

/// Step `k`'s lines: its code, then its Newton when it has one.
fn solved_step(tape: &Tape, k: usize) -> Vec<String> {
    let step = &tape.steps[k];
    let mut lines: Vec<String> = tape
        .instructions(step.pre.clone())
        .iter()
        .map(|i| statement(i, &tape.sites))
        .collect();
    match &step.code {
        StepCode::Assign => {}
        StepCode::Newton {
            target,
            residual,
            derivative,
            ..
        } => lines.push(format!(
            "newton_scalar(r, w, [{target}, {residual}, {derivative}], [step_{k}_iter, step_{k}_deriv]).map_err(|_| {k}usize)?;"
        )),
        StepCode::Loop { .. } => lines.push(format!(
            "newton_loop(r, w, &STEP_{k}).map_err(|_| {k}usize)?;"
        )),
    }
    lines
}

/// The residual and derivative code of step `k`'s Newton, and a loop's description.
fn newton_code(code: &mut Code, tape: &Tape, k: usize) {
    let (iter, deriv) = match &tape.steps[k].code {
        StepCode::Assign => return,
        StepCode::Newton { iter, deriv, .. } => (iter, deriv),
        StepCode::Loop {
            targets,
            residuals,
            iter,
            deriv,
            jacobian,
        } => {
            code.table(&format!("STEP_{k}_TARGETS"), "usize", targets);
            code.table(&format!("STEP_{k}_RESIDUALS"), "usize", residuals);
            let entries: Vec<String> = jacobian
                .iter()
                .map(|(r, c, d)| format!("({r}, {c}, {d})"))
                .collect();
            code.table(
                &format!("STEP_{k}_JACOBIAN"),
                "(usize, usize, usize)",
                &entries,
            );
            code.line(format_args!(
                "pub static STEP_{k}: Loop = Loop {{ targets: STEP_{k}_TARGETS, residuals: STEP_{k}_RESIDUALS, jacobian: STEP_{k}_JACOBIAN, code: [step_{k}_iter, step_{k}_deriv] }};"
            ));
            (iter, deriv)
        }
    };
    for (name, range) in [("iter", iter), ("deriv", deriv)] {
        code.open(format_args!("fn step_{k}_{name}(r: &mut [f64])"));
        view_line(code);
        for i in tape.instructions(range.clone()) {
            code.line(statement(i, &tape.sites));
        }
        code.close().blank();
    }
}

/// `NAME(r, w, values)`: each entry's code, after the model was evaluated at the point.
fn jacobian(code: &mut Code, name: &str, tape: &Tape, view: &PartView<'_>) {
    let groups = view.entries.iter().enumerate().filter_map(|(k, e)| {
        let (range, reg) = &tape.extra[(*e)?];
        let mut lines: Vec<String> = tape
            .instructions(range.clone())
            .iter()
            .map(|i| statement(i, &tape.sites))
            .collect();
        lines.push(format!("values[{k}] = r[{reg}];"));
        Some(lines)
    });
    let shape = Shape {
        params: ", w: &mut Work, values: &mut [f64]",
        args: ", w, values",
        fallible: false,
    };
    chunked(code, name, &shape, groups, &[]);
}
