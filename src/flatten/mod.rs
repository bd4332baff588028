//! Flattening (SPEC §3): parsed classes → the flat DAE. Name lookup, instantiation with
//! modifier merging, parameter evaluation where sizes and conditions need it, scalarisation of
//! arrays and for-equations, and connection semantics including `weak` (SPEC §2.1).

mod algorithm;
mod array_functions;
#[cfg(test)]
mod array_scaling;
mod classes;
mod clocks;
mod connect;
mod elements;
mod equations;
mod experiment;
mod expr;
mod function;
mod implicit_range;
mod inheritance;
mod instance;
mod modifier;
mod prefixes;
mod records;
mod restrictions;
mod strings;
mod tables;
mod tree;
mod types;
mod unsupported;
mod variability;
mod when;

use std::collections::HashSet;

use classes::{ClassId, ClassTree};
use expr::{Ctx, Mode};
use instance::{InstId, Instance};
use modifier::{Bound, Mod};

use crate::dae::{Dae, Equation, EquationOrigin, ScalarType, StateSelect, VarKind};
use crate::diagnostics::{self, Diagnostic};
use crate::expr::hash::{FxHashMap, FxHashSet};
use crate::expr::{ExprId, Node, VarId};
use crate::source::Span;
use crate::syntax::ast::{self, Causality, ClassKind, ExprKind, StoredDefinition};

pub use experiment::models_with_experiment;
pub use instance::strip_quotes;

/// `-p NAME=VALUE`: a modification of the model applied outermost.
pub struct Override {
    pub path: Vec<String>,
    pub value: ast::Expr,
    pub span: Span,
}

/// What to flatten.
pub struct Request<'r> {
    /// Every parsed file, the stdlib included.
    pub files: &'r [&'r StoredDefinition],
    /// The file whose last class is the default model.
    pub default_file: &'r StoredDefinition,
    /// `--model NAME` (a dotted path, or a simple name found anywhere in the tree).
    pub model: Option<&'r str>,
    pub overrides: &'r [Override],
    /// The parser's "not supported" diagnostics, reported if their class is used.
    pub unsupported: &'r [Diagnostic],
    /// The most scalars (variables, component instances, array elements) one declaration,
    /// one array expression or the whole model may have: checked before allocating them.
    pub max_size: usize,
}

/// [`Request::max_size`] unless the user raises it (`--max-size`).
pub const DEFAULT_MAX_SIZE: usize = 100_000_000;

/// The flat DAE and the warnings met on the way, or the errors.
pub fn flatten(request: &Request<'_>) -> Result<(Dae, Vec<Diagnostic>), Vec<Diagnostic>> {
    let (tree, mut diags) = ClassTree::build(request.files);
    let model = match select_model(&tree, request) {
        Ok(m) => m,
        Err(d) => {
            diags.push(d);
            return Err(diags);
        }
    };
    let mut f = Flattener {
        tree,
        insts: Vec::new(),
        dae: Dae::default(),
        pending: Vec::new(),
        const_cache: FxHashMap::default(),
        array_values: FxHashMap::default(),
        diags,
        connections: Vec::new(),
        instantiating: Vec::new(),
        extending: Vec::new(),
        causality: Vec::new(),
        checked_classes: FxHashSet::default(),
        used_classes: FxHashSet::default(),
        bases: FxHashMap::default(),
        functions: FxHashMap::default(),
        record_field_lists: FxHashMap::default(),
        record_values: FxHashMap::default(),
        call_depth: 0,
        inlining: Vec::new(),
        varying_flow: false,
        writes: None,
        write_guard: None,
        keeping: false,
        kept: Default::default(),
        external_objects: FxHashMap::default(),
        tables: FxHashMap::default(),
        max_size: request.max_size,
        free_parameters: FxHashSet::default(),
        evaluate: FxHashSet::default(),
        folded: 0,
        clocks: Default::default(),
    };
    // Unquoted as flat variable names are, so that the printed name reads back to itself.
    f.dae.model = instance::strip_quotes(&f.tree.node(model).name).into_owned();
    f.dae.model_span = f.tree.node(model).def.map(|def| def.name.span);
    if let Some(def) = f.tree.node(model).def {
        f.dae.experiment = experiment::experiment_of(def);
    }
    let outer = overrides_mod(request.overrides, model);
    let root = f.instantiate(
        model,
        String::new(),
        outer,
        None,
        (Default::default(), false),
    );
    debug_assert_eq!(root, InstId(0));
    if !diagnostics::has_errors(&f.diags) {
        f.bindings_and_attributes();
        f.check_parameter_values();
        f.free_parameters();
        f.all_equations();
        f.connection_equations();
        f.clocked_partitions();
        f.mark_states();
        f.mark_held();
        f.mark_evaluated();
    }
    let outside = unsupported::relevant(&f.tree, &f.used_classes, request.unsupported);
    if !outside.is_empty() {
        // The model's other errors are most likely consequences of the missing constructs.
        return Err(outside);
    }
    let diags = without_repeats(f.diags);
    if diagnostics::has_errors(&diags) {
        Err(diags)
    } else {
        Ok((f.dae, diags))
    }
}

