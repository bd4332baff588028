//! Index reduction (SPEC §4): Pantelides' algorithm finds the equations to differentiate
//! ([`pantelides`]), the differentiator writes their derivatives, and Mattsson–Söderlind's
//! dummy derivatives choose which derivatives become algebraic unknowns ([`pivots`]), so that
//! the result is a DAE of index 1 that matching and sorting take as it is.
//!
//! The choice is made at the start values; where it depends on the state, the reduced DAE
//! carries it ([`StateChoice`]) so that a simulation can check it as it runs.

mod pantelides;
pub mod pivots;

use std::collections::HashMap;

use crate::dae::{
    Dae, Equation, EquationOrigin, StateChoice, StateSelect, Term, VarKind, Variable,
};
use crate::diagnostics::Diagnostic;
use crate::expr::{ExprId, ExprPool, Node, Values, VarId};
use pantelides::{Pantelides, Var};

/// How often one equation may be differentiated before the system is taken as singular in a
/// way differentiation does not mend.
const MAX_ORDER: u32 = 20;

/// What index reduction did.
#[derive(Clone, Debug, Default)]
pub struct IndexReduction {
    /// The structural index: 1 when nothing was differentiated, else one more than the most
    /// any equation was.
    pub index: u32,
    /// Equations (indices into the reduced DAE's equations: the originals keep theirs) and
    /// how many times each was differentiated.
    pub differentiated: Vec<(usize, u32)>,
    /// The dummy derivatives, new algebraic variables of the reduced DAE.
    pub dummy_derivatives: Vec<VarId>,
    /// States of the DAE that are algebraic in the reduced one.
    pub demoted: Vec<VarId>,
    /// What choosing again needs, where the choice depends on the state.
    pub rechoice: Option<Box<Rechoice>>,
}

/// Dynamic state selection (SPEC §4): the DAE as index reduction received it, from which the
/// dummy derivatives are chosen again at a point where the first choice no longer suits.
#[derive(Clone, Debug, Default)]
pub struct Rechoice {
    unreduced: Dae,
    /// The algebraic variables the reduction kept as candidate states.
    promoted: Vec<VarId>,
}

impl Rechoice {
    /// The DAE reduced again with its dummy derivatives chosen at `point`, a point of
    /// `reduced` (this choice's DAE or one chosen again since), and set to start there: each
    /// unknown starts at its value at the point, the states chosen are fixed there, and the
    /// initial equations are dropped, since the point already satisfies the model.
    pub fn at(
        &self,
        reduced: &Dae,
        point: &crate::causal::Point,
    ) -> Result<(Dae, IndexReduction), Vec<Diagnostic>> {
        let value = values_by_name(reduced, point);
        let mut dae = self.unreduced.clone();
        let ders: Vec<f64> = (dae.variables.iter())
            .map(|v| {
                let name = format!("der({})", v.name);
                value.get(name.as_str()).copied().unwrap_or(0.0)
            })
            .collect();
        start_at(&mut dae, &value);
        dae.initial_equations.clear();
        let (mut again, report, _) = reduce_with(dae, &self.promoted, &ders)?;
        start_at(&mut again, &value);
        for var in &mut again.variables {
            var.fixed = Some(var.kind == VarKind::State);
        }
        Ok((again, report))
    }
}

/// The value of every variable of `dae` at `point`, and of each state's derivative as
/// `der(name)`, by name (the names a reduction writes its dummy derivatives with).
fn values_by_name(dae: &Dae, point: &crate::causal::Point) -> HashMap<String, f64> {
    let mut value = HashMap::new();
    for v in dae.var_ids() {
        let var = dae.var(v);
        let Some(&x) = point.vars.get(v.0 as usize) else {
            continue;
        };
        value.insert(var.name.clone(), x);
        if var.kind == VarKind::State {
            let d = point.ders.get(v.0 as usize).copied().unwrap_or(0.0);
            value.insert(format!("der({})", var.name), d);
        }
    }
    value
}

