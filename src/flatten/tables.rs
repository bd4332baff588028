//! External objects (Modelica 12.9.7) and the foreign functions of the standard library's
//! tables (`ModelicaStandardTables`, behind `Modelica.Blocks.Tables.Internal`), written here
//! in Rust behind the same interface: mocca compiles no C.
//!
//! An external object's constructor call is kept, not run: a component whose class extends
//! `ExternalObject` becomes an instance without variables, remembered with its binding. A
//! table function called with it reads the constructor's arguments at translation time (the
//! table written in the model, its columns, smoothness and extrapolation) and becomes the
//! interpolation as an expression of its argument: an `if` chain over the table's intervals,
//! so the tape evaluates it and the symbolic Jacobian differentiates it exactly. A time
//! table's interval conditions are relations on time, so its breakpoints are events (the
//! table's time events); a 1-D table's are under `noEvent`, as the C function makes none.

use std::rc::Rc;

use super::Flattener;
use super::classes::{ClassId, TypeRef};
use super::expr::{Ctx, Mode, Val};
use super::instance::{Content, InstId, Instance};
use super::modifier::Bound;
use super::tree::Tree;
use crate::diagnostics::Diagnostic;
use crate::expr::{CmpOp, ExprId, Func};
use crate::source::Span;
use crate::syntax::ast::{Arg, ClassBody, ElementKind, Expr, ExprKind};

fn err(span: Span, msg: impl Into<String>, label: &str) -> Diagnostic {
    Diagnostic::error(msg).at(span, label)
}

/// `Modelica.Blocks.Types.Smoothness`, by ordinal.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Smoothness {
    LinearSegments,
    ConstantSegments,
}

/// `Modelica.Blocks.Types.Extrapolation`, by ordinal.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Extrapolation {
    HoldLastPoint,
    LastTwoPoints,
    Periodic,
}

/// A table as its constructor gave it, evaluated at translation time.
#[derive(Debug)]
pub(crate) struct Table {
    /// Rows of the matrix: the abscissa (time) first.
    rows: Vec<Vec<f64>>,
    /// The matrix column (0-based) of each output.
    columns: Vec<usize>,
    smoothness: Smoothness,
    extrapolation: Extrapolation,
    /// Time tables only: before `start` the value is 0; the abscissa is shifted by `shift`.
    start: f64,
    shift: f64,
    /// Time tables only: whether breakpoints are events.
    events: bool,
    time: bool,
}

/// The foreign functions implemented here.
const FOREIGN: [&str; 9] = [
    "ModelicaStandardTables_CombiTimeTable_getValue",
    "ModelicaStandardTables_CombiTimeTable_minimumTime",
    "ModelicaStandardTables_CombiTimeTable_maximumTime",
    "ModelicaStandardTables_CombiTimeTable_nextTimeEvent",
    "ModelicaStandardTables_CombiTable1D_getValue",
    "ModelicaStandardTables_CombiTable1D_minimumAbscissa",
    "ModelicaStandardTables_CombiTable1D_maximumAbscissa",
    "ModelicaStandardTables_CombiTimeTable_init2",
    "ModelicaStandardTables_CombiTable1D_init2",
];

pub(crate) fn is_implemented(function: &str) -> bool {
    FOREIGN.contains(&function)
}

impl<'a> Flattener<'a> {
    /// Whether `class` extends the predefined `ExternalObject`.
    pub(crate) fn is_external_object(&self, class: ClassId) -> bool {
        let Some(def) = self.tree.node(class).def else {
            return false;
        };
        let ClassBody::Long(comp) = &def.body else {
            return false;
        };
        comp.elements.iter().any(|e| match &e.kind {
            ElementKind::Extends(ext) => {
                ext.base.parts.len() == 1 && ext.base.parts[0].name == "ExternalObject"
            }
            _ => false,
        })
    }

