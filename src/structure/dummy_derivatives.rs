//! One step of index reduction: an equation that constrains states and has no unknown to solve
//! for (`s_rel = b.s − a.s` when a damper differentiates `s_rel`) is differentiated in time,
//! and one of its states is demoted to an algebraic variable whose derivative becomes a new
//! unknown (a dummy derivative) determined by the differentiated equation. This handles the
//! index-2 structures that component models produce; deeper ones are still reported.

use std::collections::HashSet;

use crate::dae::{Dae, Equation, EquationOrigin, Term, VarKind, Variable};
use crate::expr::{ExprId, Node, VarId};

/// Demotes constrained states; returns the reduced DAE and the demoted states.
pub fn reduce(dae: Dae) -> (Dae, Vec<VarId>) {
    let uses = occurrences(&dae);
    let mut out = dae;
    let mut demoted = Vec::new();
    for e in 0..out.equations.len() {
        let Some(states) = pure_state_constraint(&out, e) else {
            continue;
        };
        // Keep the states that carry the most structure; demote the least used one.
        let Some(&victim) = states
            .iter()
            .filter(|v| !demoted.contains(*v))
            .min_by_key(|v| (uses[v.0 as usize], std::cmp::Reverse(v.0)))
        else {
            continue;
        };
        let dummy = add_dummy(&mut out, victim);
        let residual = out.equations[e].residual;
        let differentiated = time_derivative(&mut out, residual, &states, victim, dummy);
        out.variables[victim.0 as usize].kind = VarKind::Algebraic;
        let span = out.equations[e].span;
        let component = out.equations[e].component.clone();
        let zero = out.pool.zero();
        out.equations.push(Equation {
            lhs: differentiated,
            rhs: zero,
            residual: differentiated,
            terms: vec![Term {
                expr: differentiated,
                sign: 1.0,
                span,
            }],
            origin: EquationOrigin::Differentiated,
            span,
            component,
        });
        demoted.push(victim);
    }
    (out, demoted)
}

/// How many equations mention each variable.
fn occurrences(dae: &Dae) -> Vec<usize> {
    let mut count = vec![0; dae.variables.len()];
    for eq in &dae.equations {
        let mut seen = HashSet::new();
        dae.pool.visit_leaves(eq.residual, |n| {
            if let Node::Var(v) | Node::Der(v) = n
                && seen.insert(v)
            {
                count[v.0 as usize] += 1;
            }
        });
    }
    count
}

/// The states of equation `e` if it mentions states and no unknown (no derivative, no
/// algebraic variable).
fn pure_state_constraint(dae: &Dae, e: usize) -> Option<Vec<VarId>> {
    let mut states = Vec::new();
    let mut unknown = false;
    dae.pool
        .visit_leaves(dae.equations[e].residual, |n| match n {
            Node::Var(v) => match dae.var(v).kind {
                VarKind::State => states.push(v),
                VarKind::Algebraic | VarKind::Discrete => unknown = true,
                _ => {}
            },
            Node::Der(_) => unknown = true,
            _ => {}
        });
    (!unknown && !states.is_empty()).then(|| {
        states.sort();
        states
    })
}

/// Adds the variable `der(x)` that replaces `der(x)` everywhere once `x` is no longer a state.
fn add_dummy(dae: &mut Dae, x: VarId) -> VarId {
    let var = dae.var(x);
    let dummy_var = Variable {
        name: format!("der({})", var.name),
        kind: VarKind::Algebraic,
        binding: None,
        start: None,
        fixed: None,
        nominal: None,
        unit: None,
        weak: false,
        flow: false,
        description: Some(format!("dummy derivative of {}", var.name)),
        ..var.clone()
    };
    let dummy = match dae.add_variable(dummy_var.clone()) {
        Ok(id) => id,
        // A quoted user name `'der(x)'` has it: the dummy is added without a name in the
        // index, where the user's variable keeps it.
        Err(_) => {
            dae.variables.push(dummy_var);
            VarId(dae.variables.len() as u32 - 1)
        }
    };
    let replacement = dae.pool.var(dummy);
    for eq in dae
        .equations
        .iter_mut()
        .chain(dae.initial_equations.iter_mut())
    {
        let swap = |pool: &mut crate::expr::ExprPool, e: ExprId| {
            pool.substitute(e, &mut |_, n| (n == Node::Der(x)).then_some(replacement))
        };
        eq.lhs = swap(&mut dae.pool, eq.lhs);
        eq.rhs = swap(&mut dae.pool, eq.rhs);
        eq.residual = swap(&mut dae.pool, eq.residual);
        for t in &mut eq.terms {
            t.expr = swap(&mut dae.pool, t.expr);
        }
    }
    dummy
}

/// `dr/dt = Σ ∂r/∂x · der(x) + ∂r/∂t`, with the demoted state's derivative as the dummy.
fn time_derivative(
    dae: &mut Dae,
    r: ExprId,
    states: &[VarId],
    victim: VarId,
    dummy: VarId,
) -> ExprId {
    let p = &mut dae.pool;
    let mut total = p.diff(r, Node::Time);
    for &x in states {
        let partial = p.diff(r, Node::Var(x));
        let rate = if x == victim { p.var(dummy) } else { p.der(x) };
        let term = p.mul(partial, rate);
        total = p.add(total, term);
    }
    total
}
