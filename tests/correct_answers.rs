//! Answers that were wrong or refused: breakpoints of time-dependent inputs in every
//! integrator, `--max-step`, a run of initialisation only, negative option values.

mod cli_support;
mod simulate_support;

use std::process::Command;

use cli_support::{csv_columns, mocca, mocca_json, model_file, simulate_csv, temp_path};
use mocca::causal::initial_point;
use mocca::simulate::fixed_step::Method;
use mocca::simulate::run::{Exchange, Options, Partition, Trajectory, simulate, simulate_bdf};
use mocca::structure::Unknown;
use simulate_support::{Loaded, example, inline};

fn options(method: Method, stop: f64, steps: u64) -> Options {
    Options {
        method,
        start: 0.0,
        stop,
        steps,
        tol: 1e-8,
        partition: Partition::None,
        exchange: Exchange::GaussSeidel,
        max_step: f64::INFINITY,
    }
}

fn states(m: &Loaded) -> Vec<Unknown> {
    m.causal
        .states
        .iter()
        .map(|&v| Unknown::Algebraic(v))
        .collect()
}

fn fixed(m: &Loaded, options: &Options) -> Trajectory {
    let start = initial_point(&m.dae).expect("parameters");
    simulate(m.model(), &start, options, &states(m), |_| {}).expect("simulates")
}

fn bdf(m: &Loaded, options: &Options) -> Trajectory {
    let start = initial_point(&m.dae).expect("parameters");
    simulate_bdf(m.model(), &start, options, &states(m)).expect("simulates")
}

fn last(t: &Trajectory) -> Vec<f64> {
    t.columns
        .iter()
        .map(|c| *c.last().expect("a row"))
        .collect()
}

/// Before breakpoints, BDF took three steps over the quarter car's curb (between t = 1 and
/// 1.5), never saw it, and ended with the road at 0 instead of 0.2.
#[test]
fn bdf_sees_the_quarter_cars_curb() {
    let m = example("quarter_car.mo", &[]);
    let road = m
        .causal
        .states
        .iter()
        .position(|&v| m.dae.var(v).name == "x_r")
        .expect("x_r is a state");
    let fine = last(&fixed(&m, &options(Method::Trapezoidal, 3.0, 30_000)));
    for (steps, tol) in [(3000, 1e-8), (3, 1e-8), (1, 1e-6)] {
        let mut o = options(Method::ImplicitEuler, 3.0, steps);
        o.tol = tol;
        let end = last(&bdf(&m, &o));
        assert!(
            (end[road] - 0.2).abs() < 1e-5_f64.max(tol * 100.0),
            "x_r(3) = {} (outputs {steps}, tol {tol})",
            end[road]
        );
        for (i, (a, b)) in end.iter().zip(&fine).enumerate() {
            assert!(
                (a - b).abs() < 1e-3,
                "state {i} at t = 3: BDF {a}, trapezoidal {b} (outputs {steps}, tol {tol})"
            );
        }
    }
}

/// `der(x)` switches from 1 to 0 at t = 0.3, between two points of a 0.25 grid: each
/// integrator ends a step there, so x(1) = 0.3 exactly (the integrand is constant on each
/// side). Without the breakpoint, explicit Euler gave 0.5.
#[test]
fn every_integrator_ends_a_step_at_a_breakpoint() {
    let model = |relation: &str| {
        inline(&format!(
            "model Switch\n  parameter Real t0 = 0.1;\n  parameter Real T = 0.2;\n  \
             Real x(start = 0, fixed = true);\nequation\n  der(x) = {relation};\nend Switch;\n"
        ))
    };
    for relation in [
        "if time < 0.3 then 1 else 0",
        "if noEvent(time < t0 + T) then 1 else 0",
        "if t0 + T <= time then 0 else 1",
        "if time >= t0 + T then 0 else 1",
    ] {
        let m = model(relation);
        for method in [
            Method::ExplicitEuler,
            Method::Heun,
            Method::ImplicitEuler,
            Method::Trapezoidal,
        ] {
            let x = last(&fixed(&m, &options(method, 1.0, 4)))[0];
            assert!(
                (x - 0.3).abs() < 1e-12,
                "{relation}, {method:?}: x(1) = {x}"
            );
        }
        let x = last(&bdf(&m, &options(Method::ImplicitEuler, 1.0, 4)))[0];
        assert!((x - 0.3).abs() < 1e-9, "{relation}, BDF: x(1) = {x}");
    }
}

/// A step on either side of a breakpoint sees the branch of its own side, also at the end
/// it shares with the breakpoint; a recorded point at the breakpoint is after the switch.
#[test]
fn the_branch_switches_exactly_at_the_breakpoint() {
    let m = inline(
        "model Jump\n  Real x(start = 0, fixed = true);\n  Real y;\nequation\n  \
         y = if time <= 0.5 then 1 else 2;\n  der(x) = y;\nend Jump;\n",
    );
    let y = m.dae.lookup("y").expect("y");
    let start = initial_point(&m.dae).expect("parameters");
    let o = options(Method::ImplicitEuler, 1.0, 2);
    let outputs = [Unknown::Algebraic(y), states(&m)[0]];
    let r = simulate(m.model(), &start, &o, &outputs, |_| {}).expect("simulates");
    assert_eq!(r.times, [0.0, 0.5, 1.0]);
    assert_eq!(r.columns[0], [1.0, 2.0, 2.0], "y before, at and after 0.5");
    // Implicit Euler is exact on a piecewise-constant right-hand side.
    assert_eq!(r.columns[1], [0.0, 0.5, 1.5], "x");
}

/// `--max-step` bounds every BDF step: a linear decay would otherwise take a few long steps.
#[test]
fn bdf_keeps_below_the_largest_step() {
    let m = inline(
        "model Decay\n  Real x(start = 1, fixed = true);\nequation\n  der(x) = -x;\nend Decay;\n",
    );
    let free = bdf(&m, &options(Method::ImplicitEuler, 10.0, 1));
    let mut o = options(Method::ImplicitEuler, 10.0, 1);
    o.max_step = 0.01;
    let bounded = bdf(&m, &o);
    assert!(
        free.stats.steps < 500,
        "{} steps unbounded",
        free.stats.steps
    );
    assert!(
        bounded.stats.steps >= 1000,
        "{} steps with h ≤ 0.01 over 10 s",
        bounded.stats.steps
    );
    let x = last(&bounded)[0];
    assert!((x - (-10.0_f64).exp()).abs() < 1e-6, "x(10) = {x}");
}