impl Flattener<'_> {
    /// Marks the parameters and constants whose values the translation used.
    fn mark_evaluated(&mut self) {
        for (&v, value) in &self.const_cache {
            if value.is_some() {
                self.dae.variables[v.0 as usize].evaluated = true;
            }
        }
    }
}

/// The diagnostics, each reported once: a value that fails to evaluate (a bad `-p` override,
/// say) fails again at every use, with the same message at the same place.
fn without_repeats(diags: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut seen = HashSet::new();
    diags
        .into_iter()
        .filter(|d| seen.insert((d.message.clone(), d.primary.as_ref().map(|(s, _)| *s))))
        .collect()
}

fn select_model(tree: &ClassTree<'_>, request: &Request<'_>) -> Result<ClassId, Diagnostic> {
    let id = match request.model {
        Some(name) => tree
            .find_path(name)
            .or_else(|| tree.find_by_simple_name(name))
            .ok_or_else(|| {
                Diagnostic::error(format!("no class named `{name}` in the loaded files"))
            })?,
        None => tree
            .last_class_of(request.default_file)
            .ok_or_else(|| Diagnostic::error("the input defines no class to flatten"))?,
    };
    let def = tree
        .node(id)
        .def
        .ok_or_else(|| Diagnostic::error(format!("`{}` has no definition", tree.node(id).path)))?;
    match def.kind {
        ClassKind::Model | ClassKind::Class | ClassKind::Block => Ok(id),
        other => Err(Diagnostic::error(format!(
            "`{}` is a {}; only a model, block or class can be flattened",
            tree.node(id).path,
            other.keyword()
        ))
        .at(def.name.span, "not a model")),
    }
}

fn overrides_mod(overrides: &[Override], model: ClassId) -> Mod<'_> {
    let mut outer = Mod::default();
    for o in overrides {
        let mut leaf = Mod {
            binding: Some(Bound {
                expr: &o.value,
                scope: InstId(0),
                class_scope: model,
                select: Vec::new(),
                field: Vec::new(),
            }),
            span: Some(o.span),
            ..Mod::default()
        };
        for part in o.path[1..].iter().rev() {
            let mut m = Mod {
                span: Some(o.span),
                ..Mod::default()
            };
            m.children.insert(part.clone(), leaf);
            leaf = m;
        }
        let merged = match outer.children.shift_remove(&o.path[0]) {
            Some(existing) => modifier::merge(leaf, existing, &mut Vec::new()),
            None => leaf,
        };
        outer.children.insert(o.path[0].clone(), merged);
    }
    outer
}

