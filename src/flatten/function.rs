//! Calls of Modelica functions (Modelica 12) that are not builtins, inlined at translation
//! time. The function's inputs are bound to the call's arguments (positional, named, or the
//! declared defaults), and its algorithm is executed symbolically over them: every value is
//! an expression of the arguments, so a call with parameter arguments folds to a constant,
//! and a call with varying arguments becomes an expression the tape compiles and the symbolic
//! Jacobian differentiates exactly.
//!
//! Control flow that depends on values not known at translation time is followed on every
//! path: the execution is a list of *paths*, each with its condition (over the arguments) and
//! its locals. A varying `if` runs both branches; when each leaves one path and no Integer or
//! Boolean that is known on both differs, the two merge into `if`-expressions, otherwise both
//! go on. A varying `while` condition forks at each turn. At the end each output is the value
//! of the path whose condition holds. Relations inside a function make no events (Modelica
//! 8.5), so the conditions are written under `noEvent`.

pub(crate) mod kept;
mod operators;
pub(crate) mod records;
mod string_functions;
mod writes;

use std::rc::Rc;

use indexmap::IndexMap;

pub(crate) use operators::relation_name;
pub(crate) use records::{Output, RecordValue};
pub(crate) use string_functions::StringResult;

use super::Flattener;
use super::classes::{ClassId, ROOT, TypeRef};
use super::expr::{Ctx, Mode, Pick, Val, select};
use super::tree::Tree;
use crate::dae::hybrid::Text;
use crate::dae::{ScalarType, VarKind};
use crate::diagnostics::Diagnostic;
use crate::expr::function::Native;
use crate::expr::{ExprId, Func, Node};
use crate::source::Span;
use crate::syntax::ast::{
    self, Arg, Causality, ClassBody, ClassKind, ComponentRef, ElementKind, EquationKind, Expr,
    ExprKind, Statement, StatementKind, Subscript, Visibility,
};

/// Paths a call may follow at once before it is refused.
const MAX_PATHS: usize = 256;
/// Calls nested inside one another (recursion included) before a call is refused.
const MAX_DEPTH: usize = 64;
/// Turns of one `while` loop before it is taken for one that never ends.
const MAX_TURNS: usize = 1_000_000;

/// A function's variables by name: inputs, outputs and protected ones, as far as known.
pub(crate) type Locals = IndexMap<String, Local>;

#[derive(Clone, Debug)]
pub(crate) struct Local {
    /// `None` before the first assignment of an array of unknown size.
    pub value: Option<Val>,
    ty: ScalarType,
    input: bool,
    /// A record variable's class: its fields are the locals named `name.field` after it.
    record: Option<ClassId>,
    /// A String variable's value, as far as assigned.
    text: Option<Text>,
}

impl Local {
    pub(crate) fn is_string(&self) -> bool {
        self.ty == ScalarType::String
    }

    /// A String variable's value when known at translation time.
    pub(crate) fn text_known(&self) -> Option<String> {
        self.text.as_ref()?.known()
    }
}

/// One declared variable of a function.
struct Param<'a> {
    name: String,
    causality: Causality,
    ty: ScalarType,
    dims: Vec<&'a Subscript>,
    default: Option<&'a Expr>,
    /// The class the declaration is written in: where its names are looked up.
    scope: ClassId,
    span: Span,
    /// The class of a record variable.
    record: Option<ClassId>,
    /// A record variable's field modifications (`output Complex c(re = x, im = y)`).
    fields: Option<&'a ast::Modification>,
}

/// A function class, its variables collected through its `extends`.
pub(crate) struct FunctionDef<'a> {
    path: String,
    params: Vec<Param<'a>>,
    body: Option<&'a [Statement]>,
    pub(super) external: Option<&'a ast::External>,
}

impl<'a> FunctionDef<'a> {
    fn inputs(&self) -> impl Iterator<Item = &Param<'a>> {
        self.params
            .iter()
            .filter(|p| p.causality == Causality::Input)
    }

    fn outputs(&self) -> impl Iterator<Item = &Param<'a>> {
        self.params
            .iter()
            .filter(|p| p.causality == Causality::Output)
    }

    /// Whether its (first) output is a String.
    pub(crate) fn gives_string(&self) -> bool {
        self.outputs()
            .next()
            .is_some_and(|p| p.ty == ScalarType::String)
    }
}

/// How a statement list ended on one path.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Flow {
    Next,
    Break,
    Return,
}

/// One way through the function: the condition under which it is taken and its locals.
#[derive(Clone)]
struct Path {
    condition: ExprId,
    /// The varying conditions the path has decided so far, with their values: a condition
    /// met again is known on the path (a loop's test after the `if` that entered it).
    facts: Vec<(ExprId, bool)>,
    locals: Locals,
    flow: Flow,
}

/// An argument's value for an input.
pub(crate) enum Given {
    Value(Val),
    Record(RecordValue),
    Text(Text),
}

/// Input `p` of `def` is given no argument and has no default.
fn not_given(def: &FunctionDef<'_>, p: &Param<'_>, span: Span) -> Diagnostic {
    err(
        span,
        format!("input `{}` of `{}` is not given", p.name, def.path),
        "missing argument",
    )
    .with_secondary(p.span, "declared without a default")
}

fn err(span: Span, msg: impl Into<String>, label: &str) -> Diagnostic {
    Diagnostic::error(msg).at(span, label)
}

impl<'a> Flattener<'a> {
    /// The function class `func` names, seen from `ctx`, if it names one.
    pub(crate) fn function_class(&self, func: &ComponentRef, ctx: &Ctx<'_>) -> Option<ClassId> {
        self.function_class_named(&func.as_name()?, ctx)
    }

    /// The function class `name` names, seen from `ctx`, if it names one.
    pub(crate) fn function_class_named(&self, name: &ast::Name, ctx: &Ctx<'_>) -> Option<ClassId> {
        let TypeRef::Class(class) = self.tree.resolve(name, ctx.class)? else {
            return None;
        };
        let class = self.long_class(class);
        let def = self.tree.node(class).def?;
        matches!(def.kind, ClassKind::Function | ClassKind::OperatorFunction).then_some(class)
    }

