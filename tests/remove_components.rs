//! Removing components from the flat model (`mocca reduce --metric activity --remove-below`):
//! the RC ladder without a resistor equals the ladder written by hand without it, whether the
//! resistor ends a connection set or sits between two, and the quarter car made of components
//! loses its least active one, the tyre's damper, with the error `--verify`'s measure reports.

#[path = "cli_support/mod.rs"]
mod cli_support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use cli_support::{
    csv_columns, deviation_percent, mocca_json, model_file, simulate_csv, temp_path,
};
use mocca::frontend::flatten_sources;
use mocca::reduce::removal::remove_components;
use mocca::source::SourceMap;

const LADDER_HEAD: &str = "model Ladder
  Mocca.Electrical.ConstantVoltage E(V = 1);
  Mocca.Electrical.Resistor R1(R = 0.1);
  Mocca.Electrical.Capacitor C1(C = 1, v(fixed = true));
  Mocca.Electrical.Capacitor C2(C = 1, v(fixed = true));
  Mocca.Electrical.Ground ground;
";

/// The flat RC ladder of `examples/rc_ladder.mo` without `components`, written as Modelica.
fn ladder_without(components: &[&str]) -> PathBuf {
    let mut sources = SourceMap::new();
    let mut warnings = Vec::new();
    let paths = [PathBuf::from("examples/rc_ladder.mo")];
    let user = mocca::load::load_paths_warning(&mut sources, &paths, &mut warnings).expect("loads");
    let flat = flatten_sources(sources, &user, None, &[])
        .map_err(|_| "flattens")
        .expect("flattens");
    let removed = remove_components(&flat.dae, components).expect("removable");
    let path = temp_path(&format!("ladder_without_{}.mo", components.join("_")));
    std::fs::write(&path, removed.reduced.dae.modelica().to_string()).expect("written");
    path
}

/// Every variable of a BDF run of `model` from 0 to `stop` at steps of `step`, by name.
fn trajectories(model: &str, stop: &str, step: &str) -> BTreeMap<String, Vec<f64>> {
    run(model, stop, step, Some("all"))
}

/// A BDF run's CSV columns: `vars`, or the states.
fn run(model: &str, stop: &str, step: &str, vars: Option<&str>) -> BTreeMap<String, Vec<f64>> {
    // Tests run in parallel: each run its own CSV.
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let name = format!("remove_run_{}", RUNS.fetch_add(1, Ordering::Relaxed));
    let mut args = vec![
        "simulate", model, "--method", "bdf", "--stop", stop, "--step", step, "--tol", "1e-8",
    ];
    args.extend(vars.map(|v| ["--vars", v]).into_iter().flatten());
    let (csv, err, code) = simulate_csv(&name, &args);
    assert_eq!(code, 0, "{model}: {err}");
    csv_columns(&csv)
}

/// The ladder's trajectories over 2 s.
fn ladder_run(model: &std::path::Path) -> BTreeMap<String, Vec<f64>> {
    trajectories(model.to_str().expect("path"), "2", "0.1")
}

fn assert_same_trajectories(
    removed: &BTreeMap<String, Vec<f64>>,
    by_hand: &BTreeMap<String, Vec<f64>>,
) {
    for name in ["C1.v", "C2.v", "R1.i", "E.i"] {
        let (a, b) = (&removed[name], &by_hand[name]);
        for (x, y) in a.iter().zip(b) {
            assert!(
                (x - y).abs() <= 1e-9 * (1.0 + y.abs()),
                "{name}: {x} vs {y}"
            );
        }
    }
}

#[test]
fn a_resistor_ending_a_connection_set_is_removed() {
    let reduced = ladder_without(&["R3"]);
    let text = std::fs::read_to_string(&reduced).expect("read");
    assert!(!text.contains("R3"), "{text}");
    let by_hand = model_file(
        "ladder_no_r3",
        &format!(
            "{LADDER_HEAD}  Mocca.Electrical.Resistor R2(R = 1);
equation
  connect(E.p, R1.p);
  connect(R1.n, C1.p);
  connect(C1.p, R2.p);
  connect(R2.n, C2.p);
  connect(E.n, ground.p);
  connect(C1.n, ground.p);
  connect(C2.n, ground.p);
end Ladder;"
        ),
    );
    assert_same_trajectories(&ladder_run(&reduced), &ladder_run(&by_hand));
}

/// R2 joins node B (R1.n, C1.p, R2.p) to node C (R2.n, C2.p, R3.p): both sets lose a member and
/// C2 is left to discharge through R3 alone.
#[test]
fn a_resistor_between_two_connection_sets_is_removed() {
    let reduced = ladder_without(&["R2"]);
    let by_hand = model_file(
        "ladder_no_r2",
        &format!(
            "{LADDER_HEAD}  Mocca.Electrical.Resistor R3(R = 1);
equation
  connect(E.p, R1.p);
  connect(R1.n, C1.p);
  connect(C2.p, R3.p);
  connect(E.n, ground.p);
  connect(C1.n, ground.p);
  connect(C2.n, ground.p);
  connect(R3.n, ground.p);
end Ladder;"
        ),
    );
    assert_same_trajectories(&ladder_run(&reduced), &ladder_run(&by_hand));
}

