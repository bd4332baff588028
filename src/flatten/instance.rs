//! Instantiation: classes become instances with elements; builtin-typed elements become flat
//! scalar variables (arrays scalarised), class-typed ones become child instances.

use std::borrow::Cow;
use std::collections::HashSet;
use std::rc::Rc;
use std::sync::Arc;

use smallvec::SmallVec;

use super::Flattener;
use super::classes::{ClassId, TypeRef};
use super::elements::ElementMap;
use super::inheritance;
use super::modifier::{Mod, merge};
use super::prefixes;
use super::restrictions;
use super::tree::{indices, subscript_suffix};
use crate::dae::{ScalarType, StateSelect, VarKind, Variable};
use crate::diagnostics::Diagnostic;
use crate::expr::VarId;
use crate::expr::hash::FxIndexMap;
use crate::source::Span;
use crate::syntax::ast::{
    self, Causality, ClassBody, ClassKind, ComponentDecl, ElementKind, Ident, Subscript,
    TypePrefixes, Variability, Visibility,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InstId(pub u32);

pub struct Instance<'a> {
    /// Flat name prefix (`circuit.R1`, `R[2]`; empty for the model itself).
    pub prefix: String,
    /// Keyed by the declared names, borrowed from the source unless quoted.
    pub elements: ElementMap<'a, Elem<'a>>,
    /// Equations of the class and its bases, each with the class it was written in.
    pub equations: Vec<(&'a ast::Equation, ClassId)>,
    pub initial_equations: Vec<(&'a ast::Equation, ClassId)>,
    pub is_connector: bool,
    /// The component that owns this instance's variables: the instance itself, or for a
    /// connector the component it belongs to (so `R1.p.v` is owned by `R1`).
    pub owner: Arc<str>,
    /// `weak v` marks from this connector instance's declaration (SPEC §2.1).
    pub weak_marks: Vec<&'a Ident>,
    /// Local classes modified for this instance (`extends A(B(x = 4))`), by class.
    /// Few (usually none), so a list scanned rather than a map.
    pub class_mods: Vec<(ClassId, Mod<'a>)>,
    /// Prefixes of the component this instance is (`parameter R r`, `flow C c`), with those of
    /// its enclosing components: its elements inherit them (Modelica 4.4.2).
    pub prefixes: TypePrefixes,
    /// The class it is an instance of (none for an external object's).
    pub class: Option<ClassId>,
    /// Per element slot, the element still to instantiate: an element a size needs before
    /// its turn is instantiated then (`nout = size(columns, 1)` of a later `columns[:]`).
    pending: Vec<Option<ElemSpec<'a>>>,
}

impl Instance<'_> {
    /// An instance without elements (an external object's).
    pub(crate) fn empty(prefix: String) -> Self {
        Instance {
            owner: prefix.as_str().into(),
            prefix,
            elements: ElementMap::default(),
            equations: Vec::new(),
            initial_equations: Vec::new(),
            is_connector: false,
            weak_marks: Vec::new(),
            class_mods: Vec::new(),
            prefixes: TypePrefixes::default(),
            class: None,
            pending: Vec::new(),
        }
    }
}

/// What `collect` gathers for one instance: its elements, and what its modifiers name.
#[derive(Default)]
struct Collected<'a> {
    specs: FxIndexMap<Cow<'a, str>, ElemSpec<'a>>,
    class_mods: FxIndexMap<ClassId, Mod<'a>>,
    /// Every name a modifier applied to a collected class: (class, name, where written).
    modified: Vec<(ClassId, String, Option<Span>)>,
    /// Local classes of the class and its bases, by name: two of one name must be identical
    /// (Modelica 7.1).
    local_classes: FxIndexMap<Cow<'a, str>, &'a ast::ClassDef>,
    /// The bases collected, with their modification and protection: the same base met again
    /// the same way (a diamond of `extends`) brings identical elements and syntactically
    /// equal equations, of which Modelica 7.1 keeps one, so it is not collected again.
    bases: Vec<(ClassId, Rc<Mod<'a>>, bool)>,
}

pub struct Elem<'a> {
    pub decl: &'a ComponentDecl,
    /// The class that declares it (the first, when bases declare it identically): the
    /// instance's class or one of its bases. Names written in a class see only its own
    /// elements and those of its bases (Modelica 5.6.1, 7.1).
    pub declared_in: ClassId,
    /// Declared protected, or inherited through a protected `extends` (Modelica 4.1).
    pub protected: bool,
    pub dims: Vec<usize>,
    /// Per dimension, whether it is indexed by `false` and `true` (`Real x[Boolean]`); empty
    /// when none is.
    pub boolean_dims: Vec<bool>,
    /// The element's type is (or is a short class of) a `connector`.
    pub connector: bool,
    pub content: Content,
}

/// The ids of an element's scalars or instances: one, unless it is an array.
pub type Ids<T> = SmallVec<[T; 1]>;

#[derive(Clone, Debug)]
pub enum Content {
    /// Not instantiated yet (seen only while sizes are being evaluated).
    Pending,
    /// Row-major scalar variables of a builtin-typed element.
    Vars(Ids<VarId>),
    /// Row-major child instances of a class-typed element.
    Insts(Ids<InstId>),
    /// A conditional component whose condition is false: not part of the model, named only by
    /// `connect` equations, which vanish with it (Modelica 4.4.5).
    Disabled,
}

/// An element as collected from a class and its bases, before instantiation.
struct ElemSpec<'a> {
    name: Cow<'a, str>,
    protected: bool,
    decl: &'a ComponentDecl,
    clause: &'a ast::ComponentClause,
    scope: ClassId,
    modification: Mod<'a>,
}

/// Where [`Flattener::collect`] is in an instance's class and its bases.
#[derive(Clone, Copy)]
struct Level<'m, 'a> {
    inst: InstId,
    /// The modification of the instance itself, written outside its class.
    instance_mod: &'m Mod<'a>,
    /// Reached through a protected `extends`.
    protected: bool,
}

/// What a component's type name resolved to, after following short class definitions.
struct ResolvedType<'a> {
    target: TypeRef,
    /// Dimensions added by short types (`type Vec3 = Real[3]`).
    dims: Vec<&'a Subscript>,
    /// Modifications of the short types, merged under the component's own.
    modification: Mod<'a>,
    prefixes: TypePrefixes,
    connector: bool,
}

