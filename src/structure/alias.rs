//! Alias elimination (SPEC §4): `a = b`, `a = −b` and `a = constant` equations are removed and
//! `a` replaced by `±b` or the constant everywhere, so matching sees only the real equations.
//! Eliminated variables keep their place in the DAE with kind `Alias` and their defining
//! expression, so they are still reported and printable.

use smallvec::SmallVec;

use crate::dae::{Dae, VarKind};
use crate::expr::{ExprId, ExprPool, Node, Substituted, VarId};

/// A variable's value in terms of its set's representative: `sign·rep + offset`.
#[derive(Clone, Copy, Debug)]
struct Link {
    parent: usize,
    sign: f64,
}

/// Union–find with signs: `x = sign(x)·find(x)`.
struct SignedSets {
    links: Vec<Link>,
    constant: Vec<Option<f64>>,
}

impl SignedSets {
    fn new(n: usize) -> SignedSets {
        SignedSets {
            links: (0..n)
                .map(|i| Link {
                    parent: i,
                    sign: 1.0,
                })
                .collect(),
            constant: vec![None; n],
        }
    }

    /// Root of `x` and the sign with `x = sign·root`, compressing the path (iteratively:
    /// chains of aliases can be as long as the model).
    fn find(&mut self, x: usize) -> (usize, f64) {
        let mut path = Vec::new();
        let mut at = x;
        while self.links[at].parent != at {
            path.push(at);
            at = self.links[at].parent;
        }
        // Walk back from the node nearest the root, accumulating signs.
        let mut sign = 1.0;
        for &node in path.iter().rev() {
            sign *= self.links[node].sign;
            self.links[node] = Link { parent: at, sign };
        }
        (at, sign)
    }
}

/// Eliminates aliases, repeating while substitution exposes new ones (`v = p − n` with `n`
/// grounded becomes `v = p`); returns the reduced DAE.
pub fn eliminate(dae: Dae) -> Dae {
    let mut out = dae;
    // Each round may leave another definition of parameters only (`T_heatPort = T` makes
    // `G_actual = G/(1 + alpha*(T_heatPort - T_ref))` one).
    while eliminate_parameter_definitions(&mut out) {}
    let mut rewritten = vec![true; out.equations.len()];
    for _ in 0..8 {
        match one_pass(&mut out, &rewritten) {
            Some(next) => rewritten = next,
            None => break,
        }
    }
    resolve_alias_chains(&mut out);
    read_aliases_in_hybrid(&mut out);
    demote_states_without_derivatives(&mut out);
    out
}

/// A state whose derivative the substitutions removed from every equation (`C*der(v)` with
/// `C` evaluated to 0, as `Evaluate = true` gives) has no dynamics left: it is algebraic,
/// determined by the equations that read it. Left a state, index reduction would
/// differentiate them for a derivative none of them has.
fn demote_states_without_derivatives(out: &mut Dae) {
    let mut has_derivative = vec![false; out.variables.len()];
    for eq in out.equations.iter().chain(&out.initial_equations) {
        out.pool.visit_leaves(eq.residual, |leaf| {
            if let Node::Der(v) = leaf {
                has_derivative[v.0 as usize] = true;
            }
        });
    }
    for (var, has) in out.variables.iter_mut().zip(has_derivative) {
        if var.kind == VarKind::State && !has {
            var.kind = VarKind::Algebraic;
        }
    }
}

/// `a = e` with `e` of parameters and constants only (`A = d^2*pi/4`): `a` is known before
/// the run, so it is no unknown. Left an unknown, index reduction would differentiate its
/// equation into `der(a) = 0`, which determines no derivative it looks for. Whether any was.
fn eliminate_parameter_definitions(out: &mut Dae) -> bool {
    let n = out.variables.len();
    let mut replacement: Vec<Option<Replacement>> = vec![None; n];
    let mut keep = vec![true; out.equations.len()];
    for (e, kept) in keep.iter_mut().enumerate() {
        let eq = &out.equations[e];
        let defined = [(eq.lhs, eq.rhs), (eq.rhs, eq.lhs)]
            .into_iter()
            .find_map(|(side, value)| match out.pool.node(side) {
                Node::Var(a)
                    if out.var(a).kind == VarKind::Algebraic
                        && eliminable(out, a)
                        && replacement[a.0 as usize].is_none()
                        && of_parameters(out, value) =>
                {
                    Some((a, value))
                }
                _ => None,
            });
        if let Some((a, value)) = defined {
            let zero = out.pool.zero();
            replacement[a.0 as usize] = Some(Replacement {
                var: value,
                last: value,
                der: zero,
            });
            let v = &mut out.variables[a.0 as usize];
            v.kind = VarKind::Alias;
            v.binding = Some(value);
            *kept = false;
        }
    }
    if keep.iter().all(|&k| k) {
        return false;
    }
    keep_and_substitute(out, &keep, &replacement);
    true
}