/// The quarter car under BDF through the binary: the road ends at 0.2 there too.
#[test]
fn the_quarter_car_under_bdf_through_the_binary() {
    let (csv, err, code) = simulate_csv(
        "quarter-bdf",
        &[
            "simulate",
            "examples/quarter_car.mo",
            "--method",
            "bdf",
            "--stop",
            "3",
            "--vars",
            "x_r",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let end: f64 = csv
        .lines()
        .last()
        .and_then(|l| l.split(',').nth(1))
        .and_then(|x| x.parse().ok())
        .expect("a value");
    assert!((end - 0.2).abs() < 1e-6, "x_r(3) = {end}");
}

/// `--stop` equal to `--start` initialises and writes that one row, for every method; a
/// negative `--start` is a value, not an option.
#[test]
fn initialisation_only_and_negative_times() {
    for method in ["implicit-euler", "bdf"] {
        let args = [
            "simulate",
            "examples/quarter_car.mo",
            "--method",
            method,
            "--start",
            "-1",
            "--stop",
            "-1",
        ];
        let (csv, err, code) = simulate_csv(&format!("init-{method}"), &args);
        assert_eq!(code, 0, "{method}: {err}");
        let rows: Vec<&str> = csv.lines().collect();
        assert_eq!(rows.len(), 2, "{method}: header and one row: {csv}");
        assert!(rows[1].starts_with("-1,"), "{method}: {}", rows[1]);
    }
    let (text, _, code) = mocca(&["simulate", "examples/quarter_car.mo", "--stop", "0"]);
    assert_eq!(code, 0);
    assert!(
        text.starts_with("implicit-euler at 0: initialisation only"),
        "{text}"
    );
    let (_, err, code) = mocca(&[
        "simulate",
        "examples/quarter_car.mo",
        "--start",
        "0",
        "--stop",
        "-1",
    ]);
    assert_eq!(code, 2, "stop before start is bad usage: {err}");
}

fn parse_csv(text: &str) -> (Vec<String>, Vec<Vec<f64>>) {
    let mut lines = text.lines();
    let header = lines.next().expect("a header");
    let mut names = Vec::new();
    let (mut field, mut quoted) = (String::new(), false);
    for c in header.chars() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => names.push(std::mem::take(&mut field)),
            c => field.push(c),
        }
    }
    names.push(field);
    let rows = lines
        .map(|l| l.split(',').map(|x| x.parse().expect("a number")).collect())
        .collect();
    (names, rows)
}

const ARRAY_MODEL: &str = "tests/data/recordable.mo";

/// Every declared variable can be recorded: states, an array element with two subscripts,
/// alias-eliminated variables (recomputed from their alias), a parameter and an input
/// (constant columns) and a derivative. Before, `x[1,2]` split at its comma and aliases,
/// parameters and inputs were refused.
#[test]
fn every_variable_is_recordable() {
    let vars = "x[1,2], y,z,k,u,der(x[1,2]),'x[2,1]'";
    let args = ["simulate", ARRAY_MODEL, "--vars", vars, "--stop", "0.01"];
    let (csv, err, code) = simulate_csv("recordable", &args);
    assert_eq!(code, 0, "{err}");
    let (names, rows) = parse_csv(&csv);
    assert_eq!(
        names,
        [
            "time",
            "x[1,2]",
            "y",
            "z",
            "k",
            "u",
            "der(x[1,2])",
            "x[2,1]"
        ]
    );
    assert_eq!(rows.len(), 11);
    for row in &rows {
        let (x12, y, z, k, u, dx12, x21) = (row[1], row[2], row[3], row[4], row[5], row[6], row[7]);
        assert_eq!(y, x12, "y = x[1,2]");
        assert_eq!(z, -x12, "z = -y");
        assert_eq!((k, u), (2.0, 0.0), "parameter and input");
        assert!((dx12 + k * x12).abs() < 1e-12, "der(x[1,2]) = -k x[1,2]");
        assert_eq!(x21, x12, "the same decay");
    }
    let args = ["simulate", ARRAY_MODEL, "--vars", "all", "--stop", "0.01"];
    let (csv, err, code) = simulate_csv("recordable-all", &args);
    assert_eq!(code, 0, "{err}");
    let (names, _) = parse_csv(&csv);
    for name in ["k", "u", "y", "z", "x[1,1]", "x[1,2]", "x[2,1]", "x[2,2]"] {
        assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
    }
    let (_, err, code) = mocca(&["simulate", ARRAY_MODEL, "--vars", " , "]);
    assert_eq!(code, 2, "an empty list is refused: {err}");
    let (_, err, code) = mocca(&["simulate", ARRAY_MODEL, "--vars", "x[3,1]"]);
    assert_eq!(code, 2, "an element that does not exist is refused: {err}");
    assert!(err.contains("x[3,1]"), "{err}");
}

/// Every recorded pin of the RC ladders obeys the component laws it was flattened from:
/// `v = p.v − n.v` and `i = p.i` for each two-pin component, and a connection's potentials
/// are equal. Before, an alias whose binding read a variable a later round of alias
/// elimination removed recorded that variable's start value (every `p.v` read 0).
#[test]
fn recorded_aliases_obey_the_component_laws() {
    for model in ["examples/rc_ladder.mo", "examples/rc_ladder_weak.mo"] {
        let args = [
            "simulate", model, "--vars", "all", "--stop", "2", "--step", "0.1",
        ];
        let (csv, err, code) = simulate_csv("laws", &args);
        assert_eq!(code, 0, "{err}");
        let (names, rows) = parse_csv(&csv);
        let col = |n: &str| names.iter().position(|x| x == n);
        for row in &rows[1..] {
            for c in ["E", "R1", "C1", "R2", "C2", "R3"] {
                let at = |f: &str| row[col(&format!("{c}.{f}")).expect("column")];
                let law = at("v") - (at("p.v") - at("n.v"));
                assert!(law.abs() < 1e-12, "{model} {c}: v − (p.v − n.v) = {law}");
                assert_eq!(at("i"), at("p.i"), "{model} {c}");
            }
            let v = |n: &str| row[col(n).expect("column")];
            assert_eq!(v("R1.p.v"), v("E.p.v"), "{model}");
            assert_eq!(v("C1.p.v"), v("R2.p.v"), "{model}");
            assert_eq!(v("C2.p.v"), v("R3.p.v"), "{model}");
            assert!(v("C1.p.v") > 0.0, "{model}: node B charges");
        }
    }
}

/// A state that alias elimination finds constant (`v = −g`, `g = 0`) still has its `der(v)`
/// read: it becomes 0, not a derivative of a variable that is no longer unknown (matching then
/// indexed past its end and the command panicked). `der` of a parameter is 0 likewise.
#[test]
fn a_state_fixed_by_alias_elimination_has_a_zero_derivative() {
    let path = model_file(
        "state_fixed",
        "model StateFixed\n  Real v(start = 0);\n  Real i;\n  Real g;\nequation\n  g = 0;\n  \
         v = -g;\n  2*der(v) = i;\nend StateFixed;\n",
    );
    let file = path.to_str().expect("utf-8");
    let (out, err, code) = mocca(&["check", file]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("balanced"), "{out}");
    let args = [
        "simulate", file, "--vars", "i,v", "--stop", "1", "--step", "0.5",
    ];
    let (csv, err, code) = simulate_csv("state_fixed", &args);
    assert_eq!(code, 0, "{err}");
    let (_, rows) = parse_csv(&csv);
    assert!(rows.iter().all(|r| r[1] == 0.0 && r[2] == 0.0), "{csv}");
    let path = model_file(
        "der_parameter",
        "model P\n  parameter Real p = 2;\n  Real x(start = 1, fixed = true);\nequation\n  \
         der(x) = -x + der(p);\nend P;\n",
    );
    let args = [
        "simulate",
        path.to_str().expect("utf-8"),
        "--method",
        "bdf",
        "--tol",
        "1e-10",
        "--stop",
        "1",
        "--step",
        "1",
    ];
    let (csv, err, code) = simulate_csv("der_parameter", &args);
    assert_eq!(code, 0, "{err}");
    let (_, rows) = parse_csv(&csv);
    assert!((rows[1][1] - (-1f64).exp()).abs() < 1e-8, "{csv}");
}