pub(crate) struct Flattener<'a> {
    pub tree: ClassTree<'a>,
    pub insts: Vec<Instance<'a>>,
    pub dae: Dae,
    /// Per variable, the merged modification holding its binding and attributes, when it has
    /// one (most have none: boxed, so those cost a pointer).
    pub pending: Vec<Option<Box<Mod<'a>>>>,
    /// Translation-time values of parameters (`None` while being computed: a cycle).
    pub const_cache: FxHashMap<VarId, Option<f64>>,
    /// Parameters whose values replace them wherever they are read (`Evaluate = true`, and
    /// the `final` parameters bound to a value folded so).
    pub evaluate: FxHashSet<VarId>,
    /// How many reads of such parameters have been folded: a binding that folded one, and
    /// became a constant, makes its `final` parameter one of them.
    pub folded: usize,
    /// The clocks and the marks their operators left, for the clocked partitions.
    clocks: clocks::Clocks,
    /// The values of array bindings and attributes, by expression, scope and mode: every
    /// element of an array selects from the same value, flattened once.
    pub array_values: FxHashMap<expr::BoundKey, expr::Val>,
    pub diags: Vec<Diagnostic>,
    pub connections: Vec<connect::Connection<'a>>,
    /// The classes being instantiated, outermost first (a class inside itself is an error).
    pub instantiating: Vec<ClassId>,
    /// The classes whose elements are being collected, a class before its bases (a base
    /// among them is a cycle of `extends`).
    pub extending: Vec<ClassId>,
    /// `input`/`output` of each flat variable, by `VarId` (checked in connection sets).
    pub causality: Vec<Causality>,
    /// Classes whose kind restrictions were checked (once each, however often instantiated).
    pub checked_classes: FxHashSet<ClassId>,
    /// Classes whose elements were collected: instantiated classes and their bases.
    pub used_classes: FxHashSet<ClassId>,
    /// Per class, the classes it extends (as long classes), from the `extends` met while
    /// collecting.
    pub bases: FxHashMap<ClassId, Vec<ClassId>>,
    /// The functions called so far, collected once each.
    pub functions: FxHashMap<ClassId, std::rc::Rc<function::FunctionDef<'a>>>,
    /// The fields of the record classes functions use, collected once each.
    pub record_field_lists: FxHashMap<ClassId, std::rc::Rc<Vec<function::records::Field<'a>>>>,
    /// The values of function calls bound to record components, computed once for all
    /// their fields.
    pub record_values: FxHashMap<expr::BoundKey, function::RecordValue>,
    /// How deep the function calls being inlined nest.
    pub call_depth: usize,
    /// The functions being inlined, innermost last.
    pub inlining: Vec<String>,
    /// Set when a call could not be inlined because its control flow depends on varying
    /// values in too many ways: the call is then kept as code.
    pub varying_flow: bool,
    /// The writes of the `when` statement being translated (`Modelica.Utilities`' print,
    /// writeRealMatrix, removeFile), in order; `None` outside one, where a write is an error.
    writes: Option<Vec<crate::dae::hybrid::Action>>,
    /// The condition under which the function statement being run writes (`None`: always).
    write_guard: Option<ExprId>,
    /// A function's body is being translated to code (its variables are slots).
    pub keeping: bool,
    /// The functions kept as code so far.
    pub kept: function::kept::Kept,
    /// External objects, by their instance: the constructor call each was given.
    pub external_objects: FxHashMap<InstId, Bound<'a>>,
    /// The tables read from external objects' constructors so far.
    pub tables: FxHashMap<InstId, std::rc::Rc<tables::Table>>,
    /// [`Request::max_size`].
    pub max_size: usize,
    /// The parameters the initial system computes (`fixed = false`, and those bound to
    /// them): unknowns now, but constant from the start on.
    pub free_parameters: FxHashSet<VarId>,
}

