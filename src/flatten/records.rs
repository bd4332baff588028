//! Values bound to whole record components (Modelica 12.6): `parameter Medium medium =
//! Water()`, `CellData cellData = CellData(Qnom = 5)`, `Pipe pipe(medium = medium)`.
//!
//! A record component is instantiated like any other, one variable per field, so its value
//! becomes bindings of its fields. A record constructor call `S(a = 1)` makes the component
//! an instance of `S` (which gives every field `S`'s default, with the modifications its
//! `extends` clauses write) and its arguments modifications of the fields; a reference to
//! another record gives each field the referenced record's field. A modification written on
//! a field itself wins over the record's value.

use super::Flattener;
use super::classes::{ClassId, ROOT, TypeRef};
use super::expr::{Mode, Selected, Val};
use super::instance::InstId;
use super::modifier::{Bound, Mod};
use super::tree::Tree;
use crate::diagnostics::Diagnostic;
use crate::syntax::ast::{ClassBody, ClassKind, ComponentRef, ElementKind, ExprKind};

fn err(span: crate::source::Span, msg: impl Into<String>, label: &str) -> Diagnostic {
    Diagnostic::error(msg).at(span, label)
}

impl<'a> Flattener<'a> {
    /// Whether `class` is a record.
    pub(crate) fn is_record(&self, class: ClassId) -> bool {
        self.tree
            .node(class)
            .def
            .is_some_and(|d| matches!(d.kind, ClassKind::Record | ClassKind::OperatorRecord))
    }

    /// Moves the value bound to a record component of class `class` into its fields'
    /// modifications; the class the component is then an instance of (a constructor's).
    pub(crate) fn record_binding(
        &mut self,
        modification: &mut Mod<'a>,
        class: ClassId,
    ) -> Result<ClassId, Diagnostic> {
        let mut b = modification.binding.take().expect("a record binding");
        // An element of an array of records bound to an array of records (`rc = {R(…),
        // R(…)}`): that element's value.
        while let (ExprKind::Array(items), Some((&k, rest))) =
            (&b.expr.kind, b.select.split_first())
        {
            let Some(item) = items.get(k) else {
                break;
            };
            b = Bound {
                expr: item,
                select: rest.to_vec(),
                ..b
            };
        }
        // Each field bound to the same field of the value: a record's, or one computed once
        // (a function's result, an operation of operator records, an `if` of records).
        let by_reference = !b.field.is_empty()
            || matches!(
                b.expr.kind,
                ExprKind::Ref(_)
                    | ExprKind::Binary { .. }
                    | ExprKind::Unary { .. }
                    | ExprKind::If { .. }
            )
            || self.is_function_call(b.expr, b.class_scope);
        if by_reference {
            for name in self.record_field_names(class) {
                let child = modification.children.entry(name.clone()).or_default();
                if child.binding.is_none() {
                    let mut field = b.field.clone();
                    field.push(name);
                    child.binding = Some(Bound { field, ..b.clone() });
                }
            }
            return Ok(class);
        }
        let ExprKind::Call { func, args } = &b.expr.kind else {
            return Err(err(
                b.expr.span,
                "this value of a record is not supported: give a record constructor call or another record",
                "not supported yet",
            ));
        };
        let constructor = func
            .as_name()
            .and_then(|name| self.tree.resolve(&name, b.class_scope))
            .and_then(|t| match t {
                TypeRef::Class(c) => Some(self.long_class(c)),
                TypeRef::Builtin(_) | TypeRef::Clock => None,
            })
            .filter(|&c| self.is_record(c));
        let Some(constructor) = constructor else {
            return Err(err(
                b.expr.span,
                format!(
                    "`{}` is neither a record constructor nor a function",
                    func.dotted()
                ),
                "not a record constructor",
            ));
        };
        let fields = self.record_field_names(constructor);
        let mut position = 0;
        for arg in args {
            let name = match &arg.name {
                Some(name) => name.name.clone(),
                None => {
                    position += 1;
                    fields.get(position - 1).cloned().ok_or_else(|| {
                        err(
                            arg.value.span,
                            format!(
                                "`{}` has {} fields, more arguments are given",
                                func.dotted(),
                                fields.len()
                            ),
                            "an extra argument",
                        )
                    })?
                }
            };
            if !fields.contains(&name) {
                return Err(err(
                    arg.value.span,
                    format!("record `{}` has no field `{name}`", func.dotted()),
                    "no such field",
                ));
            }
            let child = modification.children.entry(name).or_default();
            if child.binding.is_none() {
                child.binding = Some(Bound {
                    expr: &arg.value,
                    field: Vec::new(),
                    ..b.clone()
                });
            }
        }
        Ok(constructor)
    }

    /// A record's fields in declaration order, its bases' first.
    pub(crate) fn record_field_names(&self, class: ClassId) -> Vec<String> {
        let mut names = Vec::new();
        self.collect_field_names(self.long_class(class), &mut names, 0);
        names
    }

