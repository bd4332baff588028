//! Index reduction inside discretised partitions. A discretised partition is a continuous
//! model integrated by the partition's own method, so a constraint among its states (an
//! inverse plant model fed by a filter: `c = filter.y` where `c` is a state of the inverse)
//! needs what a continuous model needs: Pantelides' differentiations and dummy derivatives
//! (SPEC §4), done on the partition's equations alone before they are discretised. The
//! choice of states is made at the start values and kept: a partition does not choose its
//! states again as it runs.

use std::collections::BTreeMap;

use crate::expr::hash::FxHashSet;

use super::{Flattener, Mark, Partitions, Sets};
use crate::dae::{Dae, VarKind};
use crate::diagnostics::Diagnostic;
use crate::expr::{Node, VarId};
use crate::structure::index_reduction;

impl Flattener<'_> {
    /// The index of each discretised partition (those whose tick `discretised` holds)
    /// reduced: differentiated equations appended (and marked in `in_partition`), demoted
    /// states' derivatives replaced by their dummy derivatives, new variables joined to their
    /// partitions.
    pub(super) fn reduce_partition_index(
        &mut self,
        sets: &mut Sets,
        partitions: &Partitions,
        in_partition: &mut Vec<bool>,
        discretised: &FxHashSet<usize>,
    ) -> Result<(), Diagnostic> {
        let holds = Default::default();
        let mut rows = Vec::new();
        let mut key_of_root = BTreeMap::new();
        for k in (0..self.dae.equations.len()).filter(|&k| in_partition[k]) {
            let eq = &self.dae.equations[k];
            let mut reads = self.partition_reads(eq.lhs, &holds);
            reads.extend(self.partition_reads(eq.rhs, &holds));
            let Some(&key) = reads.first() else {
                continue;
            };
            let root = sets.find(key);
            let tick = partitions.get(&root).and_then(|p| p.tick);
            if tick.is_some_and(|t| discretised.contains(&t)) {
                rows.push(k);
                key_of_root.entry(root).or_insert(key);
            }
        }
        if rows.is_empty() {
            return Ok(());
        }
        let partition = self.partition_dae(&rows, sets, &key_of_root);
        let known = partition.variables.len();
        let (reduced, report) =
            index_reduction::reduce(partition).map_err(|mut diags| diags.swap_remove(0))?;
        if report.index <= 1 {
            return Ok(());
        }
        self.dae.pool = reduced.pool;
        for var in reduced.variables.into_iter().skip(known) {
            if let Err(existing) = self.dae.add_variable(var) {
                let var = self.dae.var(existing);
                return Err(Diagnostic::error(format!(
                    "index reduction of a discretised partition names a variable `{}`, which the model has already",
                    var.name
                ))
                .at(var.span, "declared here"));
            }
        }
        for (k, eq) in reduced.equations.into_iter().enumerate() {
            self.join_new_variables(sets, &eq, known, &key_of_root);
            match rows.get(k) {
                Some(&row) => self.dae.equations[row] = eq,
                None => {
                    self.dae.equations.push(eq);
                    in_partition.push(true);
                }
            }
        }
        Ok(())
    }

    /// The variables index reduction made (from `known` on) that `eq` reads joined to the
    /// partition of the others it reads: every equation of a partition is within it, so
    /// the new variables reach their partition through the equations they are in.
    fn join_new_variables(
        &self,
        sets: &mut Sets,
        eq: &crate::dae::Equation,
        known: usize,
        key_of_root: &BTreeMap<u32, VarId>,
    ) {
        let mut vars = Vec::new();
        self.dae.pool.visit_leaves(eq.residual, |n| {
            if let Node::Var(v) | Node::Der(v) = n {
                vars.push(v);
            }
        });
        vars.retain(|&v| v.0 as usize >= known || key_of_root.contains_key(&sets.find(v)));
        for &v in vars.iter().skip(1) {
            sets.union(vars[0], v);
        }
    }

    /// A DAE of the equations `rows` alone, as index reduction takes it: the variables of
    /// the partitions (`key_of_root`'s) that appear under `der` its states, the others its
    /// unknowns, except those the clock operators give (constant from tick to tick, so of
    /// derivative zero, as `pre` values are); everything else is known to it.
    fn partition_dae(
        &self,
        rows: &[usize],
        sets: &mut Sets,
        key_of_root: &BTreeMap<u32, VarId>,
    ) -> Dae {
        let mut dae = self.dae.clone();
        dae.equations = rows
            .iter()
            .map(|&k| self.dae.equations[k].clone())
            .collect();
        dae.initial_equations.clear();
        dae.assertions.clear();
        dae.hybrid = Default::default();
        let known_at_tick = self.known_at_tick();
        let mut states = FxHashSet::default();
        for eq in &dae.equations {
            dae.pool.visit_leaves(eq.residual, |n| {
                if let Node::Der(x) = n {
                    states.insert(x);
                }
            });
        }
        for (i, var) in dae.variables.iter_mut().enumerate() {
            let id = VarId(i as u32);
            let unknown = matches!(
                var.kind,
                VarKind::Algebraic | VarKind::Discrete | VarKind::State
            );
            var.kind = match () {
                _ if !unknown => var.kind,
                _ if known_at_tick.contains(&id) => VarKind::Held,
                _ if !key_of_root.contains_key(&sets.find(id)) => VarKind::Input,
                _ if states.contains(&id) => VarKind::State,
                _ => var.kind,
            };
        }
        dae
    }

    /// The variables the clock operators assign at a tick (`sample`, `interval`,
    /// `firstTick`, …) and the `pre` and `previous` values.
    fn known_at_tick(&self) -> FxHashSet<VarId> {
        let mut known: FxHashSet<VarId> = self.dae.hybrid.pre.iter().map(|&(p, _)| p).collect();
        for mark in &self.clocks.marks {
            match *mark {
                Mark::Sample { var, .. }
                | Mark::Hold { var, .. }
                | Mark::SubClock { var, .. }
                | Mark::Interval { var, .. } => {
                    known.insert(var);
                }
                Mark::FirstTick {
                    var,
                    ticked,
                    pre_ticked,
                    ..
                } => known.extend([var, ticked, pre_ticked]),
                Mark::Previous { pre, .. } => {
                    known.insert(pre);
                }
            }
        }
        known
    }
}
