//! Removing whole components from the flat model (what `--remove-below` does with the least
//! active ones): their variables and equations go, their connectors leave the connection
//! sets they were in, and a connector left alone in its set has its flow closed (`f = 0`).

use std::collections::{BTreeMap, BTreeSet};

use super::initial::InitialChanges;
use super::operation::{Operation, Reduced, rewrite};
use crate::dae::{Dae, Equation, EquationOrigin};
use crate::expr::{Node, VarId};

/// The flat model without some components, and the comment each equation it changed carries.
pub struct Removed {
    pub reduced: Reduced,
    /// By equation of the reduced model.
    pub notes: BTreeMap<usize, String>,
}

/// Whether flat name `name` is `component` or inside it.
fn inside(name: &str, component: &str) -> bool {
    name.strip_prefix(component)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
}

/// `flat` without `components`; an error naming what still reads one of them (an equation
/// of another component, a binding, a weak connection, a `when` clause).
pub fn remove_components(flat: &Dae, components: &[&str]) -> Result<Removed, String> {
    let owner = |name: &str| components.iter().copied().find(|c| inside(name, c));
    let removed: BTreeSet<VarId> = flat
        .var_ids()
        .filter(|&v| owner(&flat.var(v).name).is_some())
        .collect();
    let reads_removed = |e| {
        let mut found = None;
        flat.pool.visit_leaves(e, |n| {
            if let Node::Var(v) | Node::Der(v) | Node::Last(v) = n
                && removed.contains(&v)
            {
                found = Some(v);
            }
        });
        found
    };
    let mut dae = flat.clone();
    let mut notes: Vec<Option<String>> = vec![None; flat.equations.len()];
    let mut keep = vec![true; flat.equations.len()];
    let mut potentials = Potentials::default();
    for (e, eq) in flat.equations.iter().enumerate() {
        if owner(&eq.component).is_some() && !is_connection(eq.origin) {
            keep[e] = false;
            continue;
        }
        let Some(read) = reads_removed(eq.residual) else {
            if eq.origin == EquationOrigin::ConnectPotential {
                potentials.kept.push(e);
            }
            continue;
        };
        let name = &flat.var(read).name;
        let note = || {
            Some(format!(
                "mocca reduce: removed `{}`",
                owner(name).unwrap_or(name)
            ))
        };
        match eq.origin {
            EquationOrigin::ConnectPotential => {
                keep[e] = false;
                potentials.dropped.push(e);
            }
            EquationOrigin::ConnectFlow | EquationOrigin::UnconnectedFlow => {
                let deleted: Vec<(usize, Operation)> = (0..eq.terms.len())
                    .filter(|&t| reads_removed(eq.terms[t].expr).is_some())
                    .map(|t| (t, Operation::Delete))
                    .collect();
                if deleted.len() == eq.terms.len() {
                    keep[e] = false;
                } else {
                    rewrite(&mut dae.pool, &mut dae.equations[e], &deleted);
                    notes[e] = note();
                }
            }
            _ => {
                return Err(format!(
                    "`{}` is read outside it, by the equation `{} = {}`",
                    owner(name).unwrap_or(name),
                    flat.display(eq.lhs),
                    flat.display(eq.rhs)
                ));
            }
        }
    }
    for v in flat.var_ids().filter(|v| !removed.contains(v)) {
        let var = flat.var(v);
        for e in [var.binding, var.start, var.nominal].into_iter().flatten() {
            if let Some(read) = reads_removed(e) {
                return Err(format!(
                    "`{}` is read outside it, by `{}`",
                    owner(&flat.var(read).name).unwrap_or(""),
                    var.name
                ));
            }
        }
    }
    if let Some(read) = read_at_events(flat, &removed) {
        return Err(format!(
            "`{}` is read outside it, by a `when` clause",
            owner(&flat.var(read).name).unwrap_or("")
        ));
    }
    let joined = potentials.rejoin(flat, &removed);
    let mut equations = Vec::new();
    let mut kept_notes = BTreeMap::new();
    for (e, eq) in dae.equations.iter().enumerate().filter(|&(e, _)| keep[e]) {
        if let Some(note) = notes[e].take() {
            kept_notes.insert(equations.len(), note);
        }
        equations.push(eq.clone());
    }
    for (a, b, gone, e) in joined {
        kept_notes.insert(
            equations.len(),
            format!(
                "mocca reduce: removed `{}`",
                owner(&flat.var(gone).name).unwrap_or("")
            ),
        );
        equations.push(equality(&mut dae, a, b, &flat.equations[e]));
    }
    dae.equations = equations;
    let initial: Vec<usize> = (0..flat.initial_equations.len())
        .filter(|&i| reads_removed(flat.initial_equations[i].residual).is_some())
        .collect();
    for &i in initial.iter().rev() {
        dae.initial_equations.remove(i);
    }
    let dae = crate::dae::without_variables(dae, &removed);
    Ok(Removed {
        reduced: Reduced {
            dae,
            initial: InitialChanges {
                dropped: initial,
                ..InitialChanges::default()
            },
        },
        notes: kept_notes,
    })
}

