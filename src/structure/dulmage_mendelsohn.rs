//! Explaining a structurally singular system: the over-determined part (equations reachable by
//! alternating paths from an unmatched equation) and the under-determined part (unknowns
//! reachable from an unmatched unknown), with their source spans (Dulmage–Mendelsohn).

use std::collections::VecDeque;

use super::matching::{Bipartite, Matching, NONE, hopcroft_karp};
use super::{Incidence, UnknownIndex};
use crate::dae::Dae;
use crate::diagnostics::Diagnostic;

/// How many equations or variables one diagnostic lists with spans.
const SHOWN: usize = 8;

pub(super) fn explain(
    dae: &Dae,
    index: &UnknownIndex,
    graph: &Bipartite,
    matching: &Matching,
    incidences: &[Incidence],
) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    let over = over_determined(graph, matching);
    let under = under_determined(graph, matching);
    let weak_hint = weak_cut_hint(dae, index, incidences);
    if !over.is_empty() {
        diags.push(over_diagnostic(
            dae, &over, matching, incidences, &weak_hint,
        ));
    }
    if !under.is_empty() {
        diags.push(under_diagnostic(dae, index, &under, matching, &weak_hint));
    }
    diags
}

/// Equations of the over-determined part, unmatched ones first.
fn over_determined(g: &Bipartite, m: &Matching) -> Vec<usize> {
    let mut seen = vec![false; g.equations()];
    let mut queue: VecDeque<usize> = (0..g.equations())
        .filter(|&e| m.of_equation[e] == NONE)
        .collect();
    queue.iter().for_each(|&e| seen[e] = true);
    let mut order = Vec::new();
    while let Some(e) = queue.pop_front() {
        order.push(e);
        for &u in g.row(e) {
            let next = m.of_unknown[u];
            if next != NONE && !seen[next] {
                seen[next] = true;
                queue.push_back(next);
            }
        }
    }
    order
}

/// Unknowns of the under-determined part, unmatched ones first.
fn under_determined(g: &Bipartite, m: &Matching) -> Vec<usize> {
    let mut users: Vec<Vec<usize>> = vec![Vec::new(); g.unknowns];
    for e in 0..g.equations() {
        for &u in g.row(e) {
            users[u].push(e);
        }
    }
    let mut seen = vec![false; g.unknowns];
    let mut queue: VecDeque<usize> = (0..g.unknowns)
        .filter(|&u| m.of_unknown[u] == NONE)
        .collect();
    queue.iter().for_each(|&u| seen[u] = true);
    let mut order = Vec::new();
    while let Some(u) = queue.pop_front() {
        order.push(u);
        for &e in &users[u] {
            let next = m.of_equation[e];
            if next != NONE && !seen[next] {
                seen[next] = true;
                queue.push_back(next);
            }
        }
    }
    order
}

/// When counting weak reads as ordinary dependencies makes the system regular, the weak cut
/// is what broke it: name the weakly read variables.
fn weak_cut_hint(dae: &Dae, index: &UnknownIndex, incidences: &[Incidence]) -> Option<String> {
    if incidences.iter().all(|i| i.weak_reads.is_empty()) {
        return None;
    }
    let rows: Vec<Vec<usize>> = incidences
        .iter()
        .map(|inc| {
            let mut row = inc.unknowns.clone();
            row.extend(&inc.weak_unknowns);
            row.extend(
                inc.weak_reads
                    .iter()
                    .map(|v| index.of_var[v.0 as usize])
                    .filter(|&u| u != NONE),
            );
            row
        })
        .collect();
    let full = hopcroft_karp(&Bipartite::from_rows(&rows, index.list.len()));
    if !full.is_perfect() {
        return None;
    }
    let mut read: Vec<String> = incidences
        .iter()
        .flat_map(|i| i.weak_reads.iter().map(|v| dae.var(*v).name.clone()))
        .collect();
    read.sort();
    read.dedup();
    Some(format!(
        "without `weak` the system would be regular: the weak reads of {} cut a dependency the \
         model needs (check which side of each weak connection is weak in the potential and \
         which in the flow)",
        read.iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

fn over_diagnostic(
    dae: &Dae,
    over: &[usize],
    m: &Matching,
    incidences: &[Incidence],
    weak_hint: &Option<String>,
) -> Diagnostic {
    let unmatched: Vec<usize> = over
        .iter()
        .copied()
        .filter(|&e| m.of_equation[e] == NONE)
        .collect();
    let first = unmatched[0];
    let higher_index = incidences[first].unknowns.is_empty()
        && incidences[first].weak_unknowns.is_empty()
        && !incidences[first].states.is_empty();
    let mut d =
        if higher_index {
            let states: Vec<String> = incidences[first]
                .states
                .iter()
                .map(|&v| format!("`{}`", dae.var(v).name))
                .collect();
            Diagnostic::error(format!(
            "the DAE is of higher index: this equation constrains the states {} and has no unknown \
             to solve for, and index reduction found no differentiation that gives it one",
            states.join(", ")
        ))
        .at(dae.equations[first].span, "a constraint between states")
        } else {
            Diagnostic::error(format!(
            "the system is structurally singular: {} equation(s) too many among these {} equations",
            unmatched.len(),
            over.len()
        ))
        .at(dae.equations[first].span, "no unknown is left for this equation")
        };
    for &e in over.iter().skip(1).take(SHOWN) {
        d = d.with_secondary(dae.equations[e].span, "in the over-determined part");
    }
    if over.len() > SHOWN + 1 {
        d = d.with_note(format!("and {} more equations", over.len() - SHOWN - 1));
    }
    if let Some(hint) = weak_hint {
        d = d.with_note(hint.clone());
    }
    d
}

fn under_diagnostic(
    dae: &Dae,
    index: &UnknownIndex,
    under: &[usize],
    m: &Matching,
    weak_hint: &Option<String>,
) -> Diagnostic {
    let unmatched: Vec<usize> = under
        .iter()
        .copied()
        .filter(|&u| m.of_unknown[u] == NONE)
        .collect();
    let names: Vec<String> = unmatched
        .iter()
        .take(SHOWN)
        .map(|&u| format!("`{}`", index.list[u].name(dae)))
        .collect();
    let first = index.list[unmatched[0]].var();
    let mut d = Diagnostic::error(format!(
        "the system is structurally singular: no equation determines {}{}",
        names.join(", "),
        if unmatched.len() > SHOWN {
            format!(" and {} more", unmatched.len() - SHOWN)
        } else {
            String::new()
        }
    ))
    .at(dae.var(first).span, "declared here");
    for &u in unmatched.iter().skip(1).take(SHOWN) {
        d = d.with_secondary(dae.var(index.list[u].var()).span, "also undetermined");
    }
    if let Some(hint) = weak_hint {
        d = d.with_note(hint.clone());
    }
    d
}