impl<'a> Flattener<'a> {
    /// Bindings of parameters (kept symbolic), binding equations of other variables, and the
    /// `start`, `fixed`, `nominal` and `unit` attributes.
    fn bindings_and_attributes(&mut self) {
        for i in 0..self.dae.variables.len() {
            let v = VarId(i as u32);
            let m = self.modification_of(v);
            // A String's value is text: mocca computes no strings, and uses none in numbers.
            let text = self.dae.variables[i].ty == ScalarType::String;
            if let Some(b) = m.binding.as_ref().filter(|_| !text) {
                let folded = self.folded;
                match self.bound_scalar(b) {
                    Ok(value) => {
                        let constant = self.dae.pool.as_const(value).is_some();
                        let parameter = self.dae.variables[i].kind == VarKind::Parameter;
                        if m.is_final && parameter && constant && self.folded > folded {
                            self.evaluate.insert(v);
                        }
                        self.apply_binding(v, value)
                    }
                    Err(d) => self.diags.push(d),
                }
            }
            // An array's binding and attributes are typed once, at its first element.
            if m.binding
                .as_ref()
                .is_none_or(|b| b.select.iter().all(|&k| k == 0))
            {
                self.check_value_types(i, &m);
            }
            if let Some(b) = m
                .child("start")
                .and_then(|s| s.binding.as_ref())
                .filter(|_| !text)
            {
                match self.bound_scalar(b) {
                    Ok(value) => self.dae.variables[i].start = Some(value),
                    Err(d) => self.diags.push(d),
                }
            }
            if let Some(b) = m.child("nominal").and_then(|s| s.binding.as_ref()) {
                match self.bound_scalar(b) {
                    Ok(value) => self.dae.variables[i].nominal = Some(value),
                    Err(d) => self.diags.push(d),
                }
            }
            if let Some(b) = m.child("fixed").and_then(|s| s.binding.as_ref()) {
                match self.bound_constant(b) {
                    Ok(x) => self.dae.variables[i].fixed = Some(x != 0.0),
                    Err(d) => self.diags.push(d),
                }
            }
            if let Some(b) = m.child("unit").and_then(|s| s.binding.as_ref())
                && let ExprKind::Str(s) = &b.expr.kind
            {
                self.dae.variables[i].unit = Some(s.clone());
            }
            if let Some(b) = m.child("stateSelect").and_then(|s| s.binding.as_ref()) {
                match self.state_select(b) {
                    Ok(choice) => self.dae.variables[i].state_select = choice,
                    Err(d) => self.diags.push(d),
                }
            }
        }
    }

    /// The types of a variable's binding and attributes (Modelica 4.8): the binding and `start`,
    /// `min`, `max`, `nominal` of the variable's type, `fixed` a Boolean, `unit`,
    /// `displayUnit` and `quantity` strings. A Real target is checked only where the value
    /// may be something else than a number (most are numbers: their type is not looked up).
    fn check_value_types(&mut self, i: usize, m: &Mod<'a>) {
        let ty = self.dae.variables[i].ty;
        let attributes = m.children.iter().filter_map(|(name, child)| {
            let target = match name.as_str() {
                "start" | "min" | "max" | "nominal" => ty,
                "fixed" => ScalarType::Boolean,
                "unit" | "displayUnit" | "quantity" => ScalarType::String,
                _ => return None,
            };
            Some((child.binding.as_ref()?, target))
        });
        let bound: Vec<(&Bound<'a>, ScalarType)> = m
            .binding
            .iter()
            .map(|b| (b, ty))
            .chain(attributes)
            .collect();
        for (b, target) in bound {
            // A record's field: its record's fields were typed where they were declared.
            if !b.field.is_empty()
                || (target == ScalarType::Real && !types::may_be_other_than_number(b.expr))
            {
                continue;
            }
            let result = match target {
                ScalarType::String => self.expect_string(b.expr, &b.ctx()),
                _ => self.expect_assignable(target, b.expr, &b.ctx()),
            };
            if let Err(d) = result {
                self.diags.push(d);
            }
        }
    }

    /// The modification variable `v` was declared with (none for the flattener's own, such
    /// as `pre(x)` or a clock operator's mark, made after the declarations).
    pub(crate) fn modification_of(&self, v: VarId) -> Mod<'a> {
        (self.pending.get(v.0 as usize))
            .and_then(|m| m.as_deref())
            .cloned()
            .unwrap_or_default()
    }

    fn bound_scalar(&mut self, b: &Bound<'a>) -> Result<crate::expr::ExprId, Diagnostic> {
        match self.bound_element(b, Mode::Symbolic)? {
            Some(id) => Ok(id),
            _ => Err(
                Diagnostic::error("the size of this binding does not match the declaration")
                    .at(b.expr.span, "wrong size"),
            ),
        }
    }

    /// An attribute's value known at translation time (`fixed`), this element's of an array
    /// value given to an array component (`fixed = fill(true, m)`).
    fn bound_constant(&mut self, b: &Bound<'a>) -> Result<f64, Diagnostic> {
        let id = match self.bound_element(b, Mode::Constant)? {
            Some(id) => id,
            None => {
                return Err(Diagnostic::error(
                    "the size of this binding does not match the declaration",
                )
                .at(b.expr.span, "wrong size"));
            }
        };
        self.dae.pool.as_const(id).ok_or_else(|| {
            Diagnostic::error("this expression must be evaluable at translation time")
                .at(b.expr.span, "not a constant")
        })
    }

