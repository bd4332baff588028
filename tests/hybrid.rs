//! Hybrid models (SPEC §6, Modelica 8.5): `when`, `pre`, `reinit`, `sample` and events,
//! against closed forms and hand-computed counts, with BDF and a fixed-step method.

mod cli_support;

use cli_support::{csv_columns, mocca, model_file, simulate_csv};

const BALL: &str = "model Ball
  parameter Real g = 9.81;
  parameter Real e = 0.8;
  Real h(start = 1, fixed = true);
  Real v(start = 0, fixed = true);
  Integer n(start = 0);
equation
  der(h) = v;
  der(v) = -g;
  when h < 0 then
    reinit(v, -e*pre(v));
    n = pre(n) + 1;
  end when;
end Ball;
";

/// The impact times of a ball dropped from `h0`, bouncing back with `e` times its speed.
fn impacts(h0: f64, g: f64, e: f64, count: usize) -> Vec<f64> {
    let mut t = (2.0 * h0 / g).sqrt();
    let mut v = g * t * e;
    let mut out = vec![t];
    while out.len() < count {
        t += 2.0 * v / g;
        v *= e;
        out.push(t);
    }
    out
}

/// The times at which column `n` steps up (the time of the row after the step).
fn steps_up(csv: &str, name: &str) -> Vec<f64> {
    let columns = csv_columns(csv);
    let (time, n) = (&columns["time"], &columns[name]);
    (1..n.len())
        .filter(|&k| n[k] > n[k - 1])
        .map(|k| time[k])
        .collect()
}

fn simulate(name: &str, text: &str, args: &[&str]) -> String {
    let file = model_file(name, text);
    let mut all = vec!["simulate", file.to_str().expect("utf-8")];
    all.extend(args);
    let (csv, err, code) = simulate_csv(name, &all);
    assert_eq!(code, 0, "{err}");
    csv
}

#[test]
fn a_bouncing_ball_hits_the_floor_when_the_closed_form_says() {
    let exact = impacts(1.0, 9.81, 0.8, 10);
    for method in [
        ["--method", "bdf", "--tol", "1e-11", "--step", "0.1"],
        [
            "--method",
            "trapezoidal",
            "--tol",
            "1e-12",
            "--step",
            "0.01",
        ],
    ] {
        let mut args = method.to_vec();
        args.extend(["--stop", "3.7", "--vars", "h,v,n"]);
        let csv = simulate("ball", BALL, &args);
        let seen = steps_up(&csv, "n");
        assert!(seen.len() >= 10, "{method:?}: {seen:?}");
        for (k, (t, want)) in seen.iter().zip(&exact).enumerate() {
            let error = (t - want).abs() / want;
            assert!(error < 1e-9, "{method:?}: impact {k} at {t}, not {want}");
        }
        // Two rows at an impact: falling before, rising after, at the same time.
        let columns = csv_columns(&csv);
        let before = columns["time"]
            .iter()
            .position(|&t| t == seen[0])
            .expect("the impact's row");
        let (v, after) = (&columns["v"], before + 1);
        assert_eq!(columns["time"][after], seen[0], "{method:?}");
        assert!(v[before] < 0.0 && v[after] > 0.0, "{method:?}");
        assert!((v[after] + 0.8 * v[before]).abs() < 1e-12, "{method:?}");
    }
}

#[test]
fn a_ball_whose_bounces_accumulate_stops_with_an_error_not_a_hang_or_a_fall() {
    let file = model_file("zeno", &BALL.replace("e = 0.8", "e = 0.5"));
    for method in ["bdf", "trapezoidal"] {
        let (out, err, code) = mocca(&[
            "simulate",
            file.to_str().expect("utf-8"),
            "--method",
            method,
            "--stop",
            "10",
            "--step",
            "0.01",
        ]);
        assert_eq!(code, 1, "{method}: {out}{err}");
        assert!(err.contains("events accumulate"), "{method}: {err}");
        // The accumulation point of the bounces.
        let t1 = (2.0 / 9.81f64).sqrt();
        let limit = t1 + 2.0 * 0.5 * t1 / (1.0 - 0.5);
        let at: f64 = err
            .split("events accumulate at t = ")
            .nth(1)
            .and_then(|rest| rest.split(':').next())
            .and_then(|t| t.parse().ok())
            .expect("the time in the message");
        assert!(
            (at - limit).abs() < 1e-3,
            "{method}: at {at}, limit {limit}"
        );
    }
}