    /// Every output of the call `func(args)`, in declaration order; a record output is an
    /// error (where a record is expected, [`Self::record_value`] takes it).
    pub(crate) fn call_function(
        &mut self,
        class: ClassId,
        args: &'a [Arg],
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<Vec<Val>, Diagnostic> {
        let outputs = self.call_function_outputs(class, args, span, ctx)?;
        (outputs.into_iter())
            .map(|output| match output {
                Output::Value(v) => Ok(v),
                Output::Record(_) => Err(err(
                    span,
                    format!(
                        "`{}` returns a record, which mocca takes only where a record is expected (a record's value or a record variable of a function)",
                        self.tree.node(class).path
                    ),
                    "a record",
                )),
            })
            .collect()
    }

    /// Every output of the call `func(args)`, in declaration order, records as records.
    pub(crate) fn call_function_outputs(
        &mut self,
        class: ClassId,
        args: &'a [Arg],
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<Vec<Output>, Diagnostic> {
        let def = self.function_def(class, span)?;
        if let Some(outputs) = self.write_call(&def, args, span, ctx)? {
            return Ok(outputs);
        }
        match self.string_function(&def, args, span, ctx)? {
            Some(StringResult::Number(x)) => {
                let value = Tree::Leaf(self.dae.pool.constant(x));
                return Ok(vec![Output::Value(value)]);
            }
            Some(StringResult::Text(_)) => {
                return Err(err(
                    span,
                    format!(
                        "`{}` gives a String, which mocca takes only where a string is expected (a comparison, a message)",
                        def.path
                    ),
                    "a String",
                ));
            }
            None => {}
        }
        if let Some(external) = def.external {
            if let Some(function) = external.function.as_deref()
                && super::tables::is_implemented(function)
            {
                let values = self.foreign_call(function, args, span, ctx)?;
                return Ok(values.into_iter().map(Output::Value).collect());
            }
            // A foreign function implemented in Rust is a function kept as code whose body
            // is the implementation; constant calls fold.
            if external
                .function
                .as_deref()
                .and_then(Native::by_name)
                .is_some()
            {
                let given = self.given_arguments(&def, args, ctx)?;
                return self.kept_call(&def, given, span, ctx.mode);
            }
            let (language, at) = (external.language.as_deref().unwrap_or("C"), &external.span);
            return Err(err(
                span,
                format!(
                    "`{}` is an external function (language \"{language}\"): mocca does not compile foreign code",
                    def.path
                ),
                "an external function",
            )
            .with_secondary(*at, "declared external here"));
        }
        let given = self.given_arguments(&def, args, ctx)?;
        self.call_with(&def, given, span, ctx)
    }

    /// The outputs of a call of `class` whose inputs are given as values (an overloaded
    /// operator's operands).
    pub(crate) fn call_with_values(
        &mut self,
        class: ClassId,
        given: Vec<Option<Given>>,
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<Vec<Output>, Diagnostic> {
        let def = self.function_def(class, span)?;
        if def.external.is_some() {
            return Err(err(
                span,
                format!(
                    "`{}` is an external function: mocca does not compile foreign code",
                    def.path
                ),
                "an external function",
            ));
        }
        self.call_with(&def, given, span, ctx)
    }

    /// [`Self::inline_call`] within the nesting limit.
    fn call_with(
        &mut self,
        def: &FunctionDef<'a>,
        given: Vec<Option<Given>>,
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<Vec<Output>, Diagnostic> {
        if self.call_depth >= MAX_DEPTH {
            return Err(err(
                span,
                format!(
                    "calls of `{}` nest more than {MAX_DEPTH} deep: a recursion that values known at translation time do not end",
                    def.path
                ),
                "too deep",
            ));
        }
        // A recursion on values not known at translation time is kept as code at once: inlined,
        // each level would fork again.
        // A function already kept as code is kept again: inlining it would fail as it failed
        // before, after following its paths once more.
        let recursive = self.inlining.contains(&def.path);
        let kept_before = self.kept_before(&def.path);
        if (recursive || kept_before) && !given_are_known(&self.dae.pool, &given) {
            return self.kept_call(def, given, span, ctx.mode);
        }
        // The executor takes the arguments: kept as code after all, the call is made again.
        let retry = (!recursive).then(|| clone_given(&given));
        self.call_depth += 1;
        self.inlining.push(def.path.clone());
        self.varying_flow = false;
        let written = self.writes.as_ref().map(Vec::len);
        let result = self.inline_call(def, given, span, ctx);
        // Writes of a call that failed are not made (kept as code, it is made again).
        if let (Err(_), Some(n), Some(writes)) = (&result, written, self.writes.as_mut()) {
            writes.truncate(n);
        }
        self.inlining.pop();
        self.call_depth -= 1;
        match (result, retry) {
            (Err(_), Some(given)) if std::mem::take(&mut self.varying_flow) => {
                self.kept_call(def, given, span, ctx.mode)
            }
            (result, _) => result,
        }
    }

    fn inline_call(
        &mut self,
        def: &FunctionDef<'a>,
        given: Vec<Option<Given>>,
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<Vec<Output>, Diagnostic> {
        let mut locals = self.bind_inputs(def, given, span, ctx)?;
        for p in def
            .params
            .iter()
            .filter(|p| p.causality != Causality::Input)
        {
            if let Some(class) = p.record {
                let value = match p.default {
                    Some(e) => {
                        let at = local_ctx(p.scope, &locals, ctx.mode);
                        Some(self.record_value(e, Some(class), &at)?)
                    }
                    None => None,
                };
                let how = (false, ctx.mode, p.span);
                self.insert_record(&mut locals, (&p.name, class), value, how)?;
                if let Some(m) = p.fields {
                    self.modify_fields(&mut locals, p, m, ctx.mode)?;
                }
                continue;
            }
            let value = match p.default {
                Some(e) => Some(self.local_expr(e, p.scope, &locals, ctx.mode)?),
                None => self.declared_shape(p, &locals)?.map(|shape| {
                    let zero = self.dae.pool.zero();
                    filled(&shape, zero)
                }),
            };
            locals.insert(
                p.name.clone(),
                Local {
                    value,
                    ty: p.ty,
                    input: false,
                    record: None,
                    text: None,
                },
            );
        }
        let start = Path {
            condition: self.dae.pool.one(),
            facts: Vec::new(),
            locals,
            flow: Flow::Next,
        };
        let paths = match def.body {
            Some(body) => {
                let scope = self.function_scope(def);
                let run = Run {
                    class: scope,
                    mode: ctx.mode,
                    span,
                    guard: self.write_guard,
                };
                self.block(body, vec![start], &run)?
            }
            None => vec![start],
        };
        let mut outputs = Vec::new();
        for p in def.outputs() {
            let Some(class) = p.record else {
                outputs.push(Output::Value(
                    self.merged_output(&paths, &p.name, p.span, span)?,
                ));
                continue;
            };
            let fields = self.record_fields(class, p.span)?;
            let mut value = Vec::with_capacity(fields.len());
            for f in fields.iter() {
                let name = format!("{}.{}", p.name, f.path);
                value.push((
                    f.path.clone(),
                    self.merged_output(&paths, &name, p.span, span)?,
                ));
            }
            outputs.push(Output::Record(value));
        }
        Ok(outputs)
    }

    /// The class whose names the function's body sees.
    fn function_scope(&self, def: &FunctionDef<'a>) -> ClassId {
        self.tree.find_path(&def.path).unwrap_or(ROOT)
    }

    /// The arguments' values, by input in declaration order (positional first, then named;
    /// none where an input is not given).
    fn given_arguments(
        &mut self,
        def: &FunctionDef<'a>,
        args: &'a [Arg],
        ctx: &Ctx<'_>,
    ) -> Result<Vec<Option<Given>>, Diagnostic> {
        let inputs: Vec<&Param<'a>> = def.inputs().collect();
        let mut given: Vec<Option<Given>> = (0..inputs.len()).map(|_| None).collect();
        let mut position = 0;
        for arg in args {
            let k = match &arg.name {
                None => {
                    position += 1;
                    if position > inputs.len() {
                        return Err(err(
                            arg.value.span,
                            format!(
                                "`{}` takes {} inputs, more are given",
                                def.path,
                                inputs.len()
                            ),
                            "an extra argument",
                        ));
                    }
                    position - 1
                }
                Some(name) => inputs
                    .iter()
                    .position(|p| p.name == name.name)
                    .ok_or_else(|| {
                        err(
                            name.span,
                            format!("`{}` has no input `{}`", def.path, name.name),
                            "no such input",
                        )
                    })?,
            };
            if given[k].is_some() {
                return Err(err(
                    arg.value.span,
                    format!("input `{}` is given twice", inputs[k].name),
                    "given again",
                ));
            }
            given[k] = Some(match inputs[k].record {
                Some(class) => Given::Record(self.record_value(&arg.value, Some(class), ctx)?),
                None if inputs[k].ty == ScalarType::String => {
                    Given::Text(self.text_value(&arg.value, ctx)?)
                }
                None => Given::Value(self.flatten_expr(&arg.value, ctx)?),
            });
        }
        Ok(given)
    }

    /// The inputs' locals, from the values `given` (by input, in declaration order) or
    /// the declared defaults (which may read the inputs before them).
    fn bind_inputs(
        &mut self,
        def: &FunctionDef<'a>,
        given: Vec<Option<Given>>,
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<Locals, Diagnostic> {
        let inputs: Vec<&Param<'a>> = def.inputs().collect();
        let mut locals = Locals::new();
        for (p, value) in inputs.iter().zip(given) {
            if let Some(class) = p.record {
                let value = match (value, p.default) {
                    (Some(Given::Record(v)), _) => v,
                    (_, Some(e)) => {
                        let at = local_ctx(p.scope, &locals, ctx.mode);
                        self.record_value(e, Some(class), &at)?
                    }
                    _ => return Err(not_given(def, p, span)),
                };
                let how = (true, ctx.mode, p.span);
                self.insert_record(&mut locals, (&p.name, class), Some(value), how)?;
                continue;
            }
            if p.ty == ScalarType::String {
                let text = match (value, p.default) {
                    (Some(Given::Text(t)), _) => t,
                    (_, Some(e)) => self.text_value(e, &local_ctx(p.scope, &locals, ctx.mode))?,
                    _ => return Err(not_given(def, p, span)),
                };
                locals.insert(
                    p.name.clone(),
                    Local {
                        value: None,
                        ty: p.ty,
                        input: true,
                        record: None,
                        text: Some(text),
                    },
                );
                continue;
            }
            let value = value.map(|v| match v {
                Given::Value(v) => v,
                Given::Record(_) | Given::Text(_) => {
                    unreachable!("a record or a text is given only to a record or String input")
                }
            });
            let value = match (value, p.default) {
                (Some(v), _) if p.ty == ScalarType::Real => v,
                // An Integer or Boolean of parameters is taken at its value, as sizes,
                // subscripts and conditions need (`symmetricOrientation(m)` recurses on it).
                (Some(v), _) => v.map(&mut |&e| {
                    Ok::<_, Diagnostic>(self.known_now(e, span, &p.name).unwrap_or(e))
                })?,
                (None, Some(e)) => self.local_expr(e, p.scope, &locals, ctx.mode)?,
                (None, None) => return Err(not_given(def, p, span)),
            };
            locals.insert(
                p.name.clone(),
                Local {
                    value: Some(value),
                    ty: p.ty,
                    input: true,
                    record: None,
                    text: None,
                },
            );
        }
        Ok(locals)
    }

    /// The size of a declared variable, when all its dimensions are known (`:` is not).
    fn declared_shape(
        &mut self,
        p: &Param<'a>,
        locals: &Locals,
    ) -> Result<Option<Vec<usize>>, Diagnostic> {
        self.shape_of(&p.dims, p.scope, locals)
    }

    /// The size dimensions `dims` declare, seen from `scope` and `locals`, when all are
    /// known (`:` is not).
    fn shape_of(
        &mut self,
        dims: &[&'a Subscript],
        scope: ClassId,
        locals: &Locals,
    ) -> Result<Option<Vec<usize>>, Diagnostic> {
        let mut shape = Vec::with_capacity(dims.len());
        for d in dims {
            let Subscript::Expr(e) = d else {
                return Ok(None);
            };
            let n = self.eval_scalar(e, &local_ctx(scope, locals, Mode::Constant))?;
            if n < 0.0 || n.fract() != 0.0 || n > self.max_size as f64 {
                return Err(err(
                    e.span,
                    format!("an array size must be a non-negative integer, found {n}"),
                    "bad size",
                ));
            }
            shape.push(n as usize);
        }
        Ok(Some(shape))
    }

    fn local_expr(
        &mut self,
        e: &'a Expr,
        scope: ClassId,
        locals: &Locals,
        mode: Mode,
    ) -> Result<Val, Diagnostic> {
        self.flatten_expr(e, &local_ctx(scope, locals, mode))
    }

    /// An output's value over every path: the value of the path whose condition holds.
    fn merged_output(
        &mut self,
        paths: &[Path],
        name: &str,
        declared: Span,
        call: Span,
    ) -> Result<Val, Diagnostic> {
        let unassigned = || {
            err(
                call,
                format!("output `{name}` is not assigned"),
                "this call leaves it without a value",
            )
            .with_secondary(declared, "declared here")
        };
        let (last, rest) = paths.split_last().expect("a call has a path");
        let mut value = last.locals[name].value.clone().ok_or_else(unassigned)?;
        for p in rest.iter().rev() {
            let mine = p.locals[name].value.clone().ok_or_else(unassigned)?;
            value = self.choose(p.condition, &mine, &value).ok_or_else(|| {
                err(
                    call,
                    format!("output `{name}` has a different size on different paths"),
                    "sizes differ",
                )
            })?;
        }
        Ok(value)
    }

    /// `if c then a else b` elementwise; `None` when the sizes differ.
    fn choose(&mut self, c: ExprId, a: &Val, b: &Val) -> Option<Val> {
        match (a, b) {
            (Tree::Leaf(x), Tree::Leaf(y)) => {
                Some(Tree::Leaf(self.dae.pool.if_then_else(c, *x, *y)))
            }
            (Tree::Node(xs), Tree::Node(ys)) if xs.len() == ys.len() => xs
                .iter()
                .zip(ys)
                .map(|(x, y)| self.choose(c, x, y))
                .collect::<Option<Vec<_>>>()
                .map(Tree::Node),
            _ => None,
        }
    }

    /// The function's variables through its `extends` (bases first), its algorithm and its
    /// `external` clause; memoised per class.
    pub(super) fn function_def(
        &mut self,
        class: ClassId,
        span: Span,
    ) -> Result<Rc<FunctionDef<'a>>, Diagnostic> {
        if let Some(def) = self.functions.get(&class) {
            return Ok(def.clone());
        }
        let mut def = FunctionDef {
            path: self.tree.node(class).path.clone(),
            params: Vec::new(),
            body: None,
            external: None,
        };
        self.collect_function(class, &mut def, span, 0)?;
        let def = Rc::new(def);
        self.functions.insert(class, def.clone());
        Ok(def)
    }

    fn collect_function(
        &mut self,
        class: ClassId,
        def: &mut FunctionDef<'a>,
        span: Span,
        depth: usize,
    ) -> Result<(), Diagnostic> {
        if depth > 32 {
            return Err(err(
                span,
                format!("`{}` extends itself", def.path),
                "a cycle",
            ));
        }
        self.used_classes.insert(class);
        let Some(cdef) = self.tree.node(class).def else {
            return Ok(());
        };
        let ClassBody::Long(comp) = &cdef.body else {
            return Err(err(
                cdef.span,
                format!("`{}` is not a function with a body", def.path),
                "a short definition",
            ));
        };
        let parent = self.tree.node(class).parent.unwrap_or(ROOT);
        for element in &comp.elements {
            match &element.kind {
                ElementKind::Extends(ext) => {
                    match self.tree.resolve_excluding(&ext.base, class, parent) {
                        Some(TypeRef::Class(base)) => {
                            let base = self.long_class(base);
                            self.collect_function(base, def, span, depth + 1)?;
                        }
                        _ => {
                            return Err(err(
                                ext.base.span,
                                format!("class `{}` not found", ext.base.dotted()),
                                "unknown class",
                            ));
                        }
                    }
                }
                ElementKind::Component(clause) => {
                    let (ty, type_dims, record) =
                        self.function_variable_type(&clause.type_name, class)?;
                    for decl in &clause.components {
                        if record.is_some() && !(decl.dims.is_empty() && clause.dims.is_empty()) {
                            return Err(records::arrays_of_records(decl.span));
                        }
                        let causality = match (clause.prefixes.causality, element.visibility) {
                            (Causality::None, _) | (_, Visibility::Protected) => Causality::None,
                            (c, _) => c,
                        };
                        let mut dims: Vec<&'a Subscript> = decl.dims.iter().collect();
                        dims.extend(clause.dims.iter());
                        dims.extend(type_dims.iter().copied());
                        let name = decl.name.name.clone();
                        def.params.retain(|p| p.name != name);
                        def.params.push(Param {
                            name,
                            causality,
                            ty,
                            dims,
                            default: decl.modification.as_ref().and_then(|m| m.binding.as_ref()),
                            scope: class,
                            span: decl.span,
                            record,
                            fields: decl.modification.as_deref().filter(|_| record.is_some()),
                        });
                    }
                }
                _ => {}
            }
        }
        for eq in &comp.equations {
            match &eq.kind {
                EquationKind::Algorithm(body) => def.body = Some(body),
                _ => {
                    return Err(err(
                        eq.span,
                        "a function has no equations, only an algorithm",
                        "not allowed in a function",
                    ));
                }
            }
        }
        if let Some(external) = &comp.external {
            let builtin = external.language.as_deref() == Some("builtin");
            if !builtin || def.body.is_none() {
                def.external = Some(external);
            }
        }
        Ok(())
    }

    /// The scalar type of a function variable's type name, with the dimensions its type
    /// definition adds (`type Vector3 = Real[3]`).
    fn function_variable_type(
        &self,
        name: &'a ast::Name,
        scope: ClassId,
    ) -> Result<(ScalarType, Vec<&'a Subscript>, Option<ClassId>), Diagnostic> {
        let mut dims = Vec::new();
        let mut target = self.tree.resolve(name, scope);
        for _ in 0..32 {
            match target {
                Some(TypeRef::Builtin(t)) => return Ok((t, dims, None)),
                Some(TypeRef::Clock) => break,
                Some(TypeRef::Class(c)) => {
                    let Some(def) = self.tree.node(c).def else {
                        break;
                    };
                    let parent = self.tree.node(c).parent.unwrap_or(ROOT);
                    match &def.body {
                        ClassBody::Short(short) => {
                            dims.extend(short.dims.iter());
                            target = self.tree.resolve(&short.base, parent);
                        }
                        ClassBody::Enumeration { .. } => {
                            return Ok((ScalarType::Integer, dims, None));
                        }
                        ClassBody::Long(comp) if def.kind == ClassKind::Type => {
                            let base = comp.elements.iter().find_map(|e| match &e.kind {
                                ElementKind::Extends(ext) => Some(&ext.base),
                                _ => None,
                            });
                            match base {
                                Some(base) => target = self.tree.resolve_excluding(base, c, parent),
                                None => break,
                            }
                        }
                        // An external object is opaque: only the foreign functions
                        // implemented in `tables.rs` read one.
                        ClassBody::Long(_) if self.is_external_object(c) => {
                            return Ok((ScalarType::String, dims, None));
                        }
                        ClassBody::Long(_) if self.is_record(c) => {
                            return Ok((ScalarType::Real, dims, Some(c)));
                        }
                        ClassBody::Long(_) => {
                            return Err(err(
                                name.span,
                                format!(
                                    "a function variable of {} type `{}` is not supported (only Real, Integer, Boolean, enumerations and records)",
                                    def.kind.keyword(),
                                    name.dotted()
                                ),
                                "not supported yet",
                            ));
                        }
                    }
                }
                None => break,
            }
        }
        Err(err(
            name.span,
            format!("type `{}` not found", name.dotted()),
            "unknown type",
        ))
    }
}

/// What every statement of one call shares.
struct Run {
    class: ClassId,
    mode: Mode,
    span: Span,
    /// Under which the call is made (`None`: always): its writes are made under it and
    /// their path's condition.
    guard: Option<ExprId>,
}

fn local_ctx<'l>(class: ClassId, locals: &'l Locals, mode: Mode) -> Ctx<'l> {
    Ctx {
        inst: None,
        class,
        loops: &[],
        mode,
        end: None,
        locals: Some(locals),
    }
}

/// The String variable `target` names, unsubscripted.
fn text_target(locals: &Locals, target: &ComponentRef) -> Option<String> {
    let [part] = target.parts.as_slice() else {
        return None;
    };
    let local = locals.get(&part.ident.name)?;
    (local.ty == ScalarType::String && part.subscripts.is_empty()).then(|| part.ident.name.clone())
}

/// An array of `shape` filled with `value`.
fn filled(shape: &[usize], value: ExprId) -> Val {
    match shape.split_first() {
        None => Tree::Leaf(value),
        Some((&n, rest)) => Tree::Node((0..n).map(|_| filled(rest, value)).collect()),
    }
}

impl<'a> Flattener<'a> {
    fn block(
        &mut self,
        body: &'a [Statement],
        mut paths: Vec<Path>,
        run: &Run,
    ) -> Result<Vec<Path>, Diagnostic> {
        for s in body {
            if paths.iter().all(|p| p.flow != Flow::Next) {
                break;
            }
            let mut next = Vec::with_capacity(paths.len());
            for p in paths {
                if p.flow == Flow::Next {
                    next.extend(self.statement_on(s, p, run)?);
                } else {
                    next.push(p);
                }
            }
            if next.len() > MAX_PATHS {
                self.varying_flow = true;
                return Err(err(
                    s.span,
                    format!(
                        "this function's control flow depends on values not known at translation time in more than {MAX_PATHS} ways"
                    ),
                    "too many paths",
                ));
            }
            paths = next;
        }
        Ok(paths)
    }

    fn statement_on(
        &mut self,
        s: &'a Statement,
        p: Path,
        run: &Run,
    ) -> Result<Vec<Path>, Diagnostic> {
        if self.writes.is_some() {
            let guard = run
                .guard
                .map_or(p.condition, |g| self.dae.pool.and(g, p.condition));
            self.write_guard = Some(guard);
        }
        let result = self.run_statement(s, p, run);
        self.write_guard = run.guard;
        result
    }

    fn run_statement(
        &mut self,
        s: &'a Statement,
        mut p: Path,
        run: &Run,
    ) -> Result<Vec<Path>, Diagnostic> {
        match &s.kind {
            StatementKind::Assign { target, value } if text_target(&p.locals, target).is_some() => {
                let name = text_target(&p.locals, target).expect("a String variable");
                let text = self.text_value(value, &local_ctx(run.class, &p.locals, run.mode))?;
                p.locals[&name].text = Some(text);
            }
            StatementKind::Assign { target, value } => {
                if let Some((name, class)) = records::record_target(&p.locals, target) {
                    let ctx = local_ctx(run.class, &p.locals, run.mode);
                    let value = self.record_value(value, class, &ctx)?;
                    records::assign_record(&mut p.locals, &name, value, target.span)?;
                } else {
                    let value = self.local_expr(value, run.class, &p.locals, run.mode)?;
                    self.assign_local(&mut p.locals, target, value, run)?;
                }
            }
            StatementKind::AssignOutputs { targets, call } => {
                let ctx = local_ctx(run.class, &p.locals, run.mode);
                let outputs = self.call_outputs_with_records(call, &ctx)?;
                check_targets(targets.len(), outputs.len(), s.span)?;
                for (target, output) in targets.iter().zip(outputs) {
                    match (target.as_ref().map(|t| &t.kind), output) {
                        (None, _) => {}
                        (Some(ExprKind::Ref(cref)), Output::Value(value)) => {
                            self.assign_local(&mut p.locals, cref, value, run)?
                        }
                        (Some(ExprKind::Ref(cref)), Output::Record(value)) => {
                            let Some((name, _)) = records::record_target(&p.locals, cref) else {
                                return Err(err(
                                    cref.span,
                                    "this output is a record, and this is not a record variable",
                                    "not a record",
                                ));
                            };
                            records::assign_record(&mut p.locals, &name, value, cref.span)?;
                        }
                        (Some(_), _) => {
                            return Err(err(
                                target.as_ref().expect("a target").span,
                                "only a variable can be assigned",
                                "not a variable",
                            ));
                        }
                    }
                }
            }
            StatementKind::Break => p.flow = Flow::Break,
            StatementKind::Return => p.flow = Flow::Return,
            StatementKind::If {
                branches,
                else_branch,
            } => {
                return self.if_on(branches, else_branch, p, run);
            }
            StatementKind::For { indices, body } => {
                return self.for_on(s.span, indices, body, p, run);
            }
            StatementKind::While { condition, body } => {
                return self.while_on(condition, body, p, run);
            }
            StatementKind::Call { name, args } => {
                self.call_statement(name, args, s.span, &p, run)?
            }
            StatementKind::When { .. } => return Err(when_in_function(s.span)),
            StatementKind::Unsupported => {}
        }
        Ok(vec![p])
    }

    /// `assert(c, message)` is checked where `c` is known at translation time. Other call
    /// statements compute nothing a function returns, but may write: in a `when` statement
    /// the call runs for its writes; elsewhere a write is an error.
    fn call_statement(
        &mut self,
        name: &'a ast::Name,
        args: &'a [Arg],
        span: Span,
        p: &Path,
        run: &Run,
    ) -> Result<(), Diagnostic> {
        if name.dotted() != "assert" {
            let ctx = local_ctx(run.class, &p.locals, run.mode);
            let Some(class) = self.function_class_named(name, &ctx) else {
                return Ok(());
            };
            if self.writes.is_some() {
                self.call_function_outputs(class, args, span, &ctx)?;
            } else {
                let def = self.function_def(class, span)?;
                self.write_call(&def, args, span, &ctx)?;
            }
            return Ok(());
        }
        let Some(first) = args.first() else {
            return Err(err(span, "`assert` needs a condition", "missing condition"));
        };
        let value = self.local_expr(&first.value, run.class, &p.locals, run.mode)?;
        if let Tree::Leaf(c) = value
            && self.dae.pool.as_const(c) == Some(0.0)
        {
            let message = assert_message(args);
            return Err(err(
                span,
                format!("assertion failed in a function: {message}"),
                "false for this call",
            )
            .with_secondary(run.span, "called here"));
        }
        Ok(())
    }

    /// A scalar Boolean condition under the path's locals.
    fn path_condition(
        &mut self,
        condition: &'a Expr,
        p: &Path,
        run: &Run,
    ) -> Result<ExprId, Diagnostic> {
        match self.local_expr(condition, run.class, &p.locals, run.mode)? {
            Tree::Leaf(c) => Ok(c),
            Tree::Node(_) => Err(err(
                condition.span,
                "a condition must be a scalar",
                "an array",
            )),
        }
    }

    /// The value of condition `c` on path `p`, when known: a constant, or decided by the
    /// path's facts (through `and`, `or` and `not`).
    fn decided(&self, p: &Path, c: ExprId) -> Option<bool> {
        if let Some(v) = self.dae.pool.as_const(c) {
            return Some(v != 0.0);
        }
        if let Some(&(_, v)) = p.facts.iter().find(|f| f.0 == c) {
            return Some(v);
        }
        match self.dae.pool.node(c) {
            Node::Not(a) => self.decided(p, a).map(|v| !v),
            Node::And(a, b) => match (self.decided(p, a), self.decided(p, b)) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            },
            Node::Or(a, b) => match (self.decided(p, a), self.decided(p, b)) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            },
            _ => None,
        }
    }

    /// `p` narrowed to where `c` (or, with `holds` false, `not c`) holds.
    fn narrowed(&mut self, p: &Path, c: ExprId, holds: bool) -> Path {
        let pool = &mut self.dae.pool;
        let guarded = pool.call(Func::NoEvent, c);
        let guarded = if holds { guarded } else { pool.not(guarded) };
        let mut facts = p.facts.clone();
        facts.push((c, holds));
        Path {
            condition: pool.and(p.condition, guarded),
            facts,
            locals: p.locals.clone(),
            flow: p.flow,
        }
    }

    fn if_on(
        &mut self,
        branches: &'a [(Expr, Vec<Statement>)],
        else_branch: &'a [Statement],
        p: Path,
        run: &Run,
    ) -> Result<Vec<Path>, Diagnostic> {
        let Some(((condition, body), rest)) = branches.split_first() else {
            return self.block(else_branch, vec![p], run);
        };
        let c = self.path_condition(condition, &p, run)?;
        // A branch on parameters is taken as their values say, like a size that depends on
        // them: followed symbolically, a loop's `break` under it would fork at every turn.
        match self.decided(&p, c).or_else(|| self.parameter_value(c)) {
            Some(false) => self.if_on(rest, else_branch, p, run),
            Some(true) => self.block(body, vec![p], run),
            None => {
                let then = self.narrowed(&p, c, true);
                let otherwise = self.narrowed(&p, c, false);
                let taken = self.block(body, vec![then], run)?;
                let not_taken = self.if_on(rest, else_branch, otherwise, run)?;
                if let ([a], [b]) = (taken.as_slice(), not_taken.as_slice())
                    && let Some(merged) = self.merged(c, a, b, p.condition)
                {
                    return Ok(vec![merged]);
                }
                Ok(taken.into_iter().chain(not_taken).collect())
            }
        }
    }

    /// Two paths that ended alike as one, their locals chosen by `c`; `None` when an Integer
    /// or Boolean known on both differs (later statements may need it known: a subscript, a
    /// loop's range) or a size differs.
    fn merged(&mut self, c: ExprId, a: &Path, b: &Path, condition: ExprId) -> Option<Path> {
        if a.flow != b.flow {
            return None;
        }
        let c = self.dae.pool.call(Func::NoEvent, c);
        let mut locals = Locals::with_capacity(a.locals.len());
        for (name, la) in &a.locals {
            let lb = &b.locals[name];
            if la.text != lb.text {
                return None;
            }
            let value = match (&la.value, &lb.value) {
                (Some(x), Some(y)) if x == y => Some(x.clone()),
                (Some(x), Some(y)) => {
                    let known = |v: &Val, f: &Self| {
                        v.leaves().iter().all(|&e| f.dae.pool.as_const(e).is_some())
                    };
                    if la.ty != ScalarType::Real && known(x, self) && known(y, self) {
                        return None;
                    }
                    Some(self.choose(c, x, y)?)
                }
                (None, None) => None,
                _ => return None,
            };
            locals.insert(
                name.clone(),
                Local {
                    value,
                    ..la.clone()
                },
            );
        }
        let facts = a
            .facts
            .iter()
            .filter(|f| b.facts.contains(f))
            .copied()
            .collect();
        Some(Path {
            condition,
            facts,
            locals,
            flow: a.flow,
        })
    }

    fn for_on(
        &mut self,
        span: Span,
        indices: &'a [ast::ForIndex],
        body: &'a [Statement],
        p: Path,
        run: &Run,
    ) -> Result<Vec<Path>, Diagnostic> {
        let Some((first, rest)) = indices.split_first() else {
            return self.block(body, vec![p], run);
        };
        let Some(range) = &first.range else {
            return Err(err(
                span,
                "a `for` statement needs its range (`for i in 1:n`)",
                "no range",
            ));
        };
        let values = match self.local_expr(range, run.class, &p.locals, Mode::Constant)? {
            Tree::Node(items) => items,
            leaf => vec![leaf],
        };
        let name = first.name.name.clone();
        let shadowed = p.locals.get(&name).cloned();
        let (mut active, mut done) = (vec![p], Vec::new());
        for value in values {
            for q in &mut active {
                q.locals.insert(
                    name.clone(),
                    Local {
                        value: Some(value.clone()),
                        ty: ScalarType::Integer,
                        input: true,
                        record: None,
                        text: None,
                    },
                );
            }
            let mut turned = Vec::with_capacity(active.len());
            for q in std::mem::take(&mut active) {
                turned.extend(self.for_on(span, rest, body, q, run)?);
            }
            after_turn(turned, &mut active, &mut done);
            if active.is_empty() {
                break;
            }
        }
        let mut out: Vec<Path> = done.into_iter().chain(active).collect();
        for q in &mut out {
            match &shadowed {
                Some(local) => q.locals.insert(name.clone(), local.clone()),
                None => q.locals.shift_remove(&name),
            };
        }
        Ok(out)
    }

    fn while_on(
        &mut self,
        condition: &'a Expr,
        body: &'a [Statement],
        p: Path,
        run: &Run,
    ) -> Result<Vec<Path>, Diagnostic> {
        let (mut active, mut done) = (vec![p], Vec::new());
        for _ in 0..MAX_TURNS {
            let mut entering = Vec::with_capacity(active.len());
            for q in std::mem::take(&mut active) {
                let c = self.path_condition(condition, &q, run)?;
                // A loop over parameters turns as their values say (see `if_on`).
                let decided = self.decided(&q, c).or_else(|| self.parameter_value(c));
                match decided {
                    Some(false) => done.push(q),
                    Some(true) => entering.push(q),
                    None => {
                        done.push(self.narrowed(&q, c, false));
                        entering.push(self.narrowed(&q, c, true));
                    }
                }
            }
            if entering.is_empty() {
                return Ok(done);
            }
            let turned = self.block(body, entering, run)?;
            after_turn(turned, &mut active, &mut done);
            if active.len() + done.len() > MAX_PATHS {
                self.varying_flow = true;
                return Err(err(
                    condition.span,
                    format!(
                        "this loop depends on values not known at translation time in more than {MAX_PATHS} ways"
                    ),
                    "too many paths",
                ));
            }
            if active.is_empty() {
                return Ok(done);
            }
        }
        Err(err(
            condition.span,
            format!("this loop did not end within {MAX_TURNS} turns"),
            "endless loop",
        ))
    }

    /// `target := value` on a path's locals: a whole variable or the elements its
    /// subscripts select.
    fn assign_local(
        &mut self,
        locals: &mut Locals,
        target: &'a ComponentRef,
        value: Val,
        run: &Run,
    ) -> Result<(), Diagnostic> {
        let first = &target.parts[0];
        let is_record = |name: &str| locals.get(name).is_some_and(|l| l.record.is_some());
        let (name, part) = match target.parts.len() {
            1 if is_record(&first.ident.name) => {
                return Err(err(
                    target.span,
                    format!("`{}` is a record: assign it a record", first.ident.name),
                    "a record",
                ));
            }
            1 => (first.ident.name.clone(), first),
            _ if is_record(&first.ident.name) => {
                let (name, _, part) = records::field_local(target, locals)?;
                (name, part)
            }
            _ => {
                return Err(err(
                    target.span,
                    format!("`{}` has no fields: it is not a record", first.ident.name),
                    "not a record",
                ));
            }
        };
        let name = name.as_str();
        let local = assignable(locals, name, part.ident.span)?;
        if part.subscripts.is_empty() {
            if let Some(old) = &local.value
                && old.shape() != value.shape()
                && !old.shape().is_empty()
                && !value.shape().is_empty()
                && old.shape().len() != value.shape().len()
            {
                return Err(err(
                    target.span,
                    format!(
                        "assigning a value of size {:?} to `{name}` of size {:?}",
                        value.shape(),
                        old.shape()
                    ),
                    "sizes differ",
                ));
            }
            locals[name].value = Some(value);
            return Ok(());
        }
        let Some(mut current) = local.value.clone() else {
            return Err(err(
                part.ident.span,
                format!("`{name}` has no size yet: assign it whole before its elements"),
                "size unknown",
            ));
        };
        let shape = current.shape();
        let picks = {
            let ctx = local_ctx(run.class, locals, run.mode);
            self.picks(&part.subscripts, (&shape, &[]), target.span, &ctx)?
        };
        let paths = pick_paths(&picks);
        let new = value.leaves();
        if paths.len() != new.len() {
            return Err(err(
                target.span,
                format!("assigning {} values to {} elements", new.len(), paths.len()),
                "sizes differ",
            ));
        }
        for (path, v) in paths.iter().zip(new) {
            set_leaf(&mut current, path, v);
        }
        locals[name].value = Some(current);
        Ok(())
    }

    /// A read of a function variable, its subscripts applied; in `Constant` mode its value
    /// must be known at translation time (parameters at their values).
    pub(super) fn local_ref(
        &mut self,
        local: &Local,
        cref: &'a ComponentRef,
        ctx: &Ctx<'_>,
    ) -> Result<Val, Diagnostic> {
        let (local, part) = match (local.record, ctx.locals) {
            (Some(_), Some(locals)) => {
                let (_, local, part) = records::field_local(cref, locals)?;
                (local, part)
            }
            _ if cref.parts.len() > 1 => {
                return Err(err(
                    cref.span,
                    format!(
                        "`{}` has no fields: it is not a record",
                        cref.parts[0].ident.name
                    ),
                    "not a record",
                ));
            }
            _ => (local, &cref.parts[0]),
        };
        let name = &part.ident.name;
        let Some(value) = &local.value else {
            return Err(err(
                part.ident.span,
                format!("`{name}` is read before it is assigned"),
                "no value yet",
            ));
        };
        let value = if part.subscripts.is_empty() {
            value.clone()
        } else if self.keeping {
            let shape = value.shape();
            let picks = self.varying_picks(&part.subscripts, &shape, cref.span, ctx)?;
            self.varying_select(value, &shape, &picks)
        } else {
            let shape = value.shape();
            let picks = self.picks(&part.subscripts, (&shape, &[]), cref.span, ctx)?;
            select(&value.leaves(), &shape, &picks)
        };
        if ctx.mode == Mode::Symbolic {
            return Ok(value);
        }
        let known = value.map(&mut |&e| self.known_now(e, part.ident.span, name));
        // A value needed now (a subscript, a size) that varies: inlined, the function cannot
        // run, kept as code it can.
        if known.is_err() && !self.inlining.is_empty() {
            self.varying_flow = true;
        }
        known
    }

    /// Condition `c` at its parameters' values, when it depends on nothing else and none of
    /// them is computed by the initial system (`fixed = false`).
    pub(super) fn parameter_value(&mut self, c: ExprId) -> Option<bool> {
        let mut leaves = Vec::new();
        self.dae.pool.visit_leaves(c, |n| leaves.push(n));
        let free = leaves.iter().any(|&n| match n {
            Node::Var(v) => self
                .modification_of(v)
                .child("fixed")
                .and_then(|f| f.binding.as_ref())
                .is_some_and(|b| matches!(b.expr.kind, ExprKind::Bool(false))),
            _ => false,
        });
        if free {
            return None;
        }
        let folded = self.known_now(c, Span::default(), "").ok()?;
        self.dae.pool.as_const(folded).map(|x| x != 0.0)
    }

    /// `e` folded to a constant, its parameters at their values.
    fn known_now(&mut self, e: ExprId, span: Span, name: &str) -> Result<ExprId, Diagnostic> {
        if self.dae.pool.as_const(e).is_some() {
            return Ok(e);
        }
        let mut leaves = Vec::new();
        self.dae.pool.visit_leaves(e, |n| leaves.push(n));
        let mut known = Vec::with_capacity(leaves.len());
        for leaf in leaves {
            match leaf {
                Node::Var(v)
                    if matches!(self.dae.var(v).kind, VarKind::Parameter | VarKind::Constant) =>
                {
                    let x = self.const_value(v, span)?;
                    known.push((v, self.dae.pool.constant(x)));
                }
                Node::Const(_) => {}
                _ => {
                    return Err(err(
                        span,
                        format!("`{name}` is not known at translation time here"),
                        "not a constant",
                    ));
                }
            }
        }
        Ok(self.dae.pool.substitute(e, &mut |_, n| match n {
            Node::Var(v) => known.iter().find(|k| k.0 == v).map(|k| k.1),
            _ => None,
        }))
    }

    /// The outputs of a call written as an expression: a function's, in order.
    pub(crate) fn call_outputs(
        &mut self,
        call: &'a Expr,
        ctx: &Ctx<'_>,
    ) -> Result<Vec<Val>, Diagnostic> {
        let ExprKind::Call { func, args } = &call.kind else {
            return Err(err(
                call.span,
                "several values come only from a function call",
                "not a call",
            ));
        };
        match self.function_class(func, ctx) {
            Some(class) => self.call_function(class, args, call.span, ctx),
            None => Ok(vec![self.flatten_expr(call, ctx)?]),
        }
    }

    /// [`Self::call_outputs`], record outputs as records.
    pub(crate) fn call_outputs_with_records(
        &mut self,
        call: &'a Expr,
        ctx: &Ctx<'_>,
    ) -> Result<Vec<Output>, Diagnostic> {
        if let ExprKind::Call { func, args } = &call.kind
            && let Some(class) = self.function_class(func, ctx)
        {
            return self.call_function_outputs(class, args, call.span, ctx);
        }
        let values = self.call_outputs(call, ctx)?;
        Ok(values.into_iter().map(Output::Value).collect())
    }
}

/// Sorts the paths a loop's turn left: on to the next turn, or out of the loop (a `break`
/// leaves it and goes on after it; a `return` leaves the function).
fn after_turn(turned: Vec<Path>, active: &mut Vec<Path>, done: &mut Vec<Path>) {
    for mut q in turned {
        match q.flow {
            Flow::Next => active.push(q),
            Flow::Break => {
                q.flow = Flow::Next;
                done.push(q);
            }
            Flow::Return => done.push(q),
        }
    }
}

/// The function variable `name` that an assignment writes: an error where it is none or an
/// input.
fn assignable<'l>(locals: &'l Locals, name: &str, span: Span) -> Result<&'l Local, Diagnostic> {
    let Some(local) = locals.get(name) else {
        return Err(err(
            span,
            format!("`{name}` is not a variable of this function"),
            "unknown name",
        ));
    };
    if local.input {
        return Err(err(
            span,
            format!("`{name}` is an input: a function cannot assign it (Modelica 12.2)"),
            "an input",
        ));
    }
    Ok(local)
}