impl<'a> Flattener<'a> {
    /// Creates the instance of `class` at `prefix` with the modification `outer`; a connector
    /// when `class` is one or the component's type names one on the way to it
    /// (`connector ComplexOutput = output Complex`: `declared_connector`).
    pub(crate) fn instantiate(
        &mut self,
        class: ClassId,
        prefix: String,
        outer: Mod<'a>,
        parent: Option<InstId>,
        (prefixes, declared_connector): (TypePrefixes, bool),
    ) -> InstId {
        let id = InstId(self.insts.len() as u32);
        let is_connector = declared_connector
            || self.tree.node(class).def.is_some_and(|d| {
                matches!(
                    d.kind,
                    ClassKind::Connector | ClassKind::ExpandableConnector
                )
            });
        let weak_marks = outer.weak.clone();
        let owner = match parent {
            Some(p) if is_connector => self.insts[p.0 as usize].owner.clone(),
            _ => Arc::from(prefix.as_str()),
        };
        self.insts.push(Instance {
            owner,
            prefix,
            elements: ElementMap::default(),
            equations: Vec::new(),
            initial_equations: Vec::new(),
            is_connector,
            weak_marks,
            class_mods: Vec::new(),
            prefixes,
            class: Some(class),
            pending: Vec::new(),
        });
        self.instantiating.push(class);
        if let Some(def) = self.tree.node(class).def
            && self.checked_classes.insert(class)
        {
            self.diags
                .extend(restrictions::check_not_partial(def).err());
            self.diags.extend(restrictions::check_class(def));
        }
        let mut collected = Collected::default();
        let level = Level {
            inst: id,
            instance_mod: &outer,
            protected: false,
        };
        self.collect(class, &outer, &mut collected, level);
        self.check_modified_names(&collected);
        let Collected {
            specs, class_mods, ..
        } = collected;
        self.insts[id.0 as usize].class_mods = class_mods.into_iter().collect();
        let mut elements = ElementMap::with_capacity(specs.len());
        for spec in specs.values() {
            let placeholder = Elem {
                decl: spec.decl,
                declared_in: spec.scope,
                protected: spec.protected,
                dims: Vec::new(),
                boolean_dims: Vec::new(),
                connector: false,
                content: Content::Pending,
            };
            elements.push(spec.name.clone(), placeholder);
        }
        self.insts[id.0 as usize].elements = elements;
        // Scalars first, so that sizes like `Real x[N]` can refer to a later `parameter N`, and
        // conditional components last, so that their conditions can. Each element keeps its
        // slot: the placeholders went in in the same order.
        let (mut scalars, mut rest, mut conditional) = (Vec::new(), Vec::new(), Vec::new());
        for (slot, spec) in specs.values().enumerate() {
            let group = if spec.decl.condition.is_some() {
                &mut conditional
            } else if spec.decl.dims.is_empty() && spec.clause.dims.is_empty() {
                &mut scalars
            } else {
                &mut rest
            };
            group.push(slot);
        }
        self.insts[id.0 as usize].pending = specs.into_values().map(Some).collect();
        for slot in scalars.into_iter().chain(rest).chain(conditional) {
            self.instantiate_pending(id, slot);
        }
        self.insts[id.0 as usize].pending = Vec::new();
        self.instantiating.pop();
        id
    }

    /// Instantiates element `slot` of `inst` if it has not been yet; false when it is being
    /// instantiated (a size that needs itself).
    pub(crate) fn instantiate_pending(&mut self, inst: InstId, slot: usize) -> bool {
        let spec = self.insts[inst.0 as usize]
            .pending
            .get_mut(slot)
            .and_then(Option::take);
        match spec {
            Some(spec) => {
                self.instantiate_element(inst, slot, spec);
                true
            }
            None => false,
        }
    }

    /// Whether names written in class `from` see `elem`: a class sees its own elements and
    /// those of its bases, transitively (Modelica 5.6.1, 7.1), not those of a class extending
    /// it.
    pub(crate) fn sees(&self, from: ClassId, name: &str, elem: &Elem<'_>) -> bool {
        if elem.declared_in == from {
            return true;
        }
        let lineage = self.lineage(from);
        // The class that declared it is `from` or a base; failing that, one of them declares
        // it too (identical duplicates are one element). The second test scans declarations,
        // so it runs only when the first fails, which is rare.
        lineage.contains(&elem.declared_in)
            || lineage
                .iter()
                .any(|&class| self.tree.declares_component(class, name))
    }

    /// `class` and its bases, transitively. Inheritance graphs are small: an inline list.
    fn lineage(&self, class: ClassId) -> SmallVec<[ClassId; 8]> {
        let mut seen: SmallVec<[ClassId; 8]> = SmallVec::new();
        let mut stack: SmallVec<[ClassId; 8]> = SmallVec::from_elem(class, 1);
        while let Some(class) = stack.pop() {
            if !seen.contains(&class) {
                seen.push(class);
                stack.extend(self.bases.get(&class).into_iter().flatten().copied());
            }
        }
        seen
    }

    /// Every name a modifier touches must be an element (or a local class) of the class it
    /// modifies, whether the modifier came with the instance or with an `extends`.
    fn check_modified_names(&mut self, collected: &Collected<'a>) {
        let mut reported = HashSet::new();
        for (class, name, span) in &collected.modified {
            let known = collected.specs.contains_key(name.as_str())
                || self.tree.member_class(*class, name).is_some();
            if known || !reported.insert((name, *span)) {
                continue;
            }
            let class = self.tree.node(*class).path.clone();
            let mut d = Diagnostic::error(format!("`{class}` has no element `{name}` to modify"));
            if let Some(span) = span {
                d = d.at(*span, "modified here");
            }
            self.diags.push(d);
        }
    }

    /// Gathers the elements and equations of `class` and (recursively) its bases.
    fn collect(
        &mut self,
        class: ClassId,
        outer: &Mod<'a>,
        collected: &mut Collected<'a>,
        level: Level<'_, 'a>,
    ) {
        self.used_classes.insert(class);
        for (name, m) in &outer.children {
            collected.modified.push((class, name.clone(), m.span));
        }
        let Some(def) = self.tree.node(class).def else {
            return;
        };
        let ClassBody::Long(comp) = &def.body else {
            return;
        };
        self.extending.push(class);
        self.collect_elements(class, comp, outer, collected, level);
        self.extending.pop();
    }

