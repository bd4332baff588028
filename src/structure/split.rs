//! The weak subsystems as models of their own: what `emit --partition weak --fmu DIR` makes
//! one FMU of each.
//!
//! A subsystem's model keeps the equations of its blocks, of the blocks they read that depend
//! on no state (functions of time and parameters, computed again in every model that reads
//! them), and of the output blocks that read no other subsystem. What it reads weakly of
//! another subsystem becomes a top-level input of the same name, read as the input itself:
//! a co-simulation master holds an input over its step, which is the weak read's one-step lag
//! (SPEC §2.1). Its start is the value at the whole model's consistent initial point, so the
//! model initialises as the whole one does. What the others read of a model are its outputs.
//! An output block reading several subsystems belongs to none of the models.

use std::collections::BTreeSet;

use super::{Block, Structure};
use crate::dae::hybrid::{Hybrid, WhenClause};
use crate::dae::{Dae, Equation, VarKind, without_variables};
use crate::diagnostics::Diagnostic;
use crate::expr::{ExprId, Node, Substituted, VarId};

/// One subsystem as a model, and how it joins the others.
pub struct SubsystemModel {
    /// `subsystem1`, `subsystem2`, … in the order `Structure::subsystems` has them.
    pub name: String,
    pub dae: Dae,
    /// The variables it reads of other subsystem models (its inputs), by name: each is an
    /// output of the model that computes it, under the same name.
    pub inputs: Vec<String>,
    /// The variables other subsystem models read of it, by name.
    pub outputs: Vec<String>,
}

/// What a block reads: the blocks before it whose unknowns it reads, the blocks solving the
/// derivatives of the states it reads, and the variables it reads weakly (`last(v)`).
struct Reads {
    upstream: Vec<usize>,
    states: Vec<usize>,
    weak: Vec<VarId>,
}

const NO_BLOCK: usize = usize::MAX;

/// Every subsystem of `structure` as a model of its own; `values` are the whole model's
/// values at its consistent initial point, by variable, for the inputs' start values.
pub fn subsystem_models(
    dae: &Dae,
    structure: &Structure,
    values: &[f64],
) -> Result<Vec<SubsystemModel>, Diagnostic> {
    let blocks = &structure.blocks;
    let mut solver = vec![NO_BLOCK; dae.variables.len()];
    for (b, block) in blocks.iter().enumerate() {
        for u in &block.unknowns {
            solver[u.var().0 as usize] = b;
        }
    }
    let reads: Vec<Reads> = (blocks.iter().enumerate())
        .map(|(b, block)| reads_of(dae, b, block, &solver))
        .collect();
    let mut depends_on_state = vec![false; blocks.len()];
    for b in 0..blocks.len() {
        depends_on_state[b] =
            !reads[b].states.is_empty() || reads[b].upstream.iter().any(|&u| depends_on_state[u]);
    }
    let mut subsystem_of = vec![None; blocks.len()];
    for (s, sub) in structure.subsystems.iter().enumerate() {
        for &b in &sub.blocks {
            subsystem_of[b] = Some(s);
        }
    }
    let layout = Layout {
        blocks,
        reads: &reads,
        depends_on_state: &depends_on_state,
        subsystem_of: &subsystem_of,
        solver: &solver,
    };
    let parts: Vec<Part> = (0..structure.subsystems.len())
        .map(|k| layout.part(&structure.subsystems[k].blocks))
        .collect();
    let owner = |v: VarId| {
        let b = solver[v.0 as usize];
        parts.iter().position(|p| b != NO_BLOCK && p.included[b])
    };
    let mut outputs: Vec<BTreeSet<VarId>> = vec![BTreeSet::new(); parts.len()];
    for part in &parts {
        for &v in &part.inputs {
            let Some(j) = owner(v) else {
                return Err(Diagnostic::error(format!(
                    "`{}` is read weakly but computed from several subsystems, so no \
                     subsystem model has it to give",
                    dae.var(v).name
                ))
                .at(dae.var(v).span, "declared here"));
            };
            outputs[j].insert(v);
        }
    }
    let computed: Vec<BTreeSet<VarId>> = parts.iter().map(|p| p.computed(blocks)).collect();
    let homes = when_homes(dae, &computed);
    (parts.iter().zip(&outputs).enumerate())
        .map(|(k, (part, outputs))| {
            let name = format!("subsystem{}", k + 1);
            let adopted: Vec<usize> = (0..homes.len()).filter(|&w| homes[w] == Some(k)).collect();
            let sub = part.model(dae, (blocks, &computed[k], &adopted), values, &name)?;
            Ok(SubsystemModel {
                name,
                dae: sub,
                inputs: part
                    .inputs
                    .iter()
                    .map(|&v| dae.var(v).name.clone())
                    .collect(),
                outputs: outputs.iter().map(|&v| dae.var(v).name.clone()).collect(),
            })
        })
        .collect()
}