    fn collect_field_names(&self, class: ClassId, names: &mut Vec<String>, depth: usize) {
        let Some(def) = self.tree.node(class).def else {
            return;
        };
        let ClassBody::Long(comp) = &def.body else {
            return;
        };
        if depth > 32 {
            return;
        }
        let parent = self.tree.node(class).parent.unwrap_or(ROOT);
        for element in &comp.elements {
            match &element.kind {
                ElementKind::Extends(ext) => {
                    if let Some(TypeRef::Class(base)) =
                        self.tree.resolve_excluding(&ext.base, class, parent)
                    {
                        self.collect_field_names(self.long_class(base), names, depth + 1);
                    }
                }
                ElementKind::Component(clause) => {
                    for decl in &clause.components {
                        if !names.contains(&decl.name.name) {
                            names.push(decl.name.name.clone());
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// Whether `e` calls a function (not a record constructor), seen from `scope`.
    fn is_function_call(&self, e: &crate::syntax::ast::Expr, scope: ClassId) -> bool {
        let ExprKind::Call { func, .. } = &e.kind else {
            return false;
        };
        func.as_name().is_some_and(|name| {
            self.function_class_named(
                &name,
                &super::expr::Ctx {
                    inst: None,
                    class: scope,
                    loops: &[],
                    mode: Mode::Constant,
                    end: None,
                    locals: None,
                },
            )
            .is_some()
        })
    }

    /// The field `b.field` of the record `b.expr` gives, as the values of its variables (the
    /// element `b.select` of it):
    /// a record component it names, or the record it computes (a function's result, an
    /// operation of operator records; computed once for all the fields).
    pub(crate) fn record_field(&mut self, b: &Bound<'a>, mode: Mode) -> Result<Val, Diagnostic> {
        let out_of_range = || {
            err(
                b.expr.span,
                "this element is not in the record's value",
                "no such element",
            )
        };
        if !matches!(b.expr.kind, ExprKind::Ref(_)) {
            let key = (std::ptr::from_ref(b.expr), b.scope, b.class_scope, mode);
            if !self.record_values.contains_key(&key) {
                let ctx = super::expr::Ctx { mode, ..b.ctx() };
                let value = self.record_value(b.expr, None, &ctx)?;
                self.record_values.insert(key, value);
            }
            let path = b.field.join(".");
            return match self.record_values[&key].iter().find(|(p, _)| *p == path) {
                Some((_, v)) => v.select(&b.select).cloned().ok_or_else(out_of_range),
                None => Err(err(
                    b.expr.span,
                    format!("the record this call returns has no field `{path}`"),
                    "no such field",
                )),
            };
        }
        let ExprKind::Ref(cref) = &b.expr.kind else {
            return Err(err(
                b.expr.span,
                "a record value here must name a record",
                "not a record",
            ));
        };
        let mut inst = self.record_instance(cref, b.scope, &b.ctx())?;
        // The subscripts of an element of an array of records on the way select it.
        let mut select: &[usize] = &b.select;
        let (last, path) = b.field.split_last().expect("a field path");
        for name in path {
            inst = match self.element_selection(inst, name) {
                Some(Selected::Insts(Tree::Leaf(child))) => child,
                Some(Selected::Insts(tree)) => {
                    let depth = tree.shape().len();
                    match select.get(..depth).and_then(|at| tree.select(at)) {
                        Some(Tree::Leaf(child)) => {
                            select = &select[depth..];
                            *child
                        }
                        _ => return Err(self.no_field(cref, name)),
                    }
                }
                _ => return Err(self.no_field(cref, name)),
            };
        }
        match self.element_selection(inst, last) {
            Some(Selected::Vars(vars)) => {
                let ctx = super::expr::Ctx { mode, ..b.ctx() };
                let value = vars.map(&mut |&v| self.var_value(v, &ctx, b.expr.span))?;
                value.select(select).cloned().ok_or_else(out_of_range)
            }
            _ => Err(self.no_field(cref, last)),
        }
    }

    fn no_field(&self, cref: &ComponentRef, name: &str) -> Diagnostic {
        err(
            cref.span,
            format!(
                "`{}` has no field `{name}` (or it is not a scalar or array of scalars)",
                cref.dotted()
            ),
            "no such field",
        )
    }

    /// The whole of element `name` of instance `inst`.
    pub(crate) fn element_selection(&self, inst: InstId, name: &str) -> Option<Selected> {
        let (slot, elem) = self.insts[inst.0 as usize].elements.get_full(name)?;
        let picks: Vec<super::expr::Pick> = (elem.dims.iter())
            .map(|&n| super::expr::Pick::Many((0..n).collect()))
            .collect();
        Some(
            self.element_content(inst, slot)
                .select(&elem.dims.clone(), &picks),
        )
    }

    /// The one record instance `cref` names, seen from instance `scope` (where the value is
    /// written).
    pub(crate) fn record_instance(
        &mut self,
        cref: &'a ComponentRef,
        scope: InstId,
        ctx: &super::expr::Ctx<'_>,
    ) -> Result<InstId, Diagnostic> {
        match self.record_instances(cref, scope, ctx)? {
            Tree::Leaf(inst) => Ok(inst),
            Tree::Node(_) => Err(err(
                cref.span,
                format!("`{}` is an array of records: subscript it", cref.dotted()),
                "an array of records",
            )),
        }
    }
}
