//! The array functions of Modelica's chapter 10 that take arrays apart and build them anew
//! (`scalar`, `vector`, `matrix`, `array`, `transpose`, `outerProduct`, `symmetric`, `cross`,
//! `skew`, `diagonal`, `linspace`), array comprehensions `{e for i in r}` (and so reductions,
//! `sum(e for i in r)` being `sum` of one), and matrix powers `A^k`: all scalarised, each
//! element an expression of the pool.

use super::Flattener;
use super::expr::{Ctx, LoopIndex, Val, too_large};
use super::tree::Tree;
use crate::diagnostics::Diagnostic;
use crate::expr::ExprId;
use crate::source::Span;
use crate::syntax::ast::{Expr, ForIndex};

fn error(span: Span, message: impl Into<String>, label: &str) -> Diagnostic {
    Diagnostic::error(message).at(span, label)
}

/// A vector of expressions as an array value.
fn vector_of(items: impl IntoIterator<Item = ExprId>) -> Val {
    Tree::Node(items.into_iter().map(Tree::Leaf).collect())
}

/// A matrix of expressions (by rows) as an array value.
fn matrix_of(rows: impl IntoIterator<Item = Vec<ExprId>>) -> Val {
    Tree::Node(rows.into_iter().map(vector_of).collect())
}

/// The elements of a vector (one dimension), or `None`.
fn elements(v: &Val) -> Option<Vec<ExprId>> {
    match v {
        Tree::Node(items) => items
            .iter()
            .map(|i| match i {
                Tree::Leaf(x) => Some(*x),
                Tree::Node(_) => None,
            })
            .collect(),
        Tree::Leaf(_) => None,
    }
}

/// The rows of a matrix (two dimensions), or `None`.
fn rows(m: &Val) -> Option<Vec<Vec<ExprId>>> {
    match m {
        Tree::Node(rows) => rows.iter().map(elements).collect(),
        Tree::Leaf(_) => None,
    }
}

impl<'a> Flattener<'a> {
    /// Whether `name` is one of this module's functions.
    pub(crate) fn is_array_function(name: &str) -> bool {
        matches!(
            name,
            "scalar"
                | "vector"
                | "matrix"
                | "array"
                | "transpose"
                | "outerProduct"
                | "symmetric"
                | "cross"
                | "skew"
                | "diagonal"
                | "linspace"
        )
    }