/// Every unknown of `dae` named in `value` starts there, not fixed.
fn start_at(dae: &mut Dae, value: &HashMap<String, f64>) {
    for k in 0..dae.variables.len() {
        let var = &dae.variables[k];
        if !var.kind.is_unknown() {
            continue;
        }
        if let Some(&x) = value.get(var.name.as_str()) {
            let start = dae.pool.constant(x);
            let var = &mut dae.variables[k];
            var.start = Some(start);
            var.fixed = Some(false);
        }
    }
}

/// The chains of the DAE's unknowns: the variables Pantelides starts from, and which of them
/// each leaf of an equation is.
struct Chains {
    vars: Vec<Var>,
    /// Per variable of the DAE's chains: the DAE variable (of a chain's order-0 variable, its
    /// `base`, the chain's).
    base_var: Vec<VarId>,
    /// The node each variable is written as.
    nodes: Vec<ExprId>,
    leaf: HashMap<Node, usize>,
}

impl Chains {
    /// The chains of `dae`'s unknowns: a state's of two variables, `x` and `der(x)`, and so
    /// is each of `promoted`'s, algebraic variables index reduction may keep as states.
    fn of(dae: &mut Dae, promoted: &[VarId]) -> Chains {
        let mut chains = Chains {
            vars: Vec::new(),
            base_var: Vec::new(),
            nodes: Vec::new(),
            leaf: HashMap::new(),
        };
        for v in 0..dae.variables.len() {
            let id = VarId(v as u32);
            let kind = dae.variables[v].kind;
            if !kind.is_unknown() {
                continue;
            }
            let base = chains.vars.len();
            chains.vars.push(Var {
                base,
                order: 0,
                derivative: None,
                antiderivative: None,
            });
            chains.nodes.push(dae.pool.var(id));
            chains.base_var.push(id);
            chains.leaf.insert(Node::Var(id), base);
            if kind == VarKind::State || promoted.contains(&id) {
                chains.vars[base].derivative = Some(base + 1);
                chains.vars.push(Var {
                    base,
                    order: 1,
                    derivative: None,
                    antiderivative: Some(base),
                });
                chains.nodes.push(dae.pool.der(id));
                chains.base_var.push(id);
                chains.leaf.insert(Node::Der(id), base + 1);
            }
        }
        chains
    }

    /// The chain variables an expression mentions, each once, in order.
    fn incidence(&self, pool: &ExprPool, e: ExprId) -> Vec<usize> {
        let mut vars = Vec::new();
        pool.visit_leaves(e, |n| vars.extend(self.leaf.get(&n).copied()));
        vars.sort_unstable();
        vars.dedup();
        vars
    }

    fn base(&self, j: usize, vars: &[Var]) -> VarId {
        self.base_var[vars[j].base]
    }
}

/// Reduces the index of `dae` (aliases eliminated). Returns it unchanged when no equation
/// needs differentiating, or when the structure is singular in a way differentiation does not
/// mend (the structural analysis then says where).
///
/// A variable defined as a derivative (`v = der(x)`) with `stateSelect = prefer` or `always`
/// is a state only if the constraints on `x` are differentiated once more, which Pantelides'
/// minimal choice does not do: when `x` is constrained, the reduction is run again with `v`
/// a candidate state, and kept when `v` stays one (a spring's `v_rel` rather than a mass's
/// velocity, as the library's authors ask and as a `reinit` of that mass then expects).
pub fn reduce(dae: Dae) -> Result<(Dae, IndexReduction), Vec<Diagnostic>> {
    let preferred = preferred_derivative_aliases(&dae);
    if preferred.is_empty() {
        return reduce_with(dae, &[], &[]).map(|(dae, report, _)| (dae, report));
    }
    let (reduced, report, constrained) = reduce_with(dae.clone(), &[], &[])?;
    let promoted: Vec<VarId> = preferred
        .into_iter()
        .filter(|&(_, x)| constrained.contains(&x))
        .map(|(v, _)| v)
        .collect();
    if promoted.is_empty() {
        return Ok((reduced, report));
    }
    match reduce_with(dae, &promoted, &[]) {
        Ok((again, again_report, _))
            if promoted
                .iter()
                .any(|&v| again.var(v).kind == VarKind::State) =>
        {
            Ok((again, again_report))
        }
        _ => Ok((reduced, report)),
    }
}