/// The message of `assert(c, message)` when it is a literal.
fn assert_message(args: &[Arg]) -> String {
    match args.get(1).map(|a| &a.value.kind) {
        Some(ExprKind::Str(m)) => m.trim_matches('"').to_string(),
        _ => "assertion failed".to_string(),
    }
}

fn when_in_function(span: Span) -> Diagnostic {
    err(
        span,
        "a function cannot hold a `when` statement (Modelica 12.2)",
        "not allowed in a function",
    )
}

/// Whether every argument given is known at translation time.
fn given_are_known(pool: &crate::expr::ExprPool, given: &[Option<Given>]) -> bool {
    given.iter().flatten().all(|g| match g {
        Given::Value(v) => v.leaves().iter().all(|&e| pool.as_const(e).is_some()),
        Given::Record(_) => false,
        Given::Text(t) => t.known().is_some(),
    })
}

/// The arguments again.
fn clone_given(given: &[Option<Given>]) -> Vec<Option<Given>> {
    given
        .iter()
        .map(|g| match g {
            Some(Given::Value(v)) => Some(Given::Value(v.clone())),
            Some(Given::Record(r)) => Some(Given::Record(r.clone())),
            Some(Given::Text(t)) => Some(Given::Text(t.clone())),
            None => None,
        })
        .collect()
}

/// More targets than a call has outputs: an error at the statement or equation.
pub(crate) fn check_targets(targets: usize, outputs: usize, span: Span) -> Result<(), Diagnostic> {
    if targets > outputs {
        return Err(err(
            span,
            format!("{targets} targets for {outputs} outputs"),
            "too many targets",
        ));
    }
    Ok(())
}

/// Every element path (0-based) the picks select, row-major.
fn pick_paths(picks: &[Pick]) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new()];
    for pick in picks {
        let along: Vec<usize> = match pick {
            Pick::One(i) => vec![*i],
            Pick::Many(v) => v.clone(),
        };
        out = out
            .into_iter()
            .flat_map(|prefix| {
                along.iter().map(move |&i| {
                    let mut p = prefix.clone();
                    p.push(i);
                    p
                })
            })
            .collect();
    }
    out
}

fn set_leaf(tree: &mut Val, path: &[usize], value: ExprId) {
    match (path.split_first(), tree) {
        (None, t) => *t = Tree::Leaf(value),
        (Some((&i, rest)), Tree::Node(kids)) => set_leaf(&mut kids[i], rest, value),
        (Some(_), t) => *t = Tree::Leaf(value),
    }
}
