//! Records in functions (Modelica 12.2, 12.6): a record input, output or protected variable
//! is held as one local per scalar or array field, named by its path (`r.a`, `r.s.x`), after
//! a marker local `r` that names its class. A record's value ([`RecordValue`]) is its fields
//! by path, in declaration order: the value of a record variable of the function, of a record
//! component of the model, of a record constructor call, or of a call of a function that
//! returns a record.

use std::rc::Rc;

use super::{Flattener, Local, Locals, err};
use crate::dae::ScalarType;
use crate::diagnostics::Diagnostic;
use crate::flatten::classes::{ClassId, ROOT, TypeRef};
use crate::flatten::expr::{ClassConstant, Ctx, Mode, Selected, Val, select};
use crate::flatten::instance::{InstId, strip_quotes};
use crate::flatten::tree::Tree;
use crate::source::Span;
use crate::syntax::ast::{
    Arg, ClassBody, ComponentRef, ElementKind, Expr, ExprKind, ForIndex, RefPart, Subscript,
};

/// A record's fields by path within it (`a`, `s.x`), in declaration order.
pub(crate) type RecordValue = Vec<(String, Val)>;

/// What a call gives for one of its outputs.
pub(crate) enum Output {
    Value(Val),
    Record(RecordValue),
}

/// A scalar or array field of a record class, nested records' fields included by path.
pub(crate) struct Field<'a> {
    pub path: String,
    pub ty: ScalarType,
    pub dims: Vec<&'a Subscript>,
    pub default: Option<&'a Expr>,
    /// The class the field is declared in: where its default's names are looked up.
    pub scope: ClassId,
}

/// A record nests no deeper than this (a record containing itself is an error).
const MAX_NESTING: usize = 32;

