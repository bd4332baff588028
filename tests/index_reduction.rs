//! Index reduction (Pantelides, dummy derivatives) against independent oracles: the angle ODE
//! of the pendulum integrated by a fine RK4 here, the closed form of a damped oscillator,
//! and conservation laws of the circuits and rods.

mod cli_support;

use cli_support::{csv_columns, mocca, mocca_json, model_file, simulate_csv};

const PENDULUM: &str = "
model Pendulum
  parameter Real L = 1;
  parameter Real m = 1;
  parameter Real g = 9.81;
  Real x(start = X0, fixed = true);
  Real y(start = Y0);
  Real vx(start = 0, fixed = true);
  Real vy(start = 0);
  Real F;
equation
  der(x) = vx;
  der(y) = vy;
  m*der(vx) = -F*x/L;
  m*der(vy) = -F*y/L - m*g;
  x^2 + y^2 = L^2;
end Pendulum;
";

fn pendulum(x0: f64, y0: f64) -> String {
    PENDULUM
        .replace("X0", &x0.to_string())
        .replace("Y0", &y0.to_string())
}

/// θ(t) of θ'' = −(g/L) sin θ, θ(0) = θ0, θ'(0) = 0, by RK4 with 10⁻⁵ steps, at `times`.
fn angle(theta0: f64, times: &[f64]) -> Vec<f64> {
    let f = |s: [f64; 2]| [s[1], -9.81 * s[0].sin()];
    let h = 1e-5;
    let mut s = [theta0, 0.0];
    let mut t = 0.0;
    let mut out = Vec::new();
    for &target in times {
        while t < target - h / 2.0 {
            let k1 = f(s);
            let k2 = f([s[0] + h / 2.0 * k1[0], s[1] + h / 2.0 * k1[1]]);
            let k3 = f([s[0] + h / 2.0 * k2[0], s[1] + h / 2.0 * k2[1]]);
            let k4 = f([s[0] + h * k3[0], s[1] + h * k3[1]]);
            for i in 0..2 {
                s[i] += h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
            }
            t += h;
        }
        out.push(s[0]);
    }
    out
}