    fn collect_elements(
        &mut self,
        class: ClassId,
        comp: &'a ast::Composition,
        outer: &Mod<'a>,
        collected: &mut Collected<'a>,
        level: Level<'_, 'a>,
    ) {
        let inst = level.inst;
        for element in &comp.elements {
            match &element.kind {
                ElementKind::Extends(ext) => {
                    let base_level = Level {
                        protected: level.protected || element.visibility == Visibility::Protected,
                        ..level
                    };
                    self.collect_base(class, outer, ext, collected, base_level)
                }
                ElementKind::Component(clause) => {
                    for decl in &clause.components {
                        let name = strip_quotes(&decl.name.name);
                        if let Some(first) = collected.specs.get(name.as_ref()) {
                            // Identical declarations merge only when inherited (Modelica 7.1).
                            if first.scope == class && !std::ptr::eq(first.decl, decl) {
                                self.diags.push(
                                    Diagnostic::error(format!(
                                        "`{name}` is declared twice in `{}`",
                                        self.tree.node(class).path
                                    ))
                                    .at(decl.name.span, "declared again")
                                    .with_secondary(first.decl.name.span, "first declared here"),
                                );
                            } else if !same_declaration(first, clause, decl) {
                                self.diags.push(
                                    Diagnostic::error(format!(
                                        "`{name}` is declared twice with different declarations"
                                    ))
                                    .at(decl.span, "this declaration")
                                    .with_secondary(first.decl.span, "differs from this one"),
                                );
                            } else if std::ptr::eq(first.decl, decl)
                                && let Some(d) = self.differently_modified(
                                    first,
                                    (outer, element.prefixes.is_final),
                                    level,
                                )
                            {
                                self.diags.push(d);
                            }
                            continue;
                        }
                        let own =
                            self.own_modification(decl, element.prefixes.is_final, inst, class);
                        let protected =
                            level.protected || element.visibility == Visibility::Protected;
                        let from_outside = outer.child(&name).cloned().unwrap_or_default();
                        // `extends A(x = 1)` may set A's protected `x`; a component's modifier,
                        // written outside the class, may not (Modelica 7.2.4).
                        if protected
                            && let Some(span) = level.instance_mod.child(&name).and_then(|m| m.span)
                        {
                            self.diags.push(
                                Diagnostic::error(format!(
                                    "`{name}` is protected and cannot be modified from outside"
                                ))
                                .at(span, "modifies a protected element")
                                .with_secondary(decl.span, "declared protected"),
                            );
                        }
                        let modification = merge(from_outside, own, &mut self.diags);
                        collected.specs.insert(
                            name.clone(),
                            ElemSpec {
                                name,
                                protected,
                                decl,
                                clause,
                                scope: class,
                                modification,
                            },
                        );
                    }
                }
                ElementKind::Class(def) => self.collect_local_class(def, collected),
                ElementKind::Import(_) | ElementKind::Unsupported => {}
            }
        }
        self.collect_class_modifications(class, outer, collected, level);
        let inst_mut = &mut self.insts[inst.0 as usize];
        inst_mut
            .equations
            .extend(comp.equations.iter().map(|e| (e, class)));
        inst_mut
            .initial_equations
            .extend(comp.initial_equations.iter().map(|e| (e, class)));
    }

