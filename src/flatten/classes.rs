//! The class tree: every class of every loaded file, placed by its `within` clause, and name
//! lookup through nested classes, enclosing packages and base classes.

use std::cell::{Cell, RefCell};

use crate::dae::ScalarType;
use crate::diagnostics::Diagnostic;
use crate::expr::hash::{FxHashMap, FxIndexMap};
use crate::syntax::ast::{
    ClassBody, ClassDef, ClassKind, ElementKind, Import, Name, StoredDefinition, Variability,
    Visibility,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClassId(pub u32);

pub struct ClassNode<'a> {
    pub name: String,
    /// Dotted path from the root.
    pub path: String,
    /// `None` for the root and for packages only implied by a `within`.
    pub def: Option<&'a ClassDef>,
    pub parent: Option<ClassId>,
    pub children: FxIndexMap<String, ClassId>,
    /// The class's `extends` clauses (kept apart so lookup need not scan every element).
    pub extends: Vec<&'a Name>,
    /// The class's `import` clauses, consulted after its own classes (Modelica 13.2.1).
    pub imports: Vec<&'a Import>,
    /// Declared in a `protected` section of its enclosing class.
    pub protected: bool,
}

pub struct ClassTree<'a> {
    nodes: Vec<ClassNode<'a>>,
    /// The searches for a member class through bases and short definitions under way, as
    /// `(class, name)`: one that needs itself again is a cycle of definitions (`type Env =
    /// Env.Env;`), and fails instead of recursing without end.
    searching: RefCell<Vec<(ClassId, String)>>,
    /// The classes of the last cycle a search met, for the message of a lookup that fails.
    cycle: RefCell<Option<Vec<ClassId>>>,
    /// How many cycles searches have met: a search that met none has a result that does not
    /// depend on the searches around it.
    cycles_met: Cell<u64>,
    /// Those results, per class and name: bases shared along many paths (diamonds of
    /// `extends`) are searched once, not once per path.
    found: RefCell<FxHashMap<ClassId, FxHashMap<String, Option<ClassId>>>>,
}

/// What a type name denotes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypeRef {
    Builtin(ScalarType),
    /// The built-in `Clock` (Modelica 16): a variable of it is a Boolean that ticks.
    Clock,
    Class(ClassId),
}

pub const ROOT: ClassId = ClassId(0);

impl<'a> ClassTree<'a> {
    /// Builds the tree; duplicate class definitions are reported.
    pub fn build(files: &[&'a StoredDefinition]) -> (ClassTree<'a>, Vec<Diagnostic>) {
        let root = ClassNode {
            name: String::new(),
            path: String::new(),
            def: None,
            parent: None,
            children: FxIndexMap::default(),
            extends: Vec::new(),
            imports: Vec::new(),
            protected: false,
        };
        let mut tree = ClassTree {
            nodes: vec![root],
            searching: RefCell::default(),
            cycle: RefCell::default(),
            cycles_met: Cell::default(),
            found: RefCell::default(),
        };
        let mut diags = Vec::new();
        for file in files {
            let mut at = ROOT;
            if let Some(within) = &file.within {
                for part in &within.parts {
                    at = tree.child_or_placeholder(at, &part.name);
                }
            }
            for class in &file.classes {
                tree.insert(at, class, false, &mut diags);
            }
        }
        (tree, diags)
    }

    /// Every class of the tree, the root first.
    pub fn ids(&self) -> impl Iterator<Item = ClassId> + '_ {
        (0..self.nodes.len() as u32).map(ClassId)
    }

