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
//! table's time events); a 1-D or 2-D table's are under `noEvent`, as the C functions make
//! none. A 2-D table's bilinear (or constant-segment) interpolation is separable: each grid
//! row interpolated at `u2`, and those values interpolated at `u1`.

use std::rc::Rc;

use super::Flattener;
use super::classes::{ClassId, TypeRef};
use super::expr::{Ctx, Mode, Val};
use super::instance::{Content, InstId, Instance};
use super::modifier::Bound;
use super::tree::Tree;
use crate::diagnostics::Diagnostic;
use crate::expr::{CmpOp, ExprId, ExprPool, Func};
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
    /// A cubic Hermite spline through the points with these slopes at them.
    Spline(Slopes),
}

/// How a spline's slope at each point is taken, as ModelicaStandardTables.c does.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Slopes {
    /// `ContinuousDerivative`: Akima (1970).
    Akima,
    /// `MonotoneContinuousDerivative1`: Fritsch and Butland (1984).
    FritschButland,
    /// `MonotoneContinuousDerivative2`: Steffen (1990).
    Steffen,
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
    kind: Kind,
}

/// Which of the standard library's tables a table is.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    /// `CombiTimeTable`: the abscissa is time.
    Time,
    /// `CombiTable1D`: the first column is the abscissa, the others the ordinates.
    OneD,
    /// `CombiTable2D`: the first column is the grid in `u1`, the first row in `u2`.
    TwoD,
}