fn is_connection(origin: EquationOrigin) -> bool {
    matches!(
        origin,
        EquationOrigin::ConnectPotential
            | EquationOrigin::ConnectFlow
            | EquationOrigin::UnconnectedFlow
            | EquationOrigin::WeakPotential
    )
}

/// The potential equalities of the connection sets (`a = b`, both plain variables): those
/// kept and those dropped with a removed connector, whose sets may need joining again.
#[derive(Default)]
struct Potentials {
    kept: Vec<usize>,
    dropped: Vec<usize>,
}

impl Potentials {
    /// The equalities `(a, b, removed member, dropped equation)` that join the remaining
    /// members of each set a removed connector was in, so the set stays one.
    fn rejoin(&self, flat: &Dae, removed: &BTreeSet<VarId>) -> Vec<(VarId, VarId, VarId, usize)> {
        let sides = |e: usize| {
            let eq = &flat.equations[e];
            match (flat.pool.node(eq.lhs), flat.pool.node(eq.rhs)) {
                (Node::Var(a), Node::Var(b)) => Some((a, b)),
                _ => None,
            }
        };
        let mut whole = UnionFind::default();
        let mut remaining = UnionFind::default();
        for &e in &self.kept {
            if let Some((a, b)) = sides(e) {
                whole.union(a, b);
                remaining.union(a, b);
            }
        }
        let mut members: Vec<(VarId, VarId, usize)> = Vec::new();
        for &e in &self.dropped {
            if let Some((a, b)) = sides(e) {
                whole.union(a, b);
                let gone = if removed.contains(&a) { a } else { b };
                members.extend([a, b].into_iter().map(|m| (m, gone, e)));
            }
        }
        let mut first_of_set: BTreeMap<VarId, VarId> = BTreeMap::new();
        let mut joined = Vec::new();
        for (m, gone, e) in members.into_iter().filter(|(m, ..)| !removed.contains(m)) {
            let set = whole.find(m);
            match first_of_set.get(&set) {
                None => {
                    first_of_set.insert(set, m);
                }
                Some(&first) if remaining.find(first) != remaining.find(m) => {
                    remaining.union(first, m);
                    joined.push((first, m, gone, e));
                }
                Some(_) => {}
            }
        }
        joined
    }
}

#[derive(Default)]
struct UnionFind {
    parent: BTreeMap<VarId, VarId>,
}

impl UnionFind {
    fn find(&mut self, v: VarId) -> VarId {
        let mut root = v;
        while let Some(&p) = self.parent.get(&root).filter(|&&p| p != root) {
            root = p;
        }
        self.parent.insert(v, root);
        root
    }

    fn union(&mut self, a: VarId, b: VarId) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            self.parent.insert(rb, ra);
        }
    }
}

/// `a = b` as a connection equation, where `like` was.
fn equality(dae: &mut Dae, a: VarId, b: VarId, like: &Equation) -> Equation {
    let rhs = dae.pool.var(b);
    let component = dae.var(a).component.clone();
    let origin = EquationOrigin::ConnectPotential;
    Equation::assignment(&mut dae.pool, a, rhs, origin, (like.span, component))
}

/// A variable of `removed` that the hybrid part reads, assigns or re-initialises.
fn read_at_events(flat: &Dae, removed: &BTreeSet<VarId>) -> Option<VarId> {
    let mut hybrid = flat.hybrid.clone();
    let mut found = None;
    hybrid.exprs_mut(&mut |e| {
        flat.pool.visit_leaves(*e, |n| {
            if let Node::Var(v) | Node::Der(v) | Node::Last(v) = n
                && removed.contains(&v)
            {
                found = Some(v);
            }
        });
    });
    hybrid.vars_mut(&mut |v| {
        if removed.contains(v) {
            found = Some(*v);
        }
    });
    found
}