/// `(y − x)³ = 0` has a triple root, where Newton converges linearly and the residual is the
/// error cubed: a residual test alone stopped at y − x = 4e-4. Both the compiled tape and the
/// reference evaluator now find it to the tolerance.
#[test]
fn newton_converges_at_a_singular_root() {
    let m = inline(
        "model Triple\n  Real x(start = 1, fixed = true);\n  Real y(start = 3);\nequation\n  \
         der(x) = -x;\n  (y - x)^3 = 0;\nend Triple;\n",
    );
    let (x, y) = (m.dae.lookup("x").expect("x"), m.dae.lookup("y").expect("y"));
    let start = initial_point(&m.dae).expect("parameters");
    let o = options(Method::ImplicitEuler, 1.0, 10);
    let outputs = [Unknown::Algebraic(x), Unknown::Algebraic(y)];
    let r = simulate(m.model(), &start, &o, &outputs, |_| {}).expect("simulates");
    for (k, (a, b)) in r.columns[0].iter().zip(&r.columns[1]).enumerate() {
        assert!((a - b).abs() < 1e-8, "row {k}: x = {a}, y = {b}");
    }
    let mut point = start.clone();
    m.causal
        .evaluate(&m.dae.pool, &mut point)
        .expect("the reference evaluator converges");
    assert!(
        (point.vars[y.0 as usize] - 1.0).abs() < 1e-8,
        "reference y = {}",
        point.vars[y.0 as usize]
    );
}

/// `y² + 1 = x` with x decaying from 1: a double root at t = 0, none after.
const NO_ROOT: &str = "model NoRoot\n  Real x(start = 1, fixed = true);\n  Real y(start = 1);\n\
                       equation\n  der(x) = -x;\n  y^2 + 1 = x;\nend NoRoot;\n";

/// A block without a real root names its block, its variable, the residual left and the time.
#[test]
fn newton_failure_names_block_variable_and_residual() {
    let path = model_file("noroot", NO_ROOT);
    let (_, err, code) = mocca(&["simulate", path.to_str().expect("utf-8")]);
    assert_eq!(code, 1, "{err}");
    for part in [
        "Newton did not converge",
        "largest residual left",
        "block 2",
        "`y`",
        "y^2 + 1 = x",
        "at time",
    ] {
        assert!(err.contains(part), "`{part}` in:\n{err}");
    }
}

/// A loop linear in all its unknowns but one that enters through `sin`, driven by
/// `u = 10 sin t`: the branch it starts on folds back at t ≈ 0.97 (and again later), where
/// no root is left near the last solution and Newton and its homotopy fail; the loop jumps to
/// the root that remains, as a circuit with hysteresis does. Checked against the equations
/// at every output row, and against the roots a multistart search (200 random starts in
/// [−20, 20]⁴) finds: at t = 0.5 three (the run stays on the branch from t = 0, x1 =
/// −0.179605), at t = 1 one (x1 = 6.754891). Before, the run stopped at 0.971.
#[test]
fn a_loop_past_its_fold_jumps_to_the_root_that_remains() {
    const FOLD: &str = "model Fold
  Real u = 10*sin(time);
  Real x1, x2, x3, x4;
equation
  x1 + 2*x2 - x3 + x4 = u;
  3*x1 - x2 + 2*x4 = 2*u;
  x1 + x2 + x3 = 4;
  x4 = 5*sin(x1 + 0.3*x3) + 2*x2;
end Fold;
";
    let path = model_file("fold", FOLD);
    let file = path.to_str().expect("utf-8");
    let (csv, err, code) = simulate_csv(
        "fold",
        &[
            "simulate",
            file,
            "--stop",
            "3",
            "--step",
            "0.001",
            "--vars",
            "x1,x2,x3,x4",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let c = csv_columns(&csv);
    for (k, &t) in c["time"].iter().enumerate() {
        let [x1, x2, x3, x4] = ["x1", "x2", "x3", "x4"].map(|v| c[v][k]);
        let u = 10.0 * t.sin();
        let residuals = [
            x1 + 2.0 * x2 - x3 + x4 - u,
            3.0 * x1 - x2 + 2.0 * x4 - 2.0 * u,
            x1 + x2 + x3 - 4.0,
            x4 - 5.0 * (x1 + 0.3 * x3).sin() - 2.0 * x2,
        ];
        assert!(
            residuals.iter().all(|r| r.abs() < 1e-8),
            "t = {t}: {residuals:?}"
        );
    }
    let at = |t: f64| {
        let k = c["time"]
            .iter()
            .position(|&s| (s - t).abs() < 1e-9)
            .expect("a row");
        c["x1"][k]
    };
    assert!((at(0.5) - -0.179605).abs() < 1e-5, "x1(0.5) = {}", at(0.5));
    assert!((at(1.0) - 6.754891).abs() < 1e-5, "x1(1) = {}", at(1.0));
}

/// CSV numbers are the shortest that read back exactly, and output times are computed on
/// the grid, not accumulated. Before: `0e0`, `1e-1`, `3.0000000000000004e-1`.
#[test]
fn csv_numbers_are_short_and_times_on_the_grid() {
    let args = [
        "simulate",
        "examples/quarter_car.mo",
        "--stop",
        "0.7",
        "--step",
        "0.1",
        "--vars",
        "x_r,m_s",
    ];
    let (text, err, code) = simulate_csv("short-numbers", &args);
    assert_eq!(code, 0, "{err}");
    let times: Vec<&str> = text
        .lines()
        .skip(1)
        .map(|l| &l[..l.find(',').expect("a comma")])
        .collect();
    assert_eq!(
        times,
        ["0", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7"]
    );
    assert!(
        text.lines().skip(1).all(|l| l.ends_with(",0,267")),
        "{text}"
    );
}

/// Every subcommand, `parse` first (the one that flattens no model).
const SUBCOMMANDS: [&str; 10] = [
    "parse",
    "check",
    "flatten",
    "blt",
    "jacobian",
    "simulate",
    "compare",
    "reduce",
    "cycles",
    "separability",
];

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}):\n{text}"))
}