    /// The modification a declaration written in `class` carries itself; `final Real a = 1;`
    /// makes its own binding final.
    fn own_modification(
        &mut self,
        decl: &'a ComponentDecl,
        is_final: bool,
        inst: InstId,
        class: ClassId,
    ) -> Mod<'a> {
        let mut own = decl
            .modification
            .as_ref()
            .map(|m| Mod::from_ast(m, inst, class, &mut self.diags))
            .unwrap_or_default();
        own.is_final |= is_final;
        own
    }

    /// The one declaration `first` reached again along another path of `extends` (a diamond)
    /// must come with the same modification, or the two elements differ (Modelica 7.1).
    fn differently_modified(
        &mut self,
        first: &ElemSpec<'a>,
        (outer, is_final): (&Mod<'a>, bool),
        level: Level<'_, 'a>,
    ) -> Option<Diagnostic> {
        let own = self.own_modification(first.decl, is_final, level.inst, first.scope);
        let from_outside = outer.child(&first.name).cloned().unwrap_or_default();
        let modification = merge(from_outside, own, &mut self.diags);
        if modification.same_as(&first.modification) {
            return None;
        }
        let at = |m: &Mod<'_>| m.span.or(m.binding.as_ref().map(|b| b.expr.span));
        let mut d = Diagnostic::error(format!(
            "`{}` is inherited along two paths with different modifications (Modelica 7.1: they must be identical)",
            first.name
        ))
        .at(first.decl.span, "declared here");
        for m in [&modification, &first.modification] {
            let decl = first.decl.span;
            let outside =
                |s: &Span| s.file != decl.file || s.end <= decl.start || s.start >= decl.end;
            if let Some(span) = at(m).filter(outside) {
                d = d.with_secondary(span, "modified here");
            }
        }
        Some(d)
    }

    /// Records a local class; one of the same name met before (through another base) must be
    /// the same declaration.
    fn collect_local_class(&mut self, def: &'a ast::ClassDef, collected: &mut Collected<'a>) {
        let name = strip_quotes(&def.name.name);
        let Some(&first) = collected.local_classes.get(name.as_ref()) else {
            collected.local_classes.insert(name, def);
            return;
        };
        if !same_class(first, def) {
            self.diags.push(
                Diagnostic::error(format!(
                    "class `{name}` is declared twice with different definitions (through inheritance)"
                ))
                .at(def.name.span, "this definition")
                .with_secondary(first.name.span, "differs from this one"),
            );
        }
    }

    /// Modifiers naming a local class rather than a component (`extends A(B(x = 4))`) modify
    /// that class for this instance: its components of that class get the modification.
    fn collect_class_modifications(
        &mut self,
        class: ClassId,
        outer: &Mod<'a>,
        collected: &mut Collected<'a>,
        level: Level<'_, 'a>,
    ) {
        for (name, m) in &outer.children {
            if collected.specs.contains_key(name.as_str()) {
                continue;
            }
            let Some(local) = self.tree.member_class(class, name) else {
                continue;
            };
            // As for components: an `extends` may modify a protected class, a component's
            // modifier may not (Modelica 7.2.4).
            let protected = level.protected || self.tree.node(local).protected;
            if protected && let Some(span) = level.instance_mod.child(name).and_then(|m| m.span) {
                self.diags.push(
                    Diagnostic::error(format!(
                        "class `{name}` is protected and cannot be modified from outside"
                    ))
                    .at(span, "modifies a protected class"),
                );
                continue;
            }
            // Bases are collected before the classes extending them, and their modifier
            // already holds the outer one: an existing entry only gains what it lacks.
            let merged = match collected.class_mods.swap_remove(&local) {
                Some(existing) => merge(existing, m.clone(), &mut self.diags),
                None => m.clone(),
            };
            collected.class_mods.insert(local, merged);
        }
    }

    fn collect_base(
        &mut self,
        class: ClassId,
        outer: &Mod<'a>,
        ext: &'a ast::Extends,
        collected: &mut Collected<'a>,
        level: Level<'_, 'a>,
    ) {
        let inst = level.inst;
        let parent = self.tree.node(class).parent.unwrap_or(super::classes::ROOT);
        let resolved = self.tree.resolve_excluding(&ext.base, class, parent);
        if let Some(base) = resolved
            && let Err(message) = inheritance::check_extends(&self.tree, class, base)
        {
            self.diags
                .push(Diagnostic::error(message).at(ext.base.span, "this base class"));
            return;
        }
        match resolved {
            Some(TypeRef::Class(base)) if base != class => {
                let base = self.long_class(base);
                if let Some(k) = self.extending.iter().position(|&c| c == base) {
                    let cycle: Vec<ClassId> = self.extending[k..].to_vec();
                    self.diags.push(
                        Diagnostic::error(format!(
                            "`{}` extends itself: {}",
                            self.tree.node(base).path,
                            self.tree.cycle_text(&cycle)
                        ))
                        .at(ext.base.span, "this base class is one of its own bases"),
                    );
                    return;
                }
                let bases = self.bases.entry(class).or_default();
                if !bases.contains(&base) {
                    bases.push(base);
                }
                let ext_mod = ext
                    .modification
                    .as_ref()
                    .map(|m| Mod::from_ast(m, inst, class, &mut self.diags))
                    .unwrap_or_default();
                let merged = Rc::new(merge(outer.clone(), ext_mod, &mut self.diags));
                let met = |(b, m, protected): &(ClassId, Rc<Mod<'_>>, bool)| {
                    *b == base && *protected == level.protected && m.same_as(&merged)
                };
                if collected.bases.iter().any(met) {
                    return;
                }
                let kept = Rc::clone(&merged);
                collected.bases.push((base, kept, level.protected));
                self.collect(base, &merged, collected, level);
            }
            Some(TypeRef::Builtin(_) | TypeRef::Clock) => {}
            Some(TypeRef::Class(_)) => self.diags.push(
                Diagnostic::error(format!("`{}` extends itself", self.tree.node(class).path))
                    .at(ext.base.span, "its own base class"),
            ),
            None => self.diags.push(
                Diagnostic::error(format!("base class `{}` not found", ext.base.dotted()))
                    .at(ext.base.span, "not found"),
            ),
        }
    }

    /// Follows `connector B = A;` style aliases to the long class (stopping where they go
    /// round: [`Flattener::resolve_type`] reports such a cycle).
    pub(crate) fn long_class(&self, mut class: ClassId) -> ClassId {
        let mut seen = vec![class];
        while let Some(def) = self.tree.node(class).def {
            let ClassBody::Short(short) = &def.body else {
                break;
            };
            let parent = self.tree.node(class).parent.unwrap_or(super::classes::ROOT);
            match self.tree.resolve(&short.base, parent) {
                Some(TypeRef::Class(base)) if !seen.contains(&base) => {
                    seen.push(base);
                    class = base;
                }
                _ => break,
            }
        }
        class
    }

    /// "type `X` not found", or why not (a cycle of definitions it went through).
    fn unresolved(&self, name: &ast::Name, scope: ClassId) -> Diagnostic {
        let message = match self.tree.resolve_checked(name, scope) {
            Err(message) => message,
            Ok(_) => format!("type `{}` not found", name.dotted()),
        };
        Diagnostic::error(message).at(name.span, "unknown type")
    }

    fn resolve_type(&mut self, spec: &ElemSpec<'a>, inst: InstId) -> Option<ResolvedType<'a>> {
        let name = &spec.clause.type_name;
        let Some(mut target) = self.tree.resolve(name, spec.scope) else {
            let diagnostic = self.unresolved(name, spec.scope);
            self.diags.push(diagnostic);
            return None;
        };
        let mut resolved = ResolvedType {
            target,
            dims: Vec::new(),
            modification: Mod::default(),
            prefixes: TypePrefixes::default(),
            connector: false,
        };
        let mut seen: Vec<ClassId> = Vec::new();
        while let TypeRef::Class(c) = target {
            if let Some(k) = seen.iter().position(|&s| s == c) {
                let text = self.tree.cycle_text(&seen[k..]);
                self.diags.push(
                    Diagnostic::error(format!(
                        "type `{}` is defined through itself: {text}",
                        self.tree.node(c).path
                    ))
                    .at(name.span, "this type"),
                );
                return None;
            }
            seen.push(c);
            let Some(def) = self.tree.node(c).def else {
                break;
            };
            resolved.connector |= matches!(
                def.kind,
                ClassKind::Connector | ClassKind::ExpandableConnector
            );
            match &def.kind {
                ClassKind::Function | ClassKind::OperatorFunction => {
                    self.diags.push(
                        Diagnostic::error("components of function type are not supported")
                            .at(name.span, "a function"),
                    );
                    return None;
                }
                ClassKind::Package => {
                    self.diags.push(
                        Diagnostic::error(format!("`{}` is a package, not a type", name.dotted()))
                            .at(name.span, "a package"),
                    );
                    return None;
                }
                _ => {}
            }
            match &def.body {
                ClassBody::Short(short) => {
                    let parent = self.tree.node(c).parent.unwrap_or(super::classes::ROOT);
                    resolved.dims.extend(short.dims.iter());
                    if let Some(m) = &short.modification {
                        let mut type_mod = Mod::from_ast(m, inst, parent, &mut self.diags);
                        if resolved.dims.is_empty() {
                            // A scalar type's attributes hold for each element of an array
                            // component of that type.
                            type_mod.children.values_mut().for_each(|c| c.each = true);
                        }
                        resolved.modification = merge(
                            std::mem::take(&mut resolved.modification),
                            type_mod,
                            &mut self.diags,
                        );
                    }
                    match prefixes::combine(&resolved.prefixes, &short.prefixes) {
                        Ok(p) => resolved.prefixes = p,
                        Err(message) => {
                            self.diags
                                .push(Diagnostic::error(message).at(name.span, "this type"));
                            return None;
                        }
                    }
                    match self.tree.resolve(&short.base, parent) {
                        Some(t) => target = t,
                        None => {
                            let diagnostic = self.unresolved(&short.base, parent);
                            self.diags.push(diagnostic);
                            return None;
                        }
                    }
                }
                ClassBody::Enumeration { .. } => {
                    // A value of an enumeration is its literal's ordinal (1, 2, …), as
                    // `Integer(e)` gives it (Modelica 4.9.5).
                    target = TypeRef::Builtin(ScalarType::Integer);
                    break;
                }
                ClassBody::Long(comp) => match type_extension(comp) {
                    // `type MyReal extends Real; end MyReal;` is the builtin type, modified.
                    Some(ext) if def.kind == ClassKind::Type => {
                        if self.checked_classes.insert(c) {
                            self.diags.extend(restrictions::check_type(def, comp));
                        }
                        let parent = self.tree.node(c).parent.unwrap_or(super::classes::ROOT);
                        if let Some(m) = &ext.modification {
                            let type_mod = Mod::from_ast(m, inst, c, &mut self.diags);
                            resolved.modification = merge(
                                std::mem::take(&mut resolved.modification),
                                type_mod,
                                &mut self.diags,
                            );
                        }
                        match self.tree.resolve_excluding(&ext.base, c, parent) {
                            Some(t) => target = t,
                            None => break,
                        }
                    }
                    _ => break,
                },
            }
        }
        resolved.target = target;
        Some(resolved)
    }

    /// The declaration's modifier over the modification its class received in this instance
    /// (`extends A(B(x = 4))` then `B b(x = 5)`: 5 wins, and `b.x` is 4 without it).
    fn with_class_modification(&mut self, inst: InstId, spec: &mut ElemSpec<'a>) -> Mod<'a> {
        let own = std::mem::take(&mut spec.modification);
        let class_mods = &self.insts[inst.0 as usize].class_mods;
        if class_mods.is_empty() {
            return own;
        }
        let class_mod = match self.tree.resolve(&spec.clause.type_name, spec.scope) {
            Some(TypeRef::Class(c)) => class_mods
                .iter()
                .find(|(class, _)| *class == c)
                .map(|(_, m)| m.clone()),
            _ => None,
        };
        match class_mod {
            Some(m) => merge(own, m, &mut self.diags),
            None => own,
        }
    }

    fn instantiate_element(&mut self, inst: InstId, slot: usize, mut spec: ElemSpec<'a>) {
        if let Some(condition) = &spec.decl.condition {
            // A condition in error is reported, and the component left out.
            let holds = self
                .condition_holds(condition, inst, spec.scope)
                .unwrap_or_else(|d| {
                    self.diags.push(d);
                    false
                });
            if !holds {
                self.insts[inst.0 as usize].elements[slot].content = Content::Disabled;
                return;
            }
        }
        if let Some(r) = spec.modification.redeclare {
            // Its type and prefixes from the redeclaration, looked up where that is written.
            spec.clause = r.clause;
            spec.scope = r.class_scope;
        }
        let Some(ty) = self.resolve_type(&spec, inst) else {
            return;
        };
        let enclosing = &self.insts[inst.0 as usize].prefixes;
        let prefixes = match prefixes::combine(&spec.clause.prefixes, &ty.prefixes)
            .and_then(|p| self.check_prefixes_for(&p, ty.target).map(|()| p))
            .and_then(|p| prefixes::combine(&p, enclosing))
        {
            Ok(p) => p,
            Err(message) => {
                self.diags
                    .push(Diagnostic::error(message).at(spec.decl.span, "in this declaration"));
                return;
            }
        };
        let own = self.with_class_modification(inst, &mut spec);
        let modification = merge(own, ty.modification, &mut self.diags);
        let dim_exprs: Vec<&'a Subscript> = spec
            .decl
            .dims
            .iter()
            .chain(spec.clause.dims.iter())
            .chain(ty.dims.iter().copied())
            .collect();
        let Some((dims, boolean_dims)) =
            self.eval_dims(&dim_exprs, inst, spec.scope, &modification)
        else {
            return;
        };
        let prefix = &self.insts[inst.0 as usize].prefix;
        let base = dotted(prefix, &spec.name);
        let made_so_far = match ty.target {
            TypeRef::Builtin(_) | TypeRef::Clock => self.dae.variables.len(),
            TypeRef::Class(_) => self.insts.len(),
        };
        if let Err(d) = self.check_size(&base, &dims, made_so_far, spec.decl.span) {
            self.diags.push(d);
            return;
        }
        let content = match ty.target {
            TypeRef::Builtin(scalar) => {
                let ctx = VarContext {
                    inst,
                    scalar,
                    prefixes: &prefixes,
                };
                Content::Vars(self.create_vars(&base, &dims, &modification, spec.decl, &ctx))
            }
            // A clock is a Boolean that ticks.
            TypeRef::Clock => {
                let ctx = VarContext {
                    inst,
                    scalar: ScalarType::Boolean,
                    prefixes: &prefixes,
                };
                let vars = self.create_vars(&base, &dims, &modification, spec.decl, &ctx);
                self.note_clocks(&vars);
                Content::Vars(vars)
            }
            TypeRef::Class(class) if self.instantiating.contains(&class) => {
                let path = self.tree.node(class).path.clone();
                self.diags.push(
                    Diagnostic::error(format!(
                        "`{}` would contain itself: `{path}` is instantiated inside its own instance",
                        spec.name
                    ))
                    .at(spec.clause.type_name.span, "recursive component type"),
                );
                return;
            }
            TypeRef::Class(class) if self.is_external_object(class) => {
                if !dims.is_empty() {
                    self.diags.push(
                        Diagnostic::error("arrays of external objects are not supported")
                            .at(spec.decl.span, "an array"),
                    );
                    return;
                }
                match self.external_object(base, modification.binding, spec.decl.span) {
                    Ok(content) => content,
                    Err(d) => {
                        self.diags.push(d);
                        return;
                    }
                }
            }
            TypeRef::Class(class) => {
                let mut modification = modification;
                let mut class = class;
                // An array of records bound to an array value binds each element apart.
                let bound_elements =
                    modification.binding.is_some() && self.is_record(class) && !dims.is_empty();
                if modification.binding.is_some() && self.is_record(class) && dims.is_empty() {
                    match self.record_binding(&mut modification, class) {
                        Ok(c) => class = c,
                        Err(d) => {
                            self.diags.push(d);
                            return;
                        }
                    }
                }
                if !bound_elements
                    && let Some(d) =
                        self.value_given_to_component(&base, spec.decl, class, &modification)
                {
                    self.diags.push(d);
                    return;
                }
                let mut children = Ids::new();
                for index in indices(&dims) {
                    let mut child_mod = modification.for_element(&index);
                    let mut child_class = class;
                    if bound_elements {
                        match self.record_binding(&mut child_mod, class) {
                            Ok(c) => child_class = c,
                            Err(d) => {
                                self.diags.push(d);
                                return;
                            }
                        }
                    }
                    let name = element_name(&base, &index);
                    children.push(self.instantiate(
                        child_class,
                        name,
                        child_mod,
                        Some(inst),
                        (prefixes.clone(), ty.connector),
                    ));
                }
                Content::Insts(children)
            }
        };
        if ty.connector && !spec.protected && self.instantiating_kind() == Some(ClassKind::Block) {
            self.check_block_connector(&content, spec.decl);
        }
        if ty.connector && !self.insts[inst.0 as usize].is_connector {
            self.check_connector_balance(&content, &spec, ty.target);
        }
        let elem = &mut self.insts[inst.0 as usize].elements[slot];
        elem.dims = dims;
        elem.boolean_dims = boolean_dims;
        elem.connector = ty.connector;
        elem.content = content;
    }

    /// The value of a conditional component's condition: a Boolean expression known at
    /// translation time (Modelica 4.4.5).
    fn condition_holds(
        &mut self,
        condition: &'a ast::Expr,
        inst: InstId,
        class: ClassId,
    ) -> Result<bool, Diagnostic> {
        let ctx = super::expr::Ctx {
            inst: Some(inst),
            class,
            loops: &[],
            mode: super::expr::Mode::Constant,
            end: None,
            locals: None,
        };
        if let Some(ty) = self.symbolic_type(condition, &ctx)
            && ty != ScalarType::Boolean
        {
            return Err(Diagnostic::error(format!(
                "the condition of a conditional component must be a Boolean, not {}",
                ty.name()
            ))
            .at(condition.span, "not a Boolean"));
        }
        let value = self.eval_scalar(condition, &ctx).map_err(|d| {
            Diagnostic::error(format!(
                "the condition of a conditional component must be known at translation time: {}",
                d.message
            ))
            .at(condition.span, "not a parameter expression")
        })?;
        Ok(value != 0.0)
    }

    /// Whether `cref`, written in `inst`, names a disabled conditional component or reaches
    /// through one (`m.c` with `m` or its `c` disabled).
    pub(crate) fn names_disabled(&self, inst: InstId, cref: &ast::ComponentRef) -> bool {
        let mut at = inst;
        for part in &cref.parts {
            let name = strip_quotes(&part.ident.name);
            let Some(elem) = self.insts[at.0 as usize].elements.get(name.as_ref()) else {
                return false;
            };
            match &elem.content {
                Content::Disabled => return true,
                Content::Insts(ids) if !ids.is_empty() => at = ids[0],
                _ => return false,
            }
        }
        false
    }

    /// A declaration's scalars (or instances) are counted before they are made: more than
    /// [`Flattener::max_size`] of them, alone or with the `made_so_far`, is an error at the
    /// declaration rather than an allocation that exhausts memory.
    fn check_size(
        &self,
        name: &str,
        dims: &[usize],
        made_so_far: usize,
        span: Span,
    ) -> Result<(), Diagnostic> {
        let count = element_count(dims);
        let limit = self.max_size as u128;
        if count.saturating_add(made_so_far as u128) <= limit {
            return Ok(());
        }
        let message = if count > limit {
            format!("`{name}` has {count} elements, more than the limit of {limit}")
        } else {
            format!(
                "`{name}` has {count} elements, which make the model larger than the limit of {limit}"
            )
        };
        Err(Diagnostic::error(message)
            .at(span, "too large")
            .with_note("`--max-size N` raises the limit"))
    }

    /// A value bound to a component of a model or block (`R R1 = 5;`, `-p R1=5`): such a
    /// component has no value, so the binding would be lost. (A connector or record may have
    /// one, when it extends a predefined type.)
    fn value_given_to_component(
        &self,
        name: &str,
        decl: &ComponentDecl,
        class: ClassId,
        modification: &Mod<'a>,
    ) -> Option<Diagnostic> {
        let binding = modification.binding.as_ref()?;
        let def = self.tree.node(class).def?;
        if !matches!(def.kind, ClassKind::Model | ClassKind::Block) {
            // A record's or connector's fields would keep their own values: refused rather
            // than dropped.
            let mut d = Diagnostic::error(format!(
                "a value for the {} component `{name}` is not supported: bind its fields \
                 (`{name}(x = ...)`) instead",
                def.kind.keyword()
            ))
            .at(binding.expr.span, "outside mocca's Modelica subset")
            .with_secondary(decl.span, "declared here");
            d.unsupported = true;
            return Some(d);
        }
        Some(
            Diagnostic::error(format!(
                "`{name}` is a component (a {} `{}`), not a variable, so it cannot be given a value",
                def.kind.keyword(),
                self.tree.node(class).path
            ))
            .at(binding.expr.span, "a value for a component")
            .with_secondary(decl.span, "declared here"),
        )
    }

    fn eval_dims(
        &mut self,
        dims: &[&'a Subscript],
        inst: InstId,
        scope: ClassId,
        modification: &Mod<'a>,
    ) -> Option<(Vec<usize>, Vec<bool>)> {
        let mut out = Vec::new();
        let mut boolean = Vec::new();
        for (k, sub) in dims.iter().enumerate() {
            match sub {
                Subscript::Expr(e) if self.names_boolean_type(e, scope) => {
                    boolean.resize(k, false);
                    boolean.push(true);
                    out.push(2);
                }
                Subscript::Expr(e) if names_builtin_type(e) => {
                    let mut d = Diagnostic::error(
                        "an array dimension given by a type (`Boolean`, an enumeration) is not supported",
                    )
                    .at(e.span, "outside mocca's Modelica subset");
                    d.unsupported = true;
                    self.diags.push(d);
                    return None;
                }
                Subscript::Expr(e) => match self.eval_size(e, inst, scope) {
                    Ok(n) => out.push(n),
                    Err(d) => {
                        self.diags.push(d);
                        return None;
                    }
                },
                Subscript::Colon(span) => match self.binding_shape(modification) {
                    Some(shape) if shape.len() > k => out.push(shape[k]),
                    _ => {
                        self.diags.push(
                            Diagnostic::error("cannot determine the size of this dimension")
                                .at(*span, "`:` needs a binding whose size is known"),
                        );
                        return None;
                    }
                },
            }
        }
        if !out.is_empty()
            && let Some(shape) = self.binding_shape(modification)
            && shape.len() == out.len()
            && shape != out
            && let Some(b) = &modification.binding
        {
            self.diags.push(
                Diagnostic::error(format!(
                    "the binding has size {shape:?} but the declaration {out:?}"
                ))
                .at(b.expr.span, "wrong size"),
            );
            return None;
        }
        Some((out, boolean))
    }

    /// Whether `e` names the type `Boolean`, directly or through short definitions (`type B =
    /// Boolean;`), as seen from `scope`: a dimension or a range of `false` and `true`.
    pub(crate) fn names_boolean_type(&self, e: &ast::Expr, scope: ClassId) -> bool {
        let ast::ExprKind::Ref(r) = &e.kind else {
            return false;
        };
        if r.parts.iter().any(|p| !p.subscripts.is_empty()) {
            return false;
        }
        let name = ast::Name {
            global: r.global,
            parts: r.parts.iter().map(|p| p.ident.clone()).collect(),
            span: r.span,
        };
        let mut target = self.tree.resolve(&name, scope);
        let mut seen = Vec::new();
        while let Some(TypeRef::Class(c)) = target {
            if seen.contains(&c) {
                return false;
            }
            seen.push(c);
            let Some(ast::ClassDef {
                body: ClassBody::Short(short),
                ..
            }) = self.tree.node(c).def
            else {
                return false;
            };
            if !short.dims.is_empty() {
                return false;
            }
            let parent = self.tree.node(c).parent.unwrap_or(super::classes::ROOT);
            target = self.tree.resolve(&short.base, parent);
        }
        target == Some(TypeRef::Builtin(ScalarType::Boolean))
    }

    fn create_vars(
        &mut self,
        base: &str,
        dims: &[usize],
        modification: &Mod<'a>,
        decl: &'a ComponentDecl,
        ctx: &VarContext<'_>,
    ) -> Ids<VarId> {
        self.check_attributes(modification);
        let is_top = self.insts[ctx.inst.0 as usize].prefix.is_empty();
        let kind = match ctx.prefixes.variability {
            Variability::Parameter => VarKind::Parameter,
            Variability::Constant => VarKind::Constant,
            Variability::Discrete => VarKind::Discrete,
            Variability::Continuous if is_top && ctx.prefixes.causality == Causality::Input => {
                VarKind::Input
            }
            Variability::Continuous => match ctx.scalar {
                ScalarType::Real => VarKind::Algebraic,
                _ => VarKind::Discrete,
            },
        };
        let component = self.insts[ctx.inst.0 as usize].owner.clone();
        let mut ids = Ids::new();
        for index in indices(dims) {
            let variable = Variable {
                name: element_name(base, &index),
                kind,
                ty: ctx.scalar,
                binding: None,
                start: None,
                fixed: None,
                nominal: None,
                unit: None,
                weak: ctx.prefixes.weak,
                flow: ctx.prefixes.flow,
                state_select: StateSelect::Default,
                evaluated: false,
                output: is_top && ctx.prefixes.causality == Causality::Output,
                description: decl.description.clone(),
                span: decl.span,
                component: component.clone(),
            };
            let id = match self.dae.add_variable(variable) {
                Ok(id) => id,
                Err(first) => {
                    // The first declaration keeps the name.
                    let first = self.dae.var(first);
                    self.diags.push(
                        Diagnostic::error(format!("`{}` is declared twice", first.name))
                            .at(decl.span, "second declaration")
                            .with_secondary(first.span, "first declaration"),
                    );
                    continue;
                }
            };
            self.causality.push(ctx.prefixes.causality);
            let own = modification.for_element(&index);
            self.pending.push((!own.is_empty()).then(|| Box::new(own)));
            if kind == VarKind::Parameter
                && super::experiment::says_evaluate(decl.annotation.as_deref())
            {
                self.evaluate.insert(id);
            }
            ids.push(id);
        }
        ids
    }

    fn instantiating_kind(&self) -> Option<ClassKind> {
        let class = *self.instantiating.last()?;
        self.tree.node(class).def.map(|d| d.kind)
    }

    /// A connector has as many flow variables as potential ones, the variables that are neither
    /// parameter, constant, input, output nor flow (Modelica 9.3.1), counting the scalars of
    /// its nested connectors and arrays. Checked on each outermost connector component, whose
    /// sizes are known; expandable connectors are exempt. A warning, as OpenModelica gives:
    /// models with such connectors are common and still translate.
    fn check_connector_balance(&mut self, content: &Content, spec: &ElemSpec<'a>, target: TypeRef) {
        if let TypeRef::Class(class) = target
            && self.tree.node(class).def.map(|d| d.kind) == Some(ClassKind::ExpandableConnector)
        {
            return;
        }
        let (mut flows, mut potentials) = (0usize, 0usize);
        for v in self.scalars_of(content) {
            let var = self.dae.var(v);
            let causal = self.causality[v.0 as usize] != Causality::None;
            let fixed = matches!(var.kind, VarKind::Parameter | VarKind::Constant);
            if var.flow {
                flows += 1;
            } else if !causal && !fixed {
                potentials += 1;
            }
        }
        if flows != potentials {
            let ty = spec.clause.type_name.dotted();
            self.diags.push(
                Diagnostic::warning(format!(
                    "connector `{ty}` is unbalanced here: {potentials} potential and {flows} flow variables; a connector should have as many of each (inputs, outputs, parameters and constants aside)"
                ))
                .at(spec.decl.span, "this connector"),
            );
        }
    }

    /// A block's public connectors carry only inputs and outputs (Modelica 4.7): a block is a
    /// causal unit, so no flows and no undirected variables.
    fn check_block_connector(&mut self, content: &Content, decl: &ComponentDecl) {
        for v in self.scalars_of(content) {
            let var = self.dae.var(v);
            let undirected = self.causality[v.0 as usize] == Causality::None
                && matches!(var.kind, VarKind::Algebraic | VarKind::Discrete);
            if var.flow || undirected {
                let name = var.name.clone();
                self.diags.push(
                    Diagnostic::error(format!(
                        "`{name}` is a public connector variable of a block, so it must be `input` or `output`{}",
                        if var.flow { " (and not `flow`)" } else { "" }
                    ))
                    .at(decl.span, "in this block's connector"),
                );
                return;
            }
        }
    }

    /// The scalar variables of an element, through its nested instances.
    fn scalars_of(&self, content: &Content) -> Vec<VarId> {
        let mut scalars = Vec::new();
        let mut stack = vec![content.clone()];
        while let Some(c) = stack.pop() {
            match c {
                Content::Vars(vars) => scalars.extend(vars),
                Content::Insts(ids) => {
                    for id in ids {
                        let elements = self.insts[id.0 as usize].elements.values();
                        stack.extend(elements.map(|e| e.content.clone()));
                    }
                }
                Content::Pending | Content::Disabled => {}
            }
        }
        scalars
    }

    /// Prefixes the component's type cannot take (`flow` on a model, `parameter` on a block…).
    fn check_prefixes_for(&self, p: &TypePrefixes, target: TypeRef) -> Result<(), String> {
        match target {
            TypeRef::Builtin(scalar) => prefixes::check_for_builtin(p, scalar),
            TypeRef::Clock => prefixes::check_for_builtin(p, ScalarType::Boolean),
            TypeRef::Class(class) => match self.tree.node(class).def {
                Some(def) => prefixes::check_for_class(p, def.kind),
                None => Ok(()),
            },
        }
    }

    fn check_attributes(&mut self, modification: &Mod<'a>) {
        const ATTRIBUTES: &[&str] = &[
            "start",
            "fixed",
            "nominal",
            "unit",
            "min",
            "max",
            "quantity",
            "displayUnit",
            "stateSelect",
            "unbounded",
        ];
        for (name, m) in &modification.children {
            if !ATTRIBUTES.contains(&name.as_str()) {
                let mut d =
                    Diagnostic::error(format!("`{name}` is not an attribute of a builtin type"));
                if let Some(span) = m.span {
                    d = d.at(span, "no such attribute");
                }
                self.diags.push(d);
            }
        }
    }
}

struct VarContext<'p> {
    inst: InstId,
    scalar: ScalarType,
    prefixes: &'p TypePrefixes,
}

/// The number of elements of an array of these dimensions (saturating: never wraps around).
pub(crate) fn element_count(dims: &[usize]) -> u128 {
    dims.iter().fold(1u128, |n, &d| n.saturating_mul(d as u128))
}

/// `prefix.name`, or `name` at top level: built directly, as it runs for every element.
fn dotted(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        return name.to_string();
    }
    let mut out = String::with_capacity(prefix.len() + 1 + name.len());
    out.push_str(prefix);
    out.push('.');
    out.push_str(name);
    out
}

/// The flat name of element `index` of an array named `base` (`base` itself for a scalar).
fn element_name(base: &str, index: &[usize]) -> String {
    if index.is_empty() {
        base.to_string()
    } else {
        format!("{base}{}", subscript_suffix(index))
    }
}

/// The single `extends` of a class that declares nothing else (a type derived from another).
fn type_extension(comp: &ast::Composition) -> Option<&ast::Extends> {
    let mut extends = None;
    for element in &comp.elements {
        match &element.kind {
            ElementKind::Extends(ext) if extends.is_none() => extends = Some(ext),
            ElementKind::Class(_) => {}
            _ => return None,
        }
    }
    let no_equations = comp.equations.is_empty() && comp.initial_equations.is_empty();
    extends.filter(|_| no_equations).map(|e| &**e)
}

/// An element inherited twice must be the same declaration (Modelica 7.1: identical
/// duplicates are merged, others are an error). Compared without source positions.
fn same_declaration(
    first: &ElemSpec<'_>,
    clause: &ast::ComponentClause,
    decl: &ComponentDecl,
) -> bool {
    std::ptr::eq(first.decl, decl)
        || same_text(
            &(
                &first.clause.prefixes,
                &first.clause.type_name,
                &first.clause.dims,
                first.decl,
            ),
            &(&clause.prefixes, &clause.type_name, &clause.dims, decl),
        )
}

/// Two class definitions are the same declaration: one node, or equal but for their places.
fn same_class(first: &ast::ClassDef, other: &ast::ClassDef) -> bool {
    std::ptr::eq(first, other) || same_text(first, other)
}

/// Equal syntax trees, compared without source positions (the AST's JSON skips spans).
fn same_text<T: serde::Serialize>(a: &T, b: &T) -> bool {
    serde_json::to_string(a).unwrap_or_default() == serde_json::to_string(b).unwrap_or_default()
}

/// Flat names use the text of quoted identifiers without the quotes (`'R1.v'` → `R1.v`), so
/// flat output parses back to the same names.
/// Borrowed unless the name is quoted: this runs for every name reference.
pub fn strip_quotes(name: &str) -> Cow<'_, str> {
    match name.strip_prefix('\'').and_then(|n| n.strip_suffix('\'')) {
        Some(inner) => Cow::Owned(inner.replace("\\'", "'").replace("\\\\", "\\")),
        None => Cow::Borrowed(name),
    }
}

/// `Real x[Boolean]`: a dimension indexed by a builtin type's values.
fn names_builtin_type(e: &ast::Expr) -> bool {
    matches!(&e.kind, ast::ExprKind::Ref(r)
        if r.parts.len() == 1
            && r.parts[0].subscripts.is_empty()
            && super::classes::builtin(&r.parts[0].ident.name).is_some())
}
