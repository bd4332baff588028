//! Connection semantics (SPEC §3, §2.1): connection sets by union–find, equal potentials,
//! flows summing to zero with inside (+1) / outside (−1) signs, unconnected inside flows set to
//! zero, and weak connections that keep their two sides' sets apart.

use indexmap::IndexMap;

use super::Flattener;
use super::expr::{Ctx, Selected};
use super::instance::{Content, InstId, strip_quotes};
use super::tree::Tree;
use crate::dae::{Dae, Equation, EquationOrigin, Term, VarKind};
use crate::diagnostics::Diagnostic;
use crate::expr::hash::FxIndexMap;
use crate::expr::{ExprId, VarId};
use crate::source::Span;
use crate::syntax::ast::{Causality, ConnectArg, Ident, RefPart};

/// One side of a `connect`: a connector instance, or a builtin-typed connector variable.
#[derive(Clone, Debug)]
pub struct ConnEnd<'a> {
    pub inst: Option<InstId>,
    pub var: Option<VarId>,
    /// The model's own connector (sign −1 for its flows) rather than a sub-component's.
    pub outside: bool,
    /// An outside connector declared `protected`: nothing outside the class can connect to
    /// it, so as an input it does not drive its set (it is driven inside the class, as
    /// the standard library's `f_internal` of a conditional input is).
    pub protected: bool,
    /// `weak v` marks that apply to this connection.
    pub weak: Vec<&'a Ident>,
}

pub struct Connection<'a> {
    pub a: ConnEnd<'a>,
    pub b: ConnEnd<'a>,
    pub span: Span,
    /// Written in the model itself: its outside connectors are the model's interface, driven
    /// by whoever uses the model, so connecting two of its inputs is allowed.
    pub at_root: bool,
}

struct Leaf {
    var: VarId,
    /// Where the name relative to the connector (`v`, `p.v`) starts in the variable's flat
    /// name: the end of it for a connector that is itself a variable.
    rel_from: usize,
    flow: bool,
    known: bool,
}

impl Leaf {
    fn rel<'d>(&self, dae: &'d Dae) -> &'d str {
        &dae.var(self.var).name[self.rel_from..]
    }
}

/// How a causal variable was seen in connections, for the one-source rule (Modelica 9.3).
#[derive(Clone, Copy, Default)]
struct Roles {
    /// An `output` of a sub-component: it drives the set.
    inside_output: bool,
    /// An `input` of the class itself, seen from inside it.
    outside_input: bool,
    /// Seen as a sub-component's connector somewhere (so something outside may drive it).
    inside: bool,
    /// An `output` of a class connected inside that class: what it connects to there
    /// drives it, so seen from outside it relays that source rather than being one.
    outside_output: bool,
}

impl Roles {
    /// Drives its set: an inside output its own class does not connect inside, or an
    /// outside input nothing connects to from outside.
    fn is_source(self) -> bool {
        (self.inside_output && !self.outside_output) || (self.outside_input && !self.inside)
    }
}

/// A flow variable seen from one level: (variable, outside?).
type FlowKey = (VarId, bool);

#[derive(Default)]
struct UnionFind {
    parent: Vec<usize>,
}

impl UnionFind {
    fn add(&mut self) -> usize {
        self.parent.push(self.parent.len());
        self.parent.len() - 1
    }

    fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }

    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            // The smaller index stays root, so set order follows first appearance.
            let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
            self.parent[hi] = lo;
        }
    }
}

/// Union–find over keys, remembering their order of first appearance.
struct Sets<K: std::hash::Hash + Eq + Copy> {
    index: FxIndexMap<K, usize>,
    uf: UnionFind,
    spans: Vec<Span>,
}

impl<K: std::hash::Hash + Eq + Copy> Sets<K> {
    fn new() -> Self {
        Sets {
            index: FxIndexMap::default(),
            uf: UnionFind::default(),
            spans: Vec::new(),
        }
    }

    fn id(&mut self, key: K, span: Span) -> usize {
        let next = self.spans.len();
        let i = *self.index.entry(key).or_insert(next);
        if i == next {
            self.uf.add();
            self.spans.push(span);
        }
        i
    }

