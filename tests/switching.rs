//! Relations and event functions in equations (Modelica 8.5, SPEC §6): each holds its value
//! during a step and switches at an event located on its crossing, checked against closed
//! forms and hand-computed recurrences, with BDF and with trapezoidal on a fine step.

mod cli_support;

use cli_support::{csv_columns, mocca, mocca_json, model_file, simulate_csv};

/// BDF at a tight tolerance, and trapezoidal with the fine `step`: the two runs every test
/// makes.
fn methods(step: &str) -> [[&str; 4]; 2] {
    [
        ["--method", "bdf", "--tol", "1e-10"],
        ["--method", "trapezoidal", "--step", step],
    ]
}

/// The run's event times (`first_times`, up to ten) and its CSV's columns.
struct Run {
    events: Vec<f64>,
    state_events: u64,
    columns: std::collections::BTreeMap<String, Vec<f64>>,
}

fn run(name: &str, text: &str, args: &[&str]) -> Run {
    let file = model_file(name, text);
    let path = file.to_str().expect("utf-8");
    let mut all = vec!["simulate", path];
    all.extend(args);
    let (csv, err, code) = simulate_csv(name, &all);
    assert_eq!(code, 0, "{args:?}: {err}");
    all.extend(["--format", "json"]);
    let value = mocca_json(&all);
    // No `events` without any.
    let events = &value["events"];
    Run {
        events: events["first_times"]
            .as_array()
            .map(|times| times.iter().map(|t| t.as_f64().expect("a time")).collect())
            .unwrap_or_default(),
        state_events: events["state_events"].as_u64().unwrap_or(0),
        columns: csv_columns(&csv),
    }
}

impl Run {
    fn last(&self, name: &str) -> f64 {
        *self.columns[name].last().expect("a row")
    }
}

fn assert_close(what: &str, got: f64, want: f64, relative: f64) {
    let error = (got - want).abs() / want.abs().max(1e-300);
    assert!(error < relative, "{what}: {got}, not {want} ({error:e})");
}

const RELAY: &str = "model Relay
  Real u;
  Boolean y(start = false, fixed = true);
  Real on(start = 0, fixed = true);
equation
  u = 2*sin(time);
  y = if pre(y) then u > -1 else u > 1;
  der(on) = if y then 1 else 0;
end Relay;
";

#[test]
fn a_relay_with_hysteresis_switches_where_arcsin_says() {
    let a = 0.5f64.asin();
    let pi = std::f64::consts::PI;
    // On when u rises through 1, off when it falls through −1; u = 2 sin t also falls through
    // 1 and rises through −1, where a relation switches and `y` does not.
    let want = [a, pi - a, pi + a, 2.0 * pi - a, 2.0 * pi + a];
    for method in methods("1e-3") {
        let mut args = method.to_vec();
        args.extend(["--stop", "7", "--vars", "y,on"]);
        let r = run("relay", RELAY, &args);
        assert_eq!(r.events.len(), 5, "{method:?}: {:?}", r.events);
        for (k, (&t, &w)) in r.events.iter().zip(&want).enumerate() {
            assert_close(&format!("{method:?}: switch {k}"), t, w, 1e-10);
        }
        // On from asin(1/2) to π + asin(1/2) and again from 2π + asin(1/2): the integral of
        // `y` sees each switch at its time.
        assert_close(
            &format!("{method:?}: time on"),
            r.last("on"),
            pi + 7.0 - want[4],
            1e-8,
        );
        assert_eq!(r.last("y"), 1.0, "{method:?}");
    }
}

#[test]
fn no_event_relations_switch_inside_a_step_without_events() {
    let text = RELAY.replace(
        "if pre(y) then u > -1 else u > 1",
        "noEvent(if pre(y) then u > -1 else u > 1)",
    );
    let r = run(
        "relay_no_event",
        &text,
        &["--method", "bdf", "--stop", "7", "--vars", "y"],
    );
    assert_eq!(r.state_events, 0, "{:?}", r.events);
}

/// A half-wave rectifier: a sine source, a diode written as the standard library's IdealDiode
/// is (Boolean `off`, curve parameter `s`) and an RC load.
const RECTIFIER: &str = "model Rectifier
  constant Real pi = 3.141592653589793;
  parameter Real Ron = 1, Goff = 1e-3, Vknee = 0;
  parameter Real R = 100, C = 1e-3, V = 10, f = 50;
  Real vs, vd, i, vc(start = 0, fixed = true), s(start = 0);
  Boolean off(start = true);