/// With `--format json` a failure is one JSON object on stdout with the error's position;
/// bad usage too (exit 2). Before, both were plain text on stderr.
#[test]
fn failures_in_json_mode_are_json() {
    let path = model_file(
        "undeclared",
        "model U\n  Real x(start = 1);\nequation\n  der(x) = -k*x;\nend U;\n",
    );
    let file = path.to_str().expect("utf-8");
    for &command in &SUBCOMMANDS[1..] {
        let (out, err, code) = mocca(&[command, file, "--format", "json"]);
        assert_eq!(code, 1, "{command}: {err}");
        let value = json(&out);
        let errors = value["errors"].as_array().expect("an errors array");
        let first = &errors[0];
        assert_eq!(first["severity"], "error", "{command}: {value}");
        assert!(
            first["message"].as_str().expect("a message").contains('k'),
            "{value}"
        );
        assert_eq!(first["file"].as_str(), Some(file), "{value}");
        assert_eq!(
            (first["line"].as_u64(), first["column"].as_u64()),
            (Some(4), Some(13)),
            "{value}"
        );
        assert!(
            !first["labels"].as_array().expect("labels").is_empty(),
            "{value}"
        );
    }
    let (out, _, code) = mocca(&["simulate", file, "--format", "json", "--tol", "0"]);
    assert_eq!(code, 2);
    assert_eq!(json(&out)["errors"][0]["severity"], "error");
}

