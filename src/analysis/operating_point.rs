//! Operating points for cycle analysis (SPEC §7, nonlinear models): the consistent initial
//! state (the simulator's initialisation) or the raw start values, states set by hand, a
//! steady state found by Newton on `f(x) = 0`, or samples of a reference trajectory read from
//! CSV. Each gives J's values through the causal form.

use crate::causal::{Causal, EvalFailure, Point};
use crate::dae::{Dae, ScalarType};
use crate::jacobian::OdeJacobian;
use crate::numfmt::format_number;
use crate::simulate::init::{InitFailure, has_initial_system, initialise};
use crate::simulate::model::{CompiledModel, Layout};

use super::Values;

/// A model ready to be evaluated: its flat DAE, causal form and Jacobian.
#[derive(Clone, Copy)]
pub struct Model<'m> {
    pub dae: &'m Dae,
    pub causal: &'m Causal,
    pub jacobian: &'m OdeJacobian,
}

/// Why an operating point could not be had.
#[derive(Clone, Debug, PartialEq)]
pub enum PointError {
    /// Evaluating the causal form failed (a step's index or a parameter).
    Eval(EvalFailure),
    /// J has a NaN or infinite entry at the point.
    NotFinite { row: usize, col: usize },
    /// Newton for the steady state met a singular J.
    Singular { iteration: usize },
    /// Newton for the steady state did not reach `f(x) = 0`.
    NoSteadyState { iterations: usize, residual: f64 },
    /// The trajectory file is unusable.
    Trajectory(String),
    /// The initial system could not be solved.
    Init(InitFailure),
}

/// Each discrete-time variable's name and value: which mode of a hybrid model a point is in.
pub type Mode = Vec<(String, String)>;

/// The point that states set by hand, and a steady state's Newton, start from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Base {
    /// The consistent initial state: the initial equations solved, as a simulation starts.
    #[default]
    Initial,
    /// The `start` values as written, initial equations ignored.
    Start,
}

impl Base {
    /// The name `--at` and the JSON output use.
    pub fn name(self) -> &'static str {
        match self {
            Base::Initial => "initial",
            Base::Start => "start",
        }
    }

    /// What the point is, for people.
    pub fn description(self) -> &'static str {
        match self {
            Base::Initial => "the initial state",
            Base::Start => "the start values",
        }
    }
}

/// An operating point as `--at` gives it: a base point and states set on it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PointSpec {
    pub base: Base,
    pub states: Vec<(String, f64)>,
}