    fn apply_binding(&mut self, v: VarId, value: crate::expr::ExprId) {
        let var = self.dae.var(v);
        match var.kind {
            VarKind::Parameter | VarKind::Constant => {
                self.dae.variables[v.0 as usize].binding = Some(value)
            }
            _ => {
                let place = (var.span, var.component.clone());
                let pool = &mut self.dae.pool;
                let eq = Equation::assignment(pool, v, value, EquationOrigin::Binding, place);
                self.dae.equations.push(eq);
            }
        }
    }

    fn all_equations(&mut self) {
        for i in 0..self.insts.len() {
            let inst = InstId(i as u32);
            let eqs = self.insts[i].equations.clone();
            let mut sink = equations::Sink {
                equations: Vec::new(),
                initial: false,
            };
            self.flatten_equations(inst, &eqs, &mut sink);
            self.dae.equations.append(&mut sink.equations);
            let init = self.insts[i].initial_equations.clone();
            let mut sink = equations::Sink {
                equations: Vec::new(),
                initial: true,
            };
            self.flatten_equations(inst, &init, &mut sink);
            self.dae.initial_equations.append(&mut sink.equations);
        }
    }

    /// A variable that appears under `der()` is a state.
    fn mark_states(&mut self) {
        let mut states = Vec::new();
        for eq in self.dae.equations.iter().chain(&self.dae.initial_equations) {
            self.dae.pool.visit_leaves(eq.residual, |n| {
                if let Node::Der(v) = n {
                    states.push(v);
                }
            });
        }
        for v in states {
            let var = &mut self.dae.variables[v.0 as usize];
            match var.kind {
                VarKind::Algebraic | VarKind::Discrete => var.kind = VarKind::State,
                VarKind::State => {}
                VarKind::Held => {
                    let (name, span) = (var.name.clone(), var.span);
                    self.diags.push(
                        Diagnostic::error(format!(
                            "`der({name})`: `{name}` changes only at events"
                        ))
                        .at(span, "declared here"),
                    );
                }
                VarKind::Parameter | VarKind::Constant | VarKind::Input | VarKind::Alias => {
                    let (name, span) = (var.name.clone(), var.span);
                    self.diags.push(
                        Diagnostic::error(format!(
                            "`der({name})`: `{name}` is not a continuous variable"
                        ))
                        .at(span, "declared here"),
                    );
                }
            }
        }
    }
}

impl ClassTree<'_> {
    /// A class found by its simple name anywhere in the tree (first in load order).
    pub fn find_by_simple_name(&self, name: &str) -> Option<ClassId> {
        let mut stack = vec![classes::ROOT];
        while let Some(id) = stack.pop() {
            let node = self.node(id);
            if node.name == name && node.def.is_some() {
                return Some(id);
            }
            stack.extend(node.children.values().rev());
        }
        None
    }
}

impl<'a> Flattener<'a> {
    /// A `stateSelect` modifier's value, known at translation since it decides which variables
    /// index reduction keeps as states: a `StateSelect` literal, or a parameter of type
    /// `StateSelect` (`stateSelect = stateSelect`, as the standard library passes it on).
    fn state_select(&mut self, b: &Bound<'a>) -> Result<StateSelect, Diagnostic> {
        if let ExprKind::Ref(cref) = &b.expr.kind
            && let Some(choice) = StateSelect::from_literal(&cref.dotted())
        {
            return Ok(choice);
        }
        let ctx = Ctx {
            mode: Mode::Constant,
            ..b.ctx()
        };
        let ordinal = self.eval_scalar(b.expr, &ctx).ok();
        ordinal
            .and_then(StateSelect::from_ordinal)
            .ok_or_else(|| {
                Diagnostic::error(
                    "`stateSelect` must be one of `StateSelect.never`, `avoid`, `default`, `prefer`, `always`",
                )
                .at(b.expr.span, "not a StateSelect known at translation")
            })
    }
}