/// Whether `e` reads parameters and constants only (no time, no unknown, no derivative).
fn of_parameters(dae: &Dae, e: ExprId) -> bool {
    let mut known = true;
    dae.pool.visit_leaves(e, |n| match n {
        Node::Const(_) => {}
        Node::Var(v) => known &= matches!(dae.var(v).kind, VarKind::Parameter | VarKind::Constant),
        _ => known = false,
    });
    known
}

/// The `when` conditions and actions and the held relations read each eliminated variable
/// through its binding, as the equations do: nothing computes an alias's value during a run,
/// so a condition on one would never change.
fn read_aliases_in_hybrid(out: &mut Dae) {
    let bindings: Vec<Option<ExprId>> = (out.variables.iter())
        .map(|v| v.binding.filter(|_| v.kind == VarKind::Alias))
        .collect();
    if out.hybrid.is_empty() || bindings.iter().all(Option::is_none) {
        return;
    }
    let mut done = Substituted::default();
    let Dae { pool, hybrid, .. } = out;
    hybrid.exprs_mut(&mut |e| {
        done.clear();
        let mut map = |_: &mut ExprPool, node| match node {
            Node::Var(v) => bindings[v.0 as usize],
            _ => None,
        };
        *e = pool.substitute_with(*e, &mut map, &mut done);
    });
    // `pre(v)` of an alias of `w` is `pre(w)`.
    for (_, of) in &mut hybrid.pre {
        if let Some(Node::Var(w)) = bindings[of.0 as usize].map(|b| pool.node(b)) {
            *of = w;
        }
    }
}

/// A later round may eliminate the variable an earlier round bound an alias to, so that the
/// earlier binding reads another alias (whose value nothing computes). Substituting bindings
/// into each other leaves every alias reading non-alias variables only; the chains end, as each
/// round binds to a variable that round keeps.
fn resolve_alias_chains(out: &mut Dae) {
    let mut resolved: Vec<Option<ExprId>> = vec![None; out.variables.len()];
    let mut done = Substituted::default();
    for x in 0..out.variables.len() {
        resolve_binding(out, x, &mut resolved, &mut done);
    }
}

/// The binding of alias `x` over non-alias variables (memoised in `resolved`); `None` for a
/// variable that is no alias.
fn resolve_binding(
    out: &mut Dae,
    x: usize,
    resolved: &mut [Option<ExprId>],
    done: &mut Substituted,
) -> Option<ExprId> {
    if let Some(e) = resolved[x] {
        return Some(e);
    }
    let var = &out.variables[x];
    let binding = match (var.kind, var.binding) {
        (VarKind::Alias, Some(b)) => b,
        _ => return None,
    };
    let mut aliases = Vec::new();
    out.pool.visit_leaves(binding, |n| {
        if let Node::Var(w) = n
            && out.variables[w.0 as usize].kind == VarKind::Alias
        {
            aliases.push(w.0 as usize);
        }
    });
    let bound: Vec<(usize, ExprId)> = aliases
        .into_iter()
        .filter_map(|w| resolve_binding(out, w, resolved, done).map(|e| (w, e)))
        .collect();
    let result = if bound.is_empty() {
        binding
    } else {
        done.clear();
        let mut map = |_: &mut ExprPool, node| match node {
            Node::Var(w) => bound
                .iter()
                .find(|(a, _)| *a == w.0 as usize)
                .map(|&(_, e)| e),
            _ => None,
        };
        out.pool.substitute_with(binding, &mut map, done)
    };
    out.variables[x].binding = Some(result);
    resolved[x] = Some(result);
    Some(result)
}