impl Model<'_> {
    pub fn state_name(&self, i: usize) -> &str {
        &self.dae.var(self.causal.states[i]).name
    }

    /// The states' names, in J's row order.
    pub fn state_names(&self) -> Vec<String> {
        (0..self.causal.states.len())
            .map(|i| self.state_name(i).to_string())
            .collect()
    }

    /// Evaluates every unknown at `point` (states, parameters and time set) and returns J's
    /// values there.
    pub fn values_at(&self, point: &mut Point) -> Result<Values, PointError> {
        self.causal
            .evaluate(&self.dae.pool, point)
            .map_err(PointError::Eval)?;
        let values = self.jacobian.values(self.dae, self.causal, point);
        if let Some(&(row, col, _)) = values.iter().find(|(_, _, v)| !v.is_finite()) {
            return Err(PointError::NotFinite { row, col });
        }
        Ok(values)
    }

    /// The point `base` names, every unknown evaluated there: the start values, or the state
    /// the simulator's initialisation reaches from them (at the start values' time).
    pub fn base_point(&self, base: Base, start: Point) -> Result<Point, PointError> {
        match base {
            Base::Start => Ok(start),
            Base::Initial => self.initial_state(start),
        }
    }

    fn initial_state(&self, mut point: Point) -> Result<Point, PointError> {
        if !has_initial_system(self.dae) {
            // The states keep their start values: no model to compile.
            return Ok(point);
        }
        let whole = Layout::whole(self.causal);
        let mut model = CompiledModel::new(self.dae, self.causal, self.jacobian, &point, &whole);
        let (x, _) =
            initialise(self.dae, self.causal, &mut model, point.time).map_err(PointError::Init)?;
        for (&v, value) in self.causal.states.iter().zip(x) {
            point.vars[v.0 as usize] = value;
        }
        Ok(point)
    }

    /// Sets states by name. Errors name the offending item (bad usage, not a model error).
    pub fn set_states(
        &self,
        point: &mut Point,
        assignments: &[(String, f64)],
    ) -> Result<(), String> {
        for (name, value) in assignments {
            let i = self
                .state_index(name)
                .ok_or_else(|| format!("`{name}` is not a state of the model"))?;
            point.vars[self.causal.states[i].0 as usize] = *value;
        }
        Ok(())
    }

    /// The mode the continuous part is analysed in: each discrete-time variable's value at
    /// `point` (evaluated), as Modelica writes it.
    pub fn mode(&self, point: &Point) -> Mode {
        self.dae
            .discrete_variables()
            .map(|v| {
                let var = self.dae.var(v);
                let x = point.vars[v.0 as usize];
                let value = match var.ty {
                    ScalarType::Boolean => (if x != 0.0 { "true" } else { "false" }).to_string(),
                    ScalarType::Integer => format!("{}", x.round() as i64),
                    ScalarType::Real | ScalarType::String => format_number(x),
                };
                (var.name.clone(), value)
            })
            .collect()
    }

    fn state_index(&self, name: &str) -> Option<usize> {
        (0..self.causal.states.len()).find(|&i| self.state_name(i) == name)
    }

    fn state_values(&self, point: &Point) -> Vec<f64> {
        self.causal
            .states
            .iter()
            .map(|v| point.vars[v.0 as usize])
            .collect()
    }

    /// Newton on `f(x) = der(x) = 0` from `point`, with J's values as the Newton matrix.
    pub fn steady_state(&self, mut point: Point) -> Result<Point, PointError> {
        let n = self.causal.states.len();
        for iteration in 0..STEADY_MAX_ITERATIONS {
            let values = self.values_at(&mut point)?;
            let x = self.state_values(&point);
            let f: Vec<f64> = self
                .causal
                .states
                .iter()
                .map(|v| point.ders[v.0 as usize])
                .collect();
            let scale = 1.0 + x.iter().map(|v| v.abs()).fold(0.0, f64::max);
            let residual = f.iter().map(|v| v.abs()).fold(0.0, f64::max);
            if residual <= STEADY_TOLERANCE * scale {
                return Ok(point);
            }
            if iteration + 1 == STEADY_MAX_ITERATIONS {
                return Err(PointError::NoSteadyState {
                    iterations: STEADY_MAX_ITERATIONS,
                    residual,
                });
            }
            let mut j = nalgebra::DMatrix::<f64>::zeros(n, n);
            for (r, c, v) in values {
                j[(r, c)] = v;
            }
            let step = j
                .lu()
                .solve(&nalgebra::DVector::from_vec(f))
                .filter(|s| s.iter().all(|v| v.is_finite()))
                .ok_or(PointError::Singular { iteration })?;
            for (i, v) in self.causal.states.iter().enumerate() {
                point.vars[v.0 as usize] = x[i] - step[i];
            }
        }
        unreachable!("the loop returns on its last iteration")
    }

    /// `samples` rows spread evenly over a CSV with a `time` column and a column per state
    /// (named as the state, optionally quoted); other columns are ignored. Each row gives a
    /// point: `start` with the row's time and state values.
    pub fn trajectory(
        &self,
        start: &Point,
        csv: &str,
        samples: usize,
    ) -> Result<Vec<Point>, PointError> {
        let bad = |m: String| PointError::Trajectory(m);
        let mut lines = csv
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let (_, header) = lines
            .next()
            .ok_or_else(|| bad("the file is empty".into()))?;
        let columns: Vec<&str> = header
            .split(',')
            .map(|c| c.trim().trim_matches('"'))
            .collect();
        let column = |name: &str| columns.iter().position(|&c| c == name);
        let time = column("time").ok_or_else(|| bad("no `time` column".into()))?;
        let mut state_columns = Vec::new();
        let mut missing = Vec::new();
        for i in 0..self.causal.states.len() {
            match column(self.state_name(i)) {
                Some(c) => state_columns.push((i, c)),
                None => missing.push(format!("`{}`", self.state_name(i))),
            }
        }
        if !missing.is_empty() {
            return Err(bad(format!(
                "no column for state(s) {}",
                missing.join(", ")
            )));
        }
        let rows: Vec<(usize, &str)> = lines.collect();
        if rows.is_empty() {
            return Err(bad("the file has no data rows".into()));
        }
        sample_indices(rows.len(), samples)
            .into_iter()
            .map(|k| {
                let (line, text) = rows[k];
                let cells: Vec<&str> = text.split(',').map(str::trim).collect();
                let number = |c: usize| {
                    cells
                        .get(c)
                        .and_then(|s| s.parse::<f64>().ok())
                        .ok_or_else(|| {
                            bad(format!(
                                "line {}: column {} is not a number",
                                line + 1,
                                c + 1
                            ))
                        })
                };
                let mut point = start.clone();
                point.time = number(time)?;
                for &(i, c) in &state_columns {
                    point.vars[self.causal.states[i].0 as usize] = number(c)?;
                }
                Ok(point)
            })
            .collect()
    }
}