fn reads_of(dae: &Dae, b: usize, block: &Block, solver: &[usize]) -> Reads {
    let mut reads = Reads {
        upstream: Vec::new(),
        states: Vec::new(),
        weak: Vec::new(),
    };
    for &e in &block.equations {
        dae.pool
            .visit_leaves(dae.equations[e].residual, |leaf| match leaf {
                Node::Last(v) if solver[v.0 as usize] != NO_BLOCK => reads.weak.push(v),
                Node::Var(v) | Node::Der(v) => {
                    let from = solver[v.0 as usize];
                    if from == NO_BLOCK || from == b {
                        return;
                    }
                    match (leaf, dae.var(v).kind) {
                        (Node::Var(_), VarKind::State) => reads.states.push(from),
                        _ => reads.upstream.push(from),
                    }
                }
                _ => {}
            });
    }
    reads
}

/// The whole model's blocks and what joins them.
struct Layout<'a> {
    blocks: &'a [Block],
    reads: &'a [Reads],
    depends_on_state: &'a [bool],
    subsystem_of: &'a [Option<usize>],
    solver: &'a [usize],
}

/// The blocks one subsystem model keeps, and the variables it reads of the others.
struct Part {
    included: Vec<bool>,
    inputs: Vec<VarId>,
}

impl Layout<'_> {
    /// A subsystem (its `core` blocks) with the blocks it needs and the outputs it alone
    /// feeds.
    fn part(&self, core: &[usize]) -> Part {
        let mut included = vec![false; self.blocks.len()];
        self.include(&mut included, core);
        // Output blocks, in evaluation order: each reads only blocks before it.
        for b in 0..self.blocks.len() {
            if included[b] || self.subsystem_of[b].is_some() || !self.depends_on_state[b] {
                continue;
            }
            let r = &self.reads[b];
            let feeds = (r.upstream.iter().chain(&r.states)).all(|&u| {
                included[u] || self.subsystem_of[u].is_none() && !self.depends_on_state[u]
            });
            if feeds {
                self.include(&mut included, &[b]);
            }
        }
        let mut inputs = BTreeSet::new();
        for b in (0..self.blocks.len()).filter(|&b| included[b]) {
            for &v in &self.reads[b].weak {
                let from = self.solver[v.0 as usize];
                if !included[from] {
                    inputs.insert(v);
                }
            }
        }
        Part {
            included,
            inputs: inputs.into_iter().collect(),
        }
    }

    /// Includes `from` and every block they read strongly, and the state-independent blocks
    /// they read weakly (computed in every model that reads them).
    fn include(&self, included: &mut [bool], from: &[usize]) {
        let mut stack = from.to_vec();
        while let Some(b) = stack.pop() {
            if std::mem::replace(&mut included[b], true) {
                continue;
            }
            let r = &self.reads[b];
            stack.extend(
                r.upstream
                    .iter()
                    .chain(&r.states)
                    .filter(|&&u| !included[u]),
            );
            let weak_inputs = r.weak.iter().map(|v| self.solver[v.0 as usize]);
            stack.extend(weak_inputs.filter(|&u| {
                !included[u] && self.subsystem_of[u].is_none() && !self.depends_on_state[u]
            }));
        }
    }
}

impl Part {
    /// What the part computes: the unknowns of its blocks (its states among them) and its
    /// inputs.
    fn computed(&self, blocks: &[Block]) -> BTreeSet<VarId> {
        let solved = (0..blocks.len())
            .filter(|&b| self.included[b])
            .flat_map(|b| blocks[b].unknowns.iter().map(|u| u.var()));
        solved.chain(self.inputs.iter().copied()).collect()
    }