/// One round of elimination in place, looking only at the equations flagged in `rewritten`:
/// `None` when nothing was eliminated, else which of the remaining equations it rewrote.
///
/// An equation the previous round left as it was cannot be eliminated now. It was kept then
/// because it is no alias, or because both its variables are states (a state stays the root of
/// its set, so that holds again); the other reasons to keep one — its variables already joined,
/// or already given a constant — mean one of them was replaced, which rewrites the equation.
fn one_pass(out: &mut Dae, rewritten: &[bool]) -> Option<Vec<bool>> {
    let n = out.variables.len();
    let mut sets = SignedSets::new(n);
    let mut is_state_root: Vec<bool> = out
        .variables
        .iter()
        .map(|v| v.kind == VarKind::State)
        .collect();
    let mut keep = vec![true; out.equations.len()];
    for (e, kept) in keep.iter_mut().enumerate() {
        if !rewritten[e] {
            continue;
        }
        let residual = out.equations[e].residual;
        match classify(out, residual) {
            Some(Candidate::Pair(a, b, sign)) => {
                let (ra, sa) = sets.find(a.0 as usize);
                let (rb, sb) = sets.find(b.0 as usize);
                // Two states, an already-joined pair, or two constants: keep the equation.
                let both_fixed = sets.constant[ra].is_some() && sets.constant[rb].is_some();
                if ra == rb || (is_state_root[ra] && is_state_root[rb]) || both_fixed {
                    continue;
                }
                // a = sign·b ⇒ sa·ra = sign·sb·rb; attach the non-state root below the other.
                let rel = sign * sb * sa;
                let (child, root) = if is_state_root[ra] {
                    (rb, ra)
                } else {
                    (ra, rb)
                };
                sets.links[child] = Link {
                    parent: root,
                    sign: rel,
                };
                if let Some(c) = sets.constant[child] {
                    sets.constant[root] = Some(c * rel);
                }
                is_state_root[root] |= is_state_root[child];
                *kept = false;
            }
            Some(Candidate::Constant(a, value)) => {
                let (ra, sa) = sets.find(a.0 as usize);
                if sets.constant[ra].is_some() || is_state_root[ra] {
                    continue;
                }
                sets.constant[ra] = Some(value * sa);
                *kept = false;
            }
            None => {}
        }
    }
    if keep.iter().all(|&k| k) {
        return None;
    }
    let replacement = replacements(out, &mut sets);
    Some(keep_and_substitute(out, &keep, &replacement))
}

/// Drops the equations `keep` does not hold and rewrites the others, and the initial
/// equations, with `replacement`; which of the kept equations it rewrote.
fn keep_and_substitute(
    out: &mut Dae,
    keep: &[bool],
    replacement: &[Option<Replacement>],
) -> Vec<bool> {
    let mut done = Substituted::default();
    let mut equations = Vec::with_capacity(out.equations.len());
    let mut rewritten = Vec::with_capacity(out.equations.len());
    for (e, mut eq) in std::mem::take(&mut out.equations).into_iter().enumerate() {
        if keep[e] {
            rewritten.push(substitute_equation(
                &mut out.pool,
                replacement,
                &mut eq,
                &mut done,
            ));
            equations.push(eq);
        }
    }
    out.equations = equations;
    let mut initial = std::mem::take(&mut out.initial_equations);
    for eq in &mut initial {
        substitute_equation(&mut out.pool, replacement, eq, &mut done);
    }
    out.initial_equations = initial;
    rewritten
}

/// Rewrites an equation in terms of the representatives, if it mentions an eliminated variable
/// (then true). `done` is scratch, reused across equations.
fn substitute_equation(
    pool: &mut ExprPool,
    replacement: &[Option<Replacement>],
    eq: &mut crate::dae::Equation,
    done: &mut Substituted,
) -> bool {
    let mut touched = false;
    pool.visit_leaves(eq.residual, |n| {
        if let Node::Var(v) | Node::Last(v) = n {
            touched |= replacement[v.0 as usize].is_some();
        }
        if let Node::Der(v) = n {
            touched |= replacement[v.0 as usize].is_some();
        }
    });
    if !touched {
        return false;
    }
    done.clear();
    let mut apply = |pool: &mut ExprPool, e: ExprId| {
        let mut map = |_: &mut ExprPool, node| match node {
            Node::Var(v) => replacement[v.0 as usize].map(|r| r.var),
            Node::Last(v) => replacement[v.0 as usize].map(|r| r.last),
            Node::Der(v) => replacement[v.0 as usize].map(|r| r.der),
            _ => None,
        };
        pool.substitute_with(e, &mut map, done)
    };
    // The residual first: the sides and the terms are its subtrees.
    eq.residual = apply(pool, eq.residual);
    eq.lhs = apply(pool, eq.lhs);
    eq.rhs = apply(pool, eq.rhs);
    for t in &mut eq.terms {
        t.expr = apply(pool, t.expr);
    }
    true
}