#[test]
fn a_component_read_outside_it_is_not_removed() {
    let mut sources = SourceMap::new();
    let mut warnings = Vec::new();
    let path = model_file(
        "read_outside",
        "model ReadOutside
           Mocca.Electrical.ConstantVoltage E(V = 1);
           Mocca.Electrical.Resistor R(R = 2);
           Mocca.Electrical.Ground ground;
           Real power = R.v * R.i;
         equation
           connect(E.p, R.p);
           connect(R.n, E.n);
           connect(E.n, ground.p);
         end ReadOutside;",
    );
    let user =
        mocca::load::load_paths_warning(&mut sources, &[path], &mut warnings).expect("loads");
    let flat = flatten_sources(sources, &user, None, &[])
        .map_err(|_| "flattens")
        .expect("flattens");
    let error = remove_components(&flat.dae, &["R"]).err().expect("refused");
    assert!(error.contains("`R` is read outside it"), "{error}");
}

/// The flat model of `text` without `components`, or why not.
fn flat_without(name: &str, text: &str, components: &[&str]) -> Result<String, String> {
    let mut sources = SourceMap::new();
    let mut warnings = Vec::new();
    let path = model_file(name, text);
    let user =
        mocca::load::load_paths_warning(&mut sources, &[path], &mut warnings).expect("loads");
    let flat = flatten_sources(sources, &user, None, &[])
        .map_err(|_| "flattens")
        .expect("flattens");
    remove_components(&flat.dae, components).map(|r| r.reduced.dae.modelica().to_string())
}

const RECHARGED: &str = "model Recharged
  Mocca.Electrical.Resistor R1(R = 1);
  Mocca.Electrical.Resistor Rbig(R = 1e9);
  Mocca.Electrical.Capacitor C1(C = 1, v(start = 1, fixed = true));
  Mocca.Electrical.Ground ground;
  Integer n(start = 0);
equation
  connect(C1.p, R1.p);
  connect(C1.p, Rbig.p);
  connect(C1.n, ground.p);
  connect(R1.n, ground.p);
  connect(Rbig.n, ground.p);
  when time > 0.5 then
    reinit(C1.v, 1);
    n = pre(n) + 1;
  end when;
end Recharged;";

/// The model without a component keeps its `when` clauses (they were dropped, so that the
/// capacitor recharged at 0.5 s no longer did): the reduced model's run is the one written
/// by hand without `Rbig`. A component a `when` clause reads stays.
#[test]
fn a_when_clause_survives_the_removal_of_a_component() {
    let reduced = flat_without("recharged", RECHARGED, &["Rbig"]).expect("removable");
    assert!(reduced.contains("reinit('C1.v', 1.0);"), "{reduced}");
    let reduced = model_file("recharged_without_rbig", &reduced);
    let by_hand: String = RECHARGED
        .lines()
        .filter(|l| !l.contains("Rbig"))
        .map(|l| format!("{l}\n"))
        .collect();
    let by_hand = model_file("recharged_by_hand", &by_hand);
    let vars = Some("C1.v,n");
    let path = |p: &PathBuf| p.to_str().expect("utf-8").to_string();
    let (a, b) = (
        run(&path(&reduced), "1", "0.1", vars),
        run(&path(&by_hand), "1", "0.1", vars),
    );
    for name in ["C1.v", "n"] {
        for (x, y) in a[name].iter().zip(&b[name]) {
            assert!(
                (x - y).abs() <= 1e-9 * (1.0 + y.abs()),
                "{name}: {x} vs {y}"
            );
        }
    }
    // Recharged to 1 at 0.5 s: e^(−0.5) before it, and again at 1 s.
    let before = a["C1.v"][5];
    let after = *a["C1.v"].last().expect("rows");
    assert!(
        (before - (-0.5f64).exp()).abs() < 1e-6 && (after - before).abs() < 1e-6,
        "{before}, {after}"
    );
    assert_eq!(a["n"].last(), Some(&1.0));
    let error = flat_without("recharged_c1", RECHARGED, &["C1"]).expect_err("refused");
    assert!(error.contains("`C1` is read outside it"), "{error}");
}

/// The least active component of the quarter car is the tyre's damper (0.01 % of the
/// activity); without it the model written simulates to the error reported.
#[test]
fn remove_below_drops_the_least_active_component_and_verifies() {
    let out = temp_path("quarter_car_removed.mo");
    let report = mocca_json(&[
        "reduce",
        "examples/quarter_car_components.mo",
        "--metric",
        "activity",
        "--stop",
        "3",
        "--remove-below",
        "0.5",
        "--out",
        out.to_str().expect("path"),
        "--format",
        "json",
    ]);
    let components = report["components"].as_array().expect("components");
    let removed: Vec<&str> = components
        .iter()
        .filter(|c| c["removed"] == true)
        .map(|c| c["component"].as_str().expect("name"))
        .collect();
    assert_eq!(removed, ["tyreDamper"], "{report}");
    let least = components.last().expect("one");
    let actual = least["actual"].as_f64().expect("actual");
    let text = std::fs::read_to_string(&out).expect("written");
    assert!(!text.contains("tyreDamper."), "{text}");
    assert!(
        text.contains("mocca reduce: removed `tyreDamper`"),
        "{text}"
    );
    // The error measure: the largest deviation of a state of the full model in percent of its
    // largest magnitude, over the 50 reference samples of 0–3 s (its output grid).
    let step = (3.0f64 / 49.0).to_string();
    let states = run("examples/quarter_car_components.mo", "3", &step, None);
    let (csv_full, csv_reduced) = (
        states,
        trajectories(out.to_str().expect("path"), "3", &step),
    );
    let percent = deviation_percent(&csv_full, &csv_reduced);
    assert!(
        (percent - actual).abs() <= 0.05 * actual,
        "simulated {percent} vs reported {actual}"
    );
    assert!(actual <= 5.0, "{actual}");
}
