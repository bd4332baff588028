//! Functions kept as code: when symbolic execution cannot inline a call (its control flow
//! depends on varying values in too many ways: an iteration to a tolerance, a search over a
//! table, a recursion on a varying value), the function is translated once per signature into
//! the pool's statement program ([`crate::expr::Function`]) and the call becomes
//! [`crate::expr::Node::Apply`] nodes, one per output value.
//!
//! A signature is the function with the sizes of its array inputs and the values of the
//! Integer and Boolean inputs known at the call: those are constants of the program (sizes,
//! `for` ranges and subscripts need them), every other input value is a slot. Each variable
//! of the function is a run of slots (an array row-major); its expressions are the
//! translator's, over [`crate::expr::Node::Local`] leaves, so nested calls are inlined or
//! kept by the same rule. `for` loops are unrolled over their known ranges; `while`, `if`,
//! `break`, `return` and `assert` stay statements.

use indexmap::IndexMap;

use super::super::Flattener;
use super::super::classes::{ClassId, TypeRef};
use super::super::expr::{Ctx, Mode, Pick, Val, select};
use super::super::tree::Tree;
use super::records::{self, RecordValue};
use super::{FunctionDef, Given, Local, Locals, Output, Param, err, local_ctx, pick_paths};
use crate::dae::ScalarType;
use crate::diagnostics::Diagnostic;
use crate::expr::function::{Derivative, Native};
use crate::expr::{ExprId, Function, FunctionId, Stmt};
use crate::source::Span;
use crate::syntax::ast::{self, Causality, ComponentRef, Expr, ExprKind, Statement, StatementKind};

/// What identifies one translation of a function: its path, and per input either the size
/// of its value (a slot per element) or its known Integer or Boolean value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Signature {
    path: String,
    inputs: Vec<InputKind>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum InputKind {
    Slots(Vec<usize>),
    Known(u64),
}

/// The program being built: slots so far, and the function's scope.
struct Builder {
    slots: u32,
    scope: ClassId,
}

impl Builder {
    fn alloc(&mut self, n: usize) -> u32 {
        self.slots += n as u32;
        self.slots - n as u32
    }
}

impl<'a> Flattener<'a> {
    /// Whether a function of this path has been kept as code.
    pub(super) fn kept_before(&self, path: &str) -> bool {
        self.kept.keys().any(|s| s.path == path)
    }

    /// The outputs of `def` on `given` as calls of the function kept as code.
    pub(super) fn kept_call(
        &mut self,
        def: &FunctionDef<'a>,
        given: Vec<Option<Given>>,
        span: Span,
        mode: Mode,
    ) -> Result<Vec<Output>, Diagnostic> {
        let none = Locals::new();
        let ctx = local_ctx(self.function_scope(def), &none, mode);
        let inputs = self.bind_inputs(def, given, span, &ctx)?;
        let mut signature = Signature {
            path: def.path.clone(),
            inputs: Vec::new(),
        };
        let mut args = Vec::new();
        for p in def.inputs() {
            for (name, local) in self.scalar_locals(p, &inputs)? {
                let value = local.value.as_ref().expect("inputs are bound");
                match known_discrete(self, p, value).filter(|_| name == p.name) {
                    Some(bits) => signature.inputs.push(InputKind::Known(bits)),
                    None => {
                        signature.inputs.push(InputKind::Slots(value.shape()));
                        args.extend(value.leaves());
                    }
                }
            }
        }
        let (f, shapes) = self.translation(def, &signature, &inputs, span)?;
        let mut next = 0u32;
        let mut value = |this: &mut Self, shape: &[usize]| {
            let count: usize = shape.iter().product();
            let leaves: Vec<ExprId> = (0..count as u32)
                .map(|k| this.dae.pool.apply(f, next + k, &args))
                .collect();
            next += count as u32;
            shaped(shape, &leaves)
        };
        let mut outputs = Vec::with_capacity(shapes.len());
        for shape in shapes {
            outputs.push(match shape {
                OutputShape::Value(shape) => Output::Value(value(self, &shape)),
                OutputShape::Record(fields) => Output::Record(
                    (fields.into_iter())
                        .map(|(path, shape)| (path, value(self, &shape)))
                        .collect(),
                ),
            });
        }
        Ok(outputs)
    }

    /// The scalar and array locals of variable `p` in `locals`, by name: itself, or a
    /// record's fields in their order.
    fn scalar_locals(
        &mut self,
        p: &Param<'a>,
        locals: &Locals,
    ) -> Result<Vec<(String, Local)>, Diagnostic> {
        let Some(class) = p.record else {
            return Ok(vec![(p.name.clone(), locals[&p.name].clone())]);
        };
        let fields = self.record_fields(class, p.span)?;
        Ok((fields.iter())
            .map(|f| {
                let name = format!("{}.{}", p.name, f.path);
                let local = locals[&name].clone();
                (name, local)
            })
            .collect())
    }