const COUNTER: &str = "model Counter
  Integer n(start = 0);
  Real x(start = 0, fixed = true);
equation
  der(x) = n;
  when sample(0, 0.1) then
    n = pre(n) + 1;
  end when;
end Counter;
";

#[test]
fn sample_counts_each_instant_once_and_holds_between() {
    for method in ["bdf", "trapezoidal", "euler"] {
        let csv = simulate(
            "counter",
            COUNTER,
            &[
                "--method", method, "--stop", "1", "--step", "0.05", "--vars", "n,x",
            ],
        );
        let columns = csv_columns(&csv);
        let (time, n, x) = (&columns["time"], &columns["n"], &columns["x"]);
        // Not at the start (only `initial()` fires there), then once at each 0.1 k.
        assert_eq!(steps_up(&csv, "n").len(), 10, "{method}");
        assert_eq!(*n.last().expect("rows"), 10.0, "{method}");
        for k in 0..time.len() {
            // n counts the instants passed; x integrates the staircase exactly.
            let passed = (time[k] * 10.0 + 1e-9).floor();
            let before = k + 1 < time.len() && time[k + 1] == time[k];
            let expected = if before { passed - 1.0 } else { passed };
            assert_eq!(n[k], expected, "{method}: n at {}", time[k]);
            let whole = (time[k] * 10.0 + 1e-9).floor();
            let exact = 0.1 * whole * (whole - 1.0) / 2.0 + whole * (time[k] - 0.1 * whole);
            assert!((x[k] - exact).abs() < 1e-9, "{method}: x at {}", time[k]);
        }
    }
}

#[test]
fn when_initial_fires_at_the_start_and_edge_fires_once() {
    let text = "model Start
  Integer k(start = 5);
  Integer rises(start = 0);
  Boolean above(start = false);
  Real x(start = 0, fixed = true);
equation
  der(x) = 1;
  when initial() then
    k = 7;
  end when;
  when x > 0.25 then
    above = true;
  end when;
  when edge(above) then
    rises = pre(rises) + 1;
  end when;
end Start;
";
    let csv = simulate(
        "start",
        text,
        &[
            "--method",
            "bdf",
            "--stop",
            "1",
            "--step",
            "0.1",
            "--vars",
            "k,rises,above",
        ],
    );
    let columns = csv_columns(&csv);
    assert!(columns["k"].iter().all(|&k| k == 7.0), "{csv}");
    assert_eq!(*columns["rises"].last().expect("rows"), 1.0, "{csv}");
    let switched = steps_up(&csv, "above");
    assert_eq!(switched.len(), 1);
    assert!((switched[0] - 0.25).abs() < 1e-10, "{switched:?}");
}

#[test]
fn hybrid_rules_of_the_specification_are_errors_at_their_spans() {
    let cases = [
        (
            "reinit_outside",
            "model M Real x(start = 1, fixed = true); equation der(x) = -x; reinit(x, 1); end M;",
            "only allowed inside `when`",
        ),
        (
            "two_whens",
            "model M Real x(start = 0, fixed = true); Integer n; equation der(x) = 1;
             when x > 1 then n = 1; end when; when x > 2 then n = 2; end when; end M;",
            "assigned in two `when` clauses",
        ),
        (
            "reinit_non_state",
            "model M Real x(start = 0, fixed = true); Real y; equation der(x) = 1; y = 2;
             when x > 1 then reinit(y, 0); end when; end M;",
            "is not a state",
        ),
        (
            "when_initial_section",
            "model M Real x(start = 0, fixed = true); Integer n; equation der(x) = 1;
             when x > 1 then n = 1; end when; initial equation when x > 1 then n = 2; end when; end M;",
            "not allowed in an initial equation section",
        ),
        (
            "assign_state",
            "model M Real x(start = 0, fixed = true); equation der(x) = 1;
             when x > 1 then x = 0; end when; end M;",
            "is a state",
        ),
        (
            "pre_of_expression",
            "model M Real x(start = 0, fixed = true); Integer n; equation der(x) = 1;
             when x > 1 then n = pre(n + 1); end when; end M;",
            "`pre` takes a variable",
        ),
        (
            "when_in_varying_if",
            "model M Real x(start = 0, fixed = true); Integer n; equation der(x) = 1;
             if x > 1 then when x > 2 then n = 1; end when; end if; end M;",
            "`when` inside an if-equation whose condition is not known",
        ),
        (
            "terminate_outside",
            "model M Real x(start = 0, fixed = true); equation der(x) = 1; terminate(\"no\"); end M;",
            "`terminate` is only allowed inside `when`",
        ),
    ];
    for (name, text, message) in cases {
        let file = model_file(name, text);
        let (_, err, code) = mocca(&["check", file.to_str().expect("utf-8")]);
        assert_eq!(code, 1, "{name}: {err}");
        assert!(err.contains(message), "{name}: {err}");
        assert!(err.contains("┌─"), "{name}: no span in {err}");
    }
}

