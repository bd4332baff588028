//! Model arithmetic as Rust text: the tape's instructions as statements on the register file
//! `r`, and expressions of the flat model as Rust expressions with the reference evaluator's
//! semantics, so that the emitted code computes what `mocca simulate` computes, operation for
//! operation.

use crate::expr::{CmpOp, ExprId, ExprPool, Func, Func2, Node};
use crate::simulate::functions::CallSite;
use crate::simulate::tape::Instr;

/// A literal that reads back to exactly `x`, typed `f64`.
pub fn literal(x: f64) -> String {
    if x.is_nan() {
        "f64::NAN".to_string()
    } else if x.is_infinite() {
        if x > 0.0 {
            "f64::INFINITY"
        } else {
            "f64::NEG_INFINITY"
        }
        .to_string()
    } else if x < 0.0 {
        format!("(-{:?}_f64)", -x)
    } else {
        format!("{x:?}_f64")
    }
}

/// `f` applied to `a`: Rust's method of the same name, but for `log` (`ln`) and `sign`, which
/// the runtime defines as [`Func::apply`] does.
fn call(f: Func, a: &str) -> String {
    match f {
        Func::Sign => format!("sign({a})"),
        Func::Log => format!("{a}.ln()"),
        Func::NoEvent => a.to_string(),
        Func::Trunc => format!("{a}.trunc()"),
        _ => format!("{a}.{}()", f.name()),
    }
}

fn call2(f: Func2, a: &str, b: &str) -> String {
    match f {
        Func2::Atan2 => format!("{a}.atan2({b})"),
        Func2::Min => format!("{a}.min({b})"),
        Func2::Max => format!("{a}.max({b})"),
        // The actual model (the tape compiles it to `Instr::Homotopy`).
        Func2::Homotopy => a.to_string(),
    }
}

/// `homotopy(a, b)` at `λ = l` (the emitted model runs at `λ = 1`: `a`).
fn homotopy(l: &str, a: &str, b: &str) -> String {
    format!(
        "if {l} == 1.0 {{ {a} }} else if {l} == 0.0 {{ {b} }} else {{ {l} * {a} + (1.0 - {l}) * {b} }}"
    )
}

fn compare(op: CmpOp, a: &str, b: &str) -> String {
    let symbol = match op {
        CmpOp::Lt => "<",
        CmpOp::Le => "<=",
        CmpOp::Gt => ">",
        CmpOp::Ge => ">=",
        CmpOp::Eq => "==",
        CmpOp::Ne => "!=",
    };
    format!("truth({a} {symbol} {b})")
}

/// `f{K}(&[a, b, …], output)`: the generated function of a kept function's program (see
/// [`super::functions`]), its arguments' registers read from `file`; `_t` and the tangents
/// from `tangents` for its tangent mode.
pub fn call_site(site: &CallSite, file: &str, tangents: Option<&str>) -> String {
    let list = |file: &str| {
        let args: Vec<String> = site.args.iter().map(|a| format!("{file}[{a}]")).collect();
        format!("&[{}]", args.join(", "))
    };
    let f = site.function.0;
    match tangents {
        None => format!("f{f}({}, {})", list(file), site.output),
        Some(t) => format!("f{f}_t({}, {}, {})", list(file), list(t), site.output),
    }
}

/// One instruction as a statement on `r`; a call's site is one of `sites`.
pub fn statement(i: &Instr, sites: &[CallSite]) -> String {
    let r = |k: u32| format!("r[{k}]");
    let (d, value) = match *i {
        Instr::Add(d, a, b) => (d, format!("{} + {}", r(a), r(b))),
        Instr::Sub(d, a, b) => (d, format!("{} - {}", r(a), r(b))),
        Instr::Mul(d, a, b) => (d, format!("{} * {}", r(a), r(b))),
        Instr::Neg(d, a) => (d, format!("-{}", r(a))),
        Instr::Div(d, a, b) => (d, format!("{} / {}", r(a), r(b))),
        Instr::Pow(d, a, b) => (d, format!("{}.powf({})", r(a), r(b))),
        Instr::PowI(d, a, k) => (d, format!("{}.powi({k})", r(a))),
        Instr::Call(f, d, a) => (d, call(f, &r(a))),
        Instr::Call2(f, d, a, b) => (d, call2(f, &r(a), &r(b))),
        Instr::Select(d, c, a, b) => (
            d,
            format!("if {} != 0.0 {{ {} }} else {{ {} }}", r(c), r(a), r(b)),
        ),
        Instr::Homotopy(d, l, a, b) => (d, homotopy(&r(l), &r(a), &r(b))),
        Instr::Cmp(op, d, a, b) => (d, compare(op, &r(a), &r(b))),
        Instr::And(d, a, b) => (d, format!("truth({} != 0.0 && {} != 0.0)", r(a), r(b))),
        Instr::Or(d, a, b) => (d, format!("truth({} != 0.0 || {} != 0.0)", r(a), r(b))),
        Instr::Not(d, a) => (d, format!("truth({} == 0.0)", r(a))),
        Instr::Copy(d, a) => (d, r(a)),
        Instr::Apply(d, s) => (d, call_site(&sites[s as usize], "r", None)),
    };
    format!("r[{d}] = {value};")
}

