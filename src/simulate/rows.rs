//! Blocks of rows of the one system, evaluated alone: a partition's level needs only its own
//! states' derivatives (its explicit stage, or the fast level's Newton), and so only the causal
//! steps those derivatives depend on. [`layout`] compiles the model with one part per block;
//! each part runs the steps its rows need, reading every other state from its register.

use std::collections::HashMap;

use crate::causal::{Causal, leaf};
use crate::dae::Dae;
use crate::expr::Node;
use crate::structure::Unknown;

use super::model::Layout;
use super::tape::{Groups, WeakReads};

/// The model as one system, with each of `blocks` (ascending state indices, disjoint) also
/// evaluable alone. A step that one block alone needs is in that block's group, one that
/// several need in the shared group every block's part runs, and one that none needs (an
/// output) in a group of its own, so that no part reuses a node computed by a step it does
/// not run.
pub fn layout(dae: &Dae, causal: &Causal, blocks: &[Vec<usize>]) -> Layout {
    let steps = causal.steps.len();
    let needs: Vec<Vec<bool>> = blocks
        .iter()
        .map(|block| needed_steps(dae, causal, block))
        .collect();
    let shared = blocks.len() as u32;
    let outputs = shared + 1;
    let of_step: Vec<u32> = (0..steps)
        .map(|k| {
            let mut users = (0..blocks.len()).filter(|&b| needs[b][k]);
            match (users.next(), users.next()) {
                (Some(b), None) => b as u32,
                (Some(_), Some(_)) => shared,
                (None, _) => outputs,
            }
        })
        .collect();
    let parts = blocks
        .iter()
        .enumerate()
        .map(|(b, block)| {
            let runs = (0..steps)
                .filter(|&k| of_step[k] == b as u32 || of_step[k] == shared)
                .collect();
            (runs, block.clone())
        })
        .collect();
    Layout {
        mode: WeakReads::Coupled,
        groups: Groups {
            of_step,
            inputs: shared,
        },
        parts,
        row_blocks: Some(block_groups(causal.states.len(), blocks)),
    }
}

/// Per state, the group of its block in [`layout`] (every state in one of `blocks`).
fn block_groups(n: usize, blocks: &[Vec<usize>]) -> Vec<u32> {
    let mut group = vec![blocks.len() as u32 + 1; n];
    for (b, block) in blocks.iter().enumerate() {
        for &i in block {
            group[i] = b as u32;
        }
    }
    group
}

/// Per step, whether the derivatives of `block`'s states depend on it.
fn needed_steps(dae: &Dae, causal: &Causal, block: &[usize]) -> Vec<bool> {
    let mut producer: HashMap<Node, usize> = HashMap::new();
    for (k, step) in causal.steps.iter().enumerate() {
        for u in step.targets() {
            producer.insert(leaf(u), k);
        }
    }
    let mut needed = vec![false; causal.steps.len()];
    for &i in block {
        if let Some(&k) = producer.get(&leaf(Unknown::Derivative(causal.states[i]))) {
            needed[k] = true;
        }
    }
    // Steps come in evaluation order: one pass from the last marks every producer.
    for k in (0..causal.steps.len()).rev() {
        if !needed[k] {
            continue;
        }
        for &e in causal.steps[k].exprs() {
            dae.pool.visit_leaves(e, |n| {
                // As one system a weak read reads the variable itself.
                let read = match n {
                    Node::Last(v) => Node::Var(v),
                    other => other,
                };
                if let Some(&p) = producer.get(&read) {
                    needed[p] = true;
                }
            });
        }
    }
    needed
}