/// The foreign functions implemented here.
const FOREIGN: [&str; 13] = [
    "ModelicaStandardTables_CombiTimeTable_getValue",
    "ModelicaStandardTables_CombiTimeTable_minimumTime",
    "ModelicaStandardTables_CombiTimeTable_maximumTime",
    "ModelicaStandardTables_CombiTimeTable_nextTimeEvent",
    "ModelicaStandardTables_CombiTable1D_getValue",
    "ModelicaStandardTables_CombiTable1D_minimumAbscissa",
    "ModelicaStandardTables_CombiTable1D_maximumAbscissa",
    "ModelicaStandardTables_CombiTimeTable_init2",
    "ModelicaStandardTables_CombiTable1D_init2",
    "ModelicaStandardTables_CombiTable2D_getValue",
    "ModelicaStandardTables_CombiTable2D_minimumAbscissa",
    "ModelicaStandardTables_CombiTable2D_maximumAbscissa",
    "ModelicaStandardTables_CombiTable2D_init2",
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
            _ if table.kind == Kind::TwoD => {
                self.table_2d_call(function, &table, args, span, ctx)?
            }
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

    /// A call of a 2-D table's function: its value at `(u1, u2)`, or the grid's corners.
    fn table_2d_call(
        &mut self,
        function: &str,
        table: &Table,
        args: &'a [Arg],
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<Val, Diagnostic> {
        let (u1, u2) = table_grid(table);
        let corner = |f: &mut Self, at: fn(&[f64]) -> f64| {
            let values = [at(&u1), at(&u2)];
            Tree::Node(values.map(|v| Tree::Leaf(f.dae.pool.constant(v))).to_vec())
        };
        Ok(match function.rsplit('_').next().unwrap_or_default() {
            "getValue" => {
                let mut inputs = Vec::new();
                for k in [1, 2] {
                    let arg = args
                        .get(k)
                        .ok_or_else(|| err(span, "missing argument", "here"))?;
                    match self.flatten_expr(&arg.value, ctx)? {
                        Tree::Leaf(id) => inputs.push(id),
                        Tree::Node(_) => {
                            return Err(err(arg.value.span, "expected a scalar", "an array"));
                        }
                    }
                }
                Tree::Leaf(self.interpolation_2d(table, inputs[0], inputs[1]))
            }
            "minimumAbscissa" => corner(self, |g| g[0]),
            "maximumAbscissa" => corner(self, |g| g[g.len() - 1]),
            _ => {
                return Err(err(
                    span,
                    format!("`{function}` is not implemented"),
                    "here",
                ));
            }
        })
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
            (Some(ExprKind::Ref(cref)), Some(inst)) => self.record_instance(cref, inst, ctx).ok(),
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
                TypeRef::Builtin(_) | TypeRef::Clock => None,
            });
        let path = class
            .map(|c| self.tree.node(c).path.clone())
            .unwrap_or_default();
        let kind = match path.as_str() {
            "Modelica.Blocks.Types.ExternalCombiTimeTable" => Kind::Time,
            "Modelica.Blocks.Types.ExternalCombiTable1D" => Kind::OneD,
            "Modelica.Blocks.Types.ExternalCombiTable2D" => Kind::TwoD,
            _ => {
                return Err(err(
                    b.expr.span,
                    format!(
                        "the external object `{}` is not supported (only the standard library's CombiTimeTable, CombiTable1D and CombiTable2D)",
                        func.dotted()
                    ),
                    "not supported",
                ));
            }
        };
        let time = kind == Kind::Time;
        // The constructor's inputs, in order.
        let names: &[&str] = match kind {
            Kind::Time => &[
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
            ],
            Kind::OneD => &[
                "tableName",
                "fileName",
                "table",
                "columns",
                "smoothness",
                "extrapolation",
                "verboseRead",
            ],
            Kind::TwoD => &[
                "tableName",
                "fileName",
                "table",
                "smoothness",
                "extrapolation",
                "verboseRead",
            ],
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
        let columns = match (kind != Kind::TwoD).then(|| input("columns")).flatten() {
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
            2 => Smoothness::Spline(Slopes::Akima),
            4 => Smoothness::Spline(Slopes::FritschButland),
            5 => Smoothness::Spline(Slopes::Steffen),
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
                    format!("table smoothness `{name}` is not supported"),
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
        if kind == Kind::TwoD {
            check_grid(&rows, smoothness, b.expr.span)?;
        }
        if rows.windows(2).any(|w| w[1][0] < w[0][0]) {
            return Err(err(
                b.expr.span,
                "the table's abscissa (first column) must not decrease",
                "not monotone",
            ));
        }
        if matches!(smoothness, Smoothness::Spline(_))
            && rows.windows(2).any(|w| w[1][0] == w[0][0])
        {
            return Err(err(
                b.expr.span,
                "a spline through a table with a repeated abscissa (a jump) is not supported",
                "not supported",
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
            kind,
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
        let shift = p.constant(table.shift);
        let t = p.sub(x, shift);
        let xs: Vec<f64> = table.rows.iter().map(|r| r[0]).collect();
        let ys: Vec<f64> = table.rows.iter().map(|r| r[column]).collect();
        let t = wrapped(p, table.extrapolation, &xs, t);
        let shape = match table.smoothness {
            // Two points make a line whatever the smoothness.
            Smoothness::Spline(_) if xs.len() < 3 => Shape::Linear,
            Smoothness::Spline(slopes) => Shape::Cubic(spline(slopes, &xs, &ys)),
            Smoothness::LinearSegments => Shape::Linear,
            Smoothness::ConstantSegments => Shape::Constant,
        };
        let ys: Vec<ExprId> = ys.iter().map(|&y| p.constant(y)).collect();
        let mut value = segments(p, table, &shape, t, (&xs, &ys));
        if table.kind == Kind::Time && table.start > f64::NEG_INFINITY {
            let start = p.constant(table.start);
            let early = p.cmp(CmpOp::Lt, x, start);
            let early = guarded(p, table, early);
            let zero = p.zero();
            value = p.if_then_else(early, zero, value);
        }
        value
    }

    /// A 2-D table at `(u1, u2)`: each grid row's values interpolated at `u2`, and those
    /// interpolated at `u1`.
    fn interpolation_2d(&mut self, table: &Table, u1: ExprId, u2: ExprId) -> ExprId {
        let p = &mut self.dae.pool;
        let (grid1, grid2) = table_grid(table);
        let (t1, t2) = (
            wrapped(p, table.extrapolation, &grid1, u1),
            wrapped(p, table.extrapolation, &grid2, u2),
        );
        let separable = |p: &mut ExprPool, shape: &Shape| {
            let rows: Vec<ExprId> = table.rows[1..]
                .iter()
                .map(|row| {
                    let ys: Vec<ExprId> = row[1..].iter().map(|&y| p.constant(y)).collect();
                    segments(p, table, shape, t2, (&grid2, &ys))
                })
                .collect();
            segments(p, table, shape, t1, (&grid1, &rows))
        };
        let bilinear = separable(p, &Shape::Linear);
        if table.smoothness != Smoothness::ConstantSegments {
            return bilinear;
        }
        let constant = separable(p, &Shape::Constant);
        if table.extrapolation != Extrapolation::LastTwoPoints {
            return constant;
        }
        // Outside the grid in either input, constant segments extrapolate bilinearly from
        // the edge cell, as the C function does.
        let mut inside = p.one();
        // (A grid of one point is no dimension: its input is not read.)
        for (t, grid) in [(t1, &grid1), (t2, &grid2)]
            .into_iter()
            .filter(|(_, g)| g.len() > 1)
        {
            let (low, high) = (p.constant(grid[0]), p.constant(grid[grid.len() - 1]));
            let above = p.cmp(CmpOp::Ge, t, low);
            let below = p.cmp(CmpOp::Le, t, high);
            let within = p.and(above, below);
            inside = p.and(inside, within);
        }
        let inside = p.call(Func::NoEvent, inside);
        p.if_then_else(inside, constant, bilinear)
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

/// The value at `t` of the points `(xs, ys)` joined as `shape`, extrapolated as `table`
/// says: segments from the last back, `if t < a_k then (earlier) else segment k`.
fn segments(
    p: &mut ExprPool,
    table: &Table,
    shape: &Shape,
    t: ExprId,
    (xs, ys): Points<'_>,
) -> ExprId {
    let n = xs.len();
    let extrapolate = table.extrapolation == Extrapolation::LastTwoPoints;
    // Beyond the ends constant segments extrapolate on the line through the last two points,
    // as ModelicaStandardTables.c does and the library documents.
    let outside = match shape {
        Shape::Constant => &Shape::Linear,
        shape => shape,
    };
    // Intervals of positive length, by their first row.
    let starts: Vec<usize> = (0..n.saturating_sub(1))
        .filter(|&i| xs[i + 1] > xs[i])
        .collect();
    let mut value = match (starts.last(), extrapolate) {
        (Some(&i), true) => outside.after(p, t, (xs, ys), i),
        _ => ys[n - 1],
    };
    // A line extrapolates as itself; otherwise the last interval ends at its last point.
    if let Some(&i) = starts.last()
        && !(extrapolate && *shape == Shape::Linear)
    {
        let end = p.constant(xs[i + 1]);
        let before = p.cmp(CmpOp::Lt, t, end);
        let before = guarded(p, table, before);
        let inside = shape.piece(p, t, (xs, ys), i);
        value = p.if_then_else(before, inside, value);
    }
    for (k, &i) in starts.iter().enumerate().rev() {
        // Below this interval's start: the interval before it, or the extrapolation.
        let below = match k.checked_sub(1).map(|j| starts[j]) {
            Some(prev) => shape.piece(p, t, (xs, ys), prev),
            None if extrapolate => outside.before(p, t, (xs, ys), i),
            None => ys[0],
        };
        let start = p.constant(xs[i]);
        let ahead = p.cmp(CmpOp::Lt, t, start);
        let ahead = guarded(p, table, ahead);
        value = p.if_then_else(ahead, below, value);
    }
    value
}

/// `t` brought into the abscissa's range `xs` when the table is periodic:
/// `first + (t − first) mod period`.
fn wrapped(p: &mut ExprPool, extrapolation: Extrapolation, xs: &[f64], t: ExprId) -> ExprId {
    let (first, last) = (xs[0], xs[xs.len() - 1]);
    if extrapolation != Extrapolation::Periodic || last <= first {
        return t;
    }
    let (first_c, period) = (p.constant(first), p.constant(last - first));
    let offset = p.sub(t, first_c);
    let turns = p.div(offset, period);
    let whole = p.call(Func::Floor, turns);
    let back = p.mul(whole, period);
    p.sub(t, back)
}

/// An interval's condition: an event of a time table's, under `noEvent` otherwise.
fn guarded(p: &mut ExprPool, table: &Table, c: ExprId) -> ExprId {
    if table.events {
        c
    } else {
        p.call(Func::NoEvent, c)
    }
}

/// A 2-D table's grids: in `u1` (the first column below the corner) and in `u2` (the first
/// row after it).
fn table_grid(table: &Table) -> (Vec<f64>, Vec<f64>) {
    let u1 = table.rows[1..].iter().map(|r| r[0]).collect();
    let u2 = table.rows[0][1..].to_vec();
    (u1, u2)
}

/// A 2-D table's matrix is a grid: at least one value, strictly increasing grids, and an
/// interpolation it has.
fn check_grid(rows: &[Vec<f64>], smoothness: Smoothness, span: Span) -> Result<(), Diagnostic> {
    if rows.len() < 2 || rows[0].len() < 2 {
        return Err(err(
            span,
            "a 2-D table needs a grid row, a grid column and at least one value (2×2)",
            "too small",
        ));
    }
    let column: Vec<f64> = rows[1..].iter().map(|r| r[0]).collect();
    for (grid, name) in [
        (&column, "first column (u1)"),
        (&rows[0][1..].to_vec(), "first row (u2)"),
    ] {
        if grid.windows(2).any(|w| w[1] <= w[0]) {
            return Err(err(
                span,
                format!("the 2-D table's {name} must be strictly increasing"),
                "not increasing",
            ));
        }
    }
    if let Smoothness::Spline(_) = smoothness {
        return Err(err(
            span,
            "a 2-D table's spline interpolation (bivariate Akima) is not supported: LinearSegments and ConstantSegments are",
            "not supported",
        ));
    }
    Ok(())
}

/// A table's points: abscissae and ordinates (expressions: a 2-D table's are its rows'
/// interpolations).
type Points<'p> = (&'p [f64], &'p [ExprId]);

/// What one column of a table is between its points.
#[derive(PartialEq)]
enum Shape {
    Linear,
    Constant,
    /// Per interval, the cubic's coefficients `[c₃, c₂, c₁]` of `y = yᵢ + ((c₃v + c₂)v + c₁)v`
    /// with `v = t − xᵢ`.
    Cubic(Vec<[f64; 3]>),
}

impl Shape {
    /// The value on interval `i` (from point `i` to `i + 1`).
    fn piece(&self, p: &mut ExprPool, t: ExprId, (xs, ys): Points<'_>, i: usize) -> ExprId {
        let (x0, y0) = (p.constant(xs[i]), ys[i]);
        match self {
            Shape::Constant => y0,
            Shape::Linear => {
                let (rise, run) = (p.sub(ys[i + 1], ys[i]), p.constant(xs[i + 1] - xs[i]));
                let slope = p.div(rise, run);
                let v = p.sub(t, x0);
                let rise = p.mul(slope, v);
                p.add(y0, rise)
            }
            Shape::Cubic(c) => {
                let [c3, c2, c1] = c[i].map(|k| p.constant(k));
                let v = p.sub(t, x0);
                let inner = p.mul(c3, v);
                let inner = p.add(inner, c2);
                let inner = p.mul(inner, v);
                let inner = p.add(inner, c1);
                let rise = p.mul(inner, v);
                p.add(y0, rise)
            }
        }
    }

    /// Beyond the first point, on the tangent there (the line of a linear table).
    fn before(&self, p: &mut ExprPool, t: ExprId, (xs, ys): Points<'_>, i: usize) -> ExprId {
        match self {
            Shape::Cubic(c) => tangent(p, t, (xs[i], ys[i]), c[i][2]),
            _ => self.piece(p, t, (xs, ys), i),
        }
    }

    /// Beyond the last point (interval `i` is the last), on the tangent there.
    fn after(&self, p: &mut ExprPool, t: ExprId, (xs, ys): Points<'_>, i: usize) -> ExprId {
        match self {
            Shape::Cubic(c) => {
                let [c3, c2, c1] = c[i];
                let v = xs[i + 1] - xs[i];
                let slope = (3.0 * c3 * v + 2.0 * c2) * v + c1;
                tangent(p, t, (xs[i + 1], ys[i + 1]), slope)
            }
            _ => self.piece(p, t, (xs, ys), i),
        }
    }
}

/// `y + slope·(t − x)`.
fn tangent(p: &mut ExprPool, t: ExprId, (x, y): (f64, ExprId), slope: f64) -> ExprId {
    let (x, slope) = (p.constant(x), p.constant(slope));
    let v = p.sub(t, x);
    let rise = p.mul(slope, v);
    p.add(y, rise)
}

/// The cubic Hermite spline through `(xs, ys)` (at least three points, strictly increasing
/// abscissa) with the slopes `slopes` takes, per interval as [`Shape::Cubic`] has it: the
/// coefficients ModelicaStandardTables.c computes, so that the values agree with other tools'.
fn spline(slopes: Slopes, xs: &[f64], ys: &[f64]) -> Vec<[f64; 3]> {
    let n = xs.len();
    let secant: Vec<f64> = (0..n - 1)
        .map(|i| (ys[i + 1] - ys[i]) / (xs[i + 1] - xs[i]))
        .collect();
    let m = match slopes {
        Slopes::Akima => akima_slopes(&secant),
        Slopes::FritschButland | Slopes::Steffen => monotone_slopes(slopes, xs, &secant),
    };
    (0..n - 1)
        .map(|i| {
            let dx = xs[i + 1] - xs[i];
            let (m0, m1, d) = (m[i], m[i + 1], secant[i]);
            [
                (m0 + m1 - 2.0 * d) / (dx * dx),
                (3.0 * d - 2.0 * m0 - m1) / dx,
                m0,
            ]
        })
        .collect()
}

/// Akima's slope at each point from the secants around it, two secants made up past each end.
fn akima_slopes(secant: &[f64]) -> Vec<f64> {
    let k = secant.len();
    // d[j + 2] is secant j; two more on each side continue the end secants' trend.
    let mut d = vec![0.0; k + 4];
    d[2..k + 2].copy_from_slice(secant);
    d[0] = 3.0 * d[2] - 2.0 * d[3];
    d[1] = 2.0 * d[2] - d[3];
    d[k + 2] = 2.0 * d[k + 1] - d[k];
    d[k + 3] = 3.0 * d[k + 1] - 2.0 * d[k];
    (0..=k)
        .map(|i| {
            let (w_left, w_right) = ((d[i + 3] - d[i + 2]).abs(), (d[i + 1] - d[i]).abs());
            let total = w_left + w_right;
            if total > 0.0 {
                let a = w_right / total;
                (1.0 - a) * d[i + 1] + a * d[i + 2]
            } else {
                0.5 * d[i + 1] + 0.5 * d[i + 2]
            }
        })
        .collect()
}

/// Slopes that keep each interval monotone: the end secants at the ends, zero at an extremum,
/// else Fritsch–Butland's weighted harmonic mean or Steffen's limited mean.
fn monotone_slopes(slopes: Slopes, xs: &[f64], secant: &[f64]) -> Vec<f64> {
    let k = secant.len();
    let mut m = vec![0.0; k + 1];
    m[0] = secant[0];
    m[k] = secant[k - 1];
    for i in 1..k {
        let (d0, d1) = (secant[i - 1], secant[i]);
        if d0 == 0.0 || d1 == 0.0 || (d0 < 0.0) != (d1 < 0.0) {
            continue;
        }
        let (h0, h1) = (xs[i] - xs[i - 1], xs[i + 1] - xs[i]);
        m[i] = match slopes {
            Slopes::FritschButland => {
                3.0 * (h0 + h1) / ((h0 + 2.0 * h1) / d0 + (h1 + 2.0 * h0) / d1)
            }
            _ => {
                let mean = (d0 * h1 + d1 * h0) / (h0 + h1);
                let (a0, a1) = (d0.abs(), d1.abs());
                if 0.5 * mean.abs() > a0 || 0.5 * mean.abs() > a1 {
                    2.0 * d0.signum() * a0.min(a1)
                } else {
                    mean
                }
            }
        };
    }
    m
}