    /// The translation of `def` for `signature`: the one made before, else a new one.
    fn translation(
        &mut self,
        def: &FunctionDef<'a>,
        signature: &Signature,
        inputs: &Locals,
        span: Span,
    ) -> Result<(FunctionId, Vec<OutputShape>), Diagnostic> {
        match self.kept.get(signature) {
            Some(found) => Ok(found.clone()),
            None => self.translate(def, signature, inputs, span),
        }
    }

    /// Translates `def` for `signature` (the inputs' values bound in `inputs` tell the known
    /// ones): its program in the pool and its outputs' sizes. A record variable is its
    /// fields' slots, the fields' locals named `r.field` as symbolic execution names them.
    fn translate(
        &mut self,
        def: &FunctionDef<'a>,
        signature: &Signature,
        inputs: &Locals,
        span: Span,
    ) -> Result<(FunctionId, Vec<OutputShape>), Diagnostic> {
        let scope = self.function_scope(def);
        let mut b = Builder { slots: 0, scope };
        let mut locals = Locals::new();
        let mut kinds = signature.inputs.iter();
        for p in def.inputs() {
            if p.record.is_some() {
                locals.insert(p.name.clone(), inputs[&p.name].clone());
            }
            for (name, local) in self.scalar_locals(p, inputs)? {
                let value = match kinds.next().expect("one kind per input value") {
                    InputKind::Known(_) => local.value.clone().expect("inputs are bound"),
                    InputKind::Slots(shape) => self.slot_value(&mut b, shape),
                };
                locals.insert(name, slot_local(local.ty, value, true));
            }
        }
        let inputs_end = b.slots;
        let mut defaults = Vec::new();
        let mut output_shapes = Vec::new();
        let mut output_slots = Vec::new();
        let others: Vec<&Param<'a>> = def
            .params
            .iter()
            .filter(|p| p.causality != Causality::Input)
            .collect();
        for p in others {
            let shape = match p.record {
                Some(class) => self.record_slots(&mut b, &mut locals, p, class, span)?,
                None => {
                    let shape = self.kept_shape(def, &p.dims, p.scope, &locals, (p.span, span))?;
                    let value = self.slot_value(&mut b, &shape);
                    locals.insert(p.name.clone(), slot_local(p.ty, value, false));
                    OutputShape::Value(shape)
                }
            };
            if p.causality == Causality::Output {
                for (name, _) in self.scalar_locals(p, &locals)? {
                    output_slots
                        .extend(slots_of(self, locals[&name].value.as_ref().expect("slots")));
                }
                output_shapes.push(shape);
            }
            defaults.push(p);
        }
        let f = self.dae.pool.add_function(Function::declared(
            def.path.clone(),
            inputs_end,
            output_slots.clone(),
            0,
        ));
        self.kept
            .insert(signature.clone(), (f, output_shapes.clone()));
        if def.params.iter().all(|p| p.record.is_none()) {
            self.declared_derivative(def, f, signature, inputs, span)?;
        }
        let mut body = Vec::new();
        for p in defaults {
            self.kept_default(&mut b, &mut body, &locals, p)?;
        }
        let was = std::mem::replace(&mut self.keeping, true);
        let native = (def.external)
            .and_then(|e| e.function.as_deref())
            .and_then(Native::by_name);
        let statements = match (def.body, native) {
            (_, Some(native)) => native_body(
                def,
                native,
                inputs_end,
                (&output_slots, &output_shapes),
                span,
            ),
            (Some(statements), None) => self.kept_block(&mut b, statements, &mut locals),
            (None, None) => Ok(Vec::new()),
        };
        self.keeping = was;
        body.extend(statements?);
        self.dae.pool.define_function(f, b.slots, body);
        Ok((f, output_shapes))
    }