    /// The model: the included blocks' equations, the inputs made top-level inputs, the
    /// hybrid part they need (and the `adopted` `when` clauses, which no other model reads
    /// but whose unknowns this one computes), every variable nothing kept reads removed.
    fn model(
        &self,
        dae: &Dae,
        (blocks, computed, adopted): (&[Block], &BTreeSet<VarId>, &[usize]),
        values: &[f64],
        name: &str,
    ) -> Result<Dae, Diagnostic> {
        let mut sub = dae.clone();
        sub.model = format!("{}.{name}", dae.model);
        let mut equations: Vec<usize> = (0..blocks.len())
            .filter(|&b| self.included[b])
            .flat_map(|b| blocks[b].equations.iter().copied())
            .collect();
        equations.sort_unstable();
        sub.equations = equations
            .iter()
            .map(|&e| dae.equations[e].clone())
            .collect();
        let inputs: BTreeSet<VarId> = self.inputs.iter().copied().collect();
        for &v in &inputs {
            let start = sub.pool.constant(values[v.0 as usize]);
            let var = &mut sub.variables[v.0 as usize];
            var.kind = VarKind::Input;
            var.binding = None;
            var.start = Some(start);
            var.fixed = None;
        }
        let mut kept = BTreeSet::new();
        for eq in &sub.equations {
            sub.pool.visit_leaves(eq.residual, |leaf| {
                if let Node::Var(v) | Node::Der(v) | Node::Last(v) = leaf {
                    kept.insert(v);
                }
            });
        }
        sub.hybrid = hybrid_part(&sub, &mut kept, adopted);
        let solved: BTreeSet<VarId> = computed.difference(&inputs).copied().collect();
        events_read_their_own(&sub, &solved)?;
        read_inputs_directly(&mut sub, &inputs);
        keep_aliases(&sub, &mut kept);
        let (initial, assertions) = keep_initial_and_assertions(&sub, &mut kept)?;
        computed_here(&sub, &kept, computed)?;
        sub.initial_equations = initial;
        sub.assertions = assertions;
        keep_attribute_reads(&sub, &mut kept)?;
        let removed: BTreeSet<VarId> = sub.var_ids().filter(|v| !kept.contains(v)).collect();
        let experiment = sub.experiment;
        let mut sub = without_variables(sub, &removed);
        sub.experiment = experiment;
        Ok(sub)
    }
}

/// Per `when` clause, the first part that computes every unknown it reads or re-initialises
/// (a clause of time and held values alone: the first), which keeps it even where no
/// equation it keeps reads what the clause assigns; `None` for a clause over several parts.
fn when_homes(dae: &Dae, computed: &[BTreeSet<VarId>]) -> Vec<Option<usize>> {
    (dae.hybrid.whens.iter())
        .map(|when| {
            let mut unknowns = BTreeSet::new();
            when_reads(dae, when, &mut |v| {
                if dae.var(v).kind.is_unknown() {
                    unknowns.insert(v);
                }
            });
            computed.iter().position(|c| unknowns.is_subset(c))
        })
        .collect()
}

fn leaves(dae: &Dae, e: ExprId, f: &mut impl FnMut(VarId)) {
    dae.pool.visit_leaves(e, |leaf| {
        if let Node::Var(v) | Node::Der(v) | Node::Last(v) = leaf {
            f(v);
        }
    });
}

/// The hybrid part the `kept` variables need, to closure: the switches whose held variables
/// they are, the `when` clauses that assign or re-initialise one (and the `adopted` ones), the
/// `pre` values, samples, `initial()` and `terminal()` they read; `kept` gains what those
/// read.
fn hybrid_part(sub: &Dae, kept: &mut BTreeSet<VarId>, adopted: &[usize]) -> Hybrid {
    let whole = &sub.hybrid;
    // Per clause, the variables it assigns or re-initialises, and every one it names.
    let clauses: Vec<(Vec<VarId>, Vec<VarId>)> = (whole.whens.iter())
        .map(|when| {
            let mut writes = Vec::new();
            let mut clause = single(when);
            clause.vars_mut(&mut |v| writes.push(*v));
            let mut reads = Vec::new();
            when_reads(sub, when, &mut |v| reads.push(v));
            (writes, reads)
        })
        .collect();
    let mut whens = vec![false; whole.whens.len()];
    let mut switches = vec![false; whole.switches.len()];
    for &w in adopted {
        whens[w] = true;
        kept.extend(clauses[w].1.iter().copied());
    }
    loop {
        let before = kept.len();
        for (taken, switch) in switches.iter_mut().zip(&whole.switches) {
            if !*taken && kept.contains(&switch.var) {
                *taken = true;
                leaves(sub, switch.value, &mut |v| {
                    kept.insert(v);
                });
            }
        }
        for (taken, (writes, reads)) in whens.iter_mut().zip(&clauses) {
            if !*taken && writes.iter().any(|v| kept.contains(v)) {
                *taken = true;
                kept.extend(reads.iter().copied());
            }
        }
        for &(held, of) in &whole.pre {
            if kept.contains(&held) {
                kept.insert(of);
            }
        }
        if kept.len() == before {
            break;
        }
    }
    let held = |v: &Option<VarId>| v.filter(|v| kept.contains(v));
    Hybrid {
        whens: (whole.whens.iter().zip(&whens))
            .filter(|(_, k)| **k)
            .map(|(w, _)| w.clone())
            .collect(),
        pre: (whole.pre.iter())
            .filter(|(p, _)| kept.contains(p))
            .copied()
            .collect(),
        samples: (whole.samples.iter())
            .filter(|s| kept.contains(&s.var))
            .cloned()
            .collect(),
        initial: held(&whole.initial),
        terminal: held(&whole.terminal),
        switches: (whole.switches.iter().zip(&switches))
            .filter(|(_, k)| **k)
            .map(|(s, _)| *s)
            .collect(),
    }
}