equation
  vs = V*sin(2*pi*f*time);
  off = s < 0;
  vd = s*(if off then 1 else Ron) + Vknee;
  i = s*(if off then Goff else 1) + Goff*Vknee;
  vs = vd + vc;
  C*der(vc) = i - vc/R;
end Rectifier;
";

/// The rectifier's switching times: in either mode `C vc' = G (vs − vc) − vc/R` (`G` is
/// `1/Ron` conducting, `Goff` blocking) is linear, solved in closed form, and the diode
/// switches where `vs − vc` changes sign (found by scanning and bisecting the closed form).
fn rectifier_switches(count: usize) -> Vec<f64> {
    let (v, f, r, c, ron, goff) = (10.0, 50.0, 100.0, 1e-3, 1.0, 1e-3);
    let w = 2.0 * std::f64::consts::PI * f;
    let (mut t0, mut v0, mut on) = (0.0f64, 0.0f64, true);
    let mut out = Vec::new();
    while out.len() < count {
        let g = if on { 1.0 / ron } else { goff };
        let (a, b) = ((g + 1.0 / r) / c, g * v / c);
        let (p, q) = (a * b / (a * a + w * w), -w * b / (a * a + w * w));
        let steady = |t: f64| p * (w * t).sin() + q * (w * t).cos();
        let vc = |t: f64| steady(t) + (v0 - steady(t0)) * (-a * (t - t0)).exp();
        let d = |t: f64| v * (w * t).sin() - vc(t);
        let h = 1e-6;
        let mut t = t0 + h;
        let sign = d(t) > 0.0;
        while (d(t) > 0.0) == sign {
            t += h;
        }
        let (mut lo, mut hi) = (t - h, t);
        for _ in 0..100 {
            let mid = 0.5 * (lo + hi);
            if (d(mid) > 0.0) == sign {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        out.push(hi);
        (t0, v0, on) = (hi, vc(hi), !on);
    }
    out
}

#[test]
fn an_ideal_diode_rectifier_conducts_when_the_closed_form_says() {
    let want = rectifier_switches(9);
    for (method, tolerance) in methods("1e-5").iter().zip([1e-9, 1e-6]) {
        let mut args = method.to_vec();
        args.extend(["--stop", "0.1", "--vars", "vc,off"]);
        let r = run("rectifier", RECTIFIER, &args);
        assert!(r.events.len() >= 9, "{method:?}: {:?}", r.events);
        for (k, (&t, &w)) in r.events.iter().zip(&want).enumerate() {
            assert_close(&format!("{method:?}: switch {k}"), t, w, tolerance);
        }
        // Blocking at the end (the last switch, at 0.0859, turned it off).
        assert_eq!(r.last("off"), 1.0, "{method:?}");
    }
}

/// A mass sliding on a floor with Coulomb friction, pushed by a force below the break-away
/// force: it slows down at a constant rate, sticks when it stops, and stays stuck.
const SLIDE: &str = include_str!("data/slide.mo");

#[test]
fn a_sliding_mass_sticks_when_the_closed_form_says() {
    let (m, g, mu, v0, f) = (1.0, 9.81, 0.3, 2.0, 1.0);
    let stop = v0 * m / (mu * m * g - f);
    for method in methods("1e-3") {
        let mut args = method.to_vec();
        args.extend(["--stop", "2", "--vars", "x,v,sliding"]);
        let r = run("slide", SLIDE, &args);
        assert_eq!(r.events.len(), 1, "{method:?}: {:?}", r.events);
        assert_close(&format!("{method:?}: stop"), r.events[0], stop, 1e-10);
        assert_close(
            &format!("{method:?}: x"),
            r.last("x"),
            v0 * stop / 2.0,
            1e-8,
        );
        assert!(r.last("v").abs() < 1e-9, "{method:?}: v = {}", r.last("v"));
        assert_eq!(r.last("sliding"), 0.0, "{method:?}");
    }
}

const STAIRCASE: &str = "model Staircase
  Real y;
  Real x(start = 0, fixed = true);
equation
  y = floor(10*time);
  der(x) = y;
end Staircase;
";

#[test]
fn floor_of_time_is_an_exact_staircase() {
    for method in methods("1e-3") {
        let mut args = method.to_vec();
        args.extend(["--stop", "2", "--vars", "y,x"]);
        let r = run("staircase", STAIRCASE, &args);
        for (k, &t) in r.events.iter().enumerate() {
            assert_close(
                &format!("{method:?}: step {k}"),
                t,
                (k + 1) as f64 / 10.0,
                1e-12,
            );
        }
        // Between events y is floor(10 t); at each, two rows: the step before and after.
        let (time, y) = (&r.columns["time"], &r.columns["y"]);
        for (k, &t) in time.iter().enumerate() {
            if (10.0 * t - (10.0 * t).round()).abs() > 1e-9 {
                assert_eq!(y[k], (10.0 * t).floor(), "{method:?}: y at {t}");
            }
        }
        for &e in &r.events {
            let first = time
                .iter()
                .position(|&t| t == e)
                .expect("a row at the event");
            let last = time
                .iter()
                .rposition(|&t| t == e)
                .expect("a row at the event");
            assert_eq!(y[last], y[first] + 1.0, "{method:?}: the step at {e}");
        }
        // ∫ floor(10 t) dt over [0, 2] = Σ k/10 for k < 20.
        assert_close(&format!("{method:?}: x"), r.last("x"), 19.0, 1e-12);
    }
}

#[test]
fn mod_rem_div_and_ceil_of_time_step_at_their_jumps() {
    let text = "model Steps
  Real a, b, c, d;
equation
  a = mod(time, 0.3);
  b = rem(time - 1, 0.3);
  c = div(time - 1, 0.3);
  d = ceil(time - 0.55);
end Steps;
";
    let r = run(
        "steps",
        text,
        &["--method", "bdf", "--stop", "1.15", "--vars", "a,b,c,d"],
    );
    // mod jumps where time / 0.3 crosses 1, 2, 3; rem and div where (time − 1) / 0.3 crosses
    // −3, −2, −1 (not at 0: towards zero, div is 0 on both sides); ceil where time crosses
    // 0.55.
    let want = [0.1, 0.3, 0.4, 0.55, 0.6, 0.7, 0.9];
    assert_eq!(r.events.len(), want.len(), "{:?}", r.events);
    for (k, (&t, &w)) in r.events.iter().zip(&want).enumerate() {
        assert_close(&format!("jump {k}"), t, w, 1e-11);
    }
    let (time, columns) = (&r.columns["time"], &r.columns);
    for (k, &t) in time.iter().enumerate() {
        if want.iter().any(|&e| (e - t).abs() < 1e-9) {
            continue;
        }
        let q = ((t - 1.0) / 0.3).trunc();
        let exact = [
            ("a", t - (t / 0.3).floor() * 0.3),
            ("b", t - 1.0 - q * 0.3),
            ("c", q),
            ("d", (t - 0.55).ceil()),
        ];
        for (name, value) in exact {
            assert!(
                (columns[name][k] - value).abs() < 1e-12,
                "{name} at {t}: {}",
                columns[name][k]
            );
        }
    }
}

/// A discrete PI controller (sampled at `Ts`, output held between samples) on a first-order
/// plant `T x' = u − x`.
const SAMPLED_PI: &str = "model SampledPI
  parameter Real Ts = 0.1, k = 2, Ti = 0.5, T = 1, r = 1;
  Real x(start = 0, fixed = true);
  discrete Real u(start = 0), I(start = 0);
equation
  T*der(x) = -x + u;
  when sample(0, Ts) then
    I = pre(I) + Ts/Ti*(r - x);
    u = k*(r - x) + I;
  end when;
end SampledPI;
";

#[test]
fn a_sampled_pi_controller_follows_its_recurrence() {
    let (ts, k, ti, t, r) = (0.1f64, 2.0, 0.5, 1.0f64, 1.0);
    // The samples at Ts, 2 Ts, … (the one at the start is initialisation's, where `when`
    // does not fire); between them the plant relaxes to the held u exactly.
    let (mut x, mut u, mut i) = (0.0f64, 0.0f64, 0.0f64);
    let mut expected = Vec::new();
    for _ in 0..20 {
        x = u + (x - u) * (-ts / t).exp();
        let e = r - x;
        i += ts / ti * e;
        u = k * e + i;
        expected.push((x, u));
    }
    for method in methods("1e-3") {
        let mut args = method.to_vec();
        args.extend(["--stop", "2", "--vars", "x,u"]);
        let run = run("sampled_pi", SAMPLED_PI, &args);
        let (time, xs, us) = (&run.columns["time"], &run.columns["x"], &run.columns["u"]);
        for (n, &(x, u)) in expected.iter().enumerate() {
            let at = (n + 1) as f64 * ts;
            let row = time
                .iter()
                .rposition(|&t| (t - at).abs() < 1e-12)
                .unwrap_or_else(|| panic!("{method:?}: no row at {at}"));
            let precision = 1e-7;
            assert!(
                (xs[row] - x).abs() < precision,
                "{method:?}: x at {at}: {} not {x}",
                xs[row]
            );
            assert!(
                (us[row] - u).abs() < 2.0 * precision,
                "{method:?}: u at {at}: {} not {u}",
                us[row]
            );
        }
    }
}

#[test]
fn bdf_and_trapezoidal_agree_on_every_switching_model() {
    let models = [
        ("relay", RELAY, "on", "7", "1e-3"),
        ("rectifier", RECTIFIER, "vc", "0.1", "1e-5"),
        ("slide", SLIDE, "x", "2", "1e-3"),
        ("staircase", STAIRCASE, "x", "2", "1e-3"),
        ("sampled_pi", SAMPLED_PI, "x", "2", "1e-3"),
    ];
    for (name, text, var, stop, step) in models {
        let file = model_file(&format!("agree_{name}"), text);
        let path = file.to_str().expect("utf-8");
        let last = |method: &[&str]| -> f64 {
            let mut args = vec!["simulate", path, "--stop", stop, "--vars", var];
            args.extend(method);
            let (csv, err, code) = simulate_csv(&format!("agree_{name}"), &args);
            assert_eq!(code, 0, "{name}: {err}");
            *csv_columns(&csv)[var].last().expect("a row")
        };
        let bdf = last(&["--method", "bdf", "--tol", "1e-8"]);
        let trapezoidal = last(&["--method", "trapezoidal", "--step", step]);
        let scale = bdf.abs().max(1.0);
        assert!(
            (bdf - trapezoidal).abs() < 1e-6 * scale,
            "{name}: BDF {bdf}, trapezoidal {trapezoidal}"
        );
    }
}

#[test]
fn a_relation_that_cannot_settle_is_an_error_naming_it() {
    // `y` switches the relation that defines it: no value is consistent.
    let text = "model Flip
  Real x(start = 0, fixed = true);
  Boolean y;
equation
  der(x) = 1;
  y = if x > 0.5 then not pre(y) else false;
end Flip;
";
    let file = model_file("flip", text);
    let (out, err, code) = mocca(&["simulate", file.to_str().expect("utf-8"), "--stop", "1"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("did not settle"), "{err}");
    assert!(err.contains('y'), "{err}");
}

#[test]
fn a_pulsed_rc_load_reaches_its_periodic_steady_state() {
    // τ = RC = one period, high half of it: the capacitor swings between v_high and
    // v_low = v_high·e^(−1/2), v_high = (1 − e^(−1/2)) / (1 − e^(−1)).
    let high = (1.0 - (-0.5f64).exp()) / (1.0 - (-1.0f64).exp());
    let low = high * (-0.5f64).exp();
    for method in methods("1e-6") {
        let mut args = method.to_vec();
        if method[1] == "bdf" {
            args.extend(["--step", "1e-6"]);
        }
        args.extend(["--stop", "0.002", "--vars", "v"]);
        let r = run("pulse_rc", include_str!("../examples/pulse_rc.mo"), &args);
        let (time, v) = (&r.columns["time"], &r.columns["v"]);
        let last_period = || time.iter().zip(v).filter(|&(&t, _)| t >= 0.0019 - 1e-12);
        let max = last_period().map(|(_, &v)| v).fold(f64::MIN, f64::max);
        let min = last_period().map(|(_, &v)| v).fold(f64::MAX, f64::min);
        // 20 periods from rest leave e^(−20) of the start-up; trapezoidal's error at h = τ/100
        // is about (h/τ)²/12.
        let precision = if method[1] == "bdf" { 1e-7 } else { 1e-5 };
        assert!(
            (max - high).abs() < precision,
            "{method:?}: high {max}, not {high}"
        );
        assert!(
            (min - low).abs() < precision,
            "{method:?}: low {min}, not {low}"
        );
    }
}
