//! Structure (SPEC §4): which equation determines which unknown (matching), in what order
//! (BLT blocks by Tarjan's SCC), what is wrong when no complete matching exists
//! (Dulmage–Mendelsohn), and the weakly coupled subsystems (SPEC §2.1).
//!
//! Unknowns are `der(x)` for each state `x` and every algebraic variable; states, parameters,
//! constants and inputs are known. A weak read (`last(v)`) is never an edge, and a `weak`
//! variable is an edge only of the equation matched to it.

pub mod alias;
mod dulmage_mendelsohn;
pub mod index_reduction;
pub mod matching;
pub mod split;
mod subsystems;
pub mod tarjan;

use std::collections::HashSet;

use serde::Serialize;

use crate::dae::{Dae, VarKind};
use crate::diagnostics::Diagnostic;
use crate::expr::{Node, VarId};
use matching::{Bipartite, Matching, NONE, hopcroft_karp};

pub use index_reduction::IndexReduction;
pub use subsystems::Subsystem;

/// An unknown of the DAE.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Unknown {
    /// `der(x)` of a state.
    Derivative(VarId),
    Algebraic(VarId),
}

impl Unknown {
    pub fn var(self) -> VarId {
        match self {
            Unknown::Derivative(v) | Unknown::Algebraic(v) => v,
        }
    }

    pub fn name(self, dae: &Dae) -> String {
        match self {
            Unknown::Derivative(v) => format!("der({})", dae.var(v).name),
            Unknown::Algebraic(v) => dae.var(v).name.clone(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockKind {
    /// One equation, one unknown.
    Explicit,
    /// Several equations solved together (an algebraic loop).
    Loop,
}

/// A BLT block: equations (indices into `Dae::equations`) and the unknowns they determine.
#[derive(Clone, Debug)]
pub struct Block {
    pub equations: Vec<usize>,
    pub unknowns: Vec<Unknown>,
    pub kind: BlockKind,
}

/// The matched, sorted structure of a DAE.
#[derive(Clone, Debug)]
pub struct Structure {
    pub unknowns: Vec<Unknown>,
    /// `matched[e]` is the index (into `unknowns`) equation `e` determines.
    pub matched: Vec<usize>,
    /// In evaluation order: each block needs only blocks before it.
    pub blocks: Vec<Block>,
    pub subsystems: Vec<Subsystem>,
    pub warnings: Vec<Diagnostic>,
}

/// The unknowns of a DAE, in variable order, and each variable's unknown index.
pub(crate) struct UnknownIndex {
    pub list: Vec<Unknown>,
    /// Per variable: its unknown index (a state's is its derivative's), or NONE if known.
    pub of_var: Vec<usize>,
}

impl UnknownIndex {
    fn new(dae: &Dae) -> UnknownIndex {
        let mut list = Vec::new();
        let mut of_var = vec![NONE; dae.variables.len()];
        for id in dae.var_ids() {
            let unknown = match dae.var(id).kind {
                VarKind::State => Unknown::Derivative(id),
                VarKind::Algebraic | VarKind::Discrete => Unknown::Algebraic(id),
                _ => continue,
            };
            of_var[id.0 as usize] = list.len();
            list.push(unknown);
        }
        UnknownIndex { list, of_var }
    }
}

/// What an equation refers to.
#[derive(Default)]
pub(crate) struct Incidence {
    /// Unknowns (indices) that appear as real dependencies.
    pub unknowns: Vec<usize>,
    /// Unknowns that appear only through a weak variable.
    pub weak_unknowns: Vec<usize>,
    /// States read (not through `last`).
    pub states: Vec<VarId>,
    /// Variables read through `last(…)`.
    pub weak_reads: Vec<VarId>,
}

pub(crate) fn incidence(dae: &Dae, index: &UnknownIndex, equation: usize) -> Incidence {
    let mut inc = Incidence::default();
    let mut seen = HashSet::new();
    dae.pool
        .visit_leaves(dae.equations[equation].residual, |leaf| {
            if !seen.insert(leaf) {
                return;
            }
            match leaf {
                // The derivative of a known variable (a parameter's) is no unknown.
                Node::Der(v) if index.of_var[v.0 as usize] != NONE => {
                    inc.unknowns.push(index.of_var[v.0 as usize])
                }
                Node::Var(v) => {
                    let var = dae.var(v);
                    match var.kind {
                        VarKind::State => inc.states.push(v),
                        VarKind::Algebraic | VarKind::Discrete if var.weak => {
                            inc.weak_unknowns.push(index.of_var[v.0 as usize])
                        }
                        VarKind::Algebraic | VarKind::Discrete => {
                            inc.unknowns.push(index.of_var[v.0 as usize])
                        }
                        _ => {}
                    }
                }
                Node::Last(v) => inc.weak_reads.push(v),
                _ => {}
            }
        });
    inc.unknowns.sort_unstable();
    inc.weak_unknowns.sort_unstable();
    inc
}

/// The DAE as matching wants it: aliases eliminated, then its index reduced (Pantelides,
/// dummy derivatives). Returns it with what index reduction did.
pub fn prepare(dae: Dae) -> Result<(Dae, IndexReduction), Vec<Diagnostic>> {
    index_reduction::reduce(alias::eliminate(dae))
}

/// Matches, sorts and splits the DAE. Errors when the system is structurally singular or of
/// higher index, naming the equations and variables involved.
pub fn analyse(dae: &Dae) -> Result<Structure, Vec<Diagnostic>> {
    let index = UnknownIndex::new(dae);
    let incidences: Vec<Incidence> = (0..dae.equations.len())
        .map(|e| incidence(dae, &index, e))
        .collect();
    // Weak variables may be solved by any equation that mentions them.
    let rows: Vec<Vec<usize>> = incidences
        .iter()
        .map(|inc| {
            let mut row = inc.unknowns.clone();
            row.extend(&inc.weak_unknowns);
            row
        })
        .collect();
    let graph = Bipartite::from_rows(&rows, index.list.len());
    let matching = hopcroft_karp(&graph);
    if !matching.is_perfect() {
        return Err(dulmage_mendelsohn::explain(
            dae,
            &index,
            &graph,
            &matching,
            &incidences,
        ));
    }
    let blocks = blt(&index, &incidences, &matching);
    let subsystems = subsystems::find(&incidences, &matching, &blocks);
    let warnings = subsystems::both_sides_warnings(dae);
    Ok(Structure {
        unknowns: index.list,
        matched: matching.of_equation,
        blocks,
        subsystems,
        warnings,
    })
}

/// Sorts equations into blocks: equation `e` depends on the equation matched to each unknown it
/// reads (a weak variable only for the equation matched to it).
fn blt(index: &UnknownIndex, incidences: &[Incidence], matching: &Matching) -> Vec<Block> {
    let deps = |e: usize, out: &mut Vec<usize>| {
        out.clear();
        let own = matching.of_equation[e];
        for &u in &incidences[e].unknowns {
            if u != own {
                out.push(matching.of_unknown[u]);
            }
        }
    };
    let components = tarjan::strongly_connected(incidences.len(), &deps);
    components
        .into_iter()
        .map(|equations| {
            let unknowns = equations
                .iter()
                .map(|&e| index.list[matching.of_equation[e]])
                .collect();
            let kind = if equations.len() == 1 {
                BlockKind::Explicit
            } else {
                BlockKind::Loop
            };
            Block {
                equations,
                unknowns,
                kind,
            }
        })
        .collect()
}