/// `(v, x)` for each equation `v = der(x)` whose `v` is an algebraic variable with
/// `stateSelect = prefer` or `always`.
fn preferred_derivative_aliases(dae: &Dae) -> Vec<(VarId, VarId)> {
    let mut found = Vec::new();
    for eq in &dae.equations {
        let (lhs, rhs) = (dae.pool.node(eq.lhs), dae.pool.node(eq.rhs));
        let ((Node::Var(v), Node::Der(x)) | (Node::Der(x), Node::Var(v))) = (lhs, rhs) else {
            continue;
        };
        let var = dae.var(v);
        if var.kind == VarKind::Algebraic && var.state_select >= StateSelect::Prefer {
            found.push((v, x));
        }
    }
    found
}

/// [`reduce`] with `promoted` candidate states, choosing at the start values with the
/// derivatives `ders` (by variable; zero where not given); also the variables whose chains a
/// differentiated equation reads.
fn reduce_with(
    mut dae: Dae,
    promoted: &[VarId],
    ders: &[f64],
) -> Result<(Dae, IndexReduction, Vec<VarId>), Vec<Diagnostic>> {
    let mut chains = Chains::of(&mut dae, promoted);
    let equations: Vec<Vec<usize>> = dae
        .equations
        .iter()
        .map(|eq| chains.incidence(&dae.pool, eq.residual))
        .collect();
    let original = equations.len();
    let mut augmented = Pantelides::new(chains.vars.clone(), equations);
    let unchanged = IndexReduction {
        index: 1,
        ..IndexReduction::default()
    };
    if augmented.run(MAX_ORDER).is_err() || augmented.eqs.len() == original {
        return Ok((dae, unchanged, Vec::new()));
    }
    let mut constrained: Vec<VarId> = augmented.eqs[original..]
        .iter()
        .flat_map(|eq| eq.vars.iter().map(|&j| chains.base(j, &augmented.vars)))
        .collect();
    constrained.sort_unstable();
    constrained.dedup();
    let first_placeholder = dae.variables.len() as u32;
    for j in chains.vars.len()..augmented.vars.len() {
        // Written as a placeholder variable until the choice decides what it is.
        let placeholder = VarId(first_placeholder + (j - chains.vars.len()) as u32);
        chains.nodes.push(dae.pool.var(placeholder));
        chains.leaf.insert(Node::Var(placeholder), j);
    }
    let residuals = differentiate(&mut dae, &chains, &augmented)?;
    let choice = choose_dummies(&mut dae, &chains, &augmented, (&residuals, ders))?;
    // Only the pool has grown so far, which the DAE chosen again may share.
    let rechoice = (!choice.checks.is_empty()).then(|| {
        Box::new(Rechoice {
            unreduced: dae.clone(),
            promoted: promoted.to_vec(),
        })
    });
    let mut report = rewrite(&mut dae, &chains, &augmented, &residuals, choice)?;
    report.rechoice = rechoice;
    Ok((dae, report, constrained))
}