#[test]
fn flat_hybrid_models_read_back_to_themselves() {
    for (name, text) in [
        ("ball_flat", BALL),
        ("counter_flat", COUNTER),
        ("branches_flat", BRANCHES),
    ] {
        let file = model_file(name, text);
        let (flat, err, code) = mocca(&["flatten", file.to_str().expect("utf-8")]);
        assert_eq!(code, 0, "{err}");
        assert!(flat.contains("when ") && flat.contains(" = pre("), "{flat}");
        assert!(
            !flat.contains("'pre("),
            "held helpers print as calls: {flat}"
        );
        let again = model_file(&format!("{name}_again"), &flat);
        let (twice, err, code) = mocca(&["flatten", again.to_str().expect("utf-8")]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(twice, flat);
    }
}

#[test]
fn json_counts_the_events_and_emit_refuses_what_it_cannot_run() {
    let file = model_file("counter_json", COUNTER);
    let path = file.to_str().expect("utf-8");
    let value = cli_support::mocca_json(&[
        "simulate", path, "--method", "bdf", "--stop", "1", "--step", "0.1", "--format", "json",
    ]);
    let events = &value["events"];
    assert_eq!(events["time_events"], 10, "{value}");
    assert_eq!(events["state_events"], 0, "{value}");
    assert_eq!(events["first_times"][0], 0.1, "{value}");
    let out = cli_support::temp_path("counter_crate");
    let out_arg = out.to_str().expect("utf-8");
    let (_, err, code) = mocca(&["emit", path, "--partition", "weak", "--fmu", out_arg]);
    assert_eq!(code, 1, "{err}");
    // Its events are no reason to refuse (subsystem FMUs handle theirs); its one subsystem is.
    assert!(err.contains("is one subsystem"), "{err}");
    assert!(!out.exists(), "nothing half-written");
}

/// OpenModelica's bouncing ball (its users' guide example): `impact` is a Boolean computed
/// from a relation outside `when`, so `edge(impact)` reads its value from before the event.
const OMC_BALL: &str = "model BouncingBall
  parameter Real e=0.7 \"coefficient of restitution\";
  parameter Real g=9.81 \"gravity acceleration\";
  Real h(fixed=true, start=1) \"height of ball\";
  Real v(fixed=true) \"velocity of ball\";
  Boolean flying(fixed=true, start=true) \"true, if ball is flying\";
  Boolean impact;
  Real v_new(fixed=true);
  Integer foo;
equation
  impact = h <= 0.0;
  foo = if impact then 1 else 2;
  der(v) = if flying then -g else 0;
  der(h) = v;
  when {h <= 0.0 and v <= 0.0,impact} then
    v_new = if edge(impact) then -e*pre(v) else 0;
    flying = v_new > 0;
    reinit(v, v_new);
  end when;
end BouncingBall;
";

#[test]
fn openmodelicas_bouncing_ball_bounces_as_the_closed_form_says() {
    let csv = simulate(
        "omc_ball",
        OMC_BALL,
        &[
            "--method",
            "bdf",
            "--tol",
            "1e-11",
            "--stop",
            "2.5",
            "--step",
            "0.1",
            "--vars",
            "h,v,flying",
        ],
    );
    let columns = csv_columns(&csv);
    let (time, v) = (&columns["time"], &columns["v"]);
    // The impacts: the rows where the speed turns from falling to rising.
    let seen: Vec<f64> = (1..v.len())
        .filter(|&k| v[k - 1] < 0.0 && v[k] > 0.0 && time[k] == time[k - 1])
        .map(|k| time[k])
        .collect();
    // Near the accumulation point (2.558) each impact inherits the error of all before it:
    // the first six are held to the closed form.
    let exact = impacts(1.0, 9.81, 0.7, 6);
    assert!(seen.len() >= 6, "{seen:?}");
    for (t, want) in seen.iter().zip(&exact) {
        assert!((t - want).abs() / want < 1e-9, "impact at {t}, not {want}");
    }
    assert!(columns["flying"].iter().all(|&f| f == 1.0));
}

/// `for` and `if` inside `when`, an `assert` in a branch of a varying if-equation, and
/// `terminate`/`terminal()`.
const BRANCHES: &str = "model Branches
  parameter Integer n = 3;
  Real x(start = 0, fixed = true);
  discrete Real y[n](each start = 0, each fixed = true);
  Integer count(start = 0, fixed = true);
  Boolean big(start = false, fixed = true);
equation
  der(x) = 1;
  if x > 10 then
    assert(x < 0, \"only checked beyond 10\");
  end if;
  when sample(0, 0.25) then
    for i in 1:n loop
      y[i] = pre(y[i]) + i;
    end for;
    if x > 1.1 then
      count = pre(count) + 10;
      big = true;
    else
      count = pre(count) + 1;
    end if;
  end when;
end Branches;
";

#[test]
fn if_and_for_inside_when_run_the_branch_that_holds() {
    // Samples at 0.25 … 1.75 (the one at the start fires no clause): four while x ≤ 1.1,
    // then three beyond it.
    for method in ["bdf", "trapezoidal"] {
        let csv = simulate(
            &format!("branches_{method}"),
            BRANCHES,
            &[
                "--method",
                method,
                "--stop",
                "1.9",
                "--step",
                "0.1",
                "--vars",
                "count,big,y[1],y[3]",
            ],
        );
        let columns = csv_columns(&csv);
        let last = |name: &str| *columns[name].last().expect("rows");
        assert_eq!(last("count"), 4.0 + 30.0, "{method}: {csv}");
        assert_eq!(last("big"), 1.0, "{method}");
        assert_eq!(last("y[1]"), 7.0, "{method}");
        assert_eq!(last("y[3]"), 21.0, "{method}");
        // `big` keeps its value in the branch that does not assign it.
        let switched = steps_up(&csv, "big");
        assert_eq!(switched, [1.25], "{method}: {csv}");
    }
}

#[test]
fn terminate_ends_the_run_at_its_event_and_terminal_fires_at_the_end() {
    let text = "model Stop
  Real x(start = 0, fixed = true);
  Integer n(start = 0, fixed = true);
equation
  der(x) = 2;
  when x > 1.3 then
    terminate(\"x passed 1.3\");
  end when;
  when terminal() then
    n = pre(n) + 1;
    assert(n > 5, \"terminal fired\", AssertionLevel.warning);
  end when;
end Stop;
";
    for method in ["bdf", "implicit-euler"] {
        let file = model_file(&format!("stop_{method}"), text);
        let path = file.to_str().expect("utf-8");
        let args = [
            "simulate", path, "--method", method, "--stop", "2", "--step", "0.1",
        ];
        let (csv, err, code) = simulate_csv(&format!("stop_{method}"), &args);
        assert_eq!(code, 0, "{err}");
        assert!(err.contains("terminated the run at time 0.65"), "{err}");
        assert!(err.contains("x passed 1.3"), "{err}");
        assert!(err.contains("terminal fired"), "terminal() fired: {err}");
        let times = &csv_columns(&csv)["time"];
        assert!((times.last().expect("rows") - 0.65).abs() < 1e-10, "{csv}");
        let x = &csv_columns(&csv)["x"];
        assert!((x.last().expect("rows") - 1.3).abs() < 1e-9, "{csv}");
        let mut json_args = args.to_vec();
        json_args.extend(["--format", "json"]);
        let value = cli_support::mocca_json(&json_args);
        assert_eq!(value["terminated"]["message"], "x passed 1.3", "{value}");
    }
}

#[test]
fn an_error_assert_in_a_when_stops_the_run_at_its_event() {
    let file = model_file(
        "when_assert",
        "model A Real x(start = 0, fixed = true); Integer n(start = 0, fixed = true);
         equation der(x) = 1;
         when x > 0.5 then n = pre(n) + 1; assert(n < 0, \"n stays negative\"); end when;
         end A;",
    );
    let (_, err, code) = mocca(&["simulate", file.to_str().expect("utf-8"), "--stop", "1"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("assertion failed at the event at t = 0.5")
            && err.contains("n stays negative"),
        "{err}"
    );
    assert!(err.contains("┌─"), "no span in {err}");
}

#[test]
fn check_blt_and_the_analyses_report_the_discrete_part() {
    let file = model_file("ball_report", BALL_WITH_MODE);
    let path = file.to_str().expect("utf-8");
    let (out, err, code) = mocca(&["check", path]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("discrete                  2  (n, flying)"),
        "{out}"
    );
    assert!(out.contains("when clauses              1"), "{out}");
    let value = cli_support::mocca_json(&["check", path, "--format", "json"]);
    assert_eq!(value["discrete"], serde_json::json!(["n", "flying"]));
    assert_eq!(value["when_clauses"], 1);
    let (out, err, code) = mocca(&["blt", path]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("solve flying  (discrete)"), "{out}");
    assert!(out.contains("at events  assign n; reinit v"), "{out}");
    // The mode is the discrete values at the operating point: falling below the floor,
    // `flying` is false.
    let (out, err, code) = mocca(&["jacobian", path, "--at", "start,h=-1,v=-1"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("mode `n = 0, flying = false`"), "{out}");
    let (out, _, _) = mocca(&["cycles", path]);
    assert!(out.contains("mode `n = 0, flying = true`"), "{out}");
    let value = cli_support::mocca_json(&["jacobian", path, "--format", "json"]);
    assert_eq!(value["modes"][0]["flying"], "true", "{value}");
}

const BALL_WITH_MODE: &str = "model Ball
  Real h(start = 1, fixed = true);
  Real v(start = 0, fixed = true);
  Integer n(start = 0, fixed = true);
  Boolean flying;
equation
  der(h) = v;
  der(v) = if flying then -9.81 else 0;
  flying = v > 0 or h > 0;
  when h < 0 then
    reinit(v, -0.8*pre(v));
    n = pre(n) + 1;
  end when;
end Ball;
";

/// The weak RC ladder with a state event (C2's voltage reset when it passes 0.3) and a
/// sample clock.
const WEAK_EVENTS: &str = "model WeakEvents
  extends RCLadderWeak;
  Integer resets(start = 0, fixed = true);
  Integer ticks(start = 0, fixed = true);
equation
  when C2.v > 0.3 then
    reinit(C2.v, 0);
    resets = pre(resets) + 1;
  end when;
  when sample(0, 0.5) then
    ticks = pre(ticks) + 1;
  end when;
end WeakEvents;
";

#[test]
fn a_weakly_partitioned_run_locates_events_converging_at_its_order() {
    let ladder = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/rc_ladder_weak.mo");
    let file = model_file("weak_events", WEAK_EVENTS);
    let run = |name: &str, extra: &[&str]| {
        let mut args = vec![
            "simulate",
            ladder,
            file.to_str().expect("utf-8"),
            "--model",
            "WeakEvents",
            "--stop",
            "2",
            "--vars",
            "resets,ticks",
        ];
        args.extend(extra);
        let (csv, err, code) = simulate_csv(name, &args);
        assert_eq!(code, 0, "{err}");
        csv
    };
    let reference = run(
        "weak_events_bdf",
        &["--method", "bdf", "--tol", "1e-11", "--step", "0.01"],
    );
    let exact = steps_up(&reference, "resets");
    assert_eq!(exact.len(), 3, "{exact:?}");
    for exchange in ["gauss-seidel", "jacobi"] {
        let mut errors = Vec::new();
        for step in ["1e-3", "1e-4"] {
            let csv = run(
                &format!("weak_events_{exchange}_{step}"),
                &[
                    "--partition",
                    "weak",
                    "--exchange",
                    exchange,
                    "--method",
                    "trapezoidal",
                    "--step",
                    step,
                ],
            );
            let resets = steps_up(&csv, "resets");
            assert_eq!(resets.len(), exact.len(), "{exchange} {step}: {resets:?}");
            errors.push((resets[0] - exact[0]).abs());
            // The clock's events are exact: at 0.5, 1, 1.5 and 2 (the start fires nothing).
            assert_eq!(
                steps_up(&csv, "ticks"),
                [0.5, 1.0, 1.5, 2.0],
                "{exchange} {step}"
            );
        }
        // The weak exchange lags by a step: first order in the step.
        let ratio = errors[0] / errors[1];
        assert!(
            (8.0..12.0).contains(&ratio),
            "{exchange}: errors {errors:?}"
        );
    }
}

#[test]
fn conditions_on_a_variable_alias_elimination_removed_still_switch() {
    // `y = x` makes `y` an alias of the state `x`: the relation in `z`'s equation and the
    // `when` condition read it through its binding.
    let text = "model Aliased
  Real x(start = 0, fixed = true);
  Real y;
  Real z;
  Integer n(start = 0, fixed = true);
equation
  der(x) = 1;
  y = x;
  z = if y > 0.45 then 1 else 0;
  when y > 0.75 then
    n = pre(n) + 1;
  end when;
end Aliased;
";
    for method in ["bdf", "trapezoidal"] {
        let csv = simulate(
            &format!("aliased_{method}"),
            text,
            &["--method", method, "--step", "0.1", "--vars", "z,n"],
        );
        let z = steps_up(&csv, "z");
        let n = steps_up(&csv, "n");
        assert!(
            z.len() == 1 && (z[0] - 0.45).abs() < 1e-9,
            "{method}: {csv}"
        );
        assert!(
            n.len() == 1 && (n[0] - 0.75).abs() < 1e-9,
            "{method}: {csv}"
        );
    }
}

/// An equation that reads `sample` (not a `when` condition) sees it true at the sample
/// instant: a latch set by the first sample holds from then on.
#[test]
fn an_equation_reading_sample_sees_it_true_at_the_instant() {
    let text = "model Latch
  Boolean b;
  Boolean q(start = false, fixed = true);
equation
  b = sample(0.3, 0.5);
  q = b or pre(q);
end Latch;
";
    for method in ["implicit-euler", "bdf"] {
        let args = [
            "--stop", "1", "--step", "0.1", "--method", method, "--vars", "q",
        ];
        let csv = simulate("latch", text, &args);
        assert_eq!(steps_up(&csv, "q"), [0.3], "{method}:\n{csv}");
    }
}

/// A pulse whose end is a relation of time against a discrete start (as the standard
/// library's BooleanPulse): its fall is an event, so a `when` on the pulse sees each rise.
#[test]
fn a_when_clause_sees_every_rise_of_a_pulse_that_time_relations_end() {
    let text = "model Pulse
  parameter Real period = 1;
  parameter Real width = 0.5;
  discrete Real pulseStart(start = 0, fixed = true);
  Boolean y;
  Integer count(start = 0, fixed = true);
equation
  when sample(0, period) then
    pulseStart = time;
  end when;
  y = time >= pulseStart and time < pulseStart + width;
  when y then
    count = pre(count) + 1;
  end when;
end Pulse;
";
    let rises: Vec<f64> = (1..=9).map(f64::from).collect();
    for method in ["heun", "bdf"] {
        let args = [
            "--stop", "9.75", "--step", "0.25", "--method", method, "--vars", "count",
        ];
        let csv = simulate("pulse", text, &args);
        assert_eq!(steps_up(&csv, "count"), rises, "{method}:\n{csv}");
    }
}

/// `sample` may start at a parameter the initial system computes (`t0 = time`, as the
/// standard library's Mean block): its instants follow the run's start.
#[test]
fn a_sample_may_start_at_a_parameter_the_initial_system_computes() {
    let text = "model Mean
  parameter Real f = 2;
  parameter Real t0(fixed = false);
  Real x;
  discrete Real y(start = 0, fixed = true);
  Integer n(start = 0, fixed = true);
initial equation
  t0 = time;
  x = 0;
equation
  der(x) = 1;
  when sample(t0 + 1/f, 1/f) then
    y = f*pre(x);
    n = pre(n) + 1;
    reinit(x, 0);
  end when;
end Mean;
";
    let args = [
        "--start", "0.2", "--stop", "1.3", "--step", "0.1", "--vars", "n,y",
    ];
    let csv = simulate("mean", text, &args);
    let rises = steps_up(&csv, "n");
    assert_eq!(rises.len(), 2, "{csv}");
    for (at, want) in rises.iter().zip([0.7, 1.2]) {
        assert!((at - want).abs() < 1e-9, "{rises:?}");
    }
    // The mean of der(x) = 1 over each period.
    let y = *csv_columns(&csv)["y"].last().expect("rows");
    assert!((y - 1.0).abs() < 1e-9, "{y}");
}