    fn union(&mut self, a: K, b: K, span: Span) {
        let (x, y) = (self.id(a, span), self.id(b, span));
        self.uf.union(x, y);
    }

    /// The sets, each as its members in order of appearance.
    fn groups(&mut self) -> FxIndexMap<usize, Vec<(K, Span)>> {
        let mut groups: FxIndexMap<usize, Vec<(K, Span)>> = FxIndexMap::default();
        let keys: Vec<(K, usize)> = self.index.iter().map(|(k, &i)| (*k, i)).collect();
        for (k, i) in keys {
            let root = self.uf.find(i);
            groups.entry(root).or_default().push((k, self.spans[i]));
        }
        groups
    }
}

/// Where [`Flattener::connect_walk`] is in a connect argument.
#[derive(Clone, Copy)]
struct Walk {
    span: Span,
    outside: bool,
    /// Already inside a (non-connector) component of the class.
    below_component: bool,
}

/// Connectors match by element name, not declaration order (Modelica 9.3): `b`'s leaves in
/// the order of `a`'s names, when both have the same names.
fn in_order_of(dae: &Dae, a: &[Leaf], b: Vec<Leaf>) -> Vec<Leaf> {
    if a.len() != b.len() || a.iter().zip(&b).all(|(x, y)| x.rel(dae) == y.rel(dae)) {
        return b;
    }
    let mut by_name: FxIndexMap<&str, Leaf> = b.into_iter().map(|l| (l.rel(dae), l)).collect();
    let reordered: Vec<Leaf> = a
        .iter()
        .filter_map(|x| by_name.swap_remove(x.rel(dae)))
        .collect();
    if by_name.is_empty() {
        reordered
    } else {
        reordered.into_iter().chain(by_name.into_values()).collect()
    }
}

