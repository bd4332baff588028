//! Dynamic state selection for `simulate` (SPEC §4): where index reduction's choice of states
//! stops suiting the model (its dummy derivatives' block has become poor against the other
//! candidates), the run stops at that recorded point, index reduction chooses again there,
//! and the run goes on from the point with the new states, until the stop time. Only a
//! choice no better than the one it replaces stops the run with an error.
//!
//! The model is compiled again for each choice: a switch costs what starting a run costs,
//! which is little beside the run itself where the states change a few times per swing.

use crate::causal::{Causal, causal_form, initial_point};
use crate::dae::Dae;
use crate::diagnostics::Diagnostic;
use crate::jacobian::ode_jacobian_with;
use crate::simulate::assertions::Checked;
use crate::simulate::run::{self, Failure, Model, Options, StateSwitch, Trajectory};
use crate::structure::Unknown;
use crate::structure::index_reduction::Rechoice;

use super::partition::PartitionArg;
use super::simulate::{named_output, one_system_order, run_failure, state_choice_failure};

/// How the run goes on: its options, whether by BDF (else by `options.method`), and the
/// names of the columns recorded.
pub struct Continuation<'a> {
    pub options: Options,
    pub bdf: bool,
    pub names: &'a [String],
    pub sources: &'a crate::source::SourceMap,
}

/// A time the states were chosen again, and the states chosen.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Switch {
    pub time: f64,
    pub states: Vec<String>,
}

/// Goes on from `stopped`, a run of `first` (reduced with `rechoice`'s choice at its start)
/// that stopped where its states no longer suit: the whole trajectory and the switches made,
/// or the error that ended the run.
pub fn go_on(
    first: &Dae,
    rechoice: &Rechoice,
    stopped: StateSwitch,
    run: &Continuation,
) -> Result<(Trajectory, Vec<Switch>), Diagnostic> {
    let StateSwitch {
        mut violation,
        mut point,
        before: mut joined,
    } = stopped;
    let mut switches = Vec::new();
    let mut previous: Option<Dae> = None;
    loop {
        let old = previous.as_ref().unwrap_or(first);
        let (mut dae, _) = rechoice.at(old, &point).map_err(first_of)?;
        let states = state_names(&dae);
        if states == state_names(old) {
            let Checked::StateChoice { conditioning } = violation.checked else {
                unreachable!("a switch is made on a choice of states");
            };
            return Err(state_choice_failure(old, &violation, conditioning).with_note(
                "chosen again there, index reduction keeps these states: no other choice suits the constraint better",
            ));
        }
        switches.push(Switch {
            time: violation.time,
            states: states.clone(),
        });
        let structure = crate::structure::analyse(&dae).map_err(first_of)?;
        let causal = causal_form(&mut dae, &structure);
        let (causal, weak) = one_system_order(causal, &dae, PartitionArg::None, run.sources);
        let jac = ode_jacobian_with(&mut dae, &causal, weak);
        let outputs = columns(&dae, &causal, run.names)?;
        let mut start =
            initial_point(&dae).map_err(|f| super::jacobian::failure(&dae, &causal.steps, &f))?;
        start.time = violation.time;
        let model = Model {
            dae: &dae,
            structure: &structure,
            causal: &causal,
            jac: &jac,
        };
        let result = if run.bdf {
            // Checked at every step, the BDF stops between output times.
            let begin = (&start, violation.time);
            run::simulate_bdf_from(model, begin, &run.options, &outputs)
        } else {
            // Checked at the output times, a fixed step stops on one: the grid goes on there.
            let options = Options {
                start: violation.time,
                steps: run.options.steps - joined.times.len() as u64,
                ..run.options
            };
            run::simulate(model, &start, &options, &outputs, |_| {})
        };
        match result {
            Ok(rest) => {
                joined.append(rest);
                return Ok((joined, switches));
            }
            Err(Failure::StateSwitch(again)) => {
                let StateSwitch {
                    violation: v,
                    point: p,
                    before,
                } = *again;
                joined.append(before);
                (violation, point) = (v, p);
                previous = Some(dae);
            }
            Err(f) => return Err(run_failure(&dae, &causal, &f)),
        }
    }
}

/// The names of `dae`'s states, in variable order.
fn state_names(dae: &Dae) -> Vec<String> {
    (dae.variables.iter())
        .filter(|v| v.kind == crate::dae::VarKind::State)
        .map(|v| v.name.clone())
        .collect()
}

/// The unknowns recorded as the columns `names` of the first run.
fn columns(dae: &Dae, causal: &Causal, names: &[String]) -> Result<Vec<Unknown>, Diagnostic> {
    names
        .iter()
        .map(|name| {
            named_output(dae, causal, name)
                .map(|(_, u)| u)
                .map_err(Diagnostic::error)
        })
        .collect()
}

fn first_of(diagnostics: Vec<Diagnostic>) -> Diagnostic {
    (diagnostics.into_iter().next())
        .unwrap_or_else(|| Diagnostic::error("index reduction failed choosing the states again"))
}