impl<'a> Flattener<'a> {
    /// The fields of record class `class`, its bases' first; memoised per class.
    pub(crate) fn record_fields(
        &mut self,
        class: ClassId,
        span: Span,
    ) -> Result<Rc<Vec<Field<'a>>>, Diagnostic> {
        if let Some(fields) = self.record_field_lists.get(&class) {
            return Ok(fields.clone());
        }
        let mut fields = Vec::new();
        self.collect_fields(class, "", &mut fields, span, 0)?;
        let fields = Rc::new(fields);
        self.record_field_lists.insert(class, fields.clone());
        Ok(fields)
    }

    fn collect_fields(
        &mut self,
        class: ClassId,
        prefix: &str,
        fields: &mut Vec<Field<'a>>,
        span: Span,
        depth: usize,
    ) -> Result<(), Diagnostic> {
        let path = &self.tree.node(class).path;
        if depth > MAX_NESTING {
            return Err(err(
                span,
                format!("record `{path}` contains itself"),
                "a cycle",
            ));
        }
        let Some(def) = self.tree.node(class).def else {
            return Ok(());
        };
        let ClassBody::Long(comp) = &def.body else {
            return Ok(());
        };
        let parent = self.tree.node(class).parent.unwrap_or(ROOT);
        for element in &comp.elements {
            match &element.kind {
                ElementKind::Extends(ext) => {
                    if let Some(TypeRef::Class(base)) =
                        self.tree.resolve_excluding(&ext.base, class, parent)
                    {
                        let base = self.long_class(base);
                        self.collect_fields(base, prefix, fields, span, depth + 1)?;
                    }
                }
                ElementKind::Component(clause) => {
                    let (ty, type_dims, record) =
                        self.function_variable_type(&clause.type_name, class)?;
                    for decl in &clause.components {
                        let path = format!("{prefix}{}", decl.name.name);
                        if let Some(nested) = record {
                            if !decl.dims.is_empty() || !clause.dims.is_empty() {
                                return Err(arrays_of_records(decl.span));
                            }
                            let prefix = format!("{path}.");
                            fields.retain(|f| !f.path.starts_with(&prefix));
                            self.collect_fields(nested, &prefix, fields, span, depth + 1)?;
                            continue;
                        }
                        let mut dims: Vec<&'a Subscript> = decl.dims.iter().collect();
                        dims.extend(clause.dims.iter());
                        dims.extend(type_dims.iter().copied());
                        fields.retain(|f| f.path != path);
                        fields.push(Field {
                            path,
                            ty,
                            dims,
                            default: decl.modification.as_ref().and_then(|m| m.binding.as_ref()),
                            scope: class,
                        });
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The value of `e`, a record of class `class` (any record when `None`, as the value
    /// gives it): a record of the function or of the model, a record constructor call or a
    /// call of a function returning a record. Each of `class`'s fields is taken by its path.
    pub(crate) fn record_value(
        &mut self,
        e: &'a Expr,
        class: Option<ClassId>,
        ctx: &Ctx<'_>,
    ) -> Result<RecordValue, Diagnostic> {
        let value = match &e.kind {
            ExprKind::Ref(cref) => {
                let first = strip_quotes(&cref.parts[0].ident.name);
                let local = (ctx.locals)
                    .filter(|_| !cref.global)
                    .and_then(|l| l.get(first.as_ref()));
                match local {
                    Some(local) if local.record.is_some() => {
                        let locals = ctx.locals.expect("a local");
                        record_of_locals(locals, &dotted(cref, e.span)?, e.span)?
                    }
                    Some(_) => return Err(not_a_record(e.span)),
                    None if self.element_record(cref, ctx).is_none() => {
                        let Some(value) = self.class_record_constant(cref, ctx)? else {
                            return Err(not_a_record(e.span));
                        };
                        value
                    }
                    None => {
                        let Some(class) = class.or_else(|| self.record_class_of(e, ctx)) else {
                            return Err(not_a_record(e.span));
                        };
                        return self.model_record(cref, class, ctx, e.span);
                    }
                }
            }
            ExprKind::Call { func, args } => {
                let constructor = (func.as_name())
                    .and_then(|name| self.tree.resolve(&name, ctx.class))
                    .and_then(|t| match t {
                        TypeRef::Class(c) => Some(self.long_class(c)),
                        _ => None,
                    })
                    .filter(|&c| self.is_record(c));
                match constructor {
                    Some(c) => match self.operator_functions(c, "'constructor'").as_slice() {
                        [] => self.constructed(c, args, ctx, e.span)?,
                        functions => self.overloaded_constructor(functions, args, e.span, ctx)?,
                    },
                    None => {
                        let Some(function) = self.function_class(func, ctx) else {
                            return Err(not_a_record(e.span));
                        };
                        match self
                            .call_function_outputs(function, args, e.span, ctx)?
                            .into_iter()
                            .next()
                        {
                            Some(Output::Record(value)) => value,
                            _ => return Err(not_a_record(e.span)),
                        }
                    }
                }
            }
            ExprKind::Binary { op, lhs, rhs } => {
                self.binary_operation(*op, (lhs, rhs), e.span, ctx)?
            }
            ExprKind::Unary { op, operand } => self.unary_operation(*op, operand, e.span, ctx)?,
            ExprKind::If {
                branches,
                else_branch,
            } => self.record_if(branches, else_branch, ctx)?,
            // Each element is converted to `class` itself.
            ExprKind::Array(items) => {
                let elements = (items.iter())
                    .map(|item| self.record_value(item, class, ctx))
                    .collect::<Result<Vec<_>, _>>()?;
                return self.record_array(elements, e.span);
            }
            ExprKind::Comprehension { body, indices } => {
                return self.record_comprehension(body, indices, class, ctx);
            }
            _ => return Err(not_a_record(e.span)),
        };
        match class {
            None => Ok(value),
            Some(class) => self.as_class(value, class, e.span),
        }
    }

    /// `R(args)` of an operator record by the first of its `'constructor'` functions that
    /// takes the arguments.
    fn overloaded_constructor(
        &mut self,
        functions: &[ClassId],
        args: &'a [Arg],
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<RecordValue, Diagnostic> {
        let mut first_error = None;
        for &function in functions {
            match self.call_function_outputs(function, args, span, ctx) {
                Ok(outputs) => {
                    if let Some(Output::Record(value)) = outputs.into_iter().next() {
                        return Ok(value);
                    }
                }
                Err(d) => {
                    first_error.get_or_insert(d);
                }
            }
        }
        Err(first_error.unwrap_or_else(|| not_a_record(span)))
    }

    /// `if c1 then r1 elseif … else r` of records: the branch a condition known at
    /// translation time picks, else field by field `if`-expressions.
    fn record_if(
        &mut self,
        branches: &'a [(Expr, Expr)],
        otherwise: &'a Expr,
        ctx: &Ctx<'_>,
    ) -> Result<RecordValue, Diagnostic> {
        let mut value = self.record_value(otherwise, None, ctx)?;
        for (condition, branch) in branches.iter().rev() {
            let Tree::Leaf(c) = self.flatten_expr(condition, ctx)? else {
                return Err(err(
                    condition.span,
                    "an `if` condition must be a scalar",
                    "not a scalar",
                ));
            };
            let taken = self.record_value(branch, None, ctx)?;
            value = match self.dae.pool.as_const(c) {
                Some(k) if k != 0.0 => taken,
                Some(_) => value,
                None => {
                    let mut chosen = Vec::with_capacity(value.len());
                    for ((path, a), (_, b)) in taken.into_iter().zip(value) {
                        let Some(v) = self.choose(c, &a, &b) else {
                            return Err(err(
                                condition.span,
                                "the branches' records differ in size",
                                "sizes differ",
                            ));
                        };
                        chosen.push((path, v));
                    }
                    chosen
                }
            };
        }
        Ok(value)
    }

    /// `value`'s fields that record class `class` has, in its order.
    fn as_class(
        &mut self,
        mut value: RecordValue,
        class: ClassId,
        span: Span,
    ) -> Result<RecordValue, Diagnostic> {
        let fields = self.record_fields(class, span)?;
        let mut out = Vec::with_capacity(fields.len());
        for f in fields.iter() {
            let Some(k) = value.iter().position(|(p, _)| *p == f.path) else {
                return Err(err(
                    span,
                    format!(
                        "this record has no field `{}`, which `{}` has",
                        f.path,
                        self.tree.node(class).path
                    ),
                    "a field missing",
                ));
            };
            out.push(value.swap_remove(k));
        }
        Ok(out)
    }

    /// The record component `cref` of the model names, field by field.
    fn model_record(
        &mut self,
        cref: &'a ComponentRef,
        class: ClassId,
        ctx: &Ctx<'_>,
        span: Span,
    ) -> Result<RecordValue, Diagnostic> {
        let fields = self.record_fields(class, span)?;
        let paths: Vec<&str> = fields.iter().map(|f| f.path.as_str()).collect();
        self.model_record_fields(cref, &paths, ctx, span)
    }

    /// The fields `paths` of the record component `cref` of the model names.
    pub(crate) fn model_record_fields(
        &mut self,
        cref: &'a ComponentRef,
        paths: &[&str],
        ctx: &Ctx<'_>,
        span: Span,
    ) -> Result<RecordValue, Diagnostic> {
        let Some(scope) = ctx.inst else {
            return Err(not_a_record(span));
        };
        // An array of records is its fields' arrays, element by element.
        let insts = self.record_instances(cref, scope, ctx)?;
        let mut value = Vec::with_capacity(paths.len());
        for path in paths {
            let fields = insts.map(&mut |&inst| self.instance_field(inst, path, cref, ctx))?;
            value.push(((*path).to_owned(), nested(fields)));
        }
        Ok(value)
    }

    /// The field `path` of the record instance `inst` (named `cref` in messages).
    fn instance_field(
        &mut self,
        inst: InstId,
        path: &str,
        cref: &ComponentRef,
        ctx: &Ctx<'_>,
    ) -> Result<Val, Diagnostic> {
        let mut at = inst;
        let mut names = path.split('.').peekable();
        let mut vars = None;
        while let Some(name) = names.next() {
            match (self.element_selection(at, name), names.peek()) {
                (Some(Selected::Insts(Tree::Leaf(child))), Some(_)) => at = child,
                (Some(Selected::Vars(v)), None) => vars = Some(v),
                _ => break,
            }
        }
        let Some(vars) = vars else {
            return Err(err(
                cref.span,
                format!("`{}` has no field `{path}`", cref.dotted()),
                "a field missing",
            ));
        };
        vars.map(&mut |&v| self.var_value(v, ctx, cref.span))
    }

    /// The record instances `cref` names from instance `scope`: one, or an array of them
    /// (its last part unsubscripted, or subscripted with ranges), its subscripts known.
    pub(crate) fn record_instances(
        &mut self,
        cref: &'a ComponentRef,
        scope: InstId,
        ctx: &Ctx<'_>,
    ) -> Result<Tree<InstId>, Diagnostic> {
        let mut inst = scope;
        for (k, part) in cref.parts.iter().enumerate() {
            let Some(Selected::Insts(tree)) =
                self.element_selection(inst, &strip_quotes(&part.ident.name))
            else {
                return Err(err(
                    cref.span,
                    format!("`{}` is not a record component", cref.dotted()),
                    "not a record",
                ));
            };
            let tree = if part.subscripts.is_empty() {
                tree
            } else {
                let dims = tree.shape();
                let picks = self.picks(&part.subscripts, (&dims, &[]), cref.span, ctx)?;
                select(&tree.leaves(), &dims, &picks)
            };
            match tree {
                Tree::Leaf(child) => inst = child,
                tree if k + 1 == cref.parts.len() => return Ok(tree),
                Tree::Node(_) => {
                    return Err(err(
                        part.ident.span,
                        "a field of each element of an array of records is not supported here: subscript the array",
                        "an array of records",
                    ));
                }
            }
        }
        Ok(Tree::Leaf(inst))
    }

    /// `{r1, r2, …}` of records (elements of one class): each field the array of the
    /// elements' values of it.
    fn record_array(
        &mut self,
        elements: Vec<RecordValue>,
        span: Span,
    ) -> Result<RecordValue, Diagnostic> {
        let Some(first) = elements.first() else {
            return Err(err(span, "an empty array of records", "no elements"));
        };
        let paths: Vec<String> = first.iter().map(|(p, _)| p.clone()).collect();
        let mut columns: Vec<Vec<Val>> = vec![Vec::with_capacity(elements.len()); paths.len()];
        for element in elements {
            let same = element.len() == paths.len()
                && element.iter().zip(&paths).all(|((p, _), q)| p == q);
            if !same {
                return Err(err(
                    span,
                    "the elements of an array of records must be records of one class",
                    "records of different classes",
                ));
            }
            for (column, (_, value)) in columns.iter_mut().zip(element) {
                column.push(value);
            }
        }
        Ok(paths
            .into_iter()
            .zip(columns)
            .map(|(p, column)| (p, Tree::Node(column)))
            .collect())
    }

    /// `{body for i in r, j in s}` of records: the last iterator is the outermost dimension.
    fn record_comprehension(
        &mut self,
        body: &'a Expr,
        indices: &'a [ForIndex],
        class: Option<ClassId>,
        ctx: &Ctx<'_>,
    ) -> Result<RecordValue, Diagnostic> {
        let Some((last, inner)) = indices.split_last() else {
            return self.record_value(body, class, ctx);
        };
        let Some(range) = &last.range else {
            return Err(err(
                body.span,
                "an array constructor's iterator needs its range",
                "no range",
            ));
        };
        let (values, boolean) = self.range_values(range, ctx)?;
        let name = strip_quotes(&last.name.name);
        let mut elements = Vec::with_capacity(values.len());
        for value in values {
            let loops = ctx.loops_with(&name, value, boolean);
            let at = Ctx {
                loops: &loops,
                ..*ctx
            };
            elements.push(self.record_comprehension(body, inner, class, &at)?);
        }
        self.record_array(elements, body.span)
    }

    /// The record class of the one record component of the model `cref` names, if it names
    /// one.
    pub(crate) fn named_record(&self, cref: &ComponentRef, ctx: &Ctx<'_>) -> Option<ClassId> {
        let inst = self.named_instance(cref, ctx)?;
        self.insts[inst.0 as usize]
            .class
            .filter(|&c| self.is_record(c))
    }

    /// The value of a record constant of an enclosing class or package that `cref` names
    /// (`Modelica.ComplexMath.j`), its binding evaluated where it is declared; `None` when
    /// `cref` names no such constant.
    fn class_record_constant(
        &mut self,
        cref: &'a ComponentRef,
        ctx: &Ctx<'_>,
    ) -> Result<Option<RecordValue>, Diagnostic> {
        let Some((scope, record, binding)) = self.class_record_declaration(cref, ctx) else {
            return Ok(None);
        };
        if cref.parts.iter().any(|p| !p.subscripts.is_empty()) {
            return Err(err(
                cref.span,
                "an element of an array of record constants is not supported",
                "subscripted",
            ));
        }
        let at = Ctx::of_class(scope);
        self.record_value(binding, Some(record), &at).map(Some)
    }

    /// The class declaring the record constant `cref` names, its record class and binding.
    pub(crate) fn class_record_declaration(
        &mut self,
        cref: &'a ComponentRef,
        ctx: &Ctx<'_>,
    ) -> Option<(ClassId, ClassId, &'a Expr)> {
        match self.class_constant_declaration(cref, ctx).ok()? {
            ClassConstant::Declared((scope, _, clause, binding)) => {
                let record = self.record_class_named(&clause.type_name, scope)?;
                Some((scope, record, binding))
            }
            ClassConstant::Literal(_) => None,
        }
    }

    /// The record class of the elements of the array of records (or of the element) `cref`
    /// names, whatever its subscripts pick.
    pub(crate) fn element_record(&self, cref: &ComponentRef, ctx: &Ctx<'_>) -> Option<ClassId> {
        let mut inst = ctx.inst?;
        for part in &cref.parts {
            match self.element_selection(inst, &strip_quotes(&part.ident.name)) {
                Some(Selected::Insts(tree)) => inst = *tree.leaves().first()?,
                _ => return None,
            }
        }
        self.insts[inst.0 as usize]
            .class
            .filter(|&c| self.is_record(c))
    }

    /// The one component of the model `cref` names, if it names one.
    pub(super) fn named_instance(&self, cref: &ComponentRef, ctx: &Ctx<'_>) -> Option<InstId> {
        let mut inst = ctx.inst?;
        for part in &cref.parts {
            if !part.subscripts.is_empty() {
                return None;
            }
            match self.element_selection(inst, &strip_quotes(&part.ident.name)) {
                Some(Selected::Insts(Tree::Leaf(child))) => inst = child,
                _ => return None,
            }
        }
        Some(inst)
    }

    /// The record class of an equation's sides, when either is a record (a record component,
    /// a function returning a record, an operation of operator records).
    pub(crate) fn record_equation_class(
        &mut self,
        lhs: &'a Expr,
        rhs: &'a Expr,
        ctx: &Ctx<'_>,
    ) -> Option<ClassId> {
        self.record_class_of(lhs, ctx)
            .or_else(|| self.record_class_of(rhs, ctx))
    }

    /// `lhs = rhs` of records of class `class`: one equation per scalar field (Modelica
    /// 10.6.2: a record equation is its fields' equations).
    pub(crate) fn record_equation(
        &mut self,
        (lhs, rhs): (&'a Expr, &'a Expr),
        class: ClassId,
        (span, component): (Span, std::sync::Arc<str>),
        ctx: &Ctx<'_>,
    ) -> Result<Vec<crate::dae::Equation>, Diagnostic> {
        let left = self.record_value(lhs, Some(class), ctx)?;
        let right = self.record_value(rhs, Some(class), ctx)?;
        self.field_equations(left, right, (span, component))
    }

    /// `left.f = right.f` for each field, element by element.
    fn field_equations(
        &mut self,
        left: RecordValue,
        right: RecordValue,
        (span, component): (Span, std::sync::Arc<str>),
    ) -> Result<Vec<crate::dae::Equation>, Diagnostic> {
        let mut equations = Vec::new();
        for ((path, l), (_, r)) in left.into_iter().zip(right) {
            let (l, r) = (l.leaves(), r.leaves());
            if l.len() != r.len() {
                return Err(err(
                    span,
                    format!(
                        "field `{path}` has {} elements on one side and {} on the other",
                        l.len(),
                        r.len()
                    ),
                    "sizes differ",
                ));
            }
            for (l, r) in l.into_iter().zip(r) {
                let place = (span, component.clone());
                let origin = crate::dae::EquationOrigin::Model;
                equations.push(crate::dae::Equation::between(
                    &mut self.dae.pool,
                    l,
                    r,
                    origin,
                    place,
                ));
            }
        }
        Ok(equations)
    }

    /// The equations `r.f = v` of record component `r` (`cref`) and record value `value`.
    pub(crate) fn record_value_equations(
        &mut self,
        cref: &'a ComponentRef,
        value: RecordValue,
        (span, component): (Span, std::sync::Arc<str>),
        ctx: &Ctx<'_>,
    ) -> Result<Vec<crate::dae::Equation>, Diagnostic> {
        let paths: Vec<&str> = value.iter().map(|(p, _)| p.as_str()).collect();
        let targets = self.model_record_fields(cref, &paths, ctx, cref.span)?;
        self.field_equations(targets, value, (span, component))
    }

    /// `class(args)`: the fields the arguments give (positional in declaration order, or by
    /// name), the others their defaults.
    fn constructed(
        &mut self,
        class: ClassId,
        args: &'a [Arg],
        ctx: &Ctx<'_>,
        span: Span,
    ) -> Result<RecordValue, Diagnostic> {
        let names = self.record_field_names(class);
        let mut given: Vec<Option<&'a Expr>> = vec![None; names.len()];
        let mut position = 0;
        for arg in args {
            let k = match &arg.name {
                Some(name) => names.iter().position(|n| *n == name.name),
                None => {
                    position += 1;
                    Some(position - 1).filter(|&k| k < names.len())
                }
            };
            let Some(k) = k else {
                return Err(err(
                    arg.value.span,
                    format!("record `{}` has no such field", self.tree.node(class).path),
                    "no such field",
                ));
            };
            given[k] = Some(&arg.value);
        }
        let fields = self.record_fields(class, span)?;
        let mut value = Vec::with_capacity(fields.len());
        for (name, arg) in names.iter().zip(given) {
            let prefix = format!("{name}.");
            let own: Vec<&Field<'a>> = (fields.iter())
                .filter(|f| f.path == *name || f.path.starts_with(&prefix))
                .collect();
            match arg {
                Some(e) if own.len() == 1 && own[0].path == *name => {
                    value.push((name.clone(), self.flatten_expr(e, ctx)?));
                }
                Some(e) => {
                    let nested = self.record_value(e, None, ctx)?;
                    for f in &own {
                        let inner = &f.path[prefix.len()..];
                        let Some((_, v)) = nested.iter().find(|(p, _)| p == inner) else {
                            return Err(not_a_record(e.span));
                        };
                        value.push((f.path.clone(), v.clone()));
                    }
                }
                None => {
                    for f in own {
                        let default = self.field_default(f, ctx.mode, span)?;
                        value.push((f.path.clone(), default));
                    }
                }
            }
        }
        Ok(value)
    }

    /// A field's declared default, seen from the record class.
    pub(super) fn field_default(
        &mut self,
        f: &Field<'a>,
        mode: Mode,
        span: Span,
    ) -> Result<Val, Diagnostic> {
        let Some(default) = f.default else {
            return Err(err(
                span,
                format!(
                    "the record's field `{}` is given no value and has no default",
                    f.path
                ),
                "a field without a value",
            ));
        };
        let at = Ctx {
            inst: None,
            class: f.scope,
            loops: &[],
            mode,
            end: None,
            locals: None,
        };
        self.flatten_expr(default, &at)
    }

    /// The field modifications `m` of record variable `p` applied to its locals (each
    /// `field = value` evaluated among the function's variables).
    pub(super) fn modify_fields(
        &mut self,
        locals: &mut Locals,
        p: &super::Param<'a>,
        m: &'a crate::syntax::ast::Modification,
        mode: Mode,
    ) -> Result<(), Diagnostic> {
        for argument in &m.arguments {
            let crate::syntax::ast::Argument::Modify {
                name,
                modification: Some(inner),
                span,
                ..
            } = argument
            else {
                continue;
            };
            let Some(e) = &inner.binding else {
                continue;
            };
            let key = format!("{}.{}", p.name, name.dotted());
            if !locals.contains_key(&key) {
                return Err(err(
                    *span,
                    format!("`{}` has no field `{}`", p.name, name.dotted()),
                    "no such field",
                ));
            }
            let value = self.local_expr(e, p.scope, locals, mode)?;
            locals[&key].value = Some(value);
        }
        Ok(())
    }

    /// The locals of record variable `name` of class `class`, with `value`, or where `None`
    /// its fields' declared defaults, else zero (as tools start a record's fields: a
    /// function need not assign each field of a record it returns).
    pub(super) fn insert_record(
        &mut self,
        locals: &mut Locals,
        (name, class): (&str, ClassId),
        value: Option<RecordValue>,
        (input, mode, span): (bool, Mode, Span),
    ) -> Result<(), Diagnostic> {
        locals.insert(
            name.to_owned(),
            Local {
                value: None,
                ty: ScalarType::Real,
                input,
                record: Some(class),
                text: None,
            },
        );
        let fields = self.record_fields(class, span)?;
        let mut given = value.map(|v| v.into_iter());
        for f in fields.iter() {
            let value = match &mut given {
                Some(values) => values.next().map(|(_, v)| v),
                None => match f.default {
                    Some(_) => Some(self.field_default(f, mode, span)?),
                    None => self
                        .shape_of(&f.dims, f.scope, &Locals::new())?
                        .map(|shape| {
                            let zero = self.dae.pool.zero();
                            super::filled(&shape, zero)
                        }),
                },
            };
            locals.insert(
                format!("{name}.{}", f.path),
                Local {
                    value,
                    ty: f.ty,
                    input,
                    record: None,
                    text: None,
                },
            );
        }
        Ok(())
    }
}

/// The values of the locals of record `name`, by path.
pub(super) fn record_of_locals(
    locals: &Locals,
    name: &str,
    span: Span,
) -> Result<RecordValue, Diagnostic> {
    let prefix = format!("{name}.");
    let mut value = Vec::new();
    for (key, local) in locals
        .iter()
        .filter(|(k, l)| k.starts_with(&prefix) && l.record.is_none())
    {
        let Some(v) = &local.value else {
            return Err(err(
                span,
                format!("`{key}` is read before it is assigned"),
                "no value yet",
            ));
        };
        value.push((key[prefix.len()..].to_owned(), v.clone()));
    }
    Ok(value)
}

/// The field local a reference `r.a` or `r.s.x[i]` of a record variable reads, and the part
/// whose subscripts select from it.
pub(super) fn field_local<'l, 'c>(
    cref: &'c ComponentRef,
    locals: &'l Locals,
) -> Result<(String, &'l Local, &'c RefPart), Diagnostic> {
    let (last, init) = cref.parts.split_last().expect("a reference has a part");
    if init.iter().any(|p| !p.subscripts.is_empty()) {
        return Err(arrays_of_records(cref.span));
    }
    let name = (cref.parts.iter())
        .map(|p| strip_quotes(&p.ident.name).into_owned())
        .collect::<Vec<_>>()
        .join(".");
    match locals.get(&name) {
        Some(local) if local.record.is_none() => Ok((name, local, last)),
        Some(_) => Err(err(
            cref.span,
            format!(
                "`{name}` is a record: mocca takes a whole record only where a record is expected"
            ),
            "a record",
        )),
        None => Err(err(
            cref.span,
            format!("`{name}` is not a field of this record"),
            "no such field",
        )),
    }
}

/// The record `target` names whole, a record variable or a record field of one (`r`,
/// `r.s`): its name, and its class where a declaration gives it.
pub(super) fn record_target(
    locals: &Locals,
    target: &ComponentRef,
) -> Option<(String, Option<ClassId>)> {
    let first = locals.get(target.parts[0].ident.name.as_str())?;
    first.record?;
    if target.parts.iter().any(|p| !p.subscripts.is_empty()) {
        return None;
    }
    let name = (target.parts.iter())
        .map(|p| strip_quotes(&p.ident.name).into_owned())
        .collect::<Vec<_>>()
        .join(".");
    if target.parts.len() == 1 {
        return Some((name, first.record));
    }
    let prefix = format!("{name}.");
    (!locals.contains_key(&name) && locals.keys().any(|k| k.starts_with(&prefix)))
        .then_some((name, None))
}

/// `name := value` of a whole record variable.
pub(super) fn assign_record(
    locals: &mut Locals,
    name: &str,
    value: RecordValue,
    span: Span,
) -> Result<(), Diagnostic> {
    let first = name.split('.').next().unwrap_or(name);
    if locals.get(first).is_some_and(|l| l.input) {
        return Err(err(
            span,
            format!("`{name}` is an input: a function cannot assign it (Modelica 12.2)"),
            "an input",
        ));
    }
    for (path, v) in value {
        let Some(local) = locals.get_mut(&format!("{name}.{path}")) else {
            return Err(err(
                span,
                format!("`{name}` has no field `{path}`, which the value assigned has"),
                "no such field",
            ));
        };
        local.value = Some(v);
    }
    Ok(())
}

/// The dotted name of a reference without subscripts (`r.s`).
pub(super) fn dotted(cref: &ComponentRef, span: Span) -> Result<String, Diagnostic> {
    if cref.parts.iter().any(|p| !p.subscripts.is_empty()) {
        return Err(arrays_of_records(span));
    }
    Ok(cref
        .parts
        .iter()
        .map(|p| strip_quotes(&p.ident.name).into_owned())
        .collect::<Vec<_>>()
        .join("."))
}

fn not_a_record(span: Span) -> Diagnostic {
    err(
        span,
        "a record is expected here: a record variable or component, a record constructor call or a call of a function returning a record",
        "not a record",
    )
}

pub(super) fn arrays_of_records(span: Span) -> Diagnostic {
    err(
        span,
        "arrays of records in functions are not supported yet",
        "not supported yet",
    )
}

/// An array of values as one value: the array's shape, then each element's.
fn nested(tree: Tree<Val>) -> Val {
    match tree {
        Tree::Leaf(value) => value,
        Tree::Node(kids) => Tree::Node(kids.into_iter().map(nested).collect()),
    }
}