const STEADY_MAX_ITERATIONS: usize = 50;
const STEADY_TOLERANCE: f64 = 1e-10;

/// `k` indices spread evenly over `0..rows`, first and last included, without repeats.
pub fn sample_indices(rows: usize, k: usize) -> Vec<usize> {
    let k = k.clamp(1, rows);
    if k == 1 {
        return vec![0];
    }
    let mut picked: Vec<usize> = (0..k)
        .map(|s| ((s as f64) * (rows - 1) as f64 / (k - 1) as f64).round() as usize)
        .collect();
    picked.dedup();
    picked
}

/// Parses `--at`: a comma-separated list of `NAME=VALUE` items and at most one base point,
/// `initial` (the default) or `start`, e.g. `start,x=-1`.
pub fn parse_point_spec(text: &str) -> Result<PointSpec, String> {
    let mut spec = PointSpec::default();
    let mut base_given = false;
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let base = match item {
            "initial" => Some(Base::Initial),
            "start" => Some(Base::Start),
            _ => None,
        };
        if let Some(base) = base {
            if base_given {
                return Err("more than one base point (`initial`, `start`)".to_string());
            }
            (spec.base, base_given) = (base, true);
            continue;
        }
        let (name, value) = item
            .split_once('=')
            .ok_or_else(|| format!("expected `initial`, `start` or NAME=VALUE, found `{item}`"))?;
        let value = value
            .trim()
            .parse::<f64>()
            .map_err(|_| format!("`{}` is not a number", value.trim()))?;
        spec.states.push((name.trim().to_string(), value));
    }
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_spread_evenly_with_both_ends() {
        assert_eq!(sample_indices(11, 3), vec![0, 5, 10]);
        assert_eq!(sample_indices(2, 5), vec![0, 1]);
        assert_eq!(sample_indices(7, 1), vec![0]);
    }

    #[test]
    fn point_specs_parse_and_reject_garbage() {
        let states = |spec: PointSpec| spec.states;
        assert_eq!(
            parse_point_spec("x=1, y = -2.5").unwrap(),
            PointSpec {
                base: Base::Initial,
                states: vec![("x".to_string(), 1.0), ("y".to_string(), -2.5)]
            }
        );
        assert_eq!(parse_point_spec("start").unwrap().base, Base::Start);
        let spec = parse_point_spec("start,x=-1e-3").unwrap();
        assert_eq!(spec.base, Base::Start);
        assert_eq!(states(spec), vec![("x".to_string(), -1e-3)]);
        assert_eq!(parse_point_spec("initial").unwrap(), PointSpec::default());
        assert!(parse_point_spec("x").is_err());
        assert!(parse_point_spec("x=abc").is_err());
        assert!(parse_point_spec("start,initial").is_err());
    }
}