    /// Gives `f`, the translation of `def` for `signature`, the derivative its class's
    /// `derivative` annotation names (order 1; `noDerivative` and `zeroDerivative` inputs
    /// pass no differential), translated for the same inputs and their differentials.
    fn declared_derivative(
        &mut self,
        def: &FunctionDef<'a>,
        f: FunctionId,
        signature: &Signature,
        inputs: &Locals,
        span: Span,
    ) -> Result<(), Diagnostic> {
        let class = self.function_scope(def);
        let Some((name, excluded, at)) = derivative_annotation(self.tree.node(class).def) else {
            return Ok(());
        };
        let Some(TypeRef::Class(target)) = self.tree.resolve(&name, class) else {
            return Err(err(
                at,
                format!(
                    "the derivative `{}` of `{}` is not a function",
                    name.dotted(),
                    def.path
                ),
                "not found",
            ));
        };
        let derivative = self.function_def(target, span)?;
        let wrong = |what: String| {
            err(
                at,
                format!(
                    "the derivative `{}` of `{}` {what} (Modelica 12.7.1)",
                    derivative.path, def.path
                ),
                "declared here",
            )
        };
        // Its inputs: those of `def`, then the differentials of the Real ones not excluded.
        let own: Vec<&Param<'a>> = def.inputs().collect();
        let given: Vec<&Param<'a>> = derivative.inputs().collect();
        let differentiated: Vec<bool> = (own.iter())
            .map(|p| p.ty == ScalarType::Real && !excluded.contains(&p.name))
            .collect();
        let expected = own.len() + differentiated.iter().filter(|&&d| d).count();
        if given.len() != expected || derivative.params.iter().any(|p| p.record.is_some()) {
            return Err(wrong(format!(
                "has {} inputs; it needs {expected}: the function's and the differentials of its Real inputs",
                given.len()
            )));
        }
        let mut kinds = signature.inputs.clone();
        let mut bound = Locals::new();
        let mut slots_differentiated = Vec::new();
        for (k, (p, kind)) in own.iter().zip(&signature.inputs).enumerate() {
            let d = differentiated[k] && matches!(kind, InputKind::Slots(_));
            if let InputKind::Slots(shape) = kind {
                slots_differentiated.extend(std::iter::repeat_n(d, shape.iter().product()));
            }
            let value = inputs[&p.name].value.clone();
            bound.insert(given[k].name.clone(), slot_input(given[k].ty, value));
        }
        let differentials = (signature.inputs.iter().zip(&differentiated)).filter(|(_, d)| **d);
        for (p, (kind, _)) in given[own.len()..].iter().zip(differentials) {
            let InputKind::Slots(shape) = kind else {
                unreachable!("a Real input is slots")
            };
            let zero = self.dae.pool.zero();
            let value = Some(super::filled(shape, zero));
            bound.insert(p.name.clone(), slot_input(ScalarType::Real, value));
            kinds.push(InputKind::Slots(shape.clone()));
        }
        let at_signature = Signature {
            path: derivative.path.clone(),
            inputs: kinds,
        };
        let (g, shapes) = self.translation(&derivative, &at_signature, &bound, span)?;
        let mut outputs = Vec::new();
        let mut next = 0u32;
        for p in def.outputs() {
            let count: usize = self
                .declared_shape(p, inputs)?
                .map_or(1, |s| s.iter().product());
            for _ in 0..count {
                outputs.push((p.ty == ScalarType::Real).then(|| {
                    next += 1;
                    next - 1
                }));
            }
        }
        let given_outputs: usize = shapes.iter().map(OutputShape::values).sum();
        if given_outputs != next as usize {
            return Err(wrong(format!(
                "gives {given_outputs} output values; the function has {next} Real ones"
            )));
        }
        let derivative = Derivative {
            function: g,
            differentiated: slots_differentiated,
            outputs,
        };
        self.dae.pool.set_derivative(f, derivative);
        Ok(())
    }

