//! Weakly coupled subsystems (SPEC §2.1), found on the causal structure with every weak read
//! removed: blocks are nodes, joined when one reads what the other solves (a block solving
//! `der(x)` is joined to the blocks that read `x`). Blocks that depend on no state (inputs:
//! constants, functions of time) and blocks no derivative depends on (outputs) are set aside;
//! the connected components of the rest are the subsystems.

use std::collections::HashMap;

use super::matching::Matching;
use super::{Block, Incidence, Unknown};
use crate::dae::{Dae, EquationOrigin, VarKind};
use crate::diagnostics::Diagnostic;
use crate::expr::{Node, VarId};

#[derive(Clone, Debug)]
pub struct Subsystem {
    /// Indices into `Structure::blocks`, in evaluation order.
    pub blocks: Vec<usize>,
    /// The states whose derivatives this subsystem computes.
    pub states: Vec<VarId>,
    pub equations: usize,
}

pub(super) fn find(
    incidences: &[Incidence],
    matching: &Matching,
    blocks: &[Block],
) -> Vec<Subsystem> {
    let mut block_of_eq = vec![0; incidences.len()];
    for (b, block) in blocks.iter().enumerate() {
        for &e in &block.equations {
            block_of_eq[e] = b;
        }
    }
    let mut der_block: HashMap<VarId, usize> = HashMap::new();
    for (b, block) in blocks.iter().enumerate() {
        for u in &block.unknowns {
            if let Unknown::Derivative(x) = u {
                der_block.insert(*x, b);
            }
        }
    }
    // Upstream blocks of each block (what it reads), excluding weak reads.
    let upstream: Vec<Vec<usize>> = blocks
        .iter()
        .enumerate()
        .map(|(b, block)| {
            let mut ups = Vec::new();
            for &e in &block.equations {
                for &u in &incidences[e].unknowns {
                    let src = block_of_eq[matching.of_unknown[u]];
                    if src != b {
                        ups.push(src);
                    }
                }
            }
            ups
        })
        .collect();
    let reads_state = |b: usize| {
        blocks[b]
            .equations
            .iter()
            .any(|&e| !incidences[e].states.is_empty())
    };
    let solves_der = |b: usize| {
        blocks[b]
            .unknowns
            .iter()
            .any(|u| matches!(u, Unknown::Derivative(_)))
    };
    // Blocks come in evaluation order, so one forward and one backward pass propagate.
    let mut depends_on_state = vec![false; blocks.len()];
    for b in 0..blocks.len() {
        depends_on_state[b] = reads_state(b) || upstream[b].iter().any(|&u| depends_on_state[u]);
    }
    let mut feeds_derivative = vec![false; blocks.len()];
    for b in (0..blocks.len()).rev() {
        if solves_der(b) {
            feeds_derivative[b] = true;
        }
        if feeds_derivative[b] {
            for &u in &upstream[b] {
                feeds_derivative[u] = true;
            }
        }
    }
    let core = |b: usize| (solves_der(b) || depends_on_state[b]) && feeds_derivative[b];
    let mut uf = Components::new(blocks.len());
    for b in (0..blocks.len()).filter(|&b| core(b)) {
        for &u in upstream[b].iter().filter(|&&u| core(u)) {
            uf.union(b, u);
        }
        for &e in &blocks[b].equations {
            for x in &incidences[e].states {
                if let Some(&d) = der_block.get(x)
                    && core(d)
                {
                    uf.union(b, d);
                }
            }
        }
    }
    let mut by_root: indexmap::IndexMap<usize, Subsystem> = indexmap::IndexMap::new();
    for b in (0..blocks.len()).filter(|&b| core(b)) {
        let root = uf.find(b);
        let s = by_root.entry(root).or_insert_with(|| Subsystem {
            blocks: Vec::new(),
            states: Vec::new(),
            equations: 0,
        });
        s.blocks.push(b);
        s.equations += blocks[b].equations.len();
        for u in &blocks[b].unknowns {
            if let Unknown::Derivative(x) = u {
                s.states.push(*x);
            }
        }
    }
    by_root.into_values().collect()
}

struct Components {
    parent: Vec<usize>,
}

impl Components {
    fn new(n: usize) -> Components {
        Components {
            parent: (0..n).collect(),
        }
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
            self.parent[ra.max(rb)] = ra.min(rb);
        }
    }
}

/// "State on both sides": a weak potential read (`p = last(q)`) where both `p`'s and `q`'s
/// connection sets hold a state, e.g. an inertia on both sides of a weak shaft. That split is
/// known to go unstable.
pub(super) fn both_sides_warnings(dae: &Dae) -> Vec<Diagnostic> {
    let mut alias = Components::new(dae.variables.len());
    for eq in dae
        .equations
        .iter()
        .filter(|e| e.origin == EquationOrigin::ConnectPotential)
    {
        if let (Node::Var(a), Node::Var(b)) = (dae.pool.node(eq.lhs), dae.pool.node(eq.rhs)) {
            alias.union(a.0 as usize, b.0 as usize);
        }
    }
    let mut has_state = vec![false; dae.variables.len()];
    for v in dae.var_ids().filter(|&v| dae.var(v).kind == VarKind::State) {
        let root = alias.find(v.0 as usize);
        has_state[root] = true;
    }
    let mut warnings = Vec::new();
    for eq in dae
        .equations
        .iter()
        .filter(|e| e.origin == EquationOrigin::WeakPotential)
    {
        let (Node::Var(p), Node::Last(q)) = (dae.pool.node(eq.lhs), dae.pool.node(eq.rhs)) else {
            continue;
        };
        let (rp, rq) = (alias.find(p.0 as usize), alias.find(q.0 as usize));
        if has_state[rp] && has_state[rq] {
            warnings.push(
                Diagnostic::warning(format!(
                    "a state on both sides of this weak connection (`{}` and `{}`)",
                    dae.var(p).name,
                    dae.var(q).name
                ))
                .at(eq.span, "weak connection")
                .with_note("splitting between two inertias (or two capacitances) is known to go unstable; move the weak cut"),
            );
        }
    }
    warnings
}