/// Every equation's residual, the differentiated ones written by the chain rule: `dr/dt =
/// ∂r/∂t + Σ ∂r/∂v · v'` over the chain variables `v` of `r`.
fn differentiate(
    dae: &mut Dae,
    chains: &Chains,
    augmented: &Pantelides,
) -> Result<Vec<ExprId>, Vec<Diagnostic>> {
    let mut residuals: Vec<ExprId> = dae.equations.iter().map(|eq| eq.residual).collect();
    for e in residuals.len()..augmented.eqs.len() {
        let parent = augmented.eqs[e].parent.expect("a differentiated equation");
        let r = residuals[parent];
        let mut leaves = Vec::new();
        dae.pool.visit_leaves(r, |n| leaves.push(n));
        let mut total = dae.pool.diff(r, Node::Time);
        for leaf in leaves {
            let rate = match leaf {
                Node::Time => continue,
                Node::Var(v) | Node::Der(v) | Node::Last(v) => match chains.leaf.get(&leaf) {
                    Some(&j) => {
                        let d = augmented.vars[j].derivative.expect("Pantelides derived it");
                        chains.nodes[d]
                    }
                    None if matches!(leaf, Node::Var(_) | Node::Der(_))
                        && !matches!(dae.var(v).kind, VarKind::Input) =>
                    {
                        continue;
                    }
                    None => {
                        let source = augmented.eqs[e].source;
                        return Err(vec![underivable(dae, source, v, leaf)]);
                    }
                },
                _ => continue,
            };
            let partial = dae.pool.diff(r, leaf);
            let term = dae.pool.mul(partial, rate);
            total = dae.pool.add(total, term);
        }
        residuals.push(total);
    }
    Ok(residuals)
}

/// An equation that index reduction must differentiate reads an input or a weak read, whose
/// derivative mocca does not know.
fn underivable(dae: &Dae, source: usize, v: VarId, leaf: Node) -> Diagnostic {
    let what = match leaf {
        Node::Last(_) => format!("the weak read `last({})`", dae.var(v).name),
        _ => format!("the input `{}`", dae.var(v).name),
    };
    Diagnostic::error(format!(
        "index reduction must differentiate this equation, and it reads {what}, whose derivative is not known"
    ))
    .at(dae.equations[source].span, "differentiated to reduce the index")
    .with_note("write the constraint without it, or declare the coupling without `weak`")
}

/// The dummy derivatives, by chain variable, and the checks of the choice.
struct Choice {
    dummy: Vec<bool>,
    checks: Vec<StateChoice>,
}

/// Mattsson–Söderlind: from the most differentiated equations down, one candidate derivative
/// per equation becomes a dummy, by pivoting on the equations' Jacobian with respect to the
/// candidates at the start values; the next level's candidates are the chosen ones'
/// antiderivatives, its equations those the current ones were differentiated from.
fn choose_dummies(
    dae: &mut Dae,
    chains: &Chains,
    augmented: &Pantelides,
    (residuals, ders): (&[ExprId], &[f64]),
) -> Result<Choice, Vec<Diagnostic>> {
    let start = StartValues::of(dae, ders);
    let uses = occurrences(dae);
    let preference: Vec<u32> = (0..augmented.vars.len())
        .map(|j| preference(dae, chains, augmented, j, &uses))
        .collect();
    let mut dummy = vec![false; augmented.vars.len()];
    let mut checks = Vec::new();
    let mut rows: Vec<usize> = (0..augmented.eqs.len())
        .filter(|&e| augmented.eqs[e].order >= 1 && augmented.is_highest(e))
        .collect();
    let mut candidates: Vec<usize> = rows
        .iter()
        .flat_map(|&e| augmented.eqs[e].vars.iter().copied())
        .filter(|&j| augmented.vars[j].order >= 1 && augmented.vars[j].derivative.is_none())
        .collect();
    while !rows.is_empty() {
        candidates.sort_unstable();
        candidates.dedup();
        let column: HashMap<usize, usize> = candidates
            .iter()
            .enumerate()
            .map(|(c, &j)| (j, c))
            .collect();
        let mut entries = Vec::new();
        for (r, &e) in rows.iter().enumerate() {
            for &j in &augmented.eqs[e].vars {
                if let Some(&c) = column.get(&j) {
                    let d = dae.pool.diff(residuals[e], dae.pool.node(chains.nodes[j]));
                    if dae.pool.as_const(d) != Some(0.0) {
                        entries.push((r, c, d));
                    }
                }
            }
        }
        let values = evaluate(&dae.pool, &entries, rows.len(), &start);
        let prefs: Vec<u32> = candidates.iter().map(|&j| preference[j]).collect();
        let pivots = pivots::choose(&values, &prefs)
            .map_err(|pivots::NoPivot(r)| vec![no_dummy(dae, augmented.eqs[rows[r]].source)])?;
        for &c in &pivots {
            dummy[candidates[c]] = true;
        }
        if entries.iter().any(|&(_, _, d)| varies(dae, d)) {
            checks.push(StateChoice {
                equations: rows.iter().map(|&e| augmented.eqs[e].source).collect(),
                candidates: candidates.iter().map(|&j| chains.nodes[j]).collect(),
                entries,
                pivots: pivots.clone(),
            });
        }
        rows = rows
            .iter()
            .filter_map(|&e| augmented.eqs[e].parent)
            .filter(|&e| augmented.eqs[e].order >= 1)
            .collect();
        candidates = pivots
            .iter()
            .filter_map(|&c| augmented.vars[candidates[c]].antiderivative)
            .filter(|&j| augmented.vars[j].order >= 1)
            .collect();
    }
    Ok(Choice { dummy, checks })
}