    /// An instance without variables for an external object, remembered with its
    /// constructor call.
    pub(crate) fn external_object(
        &mut self,
        prefix: String,
        binding: Option<Bound<'a>>,
        span: Span,
    ) -> Result<Content, Diagnostic> {
        let Some(binding) = binding else {
            return Err(err(
                span,
                "an external object needs its constructor call as its value",
                "no value",
            ));
        };
        let id = InstId(self.insts.len() as u32);
        self.insts.push(Instance::empty(prefix));
        self.external_objects.insert(id, binding);
        Ok(Content::Insts(smallvec::smallvec![id]))
    }

    /// A call of a foreign function implemented here: its outputs.
    pub(crate) fn foreign_call(
        &mut self,
        function: &str,
        args: &'a [Arg],
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<Vec<Val>, Diagnostic> {
        if function.ends_with("_init2") {
            return Err(err(
                span,
                "a table object is made only as the value of its component",
                "not here",
            ));
        }
        if let Some(named) = args.iter().find(|a| a.name.is_some()) {
            return Err(err(
                named.value.span,
                "a table function takes its arguments by position here",
                "named",
            ));
        }
        let table = self.table_of(args.first().map(|a| &a.value), span, ctx)?;
        let value = |k: usize, f: &mut Self| -> Result<ExprId, Diagnostic> {
            let arg = args
                .get(k)
                .ok_or_else(|| err(span, "missing argument", "here"))?;
            match f.flatten_expr(&arg.value, ctx)? {
                Tree::Leaf(id) => Ok(id),
                Tree::Node(_) => Err(err(arg.value.span, "expected a scalar", "an array")),
            }
        };
        let pool_constant = |f: &mut Self, x: f64| Tree::Leaf(f.dae.pool.constant(x));
        let abscissa = |t: &Table, last: bool| {
            let row = if last { t.rows.last() } else { t.rows.first() };
            row.map_or(0.0, |r| r[0])
        };
        let out = match function.rsplit('_').next().unwrap_or_default() {
            "getValue" => {
                let column = value(1, self)?;
                let x = value(2, self)?;
                let column = self.table_column(&table, column, args[1].value.span)?;
                Tree::Leaf(self.interpolation(&table, column, x))
            }
            "minimumTime" | "minimumAbscissa" => pool_constant(self, abscissa(&table, false)),
            "maximumTime" | "maximumAbscissa" => pool_constant(self, abscissa(&table, true)),
            "nextTimeEvent" => {
                let t = value(1, self)?;
                Tree::Leaf(self.next_time_event(&table, t))
            }
            _ => {
                return Err(err(
                    span,
                    format!("`{function}` is not implemented"),
                    "here",
                ));
            }
        };
        Ok(vec![out])
    }

    /// The output column a (1-based) column argument selects.
    fn table_column(&self, table: &Table, column: ExprId, span: Span) -> Result<usize, Diagnostic> {
        let k = self.dae.pool.as_const(column).ok_or_else(|| {
            err(
                span,
                "the column must be known at translation time",
                "not a constant",
            )
        })?;
        let i = k as usize;
        if k.fract() != 0.0 || i == 0 || i > table.columns.len() {
            return Err(err(
                span,
                format!("column {k} of a table with {} outputs", table.columns.len()),
                "out of range",
            ));
        }
        Ok(table.columns[i - 1])
    }

    /// The table object an argument names.
    fn table_of(
        &mut self,
        arg: Option<&'a Expr>,
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<Rc<Table>, Diagnostic> {
        let object = match (arg.map(|a| &a.kind), ctx.inst) {
            (Some(ExprKind::Ref(cref)), Some(inst)) => self.record_instance(cref, inst).ok(),
            _ => None,
        };
        let Some(object) = object.filter(|o| self.external_objects.contains_key(o)) else {
            return Err(err(
                arg.map_or(span, |a| a.span),
                "a table function needs a table object (a component of an external object class)",
                "not a table object",
            ));
        };
        if let Some(table) = self.tables.get(&object) {
            return Ok(table.clone());
        }
        let binding = self.external_objects[&object].clone();
        let table = Rc::new(self.construct_table(&binding)?);
        self.tables.insert(object, table.clone());
        Ok(table)
    }

    /// Reads a table constructor's arguments (`ExternalCombiTimeTable(…)`,
    /// `ExternalCombiTable1D(…)`) at translation time.
    fn construct_table(&mut self, b: &Bound<'a>) -> Result<Table, Diagnostic> {
        let ExprKind::Call { func, args } = &b.expr.kind else {
            return Err(err(
                b.expr.span,
                "an external object's value must be its constructor call",
                "not a call",
            ));
        };
        let ctx = Ctx {
            mode: Mode::Constant,
            ..b.ctx()
        };
        let class = func
            .as_name()
            .and_then(|n| self.tree.resolve(&n, b.class_scope))
            .and_then(|t| match t {
                TypeRef::Class(c) => Some(c),
                TypeRef::Builtin(_) => None,
            });
        let path = class
            .map(|c| self.tree.node(c).path.clone())
            .unwrap_or_default();
        let time = match path.as_str() {
            "Modelica.Blocks.Types.ExternalCombiTimeTable" => true,
            "Modelica.Blocks.Types.ExternalCombiTable1D" => false,
            _ => {
                return Err(err(
                    b.expr.span,
                    format!(
                        "the external object `{}` is not supported (only the standard library's CombiTimeTable and CombiTable1D)",
                        func.dotted()
                    ),
                    "not supported",
                ));
            }
        };
        // The constructor's inputs, in order.
        let names: &[&str] = if time {
            &[
                "tableName",
                "fileName",
                "table",
                "startTime",
                "columns",
                "smoothness",
                "extrapolation",
                "shiftTime",
                "timeEvents",
                "verboseRead",
            ]
        } else {
            &[
                "tableName",
                "fileName",
                "table",
                "columns",
                "smoothness",
                "extrapolation",
                "verboseRead",
            ]
        };
        let mut given: Vec<Option<&'a Expr>> = vec![None; names.len()];
        for (k, arg) in args.iter().enumerate() {
            let at = match &arg.name {
                Some(n) => names.iter().position(|m| *m == n.name),
                None => (k < names.len()).then_some(k),
            };
            let at = at.ok_or_else(|| {
                err(
                    arg.value.span,
                    "no such input of the table constructor",
                    "unknown",
                )
            })?;
            given[at] = Some(&arg.value);
        }
        let input = |name: &str| {
            given[names
                .iter()
                .position(|m| *m == name)
                .expect("a known input")]
        };
        for name in ["tableName", "fileName"] {
            let on_file = match input(name) {
                Some(e) => self
                    .string_value(e, &ctx, 0)
                    .map_or(true, |s| s != "NoName"),
                None => false,
            };
            if on_file {
                return Err(err(
                    b.expr.span,
                    "a table read from a file is not supported: write the table in the model (`table = [...]`)",
                    "not supported",
                ));
            }
        }
        let matrix = match input("table") {
            Some(e) => self.flatten_expr(e, &ctx)?,
            None => {
                return Err(err(
                    b.expr.span,
                    "the table constructor needs its table",
                    "no table",
                ));
            }
        };
        let rows = self.constant_rows(&matrix, b.expr.span)?;
        let scalar = |f: &mut Self, name: &str, default: f64| -> Result<f64, Diagnostic> {
            match input(name) {
                Some(e) => f.eval_scalar(e, &ctx),
                None => Ok(default),
            }
        };
        let columns = match input("columns") {
            Some(e) => self.flatten_expr(e, &ctx)?.leaves(),
            None => Vec::new(),
        };
        let width = rows.first().map_or(0, Vec::len);
        let mut column_indices = Vec::with_capacity(columns.len());
        for c in columns {
            match self.dae.pool.as_const(c) {
                Some(k) if k.fract() == 0.0 && k >= 2.0 && (k as usize) <= width => {
                    column_indices.push(k as usize - 1)
                }
                Some(k) => {
                    return Err(err(
                        b.expr.span,
                        format!(
                            "table column {k} is outside the table's {width} columns (the first is the abscissa)"
                        ),
                        "bad column",
                    ));
                }
                None => {
                    return Err(err(
                        b.expr.span,
                        "the table's columns must be known at translation time",
                        "not constant",
                    ));
                }
            }
        }
        let smoothness = match scalar(self, "smoothness", 1.0)? as i64 {
            1 => Smoothness::LinearSegments,
            3 => Smoothness::ConstantSegments,
            other => {
                let name = [
                    "",
                    "LinearSegments",
                    "ContinuousDerivative",
                    "ConstantSegments",
                    "MonotoneContinuousDerivative1",
                    "MonotoneContinuousDerivative2",
                    "ModifiedContinuousDerivative",
                ]
                .get(other as usize)
                .copied()
                .unwrap_or("?");
                return Err(err(
                    b.expr.span,
                    format!(
                        "table smoothness `{name}` is not supported (LinearSegments and ConstantSegments are)"
                    ),
                    "not supported",
                ));
            }
        };
        let extrapolation = match scalar(self, "extrapolation", 2.0)? as i64 {
            1 => Extrapolation::HoldLastPoint,
            2 => Extrapolation::LastTwoPoints,
            3 => Extrapolation::Periodic,
            _ => {
                return Err(err(
                    b.expr.span,
                    "table extrapolation `NoExtrapolation` is not supported",
                    "not supported",
                ));
            }
        };
        if rows.is_empty() {
            return Err(err(b.expr.span, "the table is empty", "no rows"));
        }
        if rows.windows(2).any(|w| w[1][0] < w[0][0]) {
            return Err(err(
                b.expr.span,
                "the table's abscissa (first column) must not decrease",
                "not monotone",
            ));
        }
        Ok(Table {
            start: if time {
                scalar(self, "startTime", 0.0)?
            } else {
                f64::NEG_INFINITY
            },
            shift: if time {
                scalar(self, "shiftTime", 0.0)?
            } else {
                0.0
            },
            events: time && scalar(self, "timeEvents", 1.0)? as i64 != 3,
            rows,
            columns: column_indices,
            smoothness,
            extrapolation,
            time,
        })
    }

    /// A matrix of constants as its rows.
    fn constant_rows(&self, matrix: &Val, span: Span) -> Result<Vec<Vec<f64>>, Diagnostic> {
        let Tree::Node(rows) = matrix else {
            return Err(err(span, "the table must be a matrix", "not a matrix"));
        };
        rows.iter()
            .map(|row| {
                row.leaves()
                    .iter()
                    .map(|&id| self.dae.pool.as_const(id))
                    .collect::<Option<Vec<f64>>>()
                    .ok_or_else(|| {
                        err(
                            span,
                            "the table must be known at translation time",
                            "not constant",
                        )
                    })
            })
            .collect()
    }

    /// A Boolean known at translation time, `and` and `or` deciding on their first operand
    /// when it decides (`tableOnFile and fileName <> "NoName"` with `tableOnFile` false).
    pub(super) fn short_circuit(&mut self, e: &'a Expr, ctx: &Ctx<'_>) -> Option<bool> {
        use crate::syntax::ast::BinOp;
        if let ExprKind::Binary {
            op: op @ (BinOp::And | BinOp::Or),
            lhs,
            rhs,
        } = &e.kind
        {
            let first = self.short_circuit(lhs, ctx)?;
            return match (op, first) {
                (BinOp::And, false) => Some(false),
                (BinOp::Or, true) => Some(true),
                _ => self.short_circuit(rhs, ctx),
            };
        }
        self.eval_scalar(e, ctx).ok().map(|x| x != 0.0)
    }

    /// The table's column at `x` (time or abscissa), as an expression.
    fn interpolation(&mut self, table: &Table, column: usize, x: ExprId) -> ExprId {
        let p = &mut self.dae.pool;
        let guard = |p: &mut crate::expr::ExprPool, c: ExprId| {
            if table.events {
                c
            } else {
                p.call(Func::NoEvent, c)
            }
        };
        let shift = p.constant(table.shift);
        let mut t = p.sub(x, shift);
        let rows = &table.rows;
        let (first, last) = (rows[0][0], rows[rows.len() - 1][0]);
        if table.extrapolation == Extrapolation::Periodic && last > first {
            // first + (t − first) mod period
            let (first_c, period) = (p.constant(first), p.constant(last - first));
            let offset = p.sub(t, first_c);
            let turns = p.div(offset, period);
            let whole = p.call(Func::Floor, turns);
            let back = p.mul(whole, period);
            t = p.sub(t, back);
        }
        // Segments from the last back: `if t < a_k then (earlier) else segment k`.
        let y = |i: usize| rows[i][column];
        let line = |p: &mut crate::expr::ExprPool, i: usize, j: usize| {
            let (a, b) = (rows[i][0], rows[j][0]);
            let slope = (y(j) - y(i)) / (b - a);
            let (a_c, y_c, s_c) = (p.constant(a), p.constant(y(i)), p.constant(slope));
            let d = p.sub(t, a_c);
            let rise = p.mul(s_c, d);
            p.add(y_c, rise)
        };
        let n = rows.len();
        let linear = table.smoothness == Smoothness::LinearSegments;
        let hold = table.extrapolation != Extrapolation::LastTwoPoints || !linear;
        // Intervals of positive length, by their first row.
        let starts: Vec<usize> = (0..n.saturating_sub(1))
            .filter(|&i| rows[i + 1][0] > rows[i][0])
            .collect();
        let mut value = match (starts.last(), hold) {
            (None, _) => p.constant(y(n - 1)),
            (Some(_), true) => p.constant(y(n - 1)),
            (Some(&i), false) => line(p, i, i + 1),
        };
        if let Some(&i) = starts.last()
            && hold
        {
            // The last interval, then the held last point from its end on.
            let end = p.constant(rows[i + 1][0]);
            let before = p.cmp(CmpOp::Lt, t, end);
            let before = guard(p, before);
            let inside = if linear {
                line(p, i, i + 1)
            } else {
                p.constant(y(i))
            };
            value = p.if_then_else(before, inside, value);
        }
        for (k, &i) in starts.iter().enumerate().rev() {
            // Below this interval's start: the interval before it, or the extrapolation.
            let below = match k.checked_sub(1).map(|j| starts[j]) {
                Some(prev) if linear => line(p, prev, prev + 1),
                Some(prev) => p.constant(y(prev)),
                None if hold => p.constant(y(0)),
                None => line(p, i, i + 1),
            };
            let start = p.constant(rows[i][0]);
            let ahead = p.cmp(CmpOp::Lt, t, start);
            let ahead = guard(p, ahead);
            value = p.if_then_else(ahead, below, value);
        }
        if table.time && table.start > f64::NEG_INFINITY {
            let start = p.constant(table.start);
            let early = p.cmp(CmpOp::Lt, x, start);
            let early = guard(p, early);
            let zero = p.zero();
            value = p.if_then_else(early, zero, value);
        }
        value
    }

    /// The first breakpoint of a time table after `t`, or the largest number when none is
    /// left (as the C function returns).
    fn next_time_event(&mut self, table: &Table, t: ExprId) -> ExprId {
        let p = &mut self.dae.pool;
        let mut times: Vec<f64> = if table.events {
            table.rows.iter().map(|r| r[0] + table.shift).collect()
        } else {
            Vec::new()
        };
        times.retain(|&s| s >= table.start);
        times.dedup();
        let mut value = p.constant(f64::MAX);
        for &s in times.iter().rev() {
            let at = p.constant(s);
            let before = p.cmp(CmpOp::Lt, t, at);
            value = p.if_then_else(before, at, value);
        }
        value
    }
}