/// The derivative of `f` at `x` (the tape's tangent pass).
fn derivative(f: Func, x: &str) -> String {
    match f {
        Func::Sin => format!("{x}.cos()"),
        Func::Cos => format!("-{x}.sin()"),
        Func::Tan => format!("1.0 + {x}.tan().powi(2)"),
        Func::Asin => format!("1.0 / (1.0 - {x} * {x}).sqrt()"),
        Func::Acos => format!("-1.0 / (1.0 - {x} * {x}).sqrt()"),
        Func::Atan => format!("1.0 / (1.0 + {x} * {x})"),
        Func::Sinh => format!("{x}.cosh()"),
        Func::Cosh => format!("{x}.sinh()"),
        Func::Tanh => format!("1.0 - {x}.tanh().powi(2)"),
        Func::Exp => format!("{x}.exp()"),
        Func::Log => format!("1.0 / {x}"),
        Func::Log10 => format!("1.0 / ({x} * std::f64::consts::LN_10)"),
        Func::Sqrt => format!("0.5 / {x}.sqrt()"),
        Func::Abs => format!("sign({x})"),
        Func::NoEvent => "1.0".to_string(),
        Func::Sign | Func::Floor | Func::Ceil | Func::Trunc => "0.0".to_string(),
    }
}

/// One instruction's tangent as a statement on `t` (tangents) from `r` (values), as the
/// tape's forward-mode pass computes it; a call's site is one of `sites`.
pub fn tangent(i: &Instr, sites: &[CallSite]) -> String {
    let (r, t) = (|k: u32| format!("r[{k}]"), |k: u32| format!("t[{k}]"));
    let (d, value) = match *i {
        Instr::Add(d, a, b) => (d, format!("{} + {}", t(a), t(b))),
        Instr::Sub(d, a, b) => (d, format!("{} - {}", t(a), t(b))),
        Instr::Mul(d, a, b) => (d, format!("{} * {} + {} * {}", t(a), r(b), r(a), t(b))),
        Instr::Neg(d, a) => (d, format!("-{}", t(a))),
        Instr::Div(d, a, b) => (
            d,
            format!(
                "({} * {} - {} * {}) / ({} * {})",
                t(a),
                r(b),
                r(a),
                t(b),
                r(b),
                r(b)
            ),
        ),
        Instr::Pow(d, a, b) => (
            d,
            format!(
                "{{ let (x, y) = ({}, {}); let mut dt = y * x.powf(y - 1.0) * {}; if {} != 0.0 {{ dt += x.powf(y) * x.ln() * {}; }} dt }}",
                r(a),
                r(b),
                t(a),
                t(b),
                t(b)
            ),
        ),
        Instr::PowI(d, a, k) => (
            d,
            format!(
                "{} * {}.powi({}) * {}",
                literal(f64::from(k)),
                r(a),
                k - 1,
                t(a)
            ),
        ),
        Instr::Call(f, d, a) => (d, format!("({}) * {}", derivative(f, &r(a)), t(a))),
        Instr::Call2(f, d, a, b) => {
            let (x, y, dx, dy) = (r(a), r(b), t(a), t(b));
            let value = match f {
                Func2::Atan2 => format!("({y} * {dx} - {x} * {dy}) / ({x} * {x} + {y} * {y})"),
                Func2::Min => format!("if {x} <= {y} {{ {dx} }} else {{ {dy} }}"),
                Func2::Max => format!("if {x} >= {y} {{ {dx} }} else {{ {dy} }}"),
                Func2::Homotopy => dx,
            };
            (d, value)
        }
        Instr::Select(d, c, a, b) => (
            d,
            format!("if {} != 0.0 {{ {} }} else {{ {} }}", r(c), t(a), t(b)),
        ),
        Instr::Homotopy(d, l, a, b) => (d, homotopy(&r(l), &t(a), &t(b))),
        Instr::Cmp(_, d, ..) | Instr::And(d, ..) | Instr::Or(d, ..) | Instr::Not(d, _) => {
            (d, "0.0".to_string())
        }
        Instr::Copy(d, a) => (d, t(a)),
        Instr::Apply(d, s) => (
            d,
            format!("{}.1", call_site(&sites[s as usize], "r", Some("t"))),
        ),
    };
    format!("t[{d}] = {value};")
}