    pub fn node(&self, id: ClassId) -> &ClassNode<'a> {
        &self.nodes[id.0 as usize]
    }

    fn child_or_placeholder(&mut self, parent: ClassId, name: &str) -> ClassId {
        if let Some(&id) = self.node(parent).children.get(name) {
            return id;
        }
        self.add_node(parent, name, None)
    }

    fn add_node(&mut self, parent: ClassId, name: &str, def: Option<&'a ClassDef>) -> ClassId {
        let id = ClassId(self.nodes.len() as u32);
        let parent_path = &self.node(parent).path;
        let path = if parent_path.is_empty() {
            name.to_string()
        } else {
            format!("{parent_path}.{name}")
        };
        self.nodes.push(ClassNode {
            name: name.to_string(),
            path,
            def,
            parent: Some(parent),
            children: FxIndexMap::default(),
            extends: def.map(extends_of).unwrap_or_default(),
            imports: def.map(imports_of).unwrap_or_default(),
            protected: false,
        });
        self.nodes[parent.0 as usize]
            .children
            .insert(name.to_string(), id);
        id
    }

    fn insert(
        &mut self,
        parent: ClassId,
        class: &'a ClassDef,
        protected: bool,
        diags: &mut Vec<Diagnostic>,
    ) {
        let name = &class.name.name;
        if builtin(name).is_some() {
            diags.push(
                Diagnostic::error(format!(
                    "`{name}` is a predefined type; a class cannot take its name"
                ))
                .at(class.name.span, "reserved name"),
            );
            return;
        }
        let id = match self.node(parent).children.get(name).copied() {
            Some(existing) => match self.node(existing).def {
                None => {
                    let node = &mut self.nodes[existing.0 as usize];
                    node.def = Some(class);
                    node.extends = extends_of(class);
                    node.imports = imports_of(class);
                    existing
                }
                Some(first) => {
                    diags.push(
                        Diagnostic::error(format!("class `{name}` is defined twice"))
                            .at(class.name.span, "second definition")
                            .with_secondary(first.name.span, "first definition"),
                    );
                    return;
                }
            },
            None => self.add_node(parent, name, Some(class)),
        };
        self.nodes[id.0 as usize].protected = protected;
        if let ClassBody::Long(comp) = &class.body {
            for element in &comp.elements {
                if let ElementKind::Class(nested) = &element.kind {
                    let protected = element.visibility == Visibility::Protected;
                    self.insert(id, nested, protected, diags);
                }
            }
        }
    }

    /// Finds a class by its full dotted path (`Mocca.Electrical.Resistor`).
    pub fn find_path(&self, path: &str) -> Option<ClassId> {
        let mut at = ROOT;
        for part in path.split('.') {
            at = *self.node(at).children.get(part)?;
        }
        Some(at)
    }

    /// The last top-level class defined in `file` (the default model).
    pub fn last_class_of(&self, file: &StoredDefinition) -> Option<ClassId> {
        let class = file.classes.last()?;
        let mut at = ROOT;
        if let Some(within) = &file.within {
            for part in &within.parts {
                at = *self.node(at).children.get(&part.name)?;
            }
        }
        self.node(at).children.get(&class.name.name).copied()
    }

    /// Resolves a type name as seen from inside class `scope`.
    pub fn resolve(&self, name: &Name, scope: ClassId) -> Option<TypeRef> {
        self.resolve_checked(name, scope).ok()
    }

    /// Like [`ClassTree::resolve`], with the reason when the name does not resolve (a cycle
    /// of definitions it went through, when it met one).
    pub fn resolve_checked(&self, name: &Name, scope: ClassId) -> Result<TypeRef, String> {
        let outermost = self.searching.borrow().is_empty();
        if outermost {
            self.cycle.take();
        }
        let found = self.resolve_unguarded(name, scope);
        match (found, outermost.then(|| self.cycle.take()).flatten()) {
            (Err(_), Some(cycle)) => Err(self.cycle_message(name, &cycle)),
            (found, _) => found,
        }
    }

    /// "`A.B` is defined through itself: A → C → A".
    fn cycle_message(&self, name: &Name, cycle: &[ClassId]) -> String {
        format!(
            "`{}` is defined through itself: {}",
            name.dotted(),
            self.cycle_text(cycle)
        )
    }

    /// "A → B → A": the classes of a cycle by their paths, back to the first.
    pub fn cycle_text(&self, cycle: &[ClassId]) -> String {
        let mut path: Vec<&str> = cycle.iter().map(|&c| self.node(c).path.as_str()).collect();
        path.extend(path.first().copied());
        path.join(" → ")
    }

    fn resolve_unguarded(&self, name: &Name, scope: ClassId) -> Result<TypeRef, String> {
        let first = &name.parts[0].name;
        let found = if name.global {
            self.node(ROOT).children.get(first).copied()
        } else {
            self.lookup_first(first, scope)
        };
        match found {
            Some(start) => self.composite(start, name).map(TypeRef::Class),
            // The built-in `Clock` of synchronous models (Modelica 16).
            None if name.parts.len() == 1 && first == "Clock" => Ok(TypeRef::Clock),
            None if name.parts.len() == 1 => builtin(first)
                .map(TypeRef::Builtin)
                .ok_or_else(|| format!("type `{}` not found", name.dotted())),
            None => Err(format!("type `{}` not found", name.dotted())),
        }
    }

    /// The rest of a dotted name looked up inside the class its first part denotes: only public
    /// classes, and only inside package-like classes (Modelica 5.3.2: a class that is not a
    /// package exposes only its encapsulated classes, which mocca does not support).
    fn composite(&self, start: ClassId, name: &Name) -> Result<ClassId, String> {
        let mut found = start;
        for (k, part) in name.parts.iter().enumerate().skip(1) {
            let prefix = || {
                let parts: Vec<&str> = name.parts[..k].iter().map(|p| p.name.as_str()).collect();
                parts.join(".")
            };
            if !self.package_like(found) {
                return Err(format!(
                    "`{}` is not a package (it has components that are not constants), so `{}` cannot be looked up inside it",
                    prefix(),
                    part.name
                ));
            }
            let next = self
                .member_class(found, &part.name)
                .ok_or_else(|| format!("type `{}` not found", name.dotted()))?;
            if self.node(next).protected {
                return Err(format!(
                    "class `{}` is protected in `{}`",
                    part.name,
                    prefix()
                ));
            }
            found = next;
        }
        Ok(found)
    }

    /// A package, or a class holding nothing but classes and constants.
    pub fn package_like(&self, class: ClassId) -> bool {
        let Some(def) = self.node(class).def else {
            return true;
        };
        if def.kind == ClassKind::Package {
            return true;
        }
        match &def.body {
            ClassBody::Long(comp) => {
                comp.equations.is_empty()
                    && comp.initial_equations.is_empty()
                    && comp.elements.iter().all(|e| match &e.kind {
                        ElementKind::Component(c) => {
                            c.prefixes.variability == Variability::Constant
                        }
                        _ => true,
                    })
            }
            _ => true,
        }
    }

    /// The first part of a name: the scope's own classes, inherited ones, its imports, then
    /// enclosing scopes.
    fn lookup_first(&self, name: &str, scope: ClassId) -> Option<ClassId> {
        let mut at = Some(scope);
        while let Some(s) = at {
            if let Some(found) = self.member_class(s, name) {
                return Some(found);
            }
            if let Some(found) = self.imported(s, name) {
                return Some(found);
            }
            if self.node(s).def.is_some_and(|d| d.prefixes.encapsulated) {
                // Beyond it, only the predefined types (the caller's fallback).
                return None;
            }
            at = self.node(s).parent;
        }
        None
    }

    /// The class `name` denotes through one of `scope`'s imports. Import targets are full
    /// paths, looked up from the top level.
    fn imported(&self, scope: ClassId, name: &str) -> Option<ClassId> {
        self.node(scope)
            .imports
            .iter()
            .find_map(|import| match import {
                Import::Renamed { alias, target } if alias.name == name => self.global(target),
                Import::Qualified(target) if target.parts.last()?.name == name => {
                    self.global(target)
                }
                Import::Multiple { package, names } if names.iter().any(|n| n.name == name) => {
                    self.member_class(self.global(package)?, name)
                }
                Import::Unqualified(package) => self.member_class(self.global(package)?, name),
                _ => None,
            })
    }

    /// The packages whose element `name` an import of `scope` or of a class around it brings
    /// in: `import P.c;`, `import P.{c, d};` and `import P.*;` (for constants, which are no
    /// classes).
    pub fn importing_packages(&self, scope: ClassId, name: &str) -> Vec<ClassId> {
        let mut found = Vec::new();
        for s in self.lookup_scopes(scope) {
            for import in &self.node(s).imports {
                let package = match import {
                    Import::Qualified(target)
                        if target.parts.len() > 1
                            && target.parts.last().is_some_and(|p| p.name == name) =>
                    {
                        let parts = target.parts[..target.parts.len() - 1].to_vec();
                        self.global(&Name {
                            parts,
                            ..target.clone()
                        })
                    }
                    Import::Multiple { package, names } if names.iter().any(|n| n.name == name) => {
                        self.global(package)
                    }
                    Import::Unqualified(package) => self.global(package),
                    _ => None,
                };
                found.extend(package);
            }
        }
        found
    }

    /// The classes a name used in `scope` is looked up in, innermost first: `scope` and the
    /// classes around it, up to the first `encapsulated` one (Modelica 5.3.1).
    pub fn lookup_scopes(&self, scope: ClassId) -> Vec<ClassId> {
        let mut scopes = Vec::new();
        let mut at = Some(scope);
        while let Some(s) = at {
            scopes.push(s);
            if self.node(s).def.is_some_and(|d| d.prefixes.encapsulated) {
                break;
            }
            at = self.node(s).parent;
        }
        scopes
    }

    /// A class by its full path as written in source.
    fn global(&self, name: &Name) -> Option<ClassId> {
        let start = *self.node(ROOT).children.get(&name.parts[0].name)?;
        self.composite(start, name).ok()
    }

    /// Whether `class` itself (not its bases) declares a component `name`.
    pub fn declares_component(&self, class: ClassId, name: &str) -> bool {
        let Some(def) = self.node(class).def else {
            return false;
        };
        let clauses = elements_of(def, |kind| match kind {
            ElementKind::Component(clause) => Some(clause),
            _ => None,
        });
        clauses
            .iter()
            .flat_map(|clause| &clause.components)
            .any(|d| super::instance::strip_quotes(&d.name.name) == name)
    }

    /// A class named `name` inside `class`, directly or through its base classes (or the
    /// class a short definition names). A search that needs itself again fails: the
    /// definitions it went through form a cycle, noted for the failing lookup's message.
    /// (Failing there is also what Modelica 5.6.1 asks of a class's own `extends` names,
    /// which are looked up without the elements those clauses inherit: `model D = A;
    /// extends D.B;` finds `A` outside.)
    pub fn member_class(&self, class: ClassId, name: &str) -> Option<ClassId> {
        if let Some(&c) = self.node(class).children.get(name) {
            return Some(c);
        }
        let def = self.node(class).def?;
        if matches!(def.body, ClassBody::Long(_)) && self.node(class).extends.is_empty() {
            return None;
        }
        if let Some(&known) = self.found.borrow().get(&class).and_then(|m| m.get(name)) {
            return known;
        }
        {
            let mut searching = self.searching.borrow_mut();
            if let Some(k) = searching.iter().position(|(c, n)| *c == class && n == name) {
                let cycle = searching[k..].iter().map(|&(c, _)| c).collect();
                *self.cycle.borrow_mut() = Some(cycle);
                self.cycles_met.set(self.cycles_met.get() + 1);
                return None;
            }
            searching.push((class, name.to_string()));
        }
        let cycles_before = self.cycles_met.get();
        let found = self.member_class_inherited(class, def, name);
        self.searching.borrow_mut().pop();
        if self.cycles_met.get() == cycles_before {
            let mut memo = self.found.borrow_mut();
            memo.entry(class)
                .or_default()
                .insert(name.to_string(), found);
        }
        found
    }

    fn member_class_inherited(
        &self,
        class: ClassId,
        def: &ClassDef,
        name: &str,
    ) -> Option<ClassId> {
        if let ClassBody::Short(short) = &def.body {
            let parent = self.node(class).parent?;
            return match self.resolve(&short.base, parent) {
                Some(TypeRef::Class(base)) => self.member_class(base, name),
                _ => None,
            };
        }
        let parent = self.node(class).parent.unwrap_or(ROOT);
        self.node(class).extends.iter().find_map(|base| {
            match self.resolve_excluding(base, class, parent) {
                Some(TypeRef::Class(base)) if base != class => self.member_class(base, name),
                _ => None,
            }
        })
    }

    /// Resolves an `extends` name: looked up from the enclosing scope so a class cannot find
    /// itself through its own base.
    pub fn resolve_excluding(
        &self,
        name: &Name,
        class: ClassId,
        parent: ClassId,
    ) -> Option<TypeRef> {
        let first = &name.parts[0].name;
        let local = self.node(class).children.get(first).copied();
        let encapsulated = self
            .node(class)
            .def
            .is_some_and(|d| d.prefixes.encapsulated);
        let start = match local {
            Some(c) => Some(c),
            None if name.global => self.node(ROOT).children.get(first).copied(),
            // The class's own imports hold in its `extends` clauses too.
            None => self.imported(class, first).or_else(|| {
                (!encapsulated)
                    .then(|| self.lookup_first(first, parent))
                    .flatten()
            }),
        };
        match start {
            Some(start) => self.composite(start, name).ok().map(TypeRef::Class),
            None if name.parts.len() == 1 => builtin(first).map(TypeRef::Builtin),
            None => None,
        }
    }
}