    /// `name(args)` for one of [`Flattener::is_array_function`]'s names.
    pub(crate) fn array_function(
        &mut self,
        name: &str,
        args: &[&'a Expr],
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<Val, Diagnostic> {
        let arity = match name {
            "array" => args.len().max(1),
            "outerProduct" | "cross" => 2,
            "linspace" => 3,
            _ => 1,
        };
        if args.len() != arity {
            return Err(error(
                span,
                format!("`{name}` takes {arity} argument(s), not {}", args.len()),
                "wrong number of arguments",
            ));
        }
        if name == "linspace" {
            return self.linspace(args, span, ctx);
        }
        let values = args
            .iter()
            .map(|a| self.flatten_expr(a, ctx))
            .collect::<Result<Vec<Val>, _>>()?;
        let wrong = |what: &str| error(span, format!("`{name}` needs {what}"), "here");
        let p = &mut self.dae.pool;
        match name {
            "scalar" => {
                let leaves = values[0].leaves();
                match leaves.as_slice() {
                    [x] if values[0].shape().iter().all(|&n| n == 1) => Ok(Tree::Leaf(*x)),
                    _ => Err(wrong("an array of one element")),
                }
            }
            "vector" => {
                let long = values[0].shape().iter().filter(|&&n| n > 1).count();
                if long > 1 {
                    return Err(wrong("an array with at most one dimension larger than 1"));
                }
                Ok(vector_of(values[0].leaves()))
            }
            "matrix" => {
                let shape = values[0].shape();
                if shape.iter().skip(2).any(|&n| n != 1) {
                    return Err(wrong("an array whose dimensions after the second are 1"));
                }
                let leaves = values[0].leaves();
                let (n, m) = match shape.as_slice() {
                    [] => (1, 1),
                    [n] => (*n, 1),
                    [n, m, ..] => (*n, *m),
                };
                Ok(matrix_of(
                    (0..n).map(|i| leaves[i * m..(i + 1) * m].to_vec()),
                ))
            }
            "array" => {
                let shape = values[0].shape();
                if values.iter().any(|v| v.shape() != shape) {
                    return Err(wrong("arguments of one size"));
                }
                Ok(Tree::Node(values))
            }
            "transpose" => {
                let Tree::Node(outer) = &values[0] else {
                    return Err(wrong("an array of at least two dimensions"));
                };
                let inner: Option<Vec<&Vec<Val>>> = outer
                    .iter()
                    .map(|r| match r {
                        Tree::Node(kids) => Some(kids),
                        Tree::Leaf(_) => None,
                    })
                    .collect();
                let Some(inner) = inner.filter(|rows| !rows.is_empty()) else {
                    return Err(wrong("an array of at least two dimensions"));
                };
                let m = inner[0].len();
                Ok(Tree::Node(
                    (0..m)
                        .map(|j| Tree::Node(inner.iter().map(|row| row[j].clone()).collect()))
                        .collect(),
                ))
            }
            "outerProduct" => {
                let (Some(x), Some(y)) = (elements(&values[0]), elements(&values[1])) else {
                    return Err(wrong("two vectors"));
                };
                Ok(matrix_of(
                    x.iter()
                        .map(|&xi| y.iter().map(|&yj| p.mul(xi, yj)).collect())
                        .collect::<Vec<_>>(),
                ))
            }
            "symmetric" => {
                let a = rows(&values[0])
                    .filter(|a| a.iter().all(|r| r.len() == a.len()))
                    .ok_or_else(|| wrong("a square matrix"))?;
                let n = a.len();
                Ok(matrix_of((0..n).map(|i| {
                    (0..n)
                        .map(|j| if i <= j { a[i][j] } else { a[j][i] })
                        .collect()
                })))
            }
            "cross" => match (elements(&values[0]), elements(&values[1])) {
                (Some(x), Some(y)) if x.len() == 3 && y.len() == 3 => {
                    let mut term = |i: usize, j: usize| {
                        let a = p.mul(x[i], y[j]);
                        let b = p.mul(x[j], y[i]);
                        p.sub(a, b)
                    };
                    Ok(vector_of([term(1, 2), term(2, 0), term(0, 1)]))
                }
                _ => Err(wrong("two vectors of 3 elements")),
            },
            "skew" => match elements(&values[0]) {
                Some(x) if x.len() == 3 => {
                    let zero = p.zero();
                    let neg: Vec<ExprId> = x.iter().map(|&v| p.neg(v)).collect();
                    Ok(matrix_of([
                        vec![zero, neg[2], x[1]],
                        vec![x[2], zero, neg[0]],
                        vec![neg[1], x[0], zero],
                    ]))
                }
                _ => Err(wrong("a vector of 3 elements")),
            },
            "diagonal" => {
                let v = elements(&values[0]).ok_or_else(|| wrong("a vector"))?;
                let zero = p.zero();
                let n = v.len();
                Ok(matrix_of((0..n).map(|i| {
                    (0..n).map(|j| if i == j { v[i] } else { zero }).collect()
                })))
            }
            _ => unreachable!("`{name}` is not an array function"),
        }
    }

    /// `linspace(x1, x2, n)`: `n` (at least 2, known at translation time) equally spaced
    /// values from `x1` to `x2`, `x1 + (x2 − x1)(i − 1)/(n − 1)`.
    fn linspace(
        &mut self,
        args: &[&'a Expr],
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<Val, Diagnostic> {
        let n = self.eval_scalar(args[2], ctx)?;
        if n.fract() != 0.0 || n < 2.0 {
            return Err(error(
                args[2].span,
                format!("`linspace` needs at least 2 points, not {n}"),
                "the number of points",
            ));
        }
        if n > self.max_size as f64 {
            return Err(too_large(n, self.max_size, span));
        }
        let bounds = [args[0], args[1]].map(|a| self.flatten_expr(a, ctx));
        let [Ok(Tree::Leaf(x1)), Ok(Tree::Leaf(x2))] = bounds else {
            return Err(error(span, "`linspace` needs two scalar bounds", "here"));
        };
        let p = &mut self.dae.pool;
        let width = p.sub(x2, x1);
        let last = n as usize - 1;
        Ok(vector_of((0..=last).map(|i| {
            let fraction = p.constant(i as f64 / last as f64);
            let offset = p.mul(width, fraction);
            p.add(x1, offset)
        })))
    }

    /// `{body for i in r, j in s, …}`: the last iterator is the outermost dimension, so that
    /// `{e for i in r, j in s}` is `{{e for i in r} for j in s}` (Modelica 10.4.1.2). The
    /// ranges are known at translation time; every element must have the same size.
    pub(crate) fn comprehension(
        &mut self,
        body: &'a Expr,
        indices: &'a [ForIndex],
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<Val, Diagnostic> {
        let mut ranges = Vec::with_capacity(indices.len());
        let mut count = 1.0f64;
        for index in indices {
            let Some(range) = &index.range else {
                return Err(error(
                    index.name.span,
                    "an iterator of an array constructor or reduction needs its range (`in …`)",
                    "no range",
                ));
            };
            let range = self.range_values(range, ctx)?;
            count *= range.0.len() as f64;
            ranges.push(range);
        }
        if count > self.max_size as f64 {
            return Err(too_large(count, self.max_size, span));
        }
        let names: Vec<String> = indices
            .iter()
            .map(|i| super::instance::strip_quotes(&i.name.name).into_owned())
            .collect();
        let mut loops = ctx.loops.to_vec();
        let value = self.comprehension_level(body, (&names, &ranges), &mut loops, ctx)?;
        let shape = |v: &Val| v.shape();
        let mut elements = Vec::new();
        collect_at_depth(&value, ranges.len(), &mut elements);
        if let Some(first) = elements.first()
            && elements.iter().any(|e| shape(e) != shape(first))
        {
            return Err(error(
                body.span,
                "the elements of an array constructor have different sizes",
                "here",
            ));
        }
        Ok(value)
    }

    /// The array over the iterators `names[..k]`, the later ones bound in `loops`.
    fn comprehension_level(
        &mut self,
        body: &'a Expr,
        (names, ranges): (&[String], &[(Vec<f64>, bool)]),
        loops: &mut Vec<LoopIndex>,
        ctx: &Ctx<'_>,
    ) -> Result<Val, Diagnostic> {
        let Some(((outer, boolean), inner)) = ranges.split_last() else {
            let inner_ctx = Ctx {
                loops: loops.as_slice(),
                ..*ctx
            };
            return self.flatten_expr(body, &inner_ctx);
        };
        let name = &names[inner.len()];
        let mut items = Vec::with_capacity(outer.len());
        for &value in outer {
            loops.push(LoopIndex {
                name: name.clone(),
                value,
                boolean: *boolean,
            });
            let item = self.comprehension_level(body, (names, inner), loops, ctx);
            loops.pop();
            items.push(item?);
        }
        Ok(Tree::Node(items))
    }

    /// `a^k` for a square matrix `a` and a constant integer `k ≥ 0`: `a·a·…·a`, the identity
    /// for `k = 0` (Modelica 10.6.9).
    pub(crate) fn matrix_power(&mut self, a: Val, k: &Val, span: Span) -> Result<Val, Diagnostic> {
        let k = match k {
            Tree::Leaf(k) => self.dae.pool.as_const(*k),
            Tree::Node(_) => None,
        };
        let Some(k) = k.filter(|k| k.fract() == 0.0 && *k >= 0.0) else {
            return Err(error(
                span,
                "the power of a matrix needs a constant integer exponent of at least 0",
                "here",
            ));
        };
        let square = rows(&a).filter(|r| r.iter().all(|row| row.len() == r.len()));
        let Some(square) = square else {
            return Err(error(
                span,
                "only a square matrix has a power",
                "not square",
            ));
        };
        if k == 0.0 {
            let n = square.len();
            let (zero, one) = (self.dae.pool.zero(), self.dae.pool.one());
            return Ok(matrix_of((0..n).map(|i| {
                (0..n).map(|j| if i == j { one } else { zero }).collect()
            })));
        }
        let mut power = a.clone();
        for _ in 1..k as u64 {
            power = self.multiply(power, a.clone(), span)?;
        }
        Ok(power)
    }
}

/// The subtrees `depth` levels down.
fn collect_at_depth<'v>(v: &'v Val, depth: usize, out: &mut Vec<&'v Val>) {
    match (depth, v) {
        (0, _) => out.push(v),
        (_, Tree::Node(kids)) => kids
            .iter()
            .for_each(|k| collect_at_depth(k, depth - 1, out)),
        (_, Tree::Leaf(_)) => out.push(v),
    }
}
