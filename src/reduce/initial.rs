//! What a reduction does to initialisation (SPEC §6): a variable no equation differentiates any
//! more is no state, so initial equations that read its derivative go, and the initial system
//! is made square again: conditions on former states alone go (their equations fix them now),
//! a state that lost its condition is started in steady state (`der(x) = 0`), and a surplus
//! condition that reads a former state goes.

use std::collections::BTreeSet;

use crate::dae::{Dae, Equation, EquationOrigin, Term, VarKind};
use crate::expr::{Node, VarId};

/// How the reduced model's initialisation differs from the original's.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InitialChanges {
    /// Initial equations of the original (indices, ascending) dropped: they read the
    /// derivative of a variable that is no state any more, or they were a surplus condition on
    /// one.
    pub dropped: Vec<usize>,
    /// Variables that are states no more: their `fixed = true` start no longer holds them.
    pub no_longer_states: Vec<VarId>,
    /// States given the steady-state initial equation `der(x) = 0`, having lost their
    /// condition.
    pub steady_state: Vec<VarId>,
}

/// Brings `reduced`'s initialisation in line with its equations, `original` being the model
/// before the reduction (the same variables and initial equations).
pub fn settle(original: &Dae, reduced: &mut Dae) -> InitialChanges {
    let removed: BTreeSet<VarId> = differentiated(original)
        .difference(&differentiated(reduced))
        .copied()
        .collect();
    let reads = |i: usize, what: &dyn Fn(Node) -> bool| {
        let mut found = false;
        original
            .pool
            .visit_leaves(original.initial_equations[i].residual, |n| found |= what(n));
        found
    };
    let count = original.initial_equations.len();
    // What reads a removed derivative, and what conditions former states alone (the
    // equations now fix them), goes.
    let former = |n: Node| matches!(n, Node::Var(v) if removed.contains(&v));
    let other_unknown = |n: Node| match n {
        Node::Var(v) => {
            !removed.contains(&v)
                && !matches!(original.var(v).kind, VarKind::Parameter | VarKind::Constant)
        }
        Node::Der(_) => true,
        _ => false,
    };
    let mut dropped: Vec<usize> = (0..count)
        .filter(|&i| {
            reads(i, &|n| matches!(n, Node::Der(v) if removed.contains(&v)))
                || (reads(i, &former) && !reads(i, &other_unknown))
        })
        .collect();
    for &v in &removed {
        let var = &mut reduced.variables[v.0 as usize];
        if var.kind == VarKind::State {
            var.kind = VarKind::Algebraic;
            var.fixed = None;
        }
    }
    let mut changes = InitialChanges {
        no_longer_states: removed.iter().copied().collect(),
        ..InitialChanges::default()
    };
    if had_initial_system(original) {
        // Relative to the original's balance: the flat model's states include those index
        // reduction turns into dummy derivatives, which need no condition. A former state
        // that was free and that no initial equation read was such a one (a damper's
        // `s_rel`): it leaves the count of free states without freeing a condition.
        let dummies = free_states(original)
            .filter(|v| removed.contains(v))
            .filter(|&v| (0..count).all(|i| !reads(i, &|n| n == Node::Var(v) || n == Node::Der(v))))
            .count();
        let balance =
            |dae: &Dae, equations: usize| residuals(dae, equations) as isize - free(dae) as isize;
        let surplus =
            balance(reduced, count - dropped.len()) - (balance(original, count) + dummies as isize);
        if surplus > 0 {
            // Conditions on former states, last first, until the system is square.
            let extra: Vec<usize> = (0..count)
                .rev()
                .filter(|&i| !dropped.contains(&i) && reads(i, &former))
                .take(surplus as usize)
                .collect();
            dropped.extend(extra);
            dropped.sort_unstable();
        } else if surplus < 0 {
            let wanted = (-surplus) as usize;
            changes.steady_state = unconditioned(original, reduced, &dropped, &removed, wanted);
        }
    }
    for &i in dropped.iter().rev() {
        reduced.initial_equations.remove(i);
    }
    for &v in &changes.steady_state {
        let equation = steady_state(reduced, v);
        reduced.initial_equations.push(equation);
    }
    changes.dropped = dropped;
    changes
}