/// Where an expression's leaves are read from.
pub trait Leaves {
    /// The text of a leaf (`Var`, `Der`, `Last`, `Time`).
    fn leaf(&self, n: Node) -> String;
    /// The text of the homotopy parameter `λ`, where the expression reads it (else
    /// `homotopy(a, b)` is the actual model, `a`).
    fn homotopy(&self) -> Option<String> {
        None
    }
}

/// `e` as a Rust expression of type `f64`, evaluated as [`ExprPool::eval`] evaluates it. Its
/// nesting stays shallow however long the sums, products and `elseif` chains it holds (a
/// table's interpolation is hundreds of branches), so that `rustc` parses it.
pub fn expression(pool: &ExprPool, e: ExprId, leaves: &dyn Leaves) -> String {
    let x = |k: ExprId| expression(pool, k, leaves);
    match pool.node(e) {
        Node::Const(bits) => literal(f64::from_bits(bits)),
        n @ (Node::Var(_) | Node::Der(_) | Node::Last(_) | Node::Time | Node::Local(_)) => {
            leaves.leaf(n)
        }
        Node::Apply(f, output, list) => {
            let args: Vec<String> = pool.arguments(f, list).into_iter().map(x).collect();
            format!("f{}(&[{}], {output})", f.0, args.join(", "))
        }
        Node::Args(..) => unreachable!("an argument list is written by its call"),
        Node::Add(..) | Node::Mul(..) => format!("({})", chain(pool, e, leaves)),
        Node::If(_, _, b) if matches!(pool.node(b), Node::If(..)) => branches(pool, e, leaves),
        Node::Neg(a) => format!("(-{})", x(a)),
        Node::Div(a, b) => format!("({} / {})", x(a), x(b)),
        Node::Pow(a, b) => format!("{}.powf({})", x(a), x(b)),
        Node::Call(f, a) => call(f, &x(a)),
        Node::Call2(Func2::Homotopy, a, b) => match leaves.homotopy() {
            Some(l) => homotopy(&l, &x(a), &x(b)),
            None => x(a),
        },
        Node::Call2(f, a, b) => call2(f, &x(a), &x(b)),
        Node::If(c, a, b) => format!("(if {} != 0.0 {{ {} }} else {{ {} }})", x(c), x(a), x(b)),
        Node::Cmp(op, a, b) => compare(op, &x(a), &x(b)),
        Node::And(a, b) => format!("truth({} != 0.0 && {} != 0.0)", x(a), x(b)),
        Node::Or(a, b) => format!("truth({} != 0.0 || {} != 0.0)", x(a), x(b)),
        Node::Not(a) => format!("truth({} == 0.0)", x(a)),
    }
}

/// A left-nested sum or product `((a + b) + c)` as `a + b + c`, which Rust's left-associative
/// operators evaluate in the same order.
fn chain(pool: &ExprPool, e: ExprId, leaves: &dyn Leaves) -> String {
    let x = |k: ExprId| expression(pool, k, leaves);
    let same_operator =
        |k: ExprId| std::mem::discriminant(&pool.node(k)) == std::mem::discriminant(&pool.node(e));
    let (a, b, operator) = match pool.node(e) {
        Node::Add(a, b) => (a, b, "+"),
        Node::Mul(a, b) => (a, b, "*"),
        _ => return x(e),
    };
    let left = if same_operator(a) {
        chain(pool, a, leaves)
    } else {
        x(a)
    };
    format!("{left} {operator} {}", x(b))
}

/// An `if … elseif … else` chain as a block that tries its conditions in turn, each only
/// while none before held (as the nested `if`s evaluate them), at one level of nesting.
fn branches(pool: &ExprPool, mut e: ExprId, leaves: &dyn Leaves) -> String {
    let x = |k: ExprId| expression(pool, k, leaves);
    let mut text = String::from("{ let mut v = 0.0_f64; let mut open = true; ");
    while let Node::If(c, a, b) = pool.node(e) {
        text.push_str(&format!(
            "if open && {} != 0.0 {{ v = {}; open = false; }} ",
            x(c),
            x(a)
        ));
        e = b;
    }
    text.push_str(&format!("if open {{ v = {}; }} v }}", x(e)));
    text
}

/// A string literal for `s`.
pub fn string(s: &str) -> String {
    format!("{s:?}")
}