impl<'a> Flattener<'a> {
    /// Resolves one argument of `connect` (possibly an array of connectors).
    pub(crate) fn connect_side(
        &mut self,
        inst: InstId,
        arg: &'a ConnectArg,
        ctx: &Ctx<'_>,
    ) -> Result<Tree<ConnEnd<'a>>, Diagnostic> {
        let first = strip_quotes(&arg.cref.parts[0].ident.name);
        let element = self.insts[inst.0 as usize].elements.get(first.as_ref());
        let (outside, protected) = match element.filter(|e| self.sees(ctx.class, &first, e)) {
            Some(e) => (e.connector, e.connector && e.protected),
            None => {
                return Err(Diagnostic::error(format!(
                    "unknown connector `{}`",
                    arg.cref.dotted()
                ))
                .at(arg.cref.span, "not declared"));
            }
        };
        let at = Walk {
            span: arg.cref.span,
            outside,
            below_component: false,
        };
        let mut ends = self.connect_walk(inst, &arg.cref.parts, at, ctx)?;
        if protected {
            ends = ends
                .map::<_, ()>(&mut |end| {
                    Ok(ConnEnd {
                        protected: true,
                        ..end.clone()
                    })
                })
                .expect("infallible");
        }
        if arg.weak.is_none() {
            return Ok(ends);
        }
        let explicit: Vec<&'a Ident> = arg.weak.iter().collect();
        ends = ends
            .map::<_, ()>(&mut |end| {
                let mut end = end.clone();
                end.weak.extend(explicit.iter().copied());
                Ok(end)
            })
            .expect("infallible");
        Ok(ends)
    }

    fn connect_walk(
        &mut self,
        inst: InstId,
        parts: &'a [RefPart],
        at: Walk,
        ctx: &Ctx<'_>,
    ) -> Result<Tree<ConnEnd<'a>>, Diagnostic> {
        let Walk { span, outside, .. } = at;
        let part = &parts[0];
        let name = strip_quotes(&part.ident.name);
        let Some((slot, elem)) = self.insts[inst.0 as usize].elements.get_full(name.as_ref())
        else {
            return Err(Diagnostic::error(format!("unknown connector `{name}`"))
                .at(part.ident.span, "not declared"));
        };
        let (dims, is_connector) = (elem.dims.clone(), elem.connector);
        let boolean = elem.boolean_dims.clone();
        let picks = self.picks(&part.subscripts, (&dims, &boolean), span, ctx)?;
        let not_connector = |what: &str| {
            Diagnostic::error(format!(
                "`connect` needs connectors, but `{what}` is not a connector"
            ))
            .at(span, "not a connector")
        };
        match self.element_content(inst, slot).select(&dims, &picks) {
            Selected::Pending | Selected::Disabled => Err(not_connector(&name)),
            Selected::Vars(selected) => {
                if parts.len() > 1 || !is_connector {
                    return Err(not_connector(&name));
                }
                selected.map(&mut |&v| {
                    Ok(ConnEnd {
                        inst: None,
                        var: Some(v),
                        outside,
                        protected: false,
                        weak: Vec::new(),
                    })
                })
            }
            Selected::Insts(selected) => {
                if parts.len() == 1 {
                    return selected.map(&mut |&id| {
                        let instance = &self.insts[id.0 as usize];
                        if !instance.is_connector {
                            return Err(not_connector(&name));
                        }
                        // Marks declared on a connector apply where it is connected from outside
                        // its own component (SPEC §2.1, `Flange shaft(weak tau)`).
                        let weak = if outside {
                            Vec::new()
                        } else {
                            instance.weak_marks.clone()
                        };
                        Ok(ConnEnd {
                            inst: Some(id),
                            var: None,
                            outside,
                            protected: false,
                            weak,
                        })
                    });
                }
                let component = !is_connector;
                if component && at.below_component {
                    return Err(Diagnostic::error(
                        "a connect argument is `c` or `m.c` (a connector, or a connector of a component); it cannot reach into a component's components",
                    )
                    .at(span, "too deep"));
                }
                let at = Walk {
                    below_component: at.below_component || component,
                    ..at
                };
                let nested =
                    selected.map(&mut |&child| self.connect_walk(child, &parts[1..], at, ctx))?;
                Ok(super::expr::graft(nested))
            }
        }
    }

    fn leaves(&self, end: &ConnEnd<'a>) -> Vec<Leaf> {
        let known =
            |v: VarId| matches!(self.dae.var(v).kind, VarKind::Parameter | VarKind::Constant);
        if let Some(v) = end.var {
            return vec![Leaf {
                rel_from: self.dae.var(v).name.len(),
                var: v,
                flow: self.dae.var(v).flow,
                known: known(v),
            }];
        }
        let mut out = Vec::new();
        let mut stack = vec![end.inst.expect("an end is a variable or an instance")];
        let prefix_len = self.insts[stack[0].0 as usize].prefix.len() + 1;
        while let Some(id) = stack.pop() {
            for elem in self.insts[id.0 as usize].elements.values() {
                match &elem.content {
                    Content::Vars(vars) => out.extend(vars.iter().map(|&v| Leaf {
                        rel_from: prefix_len,
                        var: v,
                        flow: self.dae.var(v).flow,
                        known: known(v),
                    })),
                    Content::Insts(children) => stack.extend(children.iter().rev()),
                    Content::Pending | Content::Disabled => {}
                }
            }
        }
        out
    }

    /// Turns all recorded connections into equations.
    pub(crate) fn connection_equations(&mut self) {
        let mut potentials: Sets<VarId> = Sets::new();
        let mut flows: Sets<FlowKey> = Sets::new();
        let mut weak_reads: Vec<(VarId, VarId, Span)> = Vec::new();
        let mut absorbed: Vec<(FlowKey, FlowKey, Span)> = Vec::new();
        let mut roles: FxIndexMap<VarId, Roles> = FxIndexMap::default();
        let connections = std::mem::take(&mut self.connections);
        for c in &connections {
            let (la, lb) = (self.leaves(&c.a), self.leaves(&c.b));
            let lb = in_order_of(&self.dae, &la, lb);
            if let Err(d) = self.check_pairs(&la, &lb, c) {
                self.diags.push(d);
                continue;
            }
            if c.a.weak.is_empty() && c.b.weak.is_empty() {
                for (x, y) in la.iter().zip(&lb) {
                    self.note_roles(&mut roles, x.var, &c.a, c.at_root);
                    self.note_roles(&mut roles, y.var, &c.b, c.at_root);
                    match (x.known, x.flow) {
                        (true, _) => {}
                        (false, true) => {
                            flows.union((x.var, c.a.outside), (y.var, c.b.outside), c.span)
                        }
                        (false, false) => potentials.union(x.var, y.var, c.span),
                    }
                }
                continue;
            }
            match self.weak_pairs(c, &la, &lb) {
                Ok(pairs) => {
                    for (pot_weak, pot_other, flow_weak_side, flow_other_side) in pairs {
                        weak_reads.push((pot_weak, pot_other, c.span));
                        flows.id(flow_weak_side, c.span);
                        flows.id(flow_other_side, c.span);
                        absorbed.push((flow_other_side, flow_weak_side, c.span));
                    }
                }
                Err(d) => self.diags.push(d),
            }
        }
        let potential_sets: Vec<Vec<(VarId, Span)>> = potentials.groups().into_values().collect();
        self.check_sources(&potential_sets, &roles);
        self.potential_equations(&potential_sets);
        self.flow_equations(&mut flows, &absorbed);
        for (pot, other, span) in weak_reads {
            let (l, r) = (self.dae.pool.var(pot), self.dae.pool.last(other));
            self.push_connection_equation(
                vec![(1.0, l), (-1.0, r)],
                span,
                EquationOrigin::WeakPotential,
                pot,
            );
        }
        self.unconnected_flows(&flows);
    }

    fn note_roles(
        &self,
        roles: &mut FxIndexMap<VarId, Roles>,
        v: VarId,
        end: &ConnEnd<'_>,
        at_root: bool,
    ) {
        let causality = self.causality[v.0 as usize];
        if causality == Causality::None {
            return;
        }
        let outside = end.outside;
        let r = roles.entry(v).or_default();
        r.inside |= !outside;
        r.inside_output |= !outside && causality == Causality::Output;
        r.outside_output |= outside && causality == Causality::Output;
        r.outside_input |= outside && !end.protected && !at_root && causality == Causality::Input;
    }

    /// A connection set of causal variables has at most one source (Modelica 9.3).
    fn check_sources(&mut self, sets: &[Vec<(VarId, Span)>], roles: &FxIndexMap<VarId, Roles>) {
        if roles.is_empty() {
            return; // no causal variable was connected
        }
        for members in sets {
            let sources: Vec<&(VarId, Span)> = members
                .iter()
                .filter(|(v, _)| roles.get(v).is_some_and(|r| r.is_source()))
                .collect();
            if let [first, second, ..] = sources.as_slice() {
                let (a, b) = (&self.dae.var(first.0).name, &self.dae.var(second.0).name);
                self.diags.push(
                    Diagnostic::error(format!(
                        "`{a}` and `{b}` both drive the same connection set"
                    ))
                    .at(second.1, "a second signal source")
                    .with_secondary(first.1, "the first")
                    .with_note(
                        "a set of connected inputs and outputs needs exactly one output (or one input of the enclosing class) to drive it",
                    ),
                );
            }
        }
    }

    /// Connected variables pair up: same names and flow-ness (else the connectors differ), and
    /// per pair the same type, variability and causality class; connected constants and
    /// parameters must have equal values, as no equation is generated for them.
    fn check_pairs(
        &mut self,
        la: &[Leaf],
        lb: &[Leaf],
        c: &Connection<'a>,
    ) -> Result<(), Diagnostic> {
        self.check_match(la, lb, c)?;
        for (x, y) in la.iter().zip(lb) {
            let (vx, vy) = (self.dae.var(x.var), self.dae.var(y.var));
            let (names, same_type, same_kind) = (
                (vx.name.clone(), vy.name.clone()),
                vx.ty == vy.ty,
                vx.kind == vy.kind,
            );
            let differ = |what: &str| {
                Diagnostic::error(format!(
                    "`{}` and `{}` are connected but differ in {what}",
                    names.0, names.1
                ))
                .at(c.span, "in this connection")
            };
            if !same_type {
                return Err(differ("type"));
            }
            if x.known != y.known || (x.known && !same_kind) {
                return Err(differ("variability"));
            }
            let (cx, cy) = (
                self.causality[x.var.0 as usize],
                self.causality[y.var.0 as usize],
            );
            if (cx == Causality::None) != (cy == Causality::None) {
                return Err(differ(
                    "causality (one is `input`/`output`, the other neither)",
                ));
            }
            if x.known {
                let a = self.const_value(x.var, c.span);
                let b = self.const_value(y.var, c.span);
                if let (Ok(a), Ok(b)) = (a, b)
                    && a != b
                {
                    return Err(differ(&format!("value ({a} and {b})")));
                }
            }
        }
        Ok(())
    }

    fn check_match(&self, la: &[Leaf], lb: &[Leaf], c: &Connection<'a>) -> Result<(), Diagnostic> {
        let same = la.len() == lb.len()
            && la
                .iter()
                .zip(lb)
                .all(|(x, y)| x.rel(&self.dae) == y.rel(&self.dae) && x.flow == y.flow);
        if same {
            return Ok(());
        }
        let names = |ls: &[Leaf]| {
            ls.iter()
                .map(|l| {
                    if l.flow {
                        format!("flow {}", l.rel(&self.dae))
                    } else {
                        l.rel(&self.dae).to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        Err(Diagnostic::error("connected connectors do not match")
            .at(c.span, "these connectors differ")
            .with_note(format!(
                "one side has ({}), the other ({})",
                names(la),
                names(lb)
            )))
    }

    /// For a weak connection, the (potential read weakly, potential it reads, flow key of
    /// the flow-weak side, flow key of the potential-weak side) of each potential/flow pair.
    #[allow(clippy::type_complexity)]
    fn weak_pairs(
        &self,
        c: &Connection<'a>,
        la: &[Leaf],
        lb: &[Leaf],
    ) -> Result<Vec<(VarId, VarId, FlowKey, FlowKey)>, Diagnostic> {
        let bad =
            |msg: &str| Diagnostic::error(msg.to_string()).at(c.span, "in this weak connection");
        if c.a.weak.is_empty() || c.b.weak.is_empty() {
            return Err(bad(
                "both sides of a weak connection must say which variable is weak (`a(weak v)`, `b(weak i)`)",
            ));
        }
        for (end, leaves) in [(&c.a, la), (&c.b, lb)] {
            for mark in &end.weak {
                if !leaves
                    .iter()
                    .any(|l| l.rel(&self.dae) == strip_quotes(&mark.name))
                {
                    return Err(Diagnostic::error(format!(
                        "the connector has no variable `{}` to make weak",
                        mark.name
                    ))
                    .at(mark.span, "not a variable of this connector"));
                }
            }
        }
        let pots: Vec<usize> = (0..la.len())
            .filter(|&i| !la[i].flow && !la[i].known)
            .collect();
        let flows: Vec<usize> = (0..la.len()).filter(|&i| la[i].flow).collect();
        if pots.len() != flows.len() || pots.is_empty() {
            return Err(bad(
                "a weak connection needs connectors made of potential/flow pairs",
            ));
        }
        let marked =
            |end: &ConnEnd<'a>, rel: &str| end.weak.iter().any(|m| strip_quotes(&m.name) == rel);
        let mut out = Vec::new();
        for (&p, &f) in pots.iter().zip(&flows) {
            let (prel, frel) = (la[p].rel(&self.dae), la[f].rel(&self.dae));
            let key = |leaf: &Leaf, end: &ConnEnd<'a>| (leaf.var, end.outside);
            if marked(&c.a, prel) && marked(&c.b, frel) {
                out.push((la[p].var, lb[p].var, key(&lb[f], &c.b), key(&la[f], &c.a)));
            } else if marked(&c.a, frel) && marked(&c.b, prel) {
                out.push((lb[p].var, la[p].var, key(&la[f], &c.a), key(&lb[f], &c.b)));
            } else {
                return Err(bad(&format!(
                    "a weak connection must be weak in the potential `{prel}` on one side and in the flow `{frel}` on the other"
                )));
            }
        }
        Ok(out)
    }

    fn potential_equations(&mut self, sets: &[Vec<(VarId, Span)>]) {
        for members in sets {
            let (rep, _) = members[0];
            for &(other, span) in &members[1..] {
                let (l, r) = (self.dae.pool.var(rep), self.dae.pool.var(other));
                self.push_connection_equation(
                    vec![(1.0, l), (-1.0, r)],
                    span,
                    EquationOrigin::ConnectPotential,
                    rep,
                );
            }
        }
    }

    fn flow_equations(&mut self, flows: &mut Sets<FlowKey>, absorbed: &[(FlowKey, FlowKey, Span)]) {
        // A flow set on the potential-weak side adds its flows (last values) to the other
        // side's balance instead of having one of its own.
        let mut into: IndexMap<usize, Vec<usize>> = IndexMap::new();
        let mut is_absorbed = std::collections::HashSet::new();
        for &(from, to, _) in absorbed {
            let (f, t) = (
                flows.id(from, Span::default()),
                flows.id(to, Span::default()),
            );
            let (rf, rt) = (flows.uf.find(f), flows.uf.find(t));
            is_absorbed.insert(rf);
            into.entry(rt).or_default().push(rf);
        }
        let groups = flows.groups();
        for (root, members) in &groups {
            if is_absorbed.contains(root) {
                continue;
            }
            let mut terms = Vec::new();
            for &((v, outside), _) in members {
                terms.push((if outside { -1.0 } else { 1.0 }, self.dae.pool.var(v)));
            }
            for from in into.get(root).into_iter().flatten() {
                for &((v, outside), _) in groups.get(from).into_iter().flatten() {
                    terms.push((if outside { -1.0 } else { 1.0 }, self.dae.pool.last(v)));
                }
            }
            let (first_var, span) = (members[0].0.0, members[0].1);
            self.push_connection_equation(terms, span, EquationOrigin::ConnectFlow, first_var);
        }
    }

    /// Every flow of a sub-component's connector that no connection reaches is zero.
    fn unconnected_flows(&mut self, flows: &Sets<FlowKey>) {
        let mut zero = Vec::new();
        for inst in &self.insts {
            if inst.is_connector {
                continue;
            }
            for elem in inst.elements.values() {
                let Content::Insts(children) = &elem.content else {
                    continue;
                };
                for &child in children {
                    if !self.insts[child.0 as usize].is_connector {
                        continue;
                    }
                    let end = ConnEnd {
                        inst: Some(child),
                        var: None,
                        outside: false,
                        protected: false,
                        weak: Vec::new(),
                    };
                    for leaf in self.leaves(&end) {
                        if leaf.flow && !leaf.known && !flows.index.contains_key(&(leaf.var, false))
                        {
                            zero.push((leaf.var, elem.decl.span));
                        }
                    }
                }
            }
        }
        for (v, span) in zero {
            let x = self.dae.pool.var(v);
            self.push_connection_equation(vec![(1.0, x)], span, EquationOrigin::UnconnectedFlow, v);
        }
    }

    /// `Σ sign·term = 0` (two terms `a − b` are printed as `a = b`).
    fn push_connection_equation(
        &mut self,
        terms: Vec<(f64, ExprId)>,
        span: Span,
        origin: EquationOrigin,
        owner: VarId,
    ) {
        let p = &mut self.dae.pool;
        let (lhs, rhs) = if terms.len() == 2 && terms[1].0 < 0.0 && terms[0].0 > 0.0 {
            (terms[0].1, terms[1].1)
        } else {
            let mut acc = p.zero();
            for &(s, e) in &terms {
                acc = if s > 0.0 {
                    p.add(acc, e)
                } else {
                    p.sub(acc, e)
                };
            }
            (acc, p.zero())
        };
        let residual = p.sub(lhs, rhs);
        let component = self.dae.var(owner).component.clone();
        let terms = terms
            .into_iter()
            .map(|(sign, expr)| Term { expr, sign, span })
            .collect();
        self.dae.equations.push(Equation {
            lhs,
            rhs,
            residual,
            terms,
            origin,
            span,
            component,
        });
    }
}