/// Whether an expression reads something other than parameters and constants.
fn varies(dae: &Dae, e: ExprId) -> bool {
    let mut varies = false;
    dae.pool.visit_leaves(e, |n| match n {
        Node::Var(v) | Node::Der(v) | Node::Last(v) => {
            varies |= dae
                .variables
                .get(v.0 as usize)
                .is_none_or(|var| !matches!(var.kind, VarKind::Parameter | VarKind::Constant))
        }
        Node::Time => varies = true,
        _ => {}
    });
    varies
}

/// Rows of `(column, value)` from `(row, column, expression)` entries.
pub fn evaluate(
    pool: &ExprPool,
    entries: &[(usize, usize, ExprId)],
    rows: usize,
    values: &dyn Values,
) -> Vec<Vec<(usize, f64)>> {
    let mut out = vec![Vec::new(); rows];
    for &(r, c, e) in entries {
        let x = pool.eval(e, values).unwrap_or(f64::NAN);
        out[r].push((c, if x.is_finite() { x } else { 0.0 }));
    }
    out
}

/// How many equations mention each variable.
fn occurrences(dae: &Dae) -> Vec<u32> {
    let mut count = vec![0; dae.variables.len()];
    for eq in &dae.equations {
        let mut seen = std::collections::HashSet::new();
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

/// Bits of [`preference`] below the attributes: the uses of the variable.
const USES_BITS: u32 = 20;

/// How soon candidate derivative `j` becomes a dummy (lower: sooner): by the `stateSelect`
/// of the variable it is the derivative of, then a `fixed = true` start keeping that
/// variable a state, then derivatives of derivatives before first derivatives, then the
/// variable the fewest equations mention (a mass's position before a damper's elongation).
fn preference(dae: &Dae, chains: &Chains, augmented: &Pantelides, j: usize, uses: &[u32]) -> u32 {
    let var = &augmented.vars[j];
    let first = var.order == 1;
    let base = dae.var(chains.base(j, &augmented.vars));
    let select = if first {
        base.state_select
    } else {
        StateSelect::Default
    };
    let fixed = first && base.fixed == Some(true);
    let attributes = select as u32 * 4 + u32::from(fixed) * 2 + u32::from(first);
    let used = uses[chains.base(j, &augmented.vars).0 as usize].min((1 << USES_BITS) - 1);
    (attributes << USES_BITS) | used
}

/// A differentiated equation left without a derivative to determine.
fn no_dummy(dae: &Dae, source: usize) -> Diagnostic {
    Diagnostic::error(
        "index reduction found no derivative for a differentiated equation to determine: the \
         constraints are dependent",
    )
    .at(
        dae.equations[source].span,
        "differentiated to reduce the index",
    )
}

/// The point the choice is made at: parameters and start values (0 without one), and the
/// derivatives given (0 at the start).
struct StartValues {
    vars: Vec<f64>,
    ders: Vec<f64>,
}

impl StartValues {
    /// The start values of `dae`, with the derivatives `ders`.
    fn of(dae: &Dae, ders: &[f64]) -> StartValues {
        StartValues {
            vars: crate::causal::initial_point(dae)
                .map(|p| p.vars)
                .unwrap_or_else(|_| vec![0.0; dae.variables.len()]),
            ders: ders.to_vec(),
        }
    }
}

impl Values for StartValues {
    fn var(&self, v: VarId) -> Option<f64> {
        Some(self.vars.get(v.0 as usize).copied().unwrap_or(0.0))
    }
    fn der(&self, v: VarId) -> Option<f64> {
        Some(self.ders.get(v.0 as usize).copied().unwrap_or(0.0))
    }
    fn time(&self) -> Option<f64> {
        Some(0.0)
    }
}

/// Writes the reduced DAE: each dummy derivative a new algebraic variable (a state whose
/// derivative it replaces becomes algebraic), each other derivative `der` of its
/// antiderivative (an algebraic variable whose derivative stays becomes a state), and the
/// differentiated equations appended.
fn rewrite(
    dae: &mut Dae,
    chains: &Chains,
    augmented: &Pantelides,
    residuals: &[ExprId],
    choice: Choice,
) -> Result<IndexReduction, Vec<Diagnostic>> {
    let mut report = IndexReduction::default();
    let mut written: Vec<Option<ExprId>> = vec![None; augmented.vars.len()];
    let mut kinds: Vec<(VarId, VarKind)> = Vec::new();
    for (j, var) in augmented.vars.iter().enumerate() {
        let Some(a) = var.antiderivative else {
            continue;
        };
        let node = dae.pool.node(chains.nodes[j]);
        if choice.dummy[j] {
            let w = add_dummy(dae, &derivative_name(dae, chains, augmented, j));
            report.dummy_derivatives.push(w);
            written[j] = Some(dae.pool.var(w));
            if let Node::Der(b) = node
                && dae.var(b).kind == VarKind::State
            {
                kinds.push((b, VarKind::Algebraic));
                report.demoted.push(b);
            }
            continue;
        }
        if let Node::Der(b) = node {
            // A promoted variable whose derivative stays is a state.
            if dae.var(b).kind != VarKind::State {
                kinds.push((b, VarKind::State));
            }
            continue;
        }
        // A derivative that stays: `der` of its antiderivative, which must be a variable.
        match dae.pool.node(chains.nodes[a]) {
            Node::Var(u) if augmented.vars[a].order == 0 => {
                kinds.push((u, VarKind::State));
                written[j] = Some(dae.pool.der(u));
            }
            _ => {
                let name = derivative_name(dae, chains, augmented, a);
                return Err(vec![
                    Diagnostic::error(format!(
                        "index reduction would keep `{name}` as a state, which mocca does not do"
                    ))
                    .with_note(
                        "give the variables of the constraint `stateSelect = StateSelect.prefer` or \
                         `avoid` to choose other states",
                    ),
                ]);
            }
        }
    }
    let mut map: HashMap<Node, ExprId> = HashMap::new();
    for (j, w) in written.iter().enumerate() {
        if let Some(w) = *w {
            map.insert(dae.pool.node(chains.nodes[j]), w);
        }
    }
    for (v, kind) in kinds {
        dae.variables[v.0 as usize].kind = kind;
    }
    let original = dae.equations.len();
    let mut substitute = Substitution::new(map);
    for e in 0..original {
        substitute.equation(&mut dae.pool, &mut dae.equations[e]);
    }
    for eq in &mut dae.initial_equations {
        substitute.equation(&mut dae.pool, eq);
    }
    for a in &mut dae.assertions {
        a.condition = substitute.expr(&mut dae.pool, a.condition);
    }
    for v in 0..dae.variables.len() {
        if let Some(b) = dae.variables[v].binding {
            dae.variables[v].binding = Some(substitute.expr(&mut dae.pool, b));
        }
    }
    for (e, &r) in residuals.iter().enumerate().skip(original) {
        let residual = substitute.expr(&mut dae.pool, r);
        let source = &dae.equations[augmented.eqs[e].source];
        let (span, component) = (source.span, source.component.clone());
        let zero = dae.pool.zero();
        dae.equations.push(Equation {
            lhs: residual,
            rhs: zero,
            residual,
            terms: vec![Term {
                expr: residual,
                sign: 1.0,
                span,
            }],
            origin: EquationOrigin::Differentiated,
            span,
            component,
        });
    }
    for mut check in choice.checks {
        for entry in &mut check.entries {
            entry.2 = substitute.expr(&mut dae.pool, entry.2);
        }
        for c in &mut check.candidates {
            *c = substitute.expr(&mut dae.pool, *c);
        }
        dae.state_choices.push(check);
    }
    let mut most = vec![0u32; original];
    for eq in &augmented.eqs {
        most[eq.source] = most[eq.source].max(eq.order);
    }
    report.differentiated = (0..original)
        .filter(|&e| most[e] > 0)
        .map(|e| (e, most[e]))
        .collect();
    report.index = 1 + most.iter().copied().max().unwrap_or(0);
    Ok(report)
}

/// `der(x)`, `der(der(x))`: the name of chain variable `j`.
fn derivative_name(dae: &Dae, chains: &Chains, augmented: &Pantelides, j: usize) -> String {
    let base = &dae.var(chains.base(j, &augmented.vars)).name;
    let order = augmented.vars[j].order as usize;
    format!("{}{base}{}", "der(".repeat(order), ")".repeat(order))
}

/// A new algebraic variable for a dummy derivative named `name`.
fn add_dummy(dae: &mut Dae, name: &str) -> VarId {
    let base = name.trim_start_matches("der(").trim_end_matches(')');
    let like = dae.lookup(base).map(|v| dae.var(v).clone());
    let span = like.as_ref().map_or_else(Default::default, |v| v.span);
    let var = Variable {
        description: Some(format!("dummy derivative of {base}")),
        component: like.map_or_else(|| "".into(), |v| v.component),
        ..Variable::derived(
            name.to_string(),
            VarKind::Algebraic,
            crate::dae::ScalarType::Real,
            span,
        )
    };
    match dae.add_variable(var.clone()) {
        Ok(id) => id,
        // A quoted user name `'der(x)'` has it: the dummy is added without a name in the
        // index, where the user's variable keeps it.
        Err(_) => {
            dae.variables.push(var);
            VarId(dae.variables.len() as u32 - 1)
        }
    }
}

/// One substitution of leaves over many expressions, each shared subtree rewritten once.
struct Substitution {
    map: HashMap<Node, ExprId>,
    done: crate::expr::Substituted,
}

impl Substitution {
    fn new(map: HashMap<Node, ExprId>) -> Substitution {
        Substitution {
            map,
            done: Default::default(),
        }
    }

    fn expr(&mut self, pool: &mut ExprPool, e: ExprId) -> ExprId {
        let map = &self.map;
        pool.substitute_with(e, &mut |_, n| map.get(&n).copied(), &mut self.done)
    }

    fn equation(&mut self, pool: &mut ExprPool, eq: &mut Equation) {
        eq.lhs = self.expr(pool, eq.lhs);
        eq.rhs = self.expr(pool, eq.rhs);
        eq.residual = self.expr(pool, eq.residual);
        for t in &mut eq.terms {
            t.expr = self.expr(pool, t.expr);
        }
    }
}