/// One `when` clause as a hybrid part of its own, to visit with [`Hybrid`]'s walks.
fn single(when: &WhenClause) -> Hybrid {
    Hybrid {
        whens: vec![when.clone()],
        ..Hybrid::default()
    }
}

/// Every variable a `when` clause reads, assigns or re-initialises.
fn when_reads(dae: &Dae, when: &WhenClause, f: &mut impl FnMut(VarId)) {
    let mut clause = single(when);
    clause.exprs_mut(&mut |e| leaves(dae, *e, &mut *f));
    clause.vars_mut(&mut |v| f(*v));
}

/// The error for events of one subsystem model that read `v`, another's (at `at`, `what`).
fn joined_by_events(sub: &Dae, v: VarId, at: crate::source::Span, what: &str) -> Diagnostic {
    Diagnostic::error(format!(
        "the events of one subsystem read `{}`, which another subsystem computes, so the \
         subsystems cannot be stepped apart",
        sub.var(v).name
    ))
    .at(at, what)
}

/// An error for a `when` clause or relation of this model that reads (not weakly: not by
/// `last`) or re-initialises an unknown the model does not solve: its events would see
/// another subsystem's value a communication step late, where the whole model sees it now.
fn events_read_their_own(sub: &Dae, solved: &BTreeSet<VarId>) -> Result<(), Diagnostic> {
    let foreign = |v: VarId| {
        let kind = sub.var(v).kind;
        (kind.is_unknown() || kind == VarKind::Input) && !solved.contains(&v)
    };
    let strong = |e: ExprId, found: &mut Option<VarId>| {
        sub.pool.visit_leaves(e, |leaf| {
            if let Node::Var(v) | Node::Der(v) = leaf
                && foreign(v)
            {
                found.get_or_insert(v);
            }
        });
    };
    let joins = |v: VarId, at: crate::source::Span, what: &str| {
        joined_by_events(sub, v, at, what)
            .with_note("read it weakly, as `last(…)`, or emit the model as one FMU")
    };
    for when in &sub.hybrid.whens {
        let mut clause = single(when);
        let mut found = None;
        clause.exprs_mut(&mut |e| strong(*e, &mut found));
        clause.vars_mut(&mut |v| {
            if foreign(*v) {
                found.get_or_insert(*v);
            }
        });
        if let Some(v) = found {
            return Err(joins(v, when.span, "this `when` clause reads it"));
        }
    }
    for switch in &sub.hybrid.switches {
        let mut found = None;
        strong(switch.value, &mut found);
        if let Some(v) = found {
            let at = sub.var(switch.var).span;
            return Err(joins(v, at, "a relation here reads it"));
        }
    }
    Ok(())
}

/// An error for a kept unknown that this model does not compute: its hybrid part reads a
/// variable of another subsystem (a `when` clause or a relation over two of them).
fn computed_here(
    sub: &Dae,
    kept: &BTreeSet<VarId>,
    computed: &BTreeSet<VarId>,
) -> Result<(), Diagnostic> {
    let elsewhere = |v: VarId| sub.var(v).kind.is_unknown() && !computed.contains(&v);
    let Some(&v) = kept.iter().find(|&&v| elsewhere(v)) else {
        return Ok(());
    };
    let reader = sub.hybrid.whens.iter().find(|when| {
        let mut reads = false;
        when_reads(sub, when, &mut |u| reads |= u == v);
        reads
    });
    Err(match reader {
        Some(when) => joined_by_events(sub, v, when.span, "this `when` clause reads it"),
        None => joined_by_events(sub, v, sub.var(v).span, "declared here"),
    })
}

/// `last(v)` of an input read as `v`: the master holds the input over the step.
fn read_inputs_directly(sub: &mut Dae, inputs: &BTreeSet<VarId>) {
    let mut done = Substituted::default();
    let mut map = |pool: &mut crate::expr::ExprPool, n: Node| match n {
        Node::Last(v) if inputs.contains(&v) => Some(pool.var(v)),
        _ => None,
    };
    let pool = &mut sub.pool;
    let mut each = |e: &mut ExprId| *e = pool.substitute_with(*e, &mut map, &mut done);
    for eq in &mut sub.equations {
        rewrite_equation(eq, &mut each);
    }
    sub.hybrid.exprs_mut(&mut each);
}