pub fn builtin(name: &str) -> Option<ScalarType> {
    match name {
        "Real" => Some(ScalarType::Real),
        "Integer" => Some(ScalarType::Integer),
        "Boolean" => Some(ScalarType::Boolean),
        "String" => Some(ScalarType::String),
        // The predefined enumeration (Modelica 4.9.5.1), as its literals' ordinals.
        "StateSelect" => Some(ScalarType::Integer),
        _ => None,
    }
}

/// The literals of the predefined enumeration `StateSelect`, in order.
pub const STATE_SELECT: [&str; 5] = ["never", "avoid", "default", "prefer", "always"];

fn imports_of(class: &ClassDef) -> Vec<&Import> {
    elements_of(class, |kind| match kind {
        ElementKind::Import(import) => Some(&**import),
        _ => None,
    })
}

fn extends_of(class: &ClassDef) -> Vec<&Name> {
    elements_of(class, |kind| match kind {
        ElementKind::Extends(ext) => Some(&ext.base),
        _ => None,
    })
}

/// The parts of a long class's elements that `pick` selects.
fn elements_of<'a, T: ?Sized>(
    class: &'a ClassDef,
    pick: impl Fn(&'a ElementKind) -> Option<&'a T>,
) -> Vec<&'a T> {
    match &class.body {
        ClassBody::Long(comp) => comp.elements.iter().filter_map(|e| pick(&e.kind)).collect(),
        _ => Vec::new(),
    }
}