/// The variables whose derivative some equation reads.
fn differentiated(dae: &Dae) -> BTreeSet<VarId> {
    let mut set = BTreeSet::new();
    for eq in &dae.equations {
        dae.pool.visit_leaves(eq.residual, |n| {
            if let Node::Der(v) = n {
                set.insert(v);
            }
        });
    }
    set
}

/// Whether initialisation solves a system (else every state starts at its start value).
fn had_initial_system(dae: &Dae) -> bool {
    !dae.initial_equations.is_empty() || dae.var_ids().any(|v| fixed_algebraic(dae, v))
}

fn fixed_algebraic(dae: &Dae, v: VarId) -> bool {
    let var = dae.var(v);
    var.is_fixed_algebraic()
}

/// The initial system's residuals: `equations` initial equations and the fixed algebraic
/// variables.
fn residuals(dae: &Dae, equations: usize) -> usize {
    equations + dae.var_ids().filter(|&v| fixed_algebraic(dae, v)).count()
}

/// The states initialisation solves for: those not `fixed = true`.
fn free_states(dae: &Dae) -> impl Iterator<Item = VarId> + '_ {
    dae.var_ids().filter(|&v| {
        let var = dae.var(v);
        var.kind == VarKind::State && var.fixed != Some(true)
    })
}

fn free(dae: &Dae) -> usize {
    free_states(dae).count()
}

/// Up to `wanted` free states of `reduced` that no kept initial equation reads: those a dropped
/// one read first, then those whose derivative an equation relates to a former state (the
/// wheel's `der(x_t) = v_t` once `v_t` is no state: its steady state is the condition the
/// former state's carried), then the rest.
fn unconditioned(
    original: &Dae,
    reduced: &Dae,
    dropped: &[usize],
    removed: &BTreeSet<VarId>,
    wanted: usize,
) -> Vec<VarId> {
    let mut read_by_kept = BTreeSet::new();
    let mut read_by_dropped = BTreeSet::new();
    for (i, eq) in original.initial_equations.iter().enumerate() {
        let set = if dropped.contains(&i) {
            &mut read_by_dropped
        } else {
            &mut read_by_kept
        };
        original.pool.visit_leaves(eq.residual, |n| {
            if let Node::Var(v) | Node::Der(v) = n {
                set.insert(v);
            }
        });
    }
    let beside_former = rates_beside(reduced, removed);
    let mut open: Vec<VarId> = free_states(reduced)
        .filter(|v| !read_by_kept.contains(v))
        .collect();
    open.sort_by_key(|v| (!read_by_dropped.contains(v), !beside_former.contains(v)));
    open.truncate(wanted);
    open
}

/// The variables whose derivative is read by an equation of `dae` that also reads one of
/// `former`.
fn rates_beside(dae: &Dae, former: &BTreeSet<VarId>) -> BTreeSet<VarId> {
    let mut found = BTreeSet::new();
    for eq in &dae.equations {
        let (mut rates, mut reads_former) = (Vec::new(), false);
        dae.pool.visit_leaves(eq.residual, |n| match n {
            Node::Der(v) => rates.push(v),
            Node::Var(v) => reads_former |= former.contains(&v),
            _ => {}
        });
        if reads_former {
            found.extend(rates);
        }
    }
    found
}

/// `der(v) = 0`, placed where `v` is declared.
fn steady_state(dae: &mut Dae, v: VarId) -> Equation {
    let var = dae.var(v);
    let (span, component) = (var.span, var.component.clone());
    let lhs = dae.pool.der(v);
    let rhs = dae.pool.zero();
    Equation {
        lhs,
        rhs,
        residual: dae.pool.sub(lhs, rhs),
        terms: vec![Term {
            expr: lhs,
            sign: 1.0,
            span,
        }],
        origin: EquationOrigin::Model,
        span,
        component,
    }
}