fn rewrite_equation(eq: &mut Equation, each: &mut impl FnMut(&mut ExprId)) {
    each(&mut eq.lhs);
    each(&mut eq.rhs);
    each(&mut eq.residual);
    for t in &mut eq.terms {
        each(&mut t.expr);
    }
}

/// The aliases of kept variables (the names they are known by, kept for the FMU to list).
fn keep_aliases(sub: &Dae, kept: &mut BTreeSet<VarId>) {
    for v in sub.var_ids() {
        let var = sub.var(v);
        let Some(binding) = var.binding.filter(|_| var.kind == VarKind::Alias) else {
            continue;
        };
        // Aliases of parameters are not listed: nothing kept reads them.
        let (mut reads_kept, mut reads_removed) = (false, false);
        sub.pool.visit_leaves(binding, |leaf| {
            if let Node::Var(u) | Node::Der(u) | Node::Last(u) = leaf {
                match (is_known(sub, u), kept.contains(&u)) {
                    (true, _) => {}
                    (false, true) => reads_kept = true,
                    (false, false) => reads_removed = true,
                }
            }
        });
        if reads_kept && !reads_removed {
            kept.insert(v);
        }
    }
}

/// Parameters, constants and top-level inputs: what a model may read without computing.
fn is_known(dae: &Dae, v: VarId) -> bool {
    matches!(
        dae.var(v).kind,
        VarKind::Parameter | VarKind::Constant | VarKind::Input
    )
}

/// The initial equations and assertions on the kept unknowns; an error for an initial
/// equation that reads kept and removed unknowns alike (it joins subsystems).
fn keep_initial_and_assertions(
    sub: &Dae,
    kept: &mut BTreeSet<VarId>,
) -> Result<(Vec<Equation>, Vec<crate::dae::Assertion>), Diagnostic> {
    let unknowns_of = |e: ExprId| {
        let (mut inside, mut outside, mut known) = (false, false, Vec::new());
        sub.pool.visit_leaves(e, |leaf| {
            if let Node::Var(v) | Node::Der(v) | Node::Last(v) = leaf {
                match (is_known(sub, v), kept.contains(&v)) {
                    (true, _) => known.push(v),
                    (false, true) => inside = true,
                    (false, false) => outside = true,
                }
            }
        });
        (inside, outside, known)
    };
    let mut initial = Vec::new();
    let mut reads = Vec::new();
    for eq in &sub.initial_equations {
        match unknowns_of(eq.residual) {
            (true, true, _) => {
                return Err(Diagnostic::error(
                    "this initial equation joins two subsystems, so they cannot be \
                     initialised apart",
                )
                .at(eq.span, "reads variables of more than one subsystem"));
            }
            (true, false, known) => {
                initial.push(eq.clone());
                reads.extend(known);
            }
            _ => {}
        }
    }
    let mut assertions = Vec::new();
    for a in &sub.assertions {
        if let (true, false, known) = unknowns_of(a.condition) {
            assertions.push(a.clone());
            reads.extend(known);
        }
    }
    kept.extend(reads);
    Ok((initial, assertions))
}

/// Adds what the kept variables' bindings, start values and nominal values read, to the
/// last: parameters read by parameters. An error when one reads a removed unknown.
fn keep_attribute_reads(sub: &Dae, kept: &mut BTreeSet<VarId>) -> Result<(), Diagnostic> {
    let mut stack: Vec<VarId> = kept.iter().copied().collect();
    while let Some(v) = stack.pop() {
        let var = sub.var(v);
        let mut missing = None;
        for e in [var.binding, var.start, var.nominal].into_iter().flatten() {
            sub.pool.visit_leaves(e, |leaf| {
                if let Node::Var(u) | Node::Der(u) | Node::Last(u) = leaf {
                    if kept.contains(&u) {
                        return;
                    }
                    if is_known(sub, u) || sub.var(u).kind == VarKind::Alias {
                        kept.insert(u);
                        stack.push(u);
                    } else {
                        missing = Some(u);
                    }
                }
            });
        }
        if let Some(u) = missing {
            return Err(Diagnostic::error(format!(
                "`{}` is given from `{}`, which another subsystem computes",
                var.name,
                sub.var(u).name
            ))
            .at(var.span, "declared here"));
        }
    }
    Ok(())
}