    /// The size `dims` give with the variables before known, else an error at `at.0`.
    fn kept_shape(
        &mut self,
        def: &FunctionDef<'a>,
        dims: &[&'a ast::Subscript],
        scope: ClassId,
        locals: &Locals,
        (at, call): (Span, Span),
    ) -> Result<Vec<usize>, Diagnostic> {
        match self.shape_of(dims, scope, locals)? {
            Some(shape) => Ok(shape),
            None => Err(err(
                at,
                format!(
                    "`{}` is kept as code (it cannot be inlined), and then its variables need sizes known at the call",
                    def.path
                ),
                "a size not known here",
            )
            .with_secondary(call, "called here")),
        }
    }

    /// Slots for each field of record variable `p` of `class`, its locals inserted.
    fn record_slots(
        &mut self,
        b: &mut Builder,
        locals: &mut Locals,
        p: &Param<'a>,
        class: ClassId,
        call: Span,
    ) -> Result<OutputShape, Diagnostic> {
        if p.fields.is_some() {
            return Err(err(
                p.span,
                "a record variable with field modifications is not yet kept as code",
                "not kept",
            ));
        }
        locals.insert(
            p.name.clone(),
            Local {
                value: None,
                ty: ScalarType::Real,
                input: false,
                record: Some(class),
                text: None,
            },
        );
        let fields = self.record_fields(class, p.span)?;
        let mut shapes = Vec::with_capacity(fields.len());
        for f in fields.iter() {
            let Some(shape) = self.shape_of(&f.dims, f.scope, &Locals::new())? else {
                return Err(err(
                    p.span,
                    format!(
                        "the record's field `{}` needs a size known at the call to be kept as code",
                        f.path
                    ),
                    "a size not known here",
                )
                .with_secondary(call, "called here"));
            };
            let value = self.slot_value(b, &shape);
            locals.insert(
                format!("{}.{}", p.name, f.path),
                slot_local(f.ty, value, false),
            );
            shapes.push((f.path.clone(), shape));
        }
        Ok(OutputShape::Record(shapes))
    }

    /// The start of a variable that is not an input: its declared default, and a record's
    /// fields their own defaults (the others start at zero).
    fn kept_default(
        &mut self,
        b: &mut Builder,
        body: &mut Vec<Stmt>,
        locals: &Locals,
        p: &Param<'a>,
    ) -> Result<(), Diagnostic> {
        let Some(class) = p.record else {
            if let Some(e) = p.default {
                let value = self.local_expr(e, p.scope, locals, Mode::Symbolic)?;
                let target = locals[&p.name].value.clone().expect("slots");
                self.assign_slots(b, body, &target, value, p.span)?;
            }
            return Ok(());
        };
        let value = match p.default {
            Some(e) => {
                let ctx = local_ctx(p.scope, locals, Mode::Symbolic);
                self.record_value(e, Some(class), &ctx)?
            }
            None => {
                let fields = self.record_fields(class, p.span)?;
                let mut value = Vec::new();
                for f in fields.iter().filter(|f| f.default.is_some()) {
                    value.push((
                        f.path.clone(),
                        self.field_default(f, Mode::Symbolic, p.span)?,
                    ));
                }
                value
            }
        };
        self.assign_record_slots(b, body, locals, &p.name, value, p.span)
    }

    /// `name := value` of a whole record variable (or a record field of one), field by field.
    fn assign_record_slots(
        &mut self,
        b: &mut Builder,
        out: &mut Vec<Stmt>,
        locals: &Locals,
        name: &str,
        value: RecordValue,
        span: Span,
    ) -> Result<(), Diagnostic> {
        for (path, v) in value {
            let field = format!("{name}.{path}");
            let target = super::assignable(locals, &field, span)?;
            let target = target.value.clone().expect("slots");
            self.assign_slots(b, out, &target, v, span)?;
        }
        Ok(())
    }

    /// A fresh run of slots of `shape`, as the value of `Local` leaves.
    fn slot_value(&mut self, b: &mut Builder, shape: &[usize]) -> Val {
        let count: usize = shape.iter().product();
        let first = b.alloc(count);
        let leaves: Vec<ExprId> = (0..count as u32)
            .map(|k| self.dae.pool.local(first + k))
            .collect();
        shaped(shape, &leaves)
    }

    fn kept_block(
        &mut self,
        b: &mut Builder,
        statements: &'a [Statement],
        locals: &mut Locals,
    ) -> Result<Vec<Stmt>, Diagnostic> {
        let mut out = Vec::new();
        for s in statements {
            self.kept_statement(b, s, locals, &mut out)?;
        }
        Ok(out)
    }

    fn kept_statement(
        &mut self,
        b: &mut Builder,
        s: &'a Statement,
        locals: &mut Locals,
        out: &mut Vec<Stmt>,
    ) -> Result<(), Diagnostic> {
        let scope = b.scope;
        match &s.kind {
            StatementKind::Assign { target, value } => {
                if let Some((name, class)) = records::record_target(locals, target) {
                    let ctx = local_ctx(scope, locals, Mode::Symbolic);
                    let value = self.record_value(value, class, &ctx)?;
                    self.assign_record_slots(b, out, locals, &name, value, target.span)?;
                } else {
                    let value = self.local_expr(value, scope, locals, Mode::Symbolic)?;
                    self.assign_target(b, out, locals, target, value)?;
                }
            }
            StatementKind::AssignOutputs { targets, call } => {
                let ctx = local_ctx(scope, locals, Mode::Symbolic);
                let outputs = self.call_outputs_with_records(call, &ctx)?;
                super::check_targets(targets.len(), outputs.len(), s.span)?;
                for (target, output) in targets.iter().zip(outputs) {
                    match (target.as_ref().map(|t| &t.kind), output) {
                        (None, _) => {}
                        (Some(ExprKind::Ref(cref)), Output::Value(value)) => {
                            self.assign_target(b, out, locals, cref, value)?
                        }
                        (Some(ExprKind::Ref(cref)), Output::Record(value)) => {
                            let Some((name, _)) = records::record_target(locals, cref) else {
                                return Err(err(
                                    cref.span,
                                    "this output is a record, and this is not a record variable",
                                    "not a record",
                                ));
                            };
                            self.assign_record_slots(b, out, locals, &name, value, cref.span)?;
                        }
                        (Some(_), _) => {
                            return Err(err(
                                target.as_ref().map_or(s.span, |t| t.span),
                                "in a function kept as code, only a variable can be assigned an output",
                                "not a variable",
                            ));
                        }
                    }
                }
            }
            StatementKind::Break => out.push(Stmt::Break),
            StatementKind::Return => out.push(Stmt::Return),
            StatementKind::If {
                branches,
                else_branch,
            } => {
                let mut kept = Vec::new();
                let mut otherwise = None;
                for (condition, body) in branches {
                    let c = self.kept_condition(condition, scope, locals)?;
                    match self.dae.pool.as_const(c) {
                        Some(0.0) => continue,
                        Some(_) => {
                            otherwise = Some(self.kept_block(b, body, locals)?);
                            break;
                        }
                        None => kept.push((c, self.kept_block(b, body, locals)?)),
                    }
                }
                let otherwise = match otherwise {
                    Some(body) => body,
                    None => self.kept_block(b, else_branch, locals)?,
                };
                if kept.is_empty() {
                    out.extend(otherwise);
                } else {
                    out.push(Stmt::If(kept, otherwise));
                }
            }
            StatementKind::For { indices, body } => {
                let unrolled = self.kept_for(b, s.span, indices, body, locals)?;
                out.push(Stmt::Block(unrolled));
            }
            StatementKind::While { condition, body } => {
                let c = self.kept_condition(condition, scope, locals)?;
                if self.dae.pool.as_const(c) != Some(0.0) {
                    let body = self.kept_block(b, body, locals)?;
                    out.push(Stmt::While(c, body));
                }
            }
            StatementKind::Call { name, args } => {
                if name.dotted() == "assert"
                    && let Some(first) = args.first()
                {
                    let c = self.kept_condition(&first.value, scope, locals)?;
                    out.push(Stmt::Assert(c, super::assert_message(args)));
                } else if let Some(class) = self.function_class_named(name, &Ctx::of_class(scope)) {
                    // Other calls compute nothing the function returns; a write is an error.
                    let def = self.function_def(class, s.span)?;
                    self.write_call(&def, args, s.span, &Ctx::of_class(scope))?;
                }
            }
            StatementKind::When { .. } => return Err(super::when_in_function(s.span)),
            StatementKind::Unsupported => {}
        }
        Ok(())
    }

    fn kept_condition(
        &mut self,
        condition: &'a Expr,
        scope: ClassId,
        locals: &Locals,
    ) -> Result<ExprId, Diagnostic> {
        match self.local_expr(condition, scope, locals, Mode::Symbolic)? {
            Tree::Leaf(c) => Ok(c),
            Tree::Node(_) => Err(err(
                condition.span,
                "a condition must be a scalar Boolean",
                "an array",
            )),
        }
    }

    /// A `for` loop over ranges known at translation time, one copy of the body per value.
    fn kept_for(
        &mut self,
        b: &mut Builder,
        span: Span,
        indices: &'a [ast::ForIndex],
        body: &'a [Statement],
        locals: &mut Locals,
    ) -> Result<Vec<Stmt>, Diagnostic> {
        let Some((first, rest)) = indices.split_first() else {
            return self.kept_block(b, body, locals);
        };
        let Some(range) = &first.range else {
            return Err(err(
                span,
                "a `for` statement needs its range (`for i in 1:n`)",
                "no range",
            ));
        };
        let values = match self.local_expr(range, b.scope, locals, Mode::Symbolic)? {
            Tree::Node(items) => items,
            leaf => vec![leaf],
        };
        let name = first.name.name.clone();
        let shadowed = locals.get(&name).cloned();
        let mut out = Vec::new();
        for value in values {
            if value
                .leaves()
                .iter()
                .any(|&e| self.dae.pool.as_const(e).is_none())
            {
                return Err(err(
                    range.span,
                    "in a function kept as code, a `for` range must be known at the call",
                    "varies",
                ));
            }
            locals.insert(
                name.clone(),
                Local {
                    value: Some(value),
                    ty: ScalarType::Integer,
                    input: true,
                    record: None,
                    text: None,
                },
            );
            out.extend(self.kept_for(b, span, rest, body, locals)?);
        }
        match shadowed {
            Some(local) => locals.insert(name, local),
            None => locals.shift_remove(&name),
        };
        Ok(out)
    }

    /// `target := value`: the slots the target names, each element through a temporary
    /// when there are several (the value may read the target: `x := {x[2], x[1]}`); an
    /// element picked by a varying subscript is assigned where the subscript equals its index.
    fn assign_target(
        &mut self,
        b: &mut Builder,
        out: &mut Vec<Stmt>,
        locals: &Locals,
        target: &'a ComponentRef,
        value: Val,
    ) -> Result<(), Diagnostic> {
        let (name, part) = match target.parts.as_slice() {
            [part] => (part.ident.name.clone(), part),
            _ => {
                let (name, _, part) = records::field_local(target, locals)?;
                (name, part)
            }
        };
        let local = super::assignable(locals, &name, part.ident.span)?;
        let whole = local
            .value
            .clone()
            .expect("a kept function's variables have slots");
        if part.subscripts.is_empty() {
            return self.assign_slots(b, out, &whole, value, target.span);
        }
        let shape = whole.shape();
        let ctx = local_ctx(b.scope, locals, Mode::Symbolic);
        let picks = self.varying_picks(&part.subscripts, &shape, target.span, &ctx)?;
        let paths = pick_paths(&picks.known);
        let new = value.leaves();
        if paths.len() != new.len() && new.len() != 1 {
            return Err(err(
                target.span,
                format!("assigning {} values to {} elements", new.len(), paths.len()),
                "sizes differ",
            ));
        }
        let leaves = whole.leaves();
        let mut targets = Vec::new();
        let mut values = Vec::new();
        for (k, path) in paths.iter().enumerate() {
            let v = new[if new.len() == 1 { 0 } else { k }];
            let at = flat_index(&shape, path);
            let slot = leaves[at];
            let v = match picks.guard(&mut self.dae.pool, path) {
                Some(c) => self.dae.pool.if_then_else(c, v, slot),
                None => v,
            };
            targets.push(slot);
            values.push(v);
        }
        let targets = Tree::Node(targets.into_iter().map(Tree::Leaf).collect());
        let values = Tree::Node(values.into_iter().map(Tree::Leaf).collect());
        self.assign_slots(b, out, &targets, values, target.span)
    }

    /// Assigns each `Local` leaf of `target` its element of `value` (a scalar fills all).
    fn assign_slots(
        &mut self,
        b: &mut Builder,
        out: &mut Vec<Stmt>,
        target: &Val,
        value: Val,
        span: Span,
    ) -> Result<(), Diagnostic> {
        let slots = slots_of(self, target);
        let mut values = value.leaves();
        if values.len() == 1 && slots.len() > 1 {
            values = vec![values[0]; slots.len()];
        }
        if values.len() != slots.len() {
            return Err(err(
                span,
                format!(
                    "assigning {} values to {} elements",
                    values.len(),
                    slots.len()
                ),
                "sizes differ",
            ));
        }
        if slots.len() == 1 {
            out.push(Stmt::Assign(slots[0], values[0]));
            return Ok(());
        }
        let first = b.alloc(slots.len());
        for (k, &v) in values.iter().enumerate() {
            out.push(Stmt::Assign(first + k as u32, v));
        }
        for (k, &slot) in slots.iter().enumerate() {
            let temp = self.dae.pool.local(first + k as u32);
            out.push(Stmt::Assign(slot, temp));
        }
        Ok(())
    }
}

/// The slot of each `Local` leaf of `value`.
fn slots_of(f: &Flattener<'_>, value: &Val) -> Vec<u32> {
    value
        .leaves()
        .into_iter()
        .map(|e| match f.dae.pool.node(e) {
            crate::expr::Node::Local(k) => k,
            _ => unreachable!("a kept function's variable is slots"),
        })
        .collect()
}

/// The derivative a function class's annotation names for order 1 (`derivative = g`,
/// `derivative(noDerivative = x, zeroDerivative = y) = g`), the inputs it passes no
/// differential of, and where it is written.
fn derivative_annotation(class: Option<&ast::ClassDef>) -> Option<(ast::Name, Vec<String>, Span)> {
    let ast::ClassBody::Long(composition) = &class?.body else {
        return None;
    };
    let annotation = composition.annotation.as_ref()?;
    annotation.arguments.iter().find_map(|a| {
        let ast::Argument::Modify {
            name,
            modification: Some(m),
            span,
            ..
        } = a
        else {
            return None;
        };
        if name.dotted() != "derivative" {
            return None;
        }
        let mut excluded = Vec::new();
        let mut order = 1.0;
        for arg in &m.arguments {
            let ast::Argument::Modify {
                name: n,
                modification: Some(v),
                ..
            } = arg
            else {
                continue;
            };
            match (n.dotted().as_str(), v.binding.as_ref().map(|e| &e.kind)) {
                ("order", Some(ExprKind::Integer(k))) => order = *k as f64,
                ("noDerivative" | "zeroDerivative", Some(ExprKind::Ref(r))) => {
                    excluded.extend(r.parts.first().map(|p| p.ident.name.clone()))
                }
                _ => {}
            }
        }
        let Some(ExprKind::Ref(target)) = m.binding.as_ref().map(|e| &e.kind) else {
            return None;
        };
        let name = ast::Name {
            global: target.global,
            parts: target.parts.iter().map(|p| p.ident.clone()).collect(),
            span: target.span,
        };
        (order == 1.0).then_some((name, excluded, *span))
    })
}

/// An input of a derivative's translation bound to `value`.
fn slot_input(ty: ScalarType, value: Option<Val>) -> Local {
    Local {
        value,
        ty,
        input: true,
        record: None,
        text: None,
    }
}

/// The body of `def`, declared external as `native`: the implementation's one statement,
/// once the declaration is the one it implements ([`native_declaration`]).
fn native_body(
    def: &FunctionDef<'_>,
    native: Native,
    inputs: u32,
    (outputs, shapes): (&[u32], &[OutputShape]),
    span: Span,
) -> Result<Vec<Stmt>, Diagnostic> {
    let (ins, outs) = native_declaration(native, inputs as usize);
    let declared_inputs: Vec<ScalarType> = def.inputs().map(|p| p.ty).collect();
    let declared_outputs: Vec<(ScalarType, usize)> = (def.outputs().map(|p| p.ty))
        .zip(shapes.iter().map(OutputShape::values))
        .collect();
    let fits = declared_inputs == [ins.0]
        && declared_outputs.len() == outs.len()
        && (declared_outputs.iter().zip(&outs)).all(|(&(ty, n), o)| (ty, n) == (o.0, o.2));
    if !fits {
        let parameters: Vec<String> = std::iter::once(("input", ins))
            .chain(outs.iter().map(|&o| ("output", o)))
            .map(|(causality, (ty, name, n))| format!("{causality} {ty:?} {name}[{n}]"))
            .collect();
        return Err(err(
            span,
            format!(
                "`{}` calls `{}`, which mocca implements for the declaration `{}`, not this one",
                def.path,
                native.name(),
                parameters.join("; ").replace("[1]", "")
            ),
            "an external function declared otherwise",
        ));
    }
    Ok(vec![Stmt::Native(
        native,
        (0..inputs).collect(),
        outputs.to_vec(),
    )])
}

/// The declaration `native` implements with `inputs` input values: its input's type, name
/// and size, then its outputs'.
type NativeParam = (ScalarType, &'static str, usize);

fn native_declaration(native: Native, inputs: usize) -> (NativeParam, Vec<NativeParam>) {
    match native.state_size() {
        Some(n) => (
            (ScalarType::Integer, "stateIn", n),
            vec![
                (ScalarType::Real, "result", 1),
                (ScalarType::Integer, "stateOut", n),
            ],
        ),
        None => {
            let nf = inputs / 2 + 1;
            (
                (ScalarType::Real, "u", inputs),
                vec![
                    (ScalarType::Integer, "info", 1),
                    (ScalarType::Real, "amplitudes", nf),
                    (ScalarType::Real, "phases", nf),
                ],
            )
        }
    }
}

/// The known value of an Integer or Boolean input, as the signature's key.
fn known_discrete(f: &Flattener<'_>, p: &Param<'_>, value: &Val) -> Option<u64> {
    if p.ty == ScalarType::Real || !p.dims.is_empty() {
        return None;
    }
    match value {
        Tree::Leaf(e) => f.dae.pool.as_const(*e).map(f64::to_bits),
        Tree::Node(_) => None,
    }
}

fn slot_local(ty: ScalarType, value: Val, input: bool) -> Local {
    Local {
        value: Some(value),
        ty,
        input,
        record: None,
        text: None,
    }
}

/// `leaves` (row-major) as an array of `shape`.
fn shaped(shape: &[usize], leaves: &[ExprId]) -> Val {
    match shape.split_first() {
        None => Tree::Leaf(leaves[0]),
        Some((&n, rest)) => {
            let stride: usize = rest.iter().product();
            Tree::Node(
                (0..n)
                    .map(|i| shaped(rest, &leaves[i * stride..(i + 1) * stride]))
                    .collect(),
            )
        }
    }
}

/// The row-major position of the element at `path` in an array of `shape`.
fn flat_index(shape: &[usize], path: &[usize]) -> usize {
    path.iter().zip(shape).fold(0, |at, (&i, &n)| at * n + i)
}

/// The functions kept as code so far, by signature: the function and its outputs' sizes.
pub(crate) type Kept = IndexMap<Signature, (FunctionId, Vec<OutputShape>)>;

/// The size of a kept function's output: an array's, or each field's of a record.
#[derive(Clone, Debug)]
pub(crate) enum OutputShape {
    Value(Vec<usize>),
    Record(Vec<(String, Vec<usize>)>),
}

impl OutputShape {
    /// How many values (slots) the output has.
    fn values(&self) -> usize {
        match self {
            OutputShape::Value(shape) => shape.iter().product(),
            OutputShape::Record(fields) => fields
                .iter()
                .map(|(_, s)| s.iter().product::<usize>())
                .sum(),
        }
    }
}

/// Subscripts of which some vary: the picks with each varying one taking every index, and
/// the varying ones' values by dimension.
pub(crate) struct VaryingPicks {
    pub known: Vec<Pick>,
    varying: Vec<Option<ExprId>>,
}

impl VaryingPicks {
    /// Where the varying subscripts select the element at `path`: `i == k` for each.
    fn guard(&self, pool: &mut crate::expr::ExprPool, path: &[usize]) -> Option<ExprId> {
        let mut guard = None;
        for (&i, index) in path.iter().zip(&self.varying) {
            let Some(index) = *index else { continue };
            let k = pool.constant(i as f64 + 1.0);
            let here = pool.cmp(crate::expr::CmpOp::Eq, index, k);
            guard = Some(match guard {
                None => here,
                Some(g) => pool.and(g, here),
            });
        }
        guard
    }
}

impl<'a> Flattener<'a> {
    /// The picks of `subs` along `shape`, a subscript that is not known at translation time
    /// taken as varying (inside a function kept as code).
    pub(crate) fn varying_picks(
        &mut self,
        subs: &'a [ast::Subscript],
        shape: &[usize],
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<VaryingPicks, Diagnostic> {
        if subs.len() > shape.len() {
            return self
                .picks(subs, (shape, &[]), span, ctx)
                .map(|known| VaryingPicks {
                    known,
                    varying: Vec::new(),
                });
        }
        let mut picks = VaryingPicks {
            known: Vec::new(),
            varying: Vec::new(),
        };
        for (k, &n) in shape.iter().enumerate() {
            let Some(sub) = subs.get(k) else {
                picks.known.push(Pick::Many((0..n).collect()));
                picks.varying.push(None);
                continue;
            };
            let dim = [n];
            match self.picks(std::slice::from_ref(sub), (&dim, &[]), span, ctx) {
                Ok(mut one) => {
                    picks.known.push(one.remove(0));
                    picks.varying.push(None);
                }
                Err(error) => {
                    let ast::Subscript::Expr(e) = sub else {
                        return Err(error);
                    };
                    let symbolic = Ctx {
                        mode: Mode::Symbolic,
                        end: Some(n),
                        ..*ctx
                    };
                    let Tree::Leaf(index) = self.flatten_expr(e, &symbolic)? else {
                        return Err(error);
                    };
                    if self.dae.pool.as_const(index).is_some() {
                        return Err(error);
                    }
                    picks.known.push(Pick::Many((0..n).collect()));
                    picks.varying.push(Some(index));
                }
            }
        }
        Ok(picks)
    }

    /// The elements of `value` (of `shape`) that `picks` select, a varying subscript's
    /// dimension reduced to the element its value names (NaN out of range).
    pub(crate) fn varying_select(
        &mut self,
        value: &Val,
        shape: &[usize],
        picks: &VaryingPicks,
    ) -> Val {
        let selected = select(&value.leaves(), shape, &picks.known);
        let levels: Vec<Option<ExprId>> = (picks.known.iter().zip(&picks.varying))
            .filter(|(p, _)| matches!(p, Pick::Many(_)))
            .map(|(_, v)| *v)
            .collect();
        self.reduce_varying(&selected, &levels)
    }

    fn reduce_varying(&mut self, tree: &Val, levels: &[Option<ExprId>]) -> Val {
        let (Some((level, rest)), Tree::Node(kids)) = (levels.split_first(), tree) else {
            return tree.clone();
        };
        let kids: Vec<Val> = kids.iter().map(|k| self.reduce_varying(k, rest)).collect();
        let Some(index) = *level else {
            return Tree::Node(kids);
        };
        let nan = self.dae.pool.constant(f64::NAN);
        let Some(first) = kids.first() else {
            return Tree::Leaf(nan);
        };
        let mut value = first.map(&mut |_| Ok::<_, ()>(nan)).expect("no error");
        for (i, kid) in kids.iter().enumerate().rev() {
            let k = self.dae.pool.constant(i as f64 + 1.0);
            let here = self.dae.pool.cmp(crate::expr::CmpOp::Eq, index, k);
            value = self
                .choose(here, kid, &value)
                .expect("elements of one array share a size");
        }
        value
    }
}