/// What reads of an eliminated variable become.
#[derive(Clone, Copy)]
struct Replacement {
    var: ExprId,
    last: ExprId,
    /// Its derivative: the representative's (with the sign), or zero for a constant (a state
    /// whose value elimination fixed still has its `der` read).
    der: ExprId,
}

/// For every eliminated variable: its replacement for `Var` and for `Last` reads; marks it an
/// alias in the DAE.
fn replacements(out: &mut Dae, sets: &mut SignedSets) -> Vec<Option<Replacement>> {
    let n = out.variables.len();
    let mut result = vec![None; n];
    for (x, slot) in result.iter_mut().enumerate() {
        let (root, sign) = sets.find(x);
        let value = sets.constant[root];
        if root == x && value.is_none() {
            continue;
        }
        let p = &mut out.pool;
        let replacement = match value {
            Some(c) => {
                let k = p.constant(sign * c);
                let zero = p.zero();
                Replacement {
                    var: k,
                    last: k,
                    der: zero,
                }
            }
            None => {
                let root = VarId(root as u32);
                let (rv, rl, rd) = (p.var(root), p.last(root), p.der(root));
                if sign < 0.0 {
                    Replacement {
                        var: p.neg(rv),
                        last: p.neg(rl),
                        der: p.neg(rd),
                    }
                } else {
                    Replacement {
                        var: rv,
                        last: rl,
                        der: rd,
                    }
                }
            }
        };
        let var = replacement.var;
        *slot = Some(replacement);
        let v = &mut out.variables[x];
        v.kind = VarKind::Alias;
        v.binding = Some(var);
    }
    result
}

enum Candidate {
    /// `a = sign·b`
    Pair(VarId, VarId, f64),
    /// `a = value`
    Constant(VarId, f64),
}

/// Recognises `±a ± b = 0` and `c·a + k = 0` over unknowns that may be eliminated (not
/// parameters, not weak variables).
fn classify(dae: &Dae, residual: ExprId) -> Option<Candidate> {
    let mut form = Affine::default();
    form.add(dae, residual, 1.0)?;
    match *form.terms.as_slice() {
        [(a, ca), (b, cb)] if ca.abs() == 1.0 && cb.abs() == 1.0 && form.offset == 0.0 => {
            Some(Candidate::Pair(a, b, -cb / ca))
        }
        [(a, ca)] if ca != 0.0 => Some(Candidate::Constant(a, -form.offset / ca)),
        _ => None,
    }
}

/// `Σ c·v + offset` over at most two eliminable variables, read off an expression without
/// building anything in the pool: every equation is classified, most are not aliases.
#[derive(Default)]
struct Affine {
    terms: SmallVec<[(VarId, f64); 2]>,
    offset: f64,
    /// Nodes walked: a shared subtree is walked once per use (its terms count that often), so
    /// a deep DAG is cut off rather than walked exponentially.
    steps: usize,
}

impl Affine {
    const MAX_STEPS: usize = 4096;

    /// Adds `scale·e`; `None` when `e` is not of the form, or mentions a third variable.
    fn add(&mut self, dae: &Dae, e: ExprId, scale: f64) -> Option<()> {
        self.steps += 1;
        if self.steps > Self::MAX_STEPS {
            return None;
        }
        let pool = &dae.pool;
        match pool.node(e) {
            Node::Const(_) => self.offset += scale * pool.as_const(e)?,
            Node::Var(v) if eliminable(dae, v) => match self.terms.iter().position(|t| t.0 == v) {
                Some(k) => self.terms[k].1 += scale,
                None if self.terms.len() < 2 => self.terms.push((v, scale)),
                None => return None,
            },
            // Right before left: the order the variables were always met in, which decides
            // which of a pair stays.
            Node::Add(a, b) => {
                self.add(dae, b, scale)?;
                self.add(dae, a, scale)?;
            }
            Node::Neg(a) => self.add(dae, a, -scale)?,
            Node::Mul(a, b) => match (pool.as_const(a), pool.as_const(b)) {
                (Some(c), _) => self.add(dae, b, scale * c)?,
                (_, Some(c)) => self.add(dae, a, scale * c)?,
                _ => return None,
            },
            Node::Div(a, b) => match pool.as_const(b) {
                Some(c) if c != 0.0 => self.add(dae, a, scale / c)?,
                _ => return None,
            },
            // Other variables, derivatives, weak reads, time, and anything nonlinear.
            _ => return None,
        }
        Some(())
    }
}

fn eliminable(dae: &Dae, v: VarId) -> bool {
    let var = dae.var(v);
    matches!(var.kind, VarKind::Algebraic | VarKind::State) && !var.weak && !var.output
}