/// `flatten --format json` prints the flat DAE as JSON (it printed Modelica before).
#[test]
fn flatten_prints_the_dae_as_json() {
    let (out, err, code) = mocca(&["flatten", ARRAY_MODEL, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let value = json(&out);
    assert_eq!(value["model"], "Recordable");
    let vars = value["variables"].as_array().expect("variables");
    let k = vars.iter().find(|v| v["name"] == "k").expect("k");
    assert_eq!(
        (k["kind"].as_str(), k["binding"].as_str()),
        (Some("parameter"), Some("2.0"))
    );
    let x = vars.iter().find(|v| v["name"] == "x[1,2]").expect("x[1,2]");
    assert_eq!(x["fixed"], true);
    assert_eq!(x["source"]["line"], 5);
    let equations = value["equations"].as_array().expect("equations");
    assert_eq!(equations.len(), 6);
    assert!(equations.iter().any(|e| e["text"] == "z = -y"), "{value}");
}

/// An output that cannot be written fails before any work; a run that fails leaves no file
/// half-written.
#[test]
fn outputs_are_checked_first_and_written_whole() {
    let (out, err, code) = mocca(&[
        "simulate",
        "examples/quarter_car.mo",
        "--out",
        "/nonexistent-folder/x.csv",
        "--format",
        "json",
    ]);
    assert_eq!(code, 1, "{err}");
    let value = json(&out);
    assert!(value.get("stats").is_none(), "no run: {value}");
    assert!(
        value["errors"][0]["message"]
            .as_str()
            .expect("a message")
            .contains("cannot write")
    );
    let (_, err, code) = mocca(&[
        "separability",
        "examples/two_masses.mo",
        "--svg",
        "/nonexistent-folder/x.svg",
    ]);
    assert_eq!(code, 1, "{err}");
    let folder = temp_path("a-folder");
    std::fs::create_dir_all(&folder).expect("a folder");
    let (out, err, code) = mocca(&[
        "simulate",
        "examples/quarter_car.mo",
        "--out",
        folder.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        out.is_empty() && err.contains("it is a folder"),
        "no run: {out}{err}"
    );
    let model = model_file("fails", NO_ROOT);
    let csv = temp_path("never.csv");
    let (_, _, code) = mocca(&[
        "simulate",
        model.to_str().expect("utf-8"),
        "--out",
        csv.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 1);
    assert!(!csv.exists(), "no file after a failed run");
    let leftovers = std::fs::read_dir(csv.parent().expect("a folder"))
        .expect("the folder")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains("never.mocca-"))
        .count();
    assert_eq!(leftovers, 0, "no hidden partial file");
}

/// Help speaks to users: every subcommand has a line, there are examples, and no help text
/// cites the SPEC or calls `simulate` fixed-step only.
#[test]
fn help_lists_every_subcommand_and_option() {
    let (top, _, code) = mocca(&["--help"]);
    assert_eq!(code, 0);
    for sub in SUBCOMMANDS {
        let line = top
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{sub} ")))
            .unwrap_or_else(|| panic!("{sub} in:\n{top}"));
        assert!(
            line.split_whitespace().count() > 3,
            "{sub} has a description: {line}"
        );
        let (help, _, code) = mocca(&[sub, "--help"]);
        assert_eq!(code, 0);
        assert!(!help.contains("SPEC"), "{sub}:\n{help}");
        let mut lines = help.lines().peekable();
        while let Some(line) = lines.next() {
            let option = line.trim_start();
            if option.starts_with('-') && !option.starts_with("-h,") && !option.starts_with("-V,") {
                let described = option.split("  ").filter(|s| !s.trim().is_empty()).count() > 1
                    || lines.peek().is_some_and(|next| {
                        next.starts_with("          ") && !next.trim().is_empty()
                    });
                assert!(described, "{sub}: `{option}` has no description");
            }
        }
    }
    assert!(top.contains("Examples:"), "{top}");
    let (simulate, _, _) = mocca(&["simulate", "--help"]);
    assert!(
        simulate.contains("BDF") && !simulate.contains("with a fixed-step method;"),
        "{simulate}"
    );
}

/// A process limited in address space (a container, `ulimit -v`) still runs: the worker
/// thread takes a smaller stack. Before, anything under about 4.2 GB failed to start. A grid
/// of α too large to hold is refused at once.
#[test]
fn runs_with_little_address_space_and_refuses_huge_grids() {
    let binary = env!("CARGO_BIN_EXE_mocca");
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v 1500000 && '{binary}' check examples/rc_ladder.mo"
        ))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("sh runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("balanced"), "{stdout}");
    let (_, err, code) = mocca(&[
        "separability",
        "examples/two_masses.mo",
        "--alphas",
        "0.1:1:100000000",
    ]);
    assert_eq!(code, 2, "{err}");
}

/// A `package.order` line naming no class of its package is reported at the line (a
/// warning: the package loads without it); one declared inside `package.mo` is no problem.
/// Before, such lines were skipped silently.
#[test]
fn package_order_naming_a_missing_class_is_reported() {
    let package = temp_path("P");
    std::fs::create_dir_all(&package).expect("a folder");
    std::fs::write(
        package.join("package.mo"),
        "package P\n  model Inner\n  end Inner;\nend P;\n",
    )
    .expect("written");
    std::fs::write(
        package.join("M.mo"),
        "within P;\nmodel M\n  Real x(start = 1);\nequation\n  der(x) = -x;\nend M;\n",
    )
    .expect("written");
    std::fs::write(package.join("package.order"), "M\nInner\nGhost\n").expect("written");
    let (_, err, code) = mocca(&["check", package.to_str().expect("utf-8"), "--model", "P.M"]);
    let _ = std::fs::remove_dir_all(&package);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("lists `Ghost`") && err.contains("package.order:3:1"),
        "{err}"
    );
    assert!(!err.contains("`Inner`") && !err.contains("`M`"), "{err}");
}

/// `--compare` without `--vars` compares every reference column the model has, aliases and
/// parameters included (before, only the states were recorded, so the others were ignored).
#[test]
fn compare_takes_every_column_the_model_has() {
    let reference = temp_path("reference-all.csv");
    let path = reference.to_str().expect("utf-8");
    let (_, err, code) = mocca(&[
        "simulate",
        ARRAY_MODEL,
        "--vars",
        "all",
        "--stop",
        "0.1",
        "--out",
        path,
    ]);
    assert_eq!(code, 0, "{err}");
    let (out, err, code) = mocca(&[
        "simulate",
        ARRAY_MODEL,
        "--stop",
        "0.1",
        "--compare",
        path,
        "--format",
        "json",
    ]);
    let _ = std::fs::remove_file(&reference);
    assert_eq!(code, 0, "{err}");
    let value = json(&out);
    let errors = value["errors"].as_array().expect("per-variable errors");
    assert_eq!(errors.len(), 8, "{value}");
    assert_eq!(value["rmse"], 0.0, "{value}");
}

/// A value bound to a whole record was dropped: `parameter Rec r2 = r1` gave `r2.a` its
/// default 1, not `r1.a` = 3, with exit 0. Each field now takes the other record's.
#[test]
fn a_value_for_a_whole_record_gives_each_field_its_value() {
    let path = model_file(
        "record_binding",
        "record Rec\n  Real a = 1;\nend Rec;\nmodel M\n  parameter Rec r1(a = 3);\n  \
         parameter Rec r2 = r1;\n  Real x(start = 1, fixed = true);\nequation\n  der(x) = -r2.a*x;\nend M;\n",
    );
    let path = path.to_str().expect("utf-8");
    let (csv, err, code) = simulate_csv(
        "record_binding",
        &[
            "simulate", path, "--method", "bdf", "--tol", "1e-9", "--stop", "1",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let c = csv_columns(&csv);
    for (&t, &x) in c["time"].iter().zip(&c["x"]) {
        assert!((x - (-3.0 * t).exp()).abs() < 1e-6, "x({t}) = {x}");
    }
}

/// An assert's message reads as written, its escapes resolved (it showed `\"big\"\n`).
#[test]
fn assertion_messages_resolve_their_escapes() {
    let path = model_file(
        "escaped_message",
        "model A\n  Real x(start = 1, fixed = true);\nequation\n  der(x) = 1;\n  \
         assert(x < 1.5, \"x is \\\"big\\\"\\nreally\");\nend A;\n",
    );
    let (_, err, code) = mocca(&["simulate", path.to_str().expect("utf-8")]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("x is \"big\"\nreally"), "{err}");
}

/// `fixed = true` on a variable that alias elimination replaces by a state (`x = s`, as an
/// armature position aliasing its flange's) is a start condition on that state, not dropped.
#[test]
fn a_fixed_start_on_an_alias_of_a_state_holds() {
    let text = "model Alias
  Real s;
  Real v;
  Real x(start = -0.004, fixed = true);
equation
  x = s;
  der(s) = v;
  der(v) = 1;
end Alias;
";
    let file = model_file("fixed_alias", text);
    let args = [
        "simulate",
        file.to_str().expect("utf-8"),
        "--method",
        "bdf",
        "--stop",
        "1",
        "--tol",
        "1e-10",
    ];
    let mut all = args.to_vec();
    all.extend(["--step", "0.5", "--vars", "x,s"]);
    let (csv, err, code) = simulate_csv("fixed_alias", &all);
    assert_eq!(code, 0, "{err}");
    let c = csv_columns(&csv);
    // s(t) = −0.004 + t²/2 from rest.
    for (k, &t) in c["time"].iter().enumerate() {
        let want = -0.004 + t * t / 2.0;
        assert!(
            (c["s"][k] - want).abs() < 1e-8,
            "s({t}) = {}, expected {want}",
            c["s"][k]
        );
        assert!((c["x"][k] - want).abs() < 1e-8, "x({t}) = {}", c["x"][k]);
    }
}

/// `sqrt(x) = 2` from a start where `sqrt` is not defined, with and without a simplified
/// model `0.5·x = 2` to start from.
const HOMOTOPY_START: &str = include_str!("data/homotopy_start.mo");

#[test]
fn an_initial_system_that_fails_from_its_start_values_is_solved_along_its_homotopy() {
    let path = model_file("homotopy_start", HOMOTOPY_START);
    let args = |file: &str| {
        [
            "simulate", file, "--method", "bdf", "--stop", "1", "--tol", "1e-9",
        ]
        .map(String::from)
    };
    let file = path.to_str().unwrap().to_string();
    let args_homotopy = args(&file);
    let (csv, err, code) = simulate_csv(
        "homotopy_start",
        &args_homotopy.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    assert_eq!(code, 0, "{err}");
    let c = csv_columns(&csv);
    for (k, &t) in c["time"].iter().enumerate() {
        let exact = 4.0 * (-t).exp();
        assert!((c["x"][k] - exact).abs() < 1e-6, "x at {t}: {}", c["x"][k]);
    }
    // Without the simplified model the same start stops with the initial equation named.
    let plain = HOMOTOPY_START.replace("homotopy(actual = sqrt(x), simplified = 0.5*x)", "sqrt(x)");
    let path = model_file("homotopy_plain", &plain);
    let file = path.to_str().unwrap().to_string();
    let (_, err, code) = mocca(&args(&file).iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 1);
    assert!(
        err.contains("initial equation with a large residual"),
        "{err}"
    );
}

/// A mass hanging on a purely cubic spring, started at rest in steady state from `s = 0`,
/// where the spring's stiffness `3·k3·s²` and so Newton's Jacobian vanish: the fixed-point
/// homotopy from the start finds `s = −(m·g/k3)^(1/3)`.
const CUBIC_AT_REST: &str = include_str!("data/cubic_at_rest.mo");

#[test]
fn an_initial_system_whose_jacobian_vanishes_at_the_start_is_solved_from_the_start() {
    let path = model_file("cubic_at_rest", CUBIC_AT_REST);
    let file = path.to_str().unwrap();
    for method in ["bdf", "implicit-euler"] {
        let (csv, err, code) = simulate_csv(
            "cubic_at_rest",
            &[
                "simulate", file, "--method", method, "--stop", "1", "--vars", "s,v",
            ],
        );
        assert_eq!(code, 0, "{method}: {err}");
        let c = csv_columns(&csv);
        let rest = -(2.0f64 * 9.81 / 500.0).cbrt();
        for (k, &t) in c["time"].iter().enumerate() {
            assert!(
                (c["s"][k] - rest).abs() < 1e-8,
                "{method}: s at {t}: {}",
                c["s"][k]
            );
            assert!(c["v"][k].abs() < 1e-8, "{method}: v at {t}");
        }
    }
}

/// A capacitance of 0 the model asks to evaluate (`Evaluate = true`, passed on through a
/// `final` modification, as the standard library's semiconductor examples do with `CapVal`).
const EVALUATED_ZERO: &str = "
model Cap
  parameter Real C = 1;
  Real v, i;
equation
  C*der(v) = i;
end Cap;
model EvaluatedZero
  parameter Real CapVal = 0 annotation(Evaluate = true);
  Cap c(final C = CapVal);
  Cap d(C = 1 + CapVal);
  Real x(start = 1, fixed = true);
equation
  der(x) = -x;
  c.v = 2*x;
  d.i = x - d.v;
end EvaluatedZero;";

#[test]
fn a_parameter_evaluated_to_zero_leaves_no_state_behind() {
    let model = model_file("evaluated_zero", EVALUATED_ZERO);
    let path = model.to_str().expect("utf-8");
    let check = mocca_json(&["check", path, "--format", "json"]);
    // `c.C` is `final` and bound to the evaluated 0: `0*der(c.v)` is no derivative, so `c.v`
    // is algebraic and the model of index 1. `d.C`, bound to `1 + CapVal` but not `final`,
    // may still be set (`-p d.C=…`): it stays a parameter, and `d.v` a state.
    assert_eq!(
        check["state_names"],
        serde_json::json!(["d.v", "x"]),
        "{check}"
    );
    assert_eq!(check["index"], 1);
    let (csv, err, code) = simulate_csv(
        "evaluated_zero",
        &[
            "simulate",
            path,
            "--method",
            "bdf",
            "--stop",
            "1",
            "--vars",
            "c.v,c.i,x",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let columns = csv_columns(&csv);
    let (cv, ci, x) = (&columns["c.v"], &columns["c.i"], &columns["x"]);
    for k in 0..x.len() {
        assert!((cv[k] - 2.0 * x[k]).abs() < 1e-12, "c.v = 2x at row {k}");
        assert_eq!(ci[k], 0.0, "no current through a capacitance of 0");
    }
    assert!((x[x.len() - 1] - (-1.0f64).exp()).abs() < 1e-3);
}

/// A temperature that barely moves, driven by an input that is real only before t = 1000.
const SLOW_PROBE: &str = "
model SlowProbe
  Real T(start = 300, fixed = true);
  Real y;
equation
  der(T) = 1e-6*y;
  y = sqrt(1e3 - time);
end SlowProbe;";

#[test]
fn bdfs_starting_step_probe_past_where_the_model_evaluates_does_not_stop_the_run() {
    // The starting step's estimate for a state this slow is about 10⁵ s: its probe there
    // cannot evaluate the model, which must not end a run of 10 s.
    let model = model_file("slow_probe", SLOW_PROBE);
    let path = model.to_str().expect("utf-8");
    let (csv, err, code) = simulate_csv(
        "slow_probe",
        &[
            "simulate", path, "--method", "bdf", "--stop", "10", "--vars", "T",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let t = &csv_columns(&csv)["T"];
    // T(10) = 300 + 10⁻⁶·(2/3)·(1000^1.5 − 990^1.5).
    let exact = 300.0 + 1e-6 * (2.0 / 3.0) * (1000f64.powf(1.5) - 990f64.powf(1.5));
    assert!(
        (t[t.len() - 1] - exact).abs() < 1e-6,
        "{} vs {exact}",
        t[t.len() - 1]
    );
}

/// A loop mixing scales, as a magnetic circuit's does: reluctances of 10⁵ beside fluxes of
/// 10⁻⁶. A residual of 10⁻⁶ is small beside the largest unknown and is the whole flux: the
/// loop is solved to each unknown's own scale (the guess of zero fluxes used to be taken as
/// the solution, silently).
#[test]
fn a_loop_mixing_scales_is_solved_to_its_smallest_unknowns_scale() {
    const TUBES: &str = "model Tubes
  Real phi_total = 1e-6*(1 + time);
  Real phi1, phi2, v, r1;
equation
  phi1 + phi2 = phi_total;
  v = r1*phi1;
  v = 2e5*phi2;
  r1 = 1e5*(1 + 1e10*phi1^2);
end Tubes;
";
    let path = model_file("tubes", TUBES);
    let file = path.to_str().expect("utf-8");
    let (csv, err, code) = simulate_csv(
        "tubes",
        &[
            "simulate",
            file,
            "--stop",
            "1",
            "--step",
            "0.1",
            "--vars",
            "phi1,phi2,r1",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let c = csv_columns(&csv);
    for (k, &t) in c["time"].iter().enumerate() {
        let [phi1, phi2, r1] = ["phi1", "phi2", "r1"].map(|v| c[v][k]);
        let total = 1e-6 * (1.0 + t);
        // Independently: the flux splits as the reluctances' inverse, r1·phi1 = 2e5·phi2.
        assert!((phi1 + phi2 - total).abs() < 1e-9 * total, "t = {t}");
        assert!(
            (r1 * phi1 - 2e5 * phi2).abs() < 1e-9 * r1 * total,
            "t = {t}"
        );
        assert!(
            (r1 - 1e5 * (1.0 + 1e10 * phi1 * phi1)).abs() < 1e-9 * r1,
            "t = {t}"
        );
        assert!(phi1 > 0.5 * total, "t = {t}: phi1 = {phi1}");
    }
}

/// A nonlinear loop is torn: Newton on one unknown, the others assigned from it, and the
/// solution satisfies every equation of the loop.
#[test]
fn a_nonlinear_loop_is_torn_to_one_unknown_and_solved() {
    const CHAIN: &str = "model Chain
  Real x1, x2, x3;
equation
  x1 = sin(x3) + time;
  x2 = 2*x1 + x3^3;
  x3 = 0.1*cos(x2) - 0.5*x1;
end Chain;
";
    let path = model_file("chain", CHAIN);
    let file = path.to_str().expect("utf-8");
    let blt = mocca_json(&["blt", file, "--format", "json"]);
    let steps = blt["blocks"].as_array().expect("blocks");
    let torn = &steps[0];
    assert_eq!(torn["solution"], "loop", "{blt}");
    assert_eq!(torn["unknowns"].as_array().map(Vec::len), Some(1), "{blt}");
    assert_eq!(torn["loop_size"], 3, "{blt}");
    assert!(
        steps[1..3].iter().all(|s| s["solution"] == "assign"),
        "{blt}"
    );
    let (csv, err, code) = simulate_csv(
        "chain",
        &[
            "simulate", file, "--stop", "2", "--step", "0.1", "--vars", "x1,x2,x3",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let c = csv_columns(&csv);
    for (k, &t) in c["time"].iter().enumerate() {
        let [x1, x2, x3] = ["x1", "x2", "x3"].map(|v| c[v][k]);
        let residuals = [
            x1 - x3.sin() - t,
            x2 - 2.0 * x1 - x3.powi(3),
            x3 - 0.1 * x2.cos() + 0.5 * x1,
        ];
        assert!(
            residuals.iter().all(|r| r.abs() < 1e-10),
            "t = {t}: {residuals:?}"
        );
    }
}

/// Tearing never divides by what may be 0: not by a voltage that starts at 0 (`q = v·i` is
/// not solved for `i`), nor by a parameter that is 0 (`r = 1 + α·(T − 300)` with α = 0 is not
/// solved for `T`). The standard library's heated resistor tore into both before.
#[test]
fn tearing_solves_no_equation_through_a_coefficient_that_may_be_zero() {
    const HEATED: &str = "model Heated
  parameter Real alpha = 0;
  parameter Real g = 2;
  Real v = sin(time);
  Real r, i, q, temp;
equation
  r = 1 + alpha*(temp - 300);
  v = r*i;
  q = v*i;
  temp = 300 + q/g;
end Heated;
";
    let path = model_file("heated", HEATED);
    let file = path.to_str().expect("utf-8");
    let (csv, err, code) = simulate_csv(
        "heated",
        &[
            "simulate", file, "--stop", "2", "--step", "0.1", "--vars", "i,temp",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let c = csv_columns(&csv);
    for (k, &t) in c["time"].iter().enumerate() {
        // With α = 0 the resistance is 1: i = v, q = v², temp = 300 + v²/g.
        let v = t.sin();
        assert!((c["i"][k] - v).abs() < 1e-10, "t = {t}");
        assert!(
            (c["temp"][k] - (300.0 + v * v / 2.0)).abs() < 1e-9,
            "t = {t}"
        );
    }
}

/// A filtered position source, as the standard library's `Position(exact = false)` is: its
/// state starts at 0, where the model divides by it, and an initial equation sets it to the
/// reference, a ramp's output. The mode at the start values is not evaluated as fatal, and
/// the state is seeded from the ramp before Newton (SolenoidActuator.ComparisonQuasiStatic
/// stopped at the division).
#[test]
fn a_state_that_divides_from_zero_is_seeded_from_its_reference() {
    const FEED: &str = "model Feed
  Real s_ref = 0.005 - 0.001*time;
  Real s(start = 0);
  Real v(start = 0, fixed = true);
  Real g = 1/s;
  Real y = if g > 100 then 1 else 0;
initial equation
  s = s_ref;
equation
  der(s) = v;
  der(v) = 100*(s_ref - s) - 20*v;
end Feed;
";
    let path = model_file("feed", FEED);
    let file = path.to_str().expect("utf-8");
    let (csv, err, code) = simulate_csv(
        "feed",
        &[
            "simulate", file, "--method", "bdf", "--stop", "1", "--step", "0.5", "--vars", "s,g,y",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let c = csv_columns(&csv);
    assert_eq!(c["s"][0], 0.005);
    assert!((c["g"][0] - 200.0).abs() < 1e-9, "g(0) = {}", c["g"][0]);
    assert_eq!(c["y"][0], 1.0);
    // A critically damped filter (ω = 10) trails a ramp of slope −0.001 by 2ζ/ω·0.001 = 2e-4
    // once its transient, (−2e-4 − 1e-3·t)·e^(−10 t), has decayed (to 5e-8 at t = 1).
    let lag = c["s"][2] - (0.005 - 0.001);
    assert!((lag - 2e-4).abs() < 1e-6, "lag at 1: {lag}");
}

/// Where a torn loop has several roots, Newton starts from the tearing variables' guesses
/// only, so a variable the model gives a start value is torn before one it does not: the
/// user's guess picks the root (the Schmitt trigger of the standard library's signal
/// generator starts at its supply so).
#[test]
fn a_start_value_picks_the_tearing_variable_and_the_root() {
    const ROOTS: &str = "model Roots
  Real x;
  Real y(start = 1.2);
equation
  x + y = 3;
  x*y = 2 + 0*time;
end Roots;
";
    let path = model_file("roots", ROOTS);
    let file = path.to_str().expect("utf-8");
    let blt = mocca_json(&["blt", file, "--format", "json"]);
    assert_eq!(
        blt["blocks"][0]["unknowns"],
        serde_json::json!(["y"]),
        "{blt}"
    );
    let (csv, err, code) = simulate_csv(
        "roots",
        &[
            "simulate", file, "--stop", "1", "--step", "0.5", "--vars", "x,y",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let c = csv_columns(&csv);
    // From y = 1.2 Newton on (3 − y)·y = 2 goes to the root y = 1 (from x = 0 it would
    // reach x = 1, y = 2).
    for k in 0..c["time"].len() {
        assert!((c["y"][k] - 1.0).abs() < 1e-12, "{:?}", c["y"]);
        assert!((c["x"][k] - 2.0).abs() < 1e-12, "{:?}", c["x"]);
    }
}

/// A Schmitt trigger as a loop with three roots inside its hysteresis band (an op-amp with
/// positive feedback, limited without events), driving an integrator: a triangle wave. The
/// loop keeps its branch until that root disappears; a rejected BDF step used to leave the
/// loop on the other branch (the wave turned early), and the rows recorded between steps were
/// evaluated from another guess than the run's (the output read +15 throughout). The standard
/// library's signal generator did both.
#[test]
fn a_loop_with_hysteresis_keeps_its_branch_through_rejected_steps_and_in_its_rows() {
    const SCHMITT: &str = "model Schmitt
  Real c(start = 0, fixed = true);
  Real vin(start = 7.5);
  Real vout;
equation
  der(c) = vout;
  vin = 0.5*vout - c;
  vout = noEvent(if 1000*vin > 15 then 15 else if 1000*vin < -15 then -15 else 1000*vin);
end Schmitt;
";
    let path = model_file("schmitt", SCHMITT);
    let file = path.to_str().expect("utf-8");
    let (csv, err, code) = simulate_csv(
        "schmitt",
        &[
            "simulate", file, "--method", "bdf", "--stop", "4", "--step", "0.25", "--vars",
            "c,vout",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let c = csv_columns(&csv);
    // The +15 root exists while 1000·(7.5 − c) > 15, i.e. c < 7.485 (and the −15 one while
    // c > −7.485): c rises at 15/s to 7.485, falls at 15/s to −7.485, and so on.
    let peak = 7.485;
    let triangle = |t: f64| {
        let period = 4.0 * peak / 15.0;
        let phase = (t + peak / 15.0) % period;
        let up = phase < period / 2.0;
        let value = if up {
            -peak + 15.0 * phase
        } else {
            peak - 15.0 * (phase - period / 2.0)
        };
        (value, if up { 15.0 } else { -15.0 })
    };
    for (k, &t) in c["time"].iter().enumerate() {
        let (want, vout) = triangle(t);
        assert!(
            (c["c"][k] - want).abs() < 1e-3,
            "t = {t}: c = {} ≠ {want}",
            c["c"][k]
        );
        assert_eq!(c["vout"][k], vout, "t = {t}");
    }
}

/// A subscript known only at run time selects from an array of any shape, along with fixed
/// subscripts and slices (`fire[ka + 1, :]` of the standard library's space-vector PWM): an
/// `if` over the index's values, element by element.
#[test]
fn a_subscript_that_varies_selects_a_row_of_a_matrix() {
    const ROWS: &str = "model Rows
  constant Real table[3, 2] = [1, 2; 3, 4; 5, 6];
  Integer k = integer(time) + 1;
  Real r[2] = table[k, :];
  Real c = table[3 - k + 1, 2];
end Rows;
";
    let path = model_file("rows", ROWS);
    let file = path.to_str().expect("utf-8");
    let (csv, err, code) = simulate_csv(
        "rows",
        &[
            "simulate",
            file,
            "--stop",
            "2.5",
            "--step",
            "0.5",
            "--vars",
            "k,r[1],r[2],c",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let c = csv_columns(&csv);
    let times = &c["time"];
    for (j, &t) in times.iter().enumerate() {
        // At an integer time the row before the event still has the last k.
        let after = times.get(j + 1) != Some(&t);
        let k = if after { t.floor() + 1.0 } else { t };
        assert_eq!(c["k"][j], k, "t = {t}");
        assert_eq!(c["r[1]"][j], 2.0 * k - 1.0, "t = {t}");
        assert_eq!(c["r[2]"][j], 2.0 * k, "t = {t}");
        assert_eq!(c["c"][j], 2.0 * (4.0 - k), "t = {t}");
    }
}

/// A subscript known only at run time that leaves the array's range stops the run where the
/// element is read (it used to read the last element, a silent wrong answer): `a[i]` with
/// `i = integer(5·time) + 1` is 4 from t = 0.6 on.
#[test]
fn a_varying_subscript_out_of_range_stops_the_run_there() {
    const OUT_OF_RANGE: &str = "model OutOfRange
  Real a[3] = {1, 2, 3};
  Integer i = integer(time*5) + 1;
  Real y = a[i];
  Real x(start = 0, fixed = true);
equation
  der(x) = y;
end OutOfRange;
";
    let path = model_file("out_of_range", OUT_OF_RANGE);
    let file = path.to_str().expect("utf-8");
    for method in ["bdf", "implicit-euler"] {
        let (_, err, code) = mocca(&["simulate", file, "--method", method, "--stop", "1"]);
        assert_eq!(code, 1, "{method}: {err}");
        assert!(
            err.contains("NaN") && err.contains("`y`") && err.contains("time 0.6"),
            "{method}: {err}"
        );
    }
    let (_, err, code) = mocca(&["simulate", file, "--stop", "0.5"]);
    assert_eq!(code, 0, "in range until 0.6: {err}");
}

/// `x³ + y³ = 8`, `x = y`, written with a simplified `x³ + y³ + 7 = 8`: Newton stalls at the
/// start x = y = 0 on both (their Jacobian is singular there), so the homotopy fails at
/// `λ = 0` and the fixed-point homotopy takes over. It solves the actual model (x = 4^⅓), not
/// the simplified one (x = ½^⅓, what mocca gave when the failed homotopy left `λ` at 0).
#[test]
fn a_homotopy_that_stalls_at_its_start_leaves_the_actual_model() {
    let path = model_file("homotopy_stall", include_str!("data/homotopy_stall.mo"));
    let file = path.to_str().unwrap();
    let (csv, err, code) = simulate_csv(
        "homotopy_stall",
        &[
            "simulate", file, "--method", "bdf", "--stop", "1", "--tol", "1e-9",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let c = csv_columns(&csv);
    let start = 4.0f64.cbrt();
    for (k, &t) in c["time"].iter().enumerate() {
        let exact = start * (-t).exp();
        for v in ["x", "y"] {
            assert!((c[v][k] - exact).abs() < 1e-6, "{v} at {t}: {}", c[v][k]);
        }
    }
}

/// BDF wrote an event that falls on an output time three times (the output row, the row
/// before the event, the row after it), the first two the same point. Each method writes it
/// twice: its left limit, then its right limit.
#[test]
fn an_event_on_an_output_time_is_one_row_before_it_and_one_after() {
    let text = "model Recharged
      Real x(start = 1, fixed = true);
    equation
      der(x) = -x;
      when time > 0.5 then
        reinit(x, 1);
      end when;
    end Recharged;";
    let file = model_file("recharged_rows", text);
    let path = file.to_str().expect("utf-8");
    for method in ["bdf", "implicit-euler", "euler"] {
        let args = [
            "simulate", path, "--method", method, "--stop", "1", "--step", "0.1",
        ];
        let (csv, err, code) = simulate_csv(&format!("recharged_rows_{method}"), &args);
        assert_eq!(code, 0, "{err}");
        let run = csv_columns(&csv);
        let at: Vec<usize> = (0..run["time"].len())
            .filter(|&k| (run["time"][k] - 0.5).abs() < 1e-12)
            .collect();
        assert_eq!(at.len(), 2, "{method}: {csv}");
        let (before, after) = (run["x"][at[0]], run["x"][at[1]]);
        assert!(before < 0.7 && after == 1.0, "{method}: {before}, {after}");
    }
}

/// A loop whose solutions are a line (only `a + b` is given, twice: two friction elements
/// stuck in series share a torque so) is solved, one solution taken, and the run says so: a
/// warning naming the loop's unknowns, `singular_loop` in JSON. The same loop with a second,
/// independent equation says nothing.
#[test]
fn a_loop_with_many_solutions_is_reported() {
    let text = |second: &str| {
        format!(
            "model Split
               Real a(start = 3);
               Real b(start = -1);
               Real x(start = 0, fixed = true);
             equation
               a + b = 2 + sin(x);
               {second};
               der(x) = a;
             end Split;"
        )
    };
    let singular = model_file("split_singular", &text("2*a + 2*b = 4 + 2*sin(x)"));
    let regular = model_file("split_regular", &text("a - b = 1"));
    let run = |file: &std::path::Path| {
        let path = file.to_str().expect("utf-8");
        let args = ["simulate", path, "--method", "bdf", "--stop", "1"];
        let (_, err, code) = mocca(&[&args[..], &["--out", "/dev/null"]].concat());
        assert_eq!(code, 0, "{err}");
        let json = mocca_json(&[&args[..], &["--format", "json", "--out", "/dev/null"]].concat());
        (err, json)
    };
    let (err, json) = run(&singular);
    assert!(
        err.contains("the algebraic loop solving `a`, `b` is singular at its solution"),
        "{err}"
    );
    assert_eq!(
        json["singular_loop"]["unknowns"],
        serde_json::json!(["a", "b"]),
        "{json}"
    );
    let (err, json) = run(&regular);
    assert!(!err.contains("singular"), "{err}");
    assert!(json.get("singular_loop").is_none(), "{json}");
    // In a weak subsystem stepped apart too.
    let weak = model_file(
        "split_weak",
        "model SplitWeak
           Real a(start = 3);
           Real b(start = -1);
           Real x(start = 0, fixed = true);
           Real y(start = 0, fixed = true);
           weak Real xw;
         equation
           xw = x;
           a + b = 2 + sin(x);
           2*a + 2*b = 4 + 2*sin(x);
           der(x) = a;
           der(y) = xw - y;
         end SplitWeak;",
    );
    let path = weak.to_str().expect("utf-8");
    let args = [
        "simulate",
        path,
        "--method",
        "implicit-euler",
        "--partition",
        "weak",
    ];
    let (_, err, code) = mocca(&[&args[..], &["--stop", "1", "--out", "/dev/null"]].concat());
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("the algebraic loop solving `a`, `b` is singular"),
        "{err}"
    );
}