#[test]
fn the_cartesian_pendulum_follows_the_angle_equation_and_keeps_its_length() {
    let path = model_file("pendulum", &pendulum(0.6, -0.8));
    let file = path.to_str().unwrap();
    let (csv, err, code) = simulate_csv(
        "pendulum",
        &[
            "simulate", file, "--method", "bdf", "--tol", "1e-10", "--stop", "2", "--step", "0.01",
            "--vars", "x,y,vx,F",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let c = csv_columns(&csv);
    let theta = angle(0.6f64.atan2(0.8), &c["time"]);
    for (k, th) in theta.iter().enumerate() {
        let (x, y) = (c["x"][k], c["y"][k]);
        assert!(
            (x - th.sin()).abs() < 1e-5,
            "x at {}: {x} vs {}",
            c["time"][k],
            th.sin()
        );
        assert!((y + th.cos()).abs() < 1e-5, "y at {}", c["time"][k]);
        assert!(
            (x * x + y * y - 1.0).abs() < 1e-8,
            "constraint at {}",
            c["time"][k]
        );
    }
    let json = mocca_json(&["check", file, "--format", "json"]);
    assert_eq!(json["index"], 3);
    assert_eq!(json["states"], 2);
    assert_eq!(json["state_names"], serde_json::json!(["x", "vx"]));
    let differentiated: Vec<(String, u64)> = json["differentiated"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["equation"].as_str().unwrap().to_string(),
                d["times"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(differentiated.contains(&("`x^2 + y^2 = L^2`".to_string(), 2)));
    assert!(differentiated.contains(&("`der(x) = vx`".to_string(), 1)));
    let (text, _, code) = mocca(&["check", file]);
    assert_eq!(code, 0);
    assert!(
        text.contains("index 3: differentiated") && text.contains("states x, vx"),
        "{text}"
    );
}

/// Dynamic state selection: the states chosen at the start (`y, vy` where the pendulum
/// starts nearer the horizontal) stop determining the others near the bottom, and `x, vx`
/// near the horizontal; `simulate` chooses again each time, and the swing follows the angle
/// equation with its length kept.
#[test]
fn a_pendulum_swings_ten_seconds_from_any_angle_below_ninety_degrees() {
    for degrees in [30.0f64, 60.0, 80.0, 89.9] {
        let theta0 = degrees.to_radians();
        let name = format!("pendulum_{}", degrees as u32);
        let path = model_file(&name, &pendulum(theta0.sin(), -theta0.cos()));
        let file = path.to_str().unwrap();
        let run = [
            "simulate", file, "--method", "bdf", "--tol", "1e-9", "--stop", "10", "--step", "0.01",
            "--vars", "x,y",
        ];
        let (csv, err, code) = simulate_csv(&name, &run);
        assert_eq!(code, 0, "{degrees}°: {err}");
        let c = csv_columns(&csv);
        assert_eq!(c["time"].last(), Some(&10.0), "{degrees}°");
        let theta = angle(theta0, &c["time"]);
        for (k, th) in theta.iter().enumerate() {
            let (t, x, y) = (c["time"][k], c["x"][k], c["y"][k]);
            assert!(
                (x - th.sin()).abs() < 2e-3,
                "{degrees}° x at {t}: {x} vs {}",
                th.sin()
            );
            assert!(
                (x * x + y * y - 1.0).abs() < 1e-7,
                "{degrees}° length at {t}"
            );
        }
        let json = mocca_json(&[&run[..], &["--format", "json"]].concat());
        let switches = json["state_switches"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if degrees < 80.0 {
            assert!(switches.is_empty(), "{degrees}°: {switches:?}");
            continue;
        }
        // Started below 84°, x, vx once chosen suit the whole swing (|y| ≥ |x|/10); above,
        // each pass by the bottom and each turn near the horizontal chooses again.
        let expected = if degrees < 84.0 { 1..=1 } else { 10..=40 };
        assert!(
            expected.contains(&switches.len()),
            "{degrees}°: {switches:?}"
        );
        for pair in switches.windows(2) {
            assert_ne!(pair[0]["states"], pair[1]["states"], "{degrees}°");
            assert!(pair[0]["time"].as_f64() < pair[1]["time"].as_f64());
        }
    }
}

#[test]
fn a_pendulum_started_horizontal_swings_with_every_method() {
    let path = model_file("pendulum_horizontal", &pendulum(1.0, 0.0));
    let file = path.to_str().unwrap();
    for method in ["bdf", "implicit-euler", "trapezoidal"] {
        let (csv, err, code) = simulate_csv(
            "pendulum_horizontal",
            &[
                "simulate", file, "--method", method, "--stop", "3", "--step", "0.01", "--vars",
                "x,y",
            ],
        );
        assert_eq!(code, 0, "{method}: {err}");
        let c = csv_columns(&csv);
        assert_eq!(c["time"].last(), Some(&3.0), "{method}");
        let (x, y) = (&c["x"], &c["y"]);
        for k in 0..x.len() {
            assert!((x[k] * x[k] + y[k] * y[k] - 1.0).abs() < 1e-6, "{method}");
        }
    }
    let (out, _, code) = mocca(&["simulate", file, "--stop", "3"]);
    assert_eq!(code, 0);
    assert!(out.contains("states chosen again"), "{out}");
}

/// With events the states are not chosen again (a start again would run the initial events):
/// the run stops where the choice no longer suits, and says so.
#[test]
fn a_pendulum_with_events_stops_where_its_states_no_longer_suit() {
    let text = pendulum(1.0, 0.0).replace(
        "  Real F;\nequation\n",
        "  Real F;\n  discrete Real k(start = 0, fixed = true);\nequation\n  when time > 100 then k = 1; end when;\n",
    );
    assert!(text.contains("when time"), "{text}");
    let path = model_file("pendulum_events", &text);
    let file = path.to_str().unwrap();
    for method in ["bdf", "implicit-euler"] {
        let (csv, err, code) = simulate_csv(
            "pendulum_events",
            &[
                "simulate", file, "--method", method, "--stop", "2", "--step", "0.01",
            ],
        );
        assert_eq!(code, 1, "{method}: {err}");
        assert!(csv.is_empty(), "{method}: nothing written");
        assert!(
            err.contains("no longer suit the constraint")
                && err.contains("stateSelect")
                && err.contains("without events"),
            "{method}: {err}"
        );
    }
}

/// m·s'' + d·s' + c·s = 0, s(0) = 1, s'(0) = 0 (underdamped).
fn oscillator(m: f64, d: f64, c: f64, t: f64) -> f64 {
    let w0 = (c / m).sqrt();
    let z = d / (2.0 * (c * m).sqrt());
    let wd = w0 * (1.0 - z * z).sqrt();
    (-z * w0 * t).exp() * ((wd * t).cos() + z * w0 / wd * (wd * t).sin())
}

#[test]
fn spring_and_damper_to_a_fixed_flange_match_the_closed_form() {
    let translational = "
model SpringDamperMass
  Mocca.Translational.Fixed fixed;
  Mocca.Translational.Spring spring(c = 4);
  Mocca.Translational.Damper damper(d = 0.5);
  Mocca.Translational.Mass mass(m = 2, s(start = 1, fixed = true), v(start = 0, fixed = true));
equation
  connect(fixed.flange, spring.flange_a);
  connect(fixed.flange, damper.flange_a);
  connect(spring.flange_b, mass.flange_a);
  connect(damper.flange_b, mass.flange_a);
end SpringDamperMass;
";
    let rotational = "
model SpringDamperInertia
  Mocca.Rotational.Fixed fixed;
  Mocca.Rotational.Spring spring(c = 4);
  Mocca.Rotational.Damper damper(d = 0.5);
  Mocca.Rotational.Inertia inertia(J = 2, phi(start = 1, fixed = true), w(start = 0, fixed = true));
equation
  connect(fixed.flange, spring.flange_a);
  connect(fixed.flange, damper.flange_a);
  connect(spring.flange_b, inertia.flange_a);
  connect(damper.flange_b, inertia.flange_a);
end SpringDamperInertia;
";
    for (name, text, column) in [
        ("sdm", translational, "mass.s"),
        ("sdi", rotational, "inertia.phi"),
    ] {
        let path = model_file(name, text);
        let file = path.to_str().unwrap();
        let json = mocca_json(&["check", file, "--format", "json"]);
        assert_eq!(json["index"], 2, "{name}");
        assert_eq!(json["states"], 2, "{name}");
        for method in ["bdf", "trapezoidal"] {
            let (csv, err, code) = simulate_csv(
                name,
                &[
                    "simulate", file, "--method", method, "--tol", "1e-10", "--stop", "3",
                    "--step", "0.001",
                ],
            );
            assert_eq!(code, 0, "{name} {method}: {err}");
            let c = csv_columns(&csv);
            let tol = if method == "bdf" { 1e-6 } else { 1e-5 };
            for (k, &t) in c["time"].iter().enumerate() {
                let exact = oscillator(2.0, 0.5, 4.0, t);
                let got = c[column][k];
                assert!(
                    (got - exact).abs() < tol,
                    "{name} {method} at {t}: {got} vs {exact}"
                );
            }
        }
    }
}

#[test]
fn two_capacitors_in_parallel_share_their_charge_and_prefer_the_chosen_state() {
    let model = |c1: &str, c2: &str| {
        format!(
            "
model TwoCaps
  Mocca.Electrical.Ground ground;
  Mocca.Electrical.Resistor r(R = 1);
  Mocca.Electrical.Capacitor c1(C = 1{c1});
  Mocca.Electrical.Capacitor c2(C = 2{c2});
equation
  connect(r.p, c1.p);
  connect(c1.p, c2.p);
  connect(r.n, ground.p);
  connect(c1.n, ground.p);
  connect(c2.n, ground.p);
end TwoCaps;
"
        )
    };
    let fixed = ", v(start = 1, fixed = true)";
    let preferred = ", v(start = 1, fixed = true, stateSelect = StateSelect.prefer)";
    for (text, state) in [
        (model(fixed, ""), "c1.v"),
        (
            model(fixed, ", v(stateSelect = StateSelect.prefer)"),
            "c2.v",
        ),
        (model("", preferred), "c2.v"),
    ] {
        let path = model_file("two_caps", &text);
        let file = path.to_str().unwrap();
        let json = mocca_json(&["check", file, "--format", "json"]);
        assert_eq!(json["state_names"], serde_json::json!([state]), "{text}");
        let (csv, err, code) = simulate_csv(
            "two_caps",
            &[
                "simulate",
                file,
                "--method",
                "bdf",
                "--tol",
                "1e-10",
                "--stop",
                "2",
                "--vars",
                "c1.v,c2.v",
            ],
        );
        assert_eq!(code, 0, "{err}");
        let c = csv_columns(&csv);
        // Both discharge through R with the time constant R·(C1 + C2) = 3.
        for (k, &t) in c["time"].iter().enumerate() {
            let exact = (-t / 3.0).exp();
            assert!((c["c1.v"][k] - exact).abs() < 1e-6, "c1.v at {t}");
            assert!((c["c2.v"][k] - exact).abs() < 1e-6, "c2.v at {t}");
        }
    }
}

/// `n` masses in a row, joined by rigid rods, the first pulled by a constant force.
fn rod_chain(n: usize) -> String {
    let mut text = String::from("model RodChain\n");
    text.push_str("  Mocca.Translational.ConstantForce push(f_constant = 6);\n");
    text.push_str(&format!(
        "  Mocca.Translational.Mass mass[{n}](each m = 1);\n  Mocca.Translational.Rod rod[{}](each L = 0.5);\n",
        n - 1
    ));
    text.push_str("  initial equation\n    mass[1].s = 0;\n    mass[1].v = 0;\nequation\n");
    text.push_str("  connect(push.flange, mass[1].flange_a);\n");
    text.push_str(&format!(
        "  for i in 1:{} loop\n    connect(mass[i].flange_b, rod[i].flange_a);\n    connect(rod[i].flange_b, mass[i + 1].flange_a);\n  end for;\n",
        n - 1
    ));
    text.push_str("end RodChain;\n");
    text
}

#[test]
fn masses_joined_by_rigid_rods_move_as_one_body() {
    let n = 4;
    let path = model_file("rod_chain", &rod_chain(n));
    let file = path.to_str().unwrap();
    let json = mocca_json(&["check", file, "--format", "json"]);
    assert_eq!(json["index"], 3);
    assert_eq!(json["states"], 2, "{}", json["state_names"]);
    let (csv, err, code) = simulate_csv(
        "rod_chain",
        &[
            "simulate", file, "--method", "bdf", "--tol", "1e-10", "--stop", "1", "--vars", "all",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let c = csv_columns(&csv);
    // The 6 N force accelerates 4 kg: s = 0.75 t², every mass 0.5 m behind the one before.
    for (k, &t) in c["time"].iter().enumerate() {
        for i in 1..=n {
            let exact = 0.75 * t * t + 0.5 * (i - 1) as f64;
            let got = c[&format!("mass[{i}].s")][k];
            assert!(
                (got - exact).abs() < 1e-6,
                "mass[{i}] at {t}: {got} vs {exact}"
            );
        }
    }
}

#[test]
fn models_that_need_no_reduction_keep_their_states() {
    for example in [
        "examples/power_shaft.mo",
        "examples/half_car.mo",
        "examples/dc_motor.mo",
    ] {
        let (text, err, code) = mocca(&["check", example]);
        assert_eq!(code, 0, "{err}");
        assert!(text.contains("index                     1"), "{text}");
        assert!(!text.contains("index reduction"), "{text}");
    }
}

#[test]
fn a_constraint_reading_an_input_is_refused_by_name() {
    let path = model_file(
        "input_constraint",
        "model InputConstraint\n  input Real u;\n  Real x;\n  Real y;\n  Real z;\nequation\n  der(x) = -x + z;\n  der(y) = -y;\n  x + y = u;\nend InputConstraint;\n",
    );
    let (_, err, code) = mocca(&["check", path.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("the input `u`"), "{err}");
}

/// Both coordinates fixed where the rod's length allows them: the second condition is
/// redundant and dropped with a warning, as other Modelica tools do.
#[test]
fn a_redundant_fixed_coordinate_of_the_pendulum_is_dropped_with_a_warning() {
    let text =
        pendulum(0.6, -0.8).replace("Real y(start = -0.8)", "Real y(start = -0.8, fixed = true)");
    let path = model_file("pendulum_redundant", &text);
    let (_, err, code) = mocca(&["simulate", path.to_str().unwrap(), "--stop", "1"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("dropped"), "{err}");
}

/// Both coordinates fixed where the rod's length does not allow them: a conflict.
#[test]
fn fixing_both_coordinates_of_the_pendulum_names_the_conflict() {
    let text =
        pendulum(0.6, -0.8).replace("Real y(start = -0.8)", "Real y(start = -0.5, fixed = true)");
    let path = model_file("pendulum_over", &text);
    let (_, err, code) = mocca(&["simulate", path.to_str().unwrap(), "--stop", "1"]);
    assert_eq!(code, 1);
    assert!(err.contains("over-determined"), "{err}");
    assert!(err.contains("surplus fixed = true"), "{err}");
    assert!(err.contains("conflicting with this condition"), "{err}");
    assert!(err.contains("x^2 + y^2 = L^2"), "{err}");
}

/// Two masses joined by a spring and damper whose relative position and velocity prefer to be
/// states, the second mass stopped by a `reinit` at t = 0.05.
const RELATIVE_STATES: &str = "
model RelativeStates
  parameter Real c = 100;
  parameter Real d = 10;
  Real s1(start = 0, fixed = true);
  Real v1(start = 1, fixed = true);
  Real s2(start = 0, stateSelect = StateSelect.always);
  Real v2(start = 0, fixed = true, stateSelect = StateSelect.always);
  Real s_rel(start = 0, fixed = true, stateSelect = StateSelect.prefer);
  Real v_rel(stateSelect = StateSelect.prefer);
  Real f;
equation
  der(s1) = v1;
  der(v1) = -f;
  der(s2) = v2;
  der(v2) = f;
  s_rel = s2 - s1;
  v_rel = der(s_rel);
  f = -c*s_rel - d*v_rel;
  when time > 0.05 then
    reinit(v2, 0);
  end when;
end RelativeStates;
";

#[test]
fn a_preferred_velocity_defined_as_a_derivative_is_kept_as_a_state_through_a_reinit() {
    let path = model_file("relative_states", RELATIVE_STATES);
    let file = path.to_str().unwrap();
    let json = mocca_json(&["check", file, "--format", "json"]);
    assert_eq!(
        json["state_names"],
        serde_json::json!(["s2", "v2", "s_rel", "v_rel"])
    );
    let (csv, err, code) = simulate_csv(
        "relative_states",
        &[
            "simulate",
            file,
            "--method",
            "bdf",
            "--stop",
            "0.1",
            "--vars",
            "v1,v2,v_rel",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let c = csv_columns(&csv);
    let at_event = c["time"].iter().rposition(|&t| t <= 0.0500001).unwrap();
    let before = c["time"].iter().position(|&t| t >= 0.05).unwrap();
    // The reinit stops the second mass and leaves the states it does not name: the relative
    // velocity is continuous, so the first mass's velocity jumps to v2 − v_rel.
    assert_eq!(c["v2"][at_event], 0.0);
    assert!((c["v_rel"][at_event] - c["v_rel"][before]).abs() < 1e-9);
    assert!((c["v1"][at_event] + c["v_rel"][at_event]).abs() < 1e-12);
    // The spring and damper are internal forces: momentum is 1 before the event and
    // −v_rel(0.05) after it.
    for (k, &t) in c["time"].iter().enumerate() {
        let momentum = if k < at_event {
            1.0
        } else {
            -c["v_rel"][at_event]
        };
        assert!(
            (c["v1"][k] + c["v2"][k] - momentum).abs() < 1e-6,
            "momentum at {t}"
        );
    }
}
