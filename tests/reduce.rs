//! `mocca reduce` (SPEC §11, statistical ranking): its figures against a hand computation on a
//! model whose trajectory is known in closed form, the matching guard, the reduced model it
//! writes against the error `--verify` reports, and bad input.

#[path = "cli_support/mod.rs"]
mod cli_support;

use cli_support::{mocca, mocca_json, model_file, temp_path};
use serde_json::json;

/// `x = time` exactly; the terms of `y = 3*x + 0.01*x^2 + 0.5*cos(time)` are functions of time.
const KNOWN: &str = "model Known
  Real x(start = 0, fixed = true);
  Real y;
equation
  der(x) = 1;
  y = 3*x + 0.01*x^2 + 0.5*cos(time);
end Known;";

fn mean_std(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    (
        m,
        (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n).sqrt(),
    )
}

#[test]
fn statistical_figures_equal_a_hand_computation() {
    let path = model_file("known", KNOWN);
    let (samples, stop) = (11usize, 2.0);
    let report = mocca_json(&[
        "reduce",
        path.to_str().expect("path"),
        "--stop",
        "2",
        "--samples",
        "11",
        "--threshold",
        "1e6",
        "--format",
        "json",
    ]);
    // The terms' values at t_k = k·T/10, computed here from the closed form.
    let times: Vec<f64> = (0..samples)
        .map(|k| stop * k as f64 / (samples - 1) as f64)
        .collect();
    let terms: [(&str, Vec<f64>); 4] = [
        (
            "y",
            times
                .iter()
                .map(|t| 3.0 * t + 0.01 * t * t + 0.5 * t.cos())
                .collect(),
        ),
        ("3*x", times.iter().map(|t| 3.0 * t).collect()),
        ("0.01*x^2", times.iter().map(|t| 0.01 * t * t).collect()),
        (
            "0.5*cos(time)",
            times.iter().map(|t| 0.5 * t.cos()).collect(),
        ),
    ];
    let moments: Vec<(f64, f64)> = terms.iter().map(|(_, v)| mean_std(v)).collect();
    let mean_scale = moments.iter().map(|m| m.0.abs()).sum::<f64>() / 4.0;
    let std_scale = moments.iter().map(|m| m.1).sum::<f64>() / 4.0;
    let ranking = report["ranking"].as_array().expect("ranking");
    for ((name, _), (m, s)) in terms.iter().zip(&moments) {
        let entry = ranking
            .iter()
            .find(|e| e["term"] == *name)
            .unwrap_or_else(|| panic!("{name} in {report}"));
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * (1.0 + b.abs());
        let field = |k: &str| entry[k].as_f64().expect("number");
        assert!(close(field("mean"), *m), "{name} mean {entry}");
        assert!(close(field("std"), *s), "{name} std {entry}");
        assert!(close(field("m_r"), m / mean_scale), "{name} m_r {entry}");
        assert!(close(field("sigma_r"), s / std_scale), "{name} σ_r {entry}");
        assert_eq!(entry["line"], 6);
    }
    // Ranked by σ_r, smallest first.
    let sigmas: Vec<f64> = ranking
        .iter()
        .map(|e| e["sigma_r"].as_f64().expect("σ_r"))
        .collect();
    assert!(sigmas.windows(2).all(|w| w[0] <= w[1]), "{sigmas:?}");
}

/// Deleting `y`, its equation's only unknown, would leave the equation nothing to solve: the
/// operation is refused and the model keeps it.
#[test]
fn an_operation_that_breaks_the_matching_is_refused() {
    let path = model_file(
        "guard",
        "model Guard
           Real x(start = 100, fixed = true);
           Real y;
         equation
           der(x) = -0.1*x;
           y = x - x + 0.5;
         end Guard;",
    );
    let out = temp_path("guard_reduced.mo");
    let report = mocca_json(&[
        "reduce",
        path.to_str().expect("path"),
        "--out",
        out.to_str().expect("path"),
        "--format",
        "json",
    ]);
    let ranking = report["ranking"].as_array().expect("ranking");
    let y = ranking.iter().find(|e| e["term"] == "y").expect("y ranked");
    assert_eq!(y["operation"], "delete", "{y}");
    assert_eq!(y["applied"], false, "{y}");
    assert_eq!(y["outcome"], "refused: no perfect matching");
    let written = std::fs::read_to_string(&out).expect("written");
    // The equation keeps `y`. (Its constant term, small beside x and −x, is deleted: the flat
    // model prints the side simplified, x − x is 0.)
    assert!(
        written.contains("  y = 0.0; // mocca reduce") && written.contains("deleted `0.5`"),
        "{written}"
    );
}

/// The quarter car reduced with `--verify`: the model written parses, flattens and
/// simulates, and its deviation from the full model is the error reported for the last
/// operation applied.
#[test]
fn the_written_model_simulates_to_the_verified_error() {
    let out = temp_path("quarter_car_reduced.mo");
    let common = ["--stop", "3", "--samples", "31"];
    let mut args = vec![
        "reduce",
        "examples/quarter_car.mo",
        "--verify",
        "--format",
        "json",
    ];
    args.extend(common);
    args.extend(["--out", out.to_str().expect("path")]);
    let report = mocca_json(&args);
    let applied: Vec<&serde_json::Value> = report["ranking"]
        .as_array()
        .expect("ranking")
        .iter()
        .filter(|e| e["applied"] == true)
        .collect();
    assert!(!applied.is_empty(), "{report}");
    let reported = applied.last().expect("one").as_object().expect("entry")["actual"]
        .as_f64()
        .expect("actual");
    // The full model's states, against the same variables of the reduced one (states or not).
    let run = |model: &str, vars: &str| {
        let (csv, err, code) = cli_support::simulate_csv(
            "reduce_check",
            &[
                "simulate", model, "--method", "bdf", "--stop", "3", "--step", "0.1", "--vars",
                vars,
            ],
        );
        assert_eq!(code, 0, "{model}: {err}");
        cli_support::csv_columns(&csv)
    };
    let (full, reduced) = (
        run("examples/quarter_car.mo", "x_s,v_s,x_t,v_t,x_r"),
        run(out.to_str().expect("path"), "all"),
    );
    assert!(full.keys().all(|k| reduced.contains_key(k)));
    let percent = cli_support::deviation_percent(&full, &reduced);
    assert!(
        (percent - reported).abs() <= 1e-6 * (1.0 + reported),
        "simulated {percent} vs reported {reported}"
    );
    assert!(reported <= 5.0);
}

#[test]
fn bad_reduce_input_is_refused() {
    let car = "examples/quarter_car.mo";
    for args in [
        &["reduce", car, "--component", "nowhere"][..],
        &["reduce", car, "--metric", "magic"],
        &["reduce", car, "--samples", "1"],
        &["reduce", car, "--stop", "0"],
        &["reduce", car, "--method", "mixed-euler"],
    ] {
        let (_, err, code) = mocca(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("error"), "{args:?}: {err}");
    }
    // A reference run that fails: the model blows up at t = 1.
    let path = model_file(
        "blowup",
        "model Blowup Real x(start = 1, fixed = true); equation der(x) = x^2; end Blowup;",
    );
    let (_, err, code) = mocca(&["reduce", path.to_str().expect("path"), "--stop", "2"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("reference run"), "{err}");
}

/// `J_F` at `point` as a dense matrix.
fn dense_jacobian(
    lin: &mocca::reduce::onestep::Linearised,
    pool: &mocca::expr::ExprPool,
    point: &mocca::causal::Point,
) -> nalgebra::DMatrix<f64> {
    let n = lin.unknowns.len();
    let mut j = nalgebra::DMatrix::<f64>::zeros(n, n);
    for (&(r, c), x) in lin.pattern().iter().zip(lin.values_at(pool, point)) {
        j[(r, c)] += x;
    }
    j
}

/// Sherman–Morrison against a direct solve: for every candidate operation of the flat quarter
/// car at three sample instants, `Δ = −δ u / (1 + vᵀu)` equals the solution of
/// `(J_F + e_l vᵀ) Δ = −e_l δ` to 1e-9, and the gradient `v` equals central differences of `δ`.
#[test]
fn the_one_step_prediction_equals_a_direct_solve() {
    use mocca::reduce::onestep::{Linearised, change, step};
    use mocca::reduce::sample::{Settings, sample};
    use mocca::reduce::{Operation, terms};
    use nalgebra::{DMatrix, DVector};

    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/quarter_car.mo");
    let mut sources = mocca::source::SourceMap::new();
    let ids = mocca::load::load_paths(&mut sources, &[path]).expect("loads");
    let flattened = mocca::frontend::flatten_sources(sources, &ids, None, &[])
        .unwrap_or_else(|_| panic!("flattens"));
    let (flat, sources) = (flattened.dae, flattened.sources);
    let settings = Settings {
        method: None,
        start: 0.0,
        stop: 3.0,
        step: 1e-3,
        tol: 1e-8,
        samples: 7,
    };
    let mut reference = sample(&flat, &settings).unwrap_or_else(|_| panic!("simulates"));
    let h = 0.01;
    let lin = Linearised::new(&flat, &mut reference.prepared.pool, h).expect("square");
    let mut checked = 0;
    for t in terms::candidates(&flat, None) {
        let expr = flat.equations[t.equation].terms[t.term].expr;
        let sign = -flat.equations[t.equation].terms[t.term].sign;
        for op in [Operation::Delete, Operation::Replace(0.25)] {
            let pool = &mut reference.prepared.pool;
            let delta_expr = change(pool, &flat, t, op);
            let gradient = lin.gradient(pool, expr);
            let pool = &reference.prepared.pool;
            for point in reference.points.iter().step_by(3) {
                let j = dense_jacobian(&lin, pool, point);
                let n = j.nrows();
                let mut e = DVector::zeros(n);
                e[t.equation] = 1.0;
                let u: Vec<f64> = j
                    .clone()
                    .lu()
                    .solve(&e)
                    .expect("J_F regular")
                    .iter()
                    .copied()
                    .collect();
                let delta = pool.eval(delta_expr, point).expect("δ");
                let v: Vec<(usize, f64)> = gradient
                    .iter()
                    .map(|&(i, g)| (i, sign * pool.eval(g, point).expect("v")))
                    .collect();
                // v against central differences of δ in z and, over h, in ẋ.
                for &(i, vi) in &v {
                    let var = lin.unknowns[i].0 as usize;
                    let at = |dv: f64, dd: f64| {
                        let mut p = point.clone();
                        p.vars[var] += dv;
                        p.ders[var] += dd;
                        pool.eval(delta_expr, &p).expect("δ")
                    };
                    let eps = 1e-6 * (1.0 + point.vars[var].abs());
                    let by_value = (at(eps, 0.0) - at(-eps, 0.0)) / (2.0 * eps);
                    let by_rate = (at(0.0, eps) - at(0.0, -eps)) / (2.0 * eps);
                    let fd = by_value + by_rate / h;
                    assert!(
                        (vi - fd).abs() <= 1e-5 * (1.0 + fd.abs()),
                        "{t:?} v[{i}] {vi} vs {fd}"
                    );
                }
                let mut modified: DMatrix<f64> = j.clone();
                for &(i, vi) in &v {
                    modified[(t.equation, i)] += vi;
                }
                let Some(predicted) = step(&u, delta, &v) else {
                    assert!(
                        modified.lu().solve(&e).is_none_or(|x| x.amax() > 1e8),
                        "{t:?}"
                    );
                    continue;
                };
                let direct = modified.lu().solve(&(-delta * &e)).expect("regular");
                let scale = 1.0 + direct.amax();
                let predicted = DVector::from_vec(predicted);
                assert!(
                    (&predicted - &direct).amax() <= 1e-9 * scale,
                    "{t:?} {op:?}: {predicted} vs {direct}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 20, "{checked} predictions checked");
    // The command's predictions for deletions: the largest step over the samples relative to
    // each state's scale (its largest magnitude over the samples), in percent; the algebraic
    // unknowns (the spring forces) are not measured by default.
    let scales: Vec<f64> = (lin.unknowns.iter())
        .map(|&v| match flat.var(v).kind {
            mocca::dae::VarKind::State => (reference.points.iter())
                .map(|p| p.vars[v.0 as usize].abs())
                .fold(0.0, f64::max),
            _ => f64::INFINITY,
        })
        .collect();
    assert_eq!(scales.iter().filter(|s| s.is_finite()).count(), 5);
    let report = mocca_json(&[
        "reduce",
        "examples/quarter_car.mo",
        "--metric",
        "onestep",
        "--stop",
        "3",
        "--samples",
        "7",
        "--step",
        "0.01",
        "--format",
        "json",
    ]);
    let mut compared = 0;
    for entry in report["ranking"].as_array().expect("ranking") {
        let Some(predicted) = entry["predicted"].as_f64() else {
            continue;
        };
        if entry["operation"] != "delete" {
            continue;
        }
        let line = entry["line"].as_u64().expect("line") as usize;
        let t = terms::candidates(&flat, None)
            .into_iter()
            .find(|&t| {
                let d = terms::describe(&flat, &sources, t);
                entry["term"] == d.text.as_str() && d.line == line
            })
            .expect("the entry's term");
        let pool = &mut reference.prepared.pool;
        let delta_expr = change(pool, &flat, t, Operation::Delete);
        let gradient = lin.gradient(pool, flat.equations[t.equation].terms[t.term].expr);
        let sign = -flat.equations[t.equation].terms[t.term].sign;
        let pool = &reference.prepared.pool;
        let mut worst = 0.0f64;
        for point in &reference.points {
            let j = dense_jacobian(&lin, pool, point);
            let mut e = DVector::zeros(j.nrows());
            e[t.equation] = 1.0;
            let u: Vec<f64> = j.lu().solve(&e).expect("regular").iter().copied().collect();
            let delta = pool.eval(delta_expr, point).expect("δ");
            let v: Vec<(usize, f64)> = gradient
                .iter()
                .map(|&(i, g)| (i, sign * pool.eval(g, point).expect("v")))
                .collect();
            let d = step(&u, delta, &v).expect("legal");
            for (x, s) in d.iter().zip(&scales) {
                worst = worst.max(100.0 * x.abs() / s);
            }
        }
        assert!(
            (predicted - worst).abs() <= 1e-6 * (1.0 + worst),
            "{entry}: {worst}"
        );
        compared += 1;
    }
    assert!(compared >= 3, "{compared} deletions compared");
}

/// The component quarter car, whose index reduction adds dummy derivatives the reduced models
/// may not have (and whose flat model counts the dampers' `s_rel` as states, which need no
/// initial condition): verification compares what both have, and every prediction is a number
/// computed from evaluable terms (the dampers' `d*der(s_rel)` read a demoted state's
/// derivative).
#[test]
fn the_component_quarter_car_reduces_by_both_metrics() {
    for metric in ["statistical", "onestep"] {
        let report = mocca_json(&[
            "reduce",
            "examples/quarter_car_components.mo",
            "--stop",
            "3",
            "--samples",
            "20",
            "--metric",
            metric,
            "--verify",
            "--format",
            "json",
        ]);
        let ranking = report["ranking"].as_array().expect("ranking");
        // As in the flat quarter car, the tyre's linear stiffness goes.
        let tyre = ranking
            .iter()
            .find(|e| e["term"] == "k1*s_rel" && e["component"] == "tyre")
            .expect("the tyre's linear term");
        assert_eq!(tyre["applied"], true, "{metric}: {tyre}");
        assert!(tyre["actual"].as_f64().expect("verified") < 1.0, "{tyre}");
        // The wheel's inertia goes, verified (the flat car's 1.06 %): its steady-state condition
        // goes with its velocity's derivative, and its position, which lost its condition,
        // starts in steady state instead (the tyre damper's `s_rel`, a state of the flat model
        // that index reduction demotes, frees no condition when its derivative goes).
        let wheel = (ranking.iter())
            .find(|e| e["term"] == "m*der(v)" && e["component"] == "wheel")
            .expect("the wheel's inertia");
        assert_eq!(wheel["applied"], true, "{metric}: {wheel}");
        assert!(wheel["actual"].as_f64().expect("verified") < 5.0, "{wheel}");
        assert_eq!(
            report["dropped_initial_equations"],
            json!(["der('wheel.v') = 0.0"]),
            "{metric}"
        );
        assert_eq!(
            report["steady_state_initial"],
            json!(["wheel.s"]),
            "{metric}"
        );
        if metric == "onestep" {
            let dampers: Vec<&serde_json::Value> = ranking
                .iter()
                .filter(|e| e["term"] == "d*der(s_rel)")
                .collect();
            assert_eq!(dampers.len(), 2);
            // As the flat car's: the tyre damper's deletion 0.1-0.3 %, the suspension's over 5 %.
            let predicted = |c: &str| {
                let d = dampers.iter().find(|d| d["component"] == c).expect(c);
                d["predicted"].as_f64().expect("predicted")
            };
            assert!((0.1..0.3).contains(&predicted("tyreDamper")), "{dampers:?}");
            assert!(predicted("suspensionDamper") > 5.0, "{dampers:?}");
        }
    }
}

/// The energy activity of every component of the RC ladder equals the integral (trapezoidal
/// rule over the same instants) of |Σ v·i| over its pins, computed here from `simulate`'s
/// CSV; so does every component of the component quarter car, |Σ der(s)·f| over its flanges,
/// each flange's velocity that of the road, the wheel or the body it is connected to.
#[test]
fn activity_is_the_integral_of_the_power_simulate_records() {
    let report = mocca_json(&[
        "reduce",
        "examples/rc_ladder.mo",
        "--metric",
        "activity",
        "--stop",
        "2",
        "--samples",
        "21",
        "--format",
        "json",
    ]);
    let (csv, err, code) = cli_support::simulate_csv(
        "activity",
        &[
            "simulate",
            "examples/rc_ladder.mo",
            "--method",
            "bdf",
            "--stop",
            "2",
            "--step",
            "0.1",
            "--vars",
            "all",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let mut lines = csv.lines();
    let names: Vec<&str> = lines.next().expect("header").split(',').collect();
    let rows: Vec<Vec<f64>> = lines
        .map(|l| l.split(',').map(|v| v.parse().expect("number")).collect())
        .collect();
    let col = |n: &str| names.iter().position(|x| *x == n).expect("column");
    let components = report["components"].as_array().expect("components");
    for c in ["E", "R1", "C1", "R2", "C2", "R3"] {
        let power: Vec<f64> = rows
            .iter()
            .map(|r| {
                let pin = |p: &str| r[col(&format!("{c}.{p}.v"))] * r[col(&format!("{c}.{p}.i"))];
                (pin("p") + pin("n")).abs()
            })
            .collect();
        let integral: f64 = rows
            .windows(2)
            .zip(power.windows(2))
            .map(|(t, p)| 0.5 * (p[0] + p[1]) * (t[1][0] - t[0][0]))
            .sum();
        let entry = components
            .iter()
            .find(|e| e["component"] == c)
            .unwrap_or_else(|| panic!("{c} in {report}"));
        let got = entry["activity"].as_f64().expect("activity");
        assert!(integral > 0.0, "{c}");
        assert!(
            (got - integral).abs() <= 1e-9 * integral,
            "{c}: {got} vs {integral}"
        );
    }
    let car = mocca_json(&[
        "reduce",
        "examples/quarter_car_components.mo",
        "--metric",
        "activity",
        "--stop",
        "3",
        "--samples",
        "21",
        "--format",
        "json",
    ]);
    let activity = |c: &str| {
        car["components"]
            .as_array()
            .expect("components")
            .iter()
            .find(|e| e["component"] == c)
            .and_then(|e| e["activity"].as_f64())
            .unwrap_or_else(|| panic!("{c} in {car}"))
    };
    // Each flange moves with what it is connected to: the road (`der(road.x_r)`), the wheel
    // (`wheel.v`) or the body (`body.v`); its power is that velocity times its force.
    let (csv, err, code) = cli_support::simulate_csv(
        "activity_car",
        &[
            "simulate",
            "examples/quarter_car_components.mo",
            "--method",
            "bdf",
            "--stop",
            "3",
            "--step",
            "0.15",
            "--vars",
            "all",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let columns = cli_support::csv_columns(&csv);
    // The road rises by 0.4·(1 − cos(4π(t − 1))) m/s between t = 1 and 1.5 (the example's
    // definition), still otherwise.
    let (road, wheel, body) = ("road", "wheel.v", "body.v");
    let velocity = |name: &str, k: usize| {
        let t = columns["time"][k];
        match name {
            "road" if (1.0..=1.5).contains(&t) => {
                0.4 * (1.0 - (4.0 * std::f64::consts::PI * (t - 1.0)).cos())
            }
            "road" => 0.0,
            _ => columns[name][k],
        }
    };
    let flanges: [(&str, &[(&str, &str)]); 9] = [
        ("road", &[("flange", road)]),
        ("wheel", &[("flange_a", wheel), ("flange_b", wheel)]),
        ("body", &[("flange_a", body), ("flange_b", body)]),
        ("tyre", &[("flange_a", road), ("flange_b", wheel)]),
        ("tyreDamper", &[("flange_a", road), ("flange_b", wheel)]),
        ("suspension", &[("flange_a", wheel), ("flange_b", body)]),
        (
            "suspensionDamper",
            &[("flange_a", wheel), ("flange_b", body)],
        ),
        ("wheelWeight", &[("flange", wheel)]),
        ("bodyWeight", &[("flange", body)]),
    ];
    let times = &columns["time"];
    assert_eq!(times.len(), 21);
    for (component, ports) in flanges {
        let power: Vec<f64> = (0..times.len())
            .map(|k| {
                let each = ports.iter().map(|(flange, moving_with)| {
                    velocity(moving_with, k) * columns[&format!("{component}.{flange}.f")][k]
                });
                each.sum::<f64>().abs()
            })
            .collect();
        let integral: f64 = times
            .windows(2)
            .zip(power.windows(2))
            .map(|(t, p)| 0.5 * (p[0] + p[1]) * (t[1] - t[0]))
            .sum();
        let got = activity(component);
        assert!(
            (got - integral).abs() <= 1e-7 * (1.0 + integral),
            "{component}: {got} vs {integral}"
        );
    }
    assert!(activity("suspension") > activity("tyreDamper"));
    assert!(activity("tyreDamper") > 0.0);
}

/// `--plot` draws every state of the full and the reduced model into an SVG file (and a
/// reduced model that does not simulate has no plot: an error).
#[test]
fn the_plot_draws_every_state_full_and_reduced() {
    let svg = temp_path("quarter_car.svg");
    let (_, err, code) = mocca(&[
        "reduce",
        "examples/quarter_car.mo",
        "--stop",
        "3",
        "--verify",
        "--plot",
        svg.to_str().expect("path"),
    ]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&svg).expect("written");
    assert!(text.starts_with("<svg"), "{}", &text[..60.min(text.len())]);
    for state in ["x_s", "v_s", "x_t", "v_t", "x_r"] {
        assert!(
            text.lines().any(|l| l.trim() == state),
            "{state} has a panel"
        );
    }
    assert!(text.contains("stroke-dasharray") || text.matches("<polyline").count() >= 10);
    // Without --verify the suspension spring's linear part goes too: the purely cubic spring
    // starts at rest where Newton's Jacobian vanishes, and the fixed-point homotopy
    // initialises it, so the plot is drawn.
    std::fs::remove_file(&svg).expect("written before");
    let (_, err, code) = mocca(&[
        "reduce",
        "examples/quarter_car.mo",
        "--stop",
        "3",
        "--plot",
        svg.to_str().expect("path"),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        std::fs::read_to_string(&svg)
            .expect("written")
            .starts_with("<svg")
    );
}

/// The guard kept along the operations agrees with one built from scratch: applying every
/// candidate operation of the RC ladder, the quarter car and an RC chain in turn, the kept
/// matching accepts exactly the operations after which Hopcroft–Karp finds a perfect matching
/// of the reduced model (states whose last derivative went counted as algebraic), and what it
/// accepts the structural analysis confirms.
#[test]
fn the_guard_kept_along_the_operations_agrees_with_one_built_from_scratch() {
    use mocca::reduce::guard::{Matched, keeps_perfect_matching};
    use mocca::reduce::operation::apply;
    use mocca::reduce::{Operation, terms};
    let chain = model_file("chain", &mocca::generate::rc_chain(6));
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    for path in [
        examples.join("rc_ladder.mo"),
        examples.join("quarter_car.mo"),
        chain,
    ] {
        let mut sources = mocca::source::SourceMap::new();
        let ids =
            mocca::load::load_paths(&mut sources, std::slice::from_ref(&path)).expect("loads");
        let flat = mocca::frontend::flatten_sources(sources, &ids, None, &[])
            .unwrap_or_else(|_| panic!("flattens"))
            .dae;
        let mut kept = Matched::new(&flat).expect("a perfect matching as written");
        let (mut applied, mut refused) = (Vec::new(), 0);
        for t in terms::candidates(&flat, None) {
            for op in [Operation::Delete, Operation::Replace(0.5)] {
                if applied.iter().any(|(a, _)| *a == t) {
                    continue;
                }
                let mut trial = applied.clone();
                trial.push((t, op));
                let changes: Vec<(usize, Operation)> = (trial.iter())
                    .filter(|(a, _)| a.equation == t.equation)
                    .map(|&(a, op)| (a.term, op))
                    .collect();
                let reduced = apply(&flat, &trial).dae;
                let verdict = kept.check(&flat, t.equation, &changes);
                let scratch = Matched::new(&reduced).is_some();
                assert_eq!(verdict.is_some(), scratch, "{path:?}: {t:?} {op:?}");
                match verdict {
                    Some(k) => {
                        assert!(keeps_perfect_matching(&reduced), "{path:?}: {t:?} {op:?}");
                        kept.commit(t.equation, *k);
                        applied = trial;
                    }
                    None => refused += 1,
                }
            }
        }
        assert!(
            applied.len() >= 3 && refused >= 3,
            "{path:?}: {} {refused}",
            applied.len()
        );
    }
}

/// Deleting `tau*der(x)` leaves `x` no state: the initial equations that conditioned it go, `y`
/// (whose condition went with them) starts in steady state, and the reduced model initialises
/// where the full one did (x = 0, so y = 0) and follows it.
#[test]
fn a_reduced_initial_system_is_made_square_again() {
    let path = model_file(
        "lag",
        "model Lag
           parameter Real tau = 1e-4;
           Real x;
           Real y;
         initial equation
           der(x) = der(y);
           x = 0;
         equation
           tau*der(x) + x = sin(time);
           der(y) = x - y;
         end Lag;",
    );
    let out = temp_path("lag_reduced.mo");
    let report = mocca_json(&[
        "reduce",
        path.to_str().expect("path"),
        "--verify",
        "--out",
        out.to_str().expect("path"),
        "--format",
        "json",
    ]);
    let entry = &report["ranking"][0];
    assert_eq!(entry["term"], "tau*der(x)", "{report}");
    assert_eq!(entry["applied"], true, "{report}");
    assert_eq!(
        report["dropped_initial_equations"],
        serde_json::json!(["der(x) = der(y)", "x = 0.0"])
    );
    assert_eq!(report["steady_state_initial"], serde_json::json!(["y"]));
    let written = std::fs::read_to_string(&out).expect("written");
    assert!(
        written.contains("initial equation\n  der(y) = 0.0;"),
        "{written}"
    );
    // y' = sin(t) − y from y(0) = 0: y = (sin t − cos t + e^−t)/2; the full model's lag of
    // 1e-4 s moves it by less than 1e-4.
    let (csv, err, code) = cli_support::simulate_csv(
        "lag_reduced",
        &[
            "simulate",
            out.to_str().expect("path"),
            "--method",
            "bdf",
            "--stop",
            "2",
            "--step",
            "0.5",
        ],
    );
    assert_eq!(code, 0, "{err}");
    for line in csv.lines().skip(1) {
        let row: Vec<f64> = line
            .split(',')
            .map(|v| v.parse().expect("number"))
            .collect();
        let t = row[0];
        let exact = (t.sin() - t.cos() + (-t).exp()) / 2.0;
        assert!(
            (row[1] - exact).abs() < 1e-4,
            "t = {t}: {} vs {exact}",
            row[1]
        );
    }
}

/// The quarter car's gravity terms read parameters only: they are candidates (Sodja and
/// Žlajpah rank `-m_t*g` first by statistics), with σ_r = 0 exactly (a constant has no spread),
/// so sorted by σ_r a candidate one comes first; their one operation is deletion, and the
/// one-step metric predicts its error.
#[test]
fn constant_terms_are_candidates_for_deletion() {
    let run = |metric: &str, extra: &[&str]| {
        quarter_car_ranking(&[&["--stop", "3", "--metric", metric][..], extra].concat())
    };
    let is_gravity = |e: &serde_json::Value| {
        let term = e["term"].as_str().unwrap_or("");
        term.ends_with("m_t*g") || term.ends_with("m_s*g")
    };
    // At a threshold of 1 the wheel's gravity term (|m_r| = 0.36 here) is a candidate and
    // ranks first; the body's (|m_r| above 1 beside the spring force that carries it) is not.
    let statistical = run("statistical", &["--threshold", "1"]);
    let first = &statistical[0];
    assert!(
        first["term"].as_str().unwrap().ends_with("m_t*g"),
        "{statistical:?}"
    );
    assert_eq!(first["sigma_r"], 0.0, "{first}");
    assert_eq!(first["operation"], "delete", "{first}");
    assert!(first["m_r"].as_f64().unwrap().abs() < 1.0, "{first}");
    let onestep = run("onestep", &[]);
    let gravity: Vec<&serde_json::Value> = onestep.iter().filter(|e| is_gravity(e)).collect();
    assert_eq!(gravity.len(), 2, "{onestep:?}");
    for e in gravity {
        assert_eq!(e["operation"], "delete", "{e}");
        let predicted = e["predicted"].as_f64().expect("a prediction");
        assert!(predicted > 0.0 && predicted.is_finite(), "{e}");
    }
}

/// `--all` lists every term with its figures, sorted by σ_r as Sodja and Žlajpah's Table 3:
/// over the run through the road bump (to t = 3, the example's `experiment` annotation, so
/// with the defaults) the quarter car's first seven are the paper's
/// seven — the two gravity terms (σ_r = 0 exactly), then `k1_t*(x_t - x_r)`,
/// `k1_s*(x_s - x_t)`, `-beta_t*(v_t - der(x_r))`, `m_t*der(v_t)` and `-beta_s*(v_s - v_t)`;
/// the terms that are no candidates are marked and not applied.
#[test]
fn all_terms_rank_as_the_papers_table_3() {
    let car = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/quarter_car.mo");
    let report = mocca_json(&["reduce", car, "--all", "--format", "json"]);
    let ranking = report["ranking"].as_array().expect("ranking");
    let terms: Vec<&str> = ranking
        .iter()
        .map(|e| e["term"].as_str().unwrap())
        .collect();
    let mut gravity = terms[..2].to_vec();
    gravity.sort_unstable();
    assert_eq!(gravity, ["m_s*g", "m_t*g"], "{terms:?}");
    assert_eq!(
        terms[2..7],
        [
            "k1_t*(x_t - x_r)",
            "k1_s*(x_s - x_t)",
            "-beta_t*(v_t - der(x_r))",
            "m_t*der(v_t)",
            "-beta_s*(v_s - v_t)"
        ],
        "{terms:?}"
    );
    for e in ranking {
        assert_eq!(e["candidate"], e["operation"].is_string(), "{e}");
        if e["candidate"] == false {
            assert_eq!(e["applied"], false, "{e}");
        }
    }
    let (_, err, code) = cli_support::mocca(&["reduce", car, "--all", "--metric", "onestep"]);
    assert_eq!(code, 2, "{err}");
}

/// Without `--step`, `onestep`'s h is 5/ρ (its rate 1/h a fifth of the fastest rate ρ, the
/// median over the samples of the spectral radius of ∂f/∂x): checked against the eigenvalues
/// of the quarter car's ODE Jacobian, written out by hand here, at the 50 instants of a BDF
/// run of 3 s.
#[test]
fn the_default_one_step_h_is_five_fastest_time_constants() {
    let report = mocca_json(&[
        "reduce",
        "examples/quarter_car.mo",
        "--metric",
        "onestep",
        "--format",
        "json",
    ]);
    let c = quarter_car_samples("quarter_car_samples", "x_s,x_t,x_r");
    assert_eq!(c["time"].len(), 50);
    let (m_s, m_t, beta_t, beta_s) = (267.0, 36.6, 200.0, 700.0);
    let (k1_t, k3_t, k1_s, k3_s) = (193.915, 2.0e8, 18.742, 2.0e5);
    let mut radii = Vec::new();
    for ((x_s, x_t), x_r) in c["x_s"].iter().zip(&c["x_t"]).zip(&c["x_r"]) {
        let (d, e) = (x_s - x_t, x_t - x_r);
        let ks = k1_s + 3.0 * k3_s * d * d;
        let kt = k1_t + 3.0 * k3_t * e * e;
        // States x_s, v_s, x_t, v_t, x_r (the road's rate is a function of time).
        #[rustfmt::skip]
        let j = nalgebra::DMatrix::from_row_slice(5, 5, &[
            0.0, 1.0, 0.0, 0.0, 0.0,
            -ks / m_s, -beta_s / m_s, ks / m_s, beta_s / m_s, 0.0,
            0.0, 0.0, 0.0, 1.0, 0.0,
            ks / m_t, beta_s / m_t, -(kt + ks) / m_t, -(beta_t + beta_s) / m_t, kt / m_t,
            0.0, 0.0, 0.0, 0.0, 0.0,
        ]);
        radii.push((j.complex_eigenvalues().iter()).fold(0.0f64, |m, z| m.max(z.norm())));
    }
    radii.sort_by(f64::total_cmp);
    let median = 0.5 * (radii[24] + radii[25]);
    let rate = report["fastest_rate"].as_f64().expect("rate");
    assert!((rate - median).abs() < 1e-4 * median, "{rate} vs {median}");
    // The wheel hop at rest, |-12.5 ± 103.2i|: the curb's stiffening does not set it.
    assert!((rate - 103.9).abs() < 0.1, "{rate}");
    let h = report["h"].as_f64().expect("h");
    assert!(
        (h - 5.0 / median).abs() < 1e-4 * h,
        "{h} vs {}",
        5.0 / median
    );
    let (text, _, code) = mocca(&["reduce", "examples/quarter_car.mo", "--metric", "onestep"]);
    assert_eq!(code, 0);
    assert!(text.contains("1/h a fifth of the fastest rate"), "{text}");
    let given = mocca_json(&[
        "reduce",
        "examples/quarter_car.mo",
        "--metric",
        "onestep",
        "--step",
        "0.05",
        "--format",
        "json",
    ]);
    assert_eq!(given["h"], 0.05);
    assert!(given["fastest_rate"].is_null());
}

/// The one-step ranking with the defaults, against Sodja and Žlajpah's Table 2: the first five
/// are the paper's five — `k1_t*(x_t - x_r)`, `-beta_t*(v_t - der(x_r))`, `k1_s*(x_s - x_t)`,
/// `m_t*der(v_t)` and `-m_t*g` — and each predicted error is within a factor of 2 of the
/// paper's where the paper's is above rounding (0.046 %, 0.13 %, 1.81 %, 5.2 %: the linear
/// suspension's 0.14 % is not matched, ours is 0.05 %); `--verify` applies them in turn (the
/// massless wheel's initial system repaired by its steady state) and keeps the fifth, at
/// an actual error under 5 % (the paper: 2.12 %), and undoes the body damper's deletion, over
/// 50 % (the paper: 108.8 %).
#[test]
fn one_step_ranks_as_the_papers_table_2() {
    let run = |extra: &[&str]| quarter_car_ranking(&[&["--metric", "onestep"][..], extra].concat());
    let ranking = run(&[]);
    let mut first: Vec<&str> = ranking[..5]
        .iter()
        .map(|e| e["term"].as_str().unwrap())
        .collect();
    first.sort_unstable();
    assert_eq!(
        first,
        [
            "-beta_t*(v_t - der(x_r))",
            "k1_s*(x_s - x_t)",
            "k1_t*(x_t - x_r)",
            "m_t*der(v_t)",
            "m_t*g"
        ],
        "{ranking:?}"
    );
    let predicted = |term: &str| {
        let e = ranking.iter().find(|e| e["term"] == term).expect(term);
        assert_eq!(e["operation"], "delete", "{e}");
        e["predicted"].as_f64().expect("predicted")
    };
    for (term, paper) in [
        ("k1_t*(x_t - x_r)", 0.046),
        ("-beta_t*(v_t - der(x_r))", 0.13),
        ("m_t*der(v_t)", 1.81),
        ("m_t*g", 5.2),
    ] {
        let ours = predicted(term);
        assert!(
            ours / paper < 2.0 && paper / ours < 2.0,
            "{term}: {ours} vs {paper}"
        );
    }
    let verified = run(&["--verify"]);
    let entry = |term: &str| verified.iter().find(|e| e["term"] == term).expect(term);
    let gravity = entry("m_t*g");
    assert_eq!(gravity["applied"], true, "{gravity}");
    assert!(
        gravity["actual"].as_f64().expect("actual") < 5.0,
        "{gravity}"
    );
    let damper = entry("-beta_s*(v_s - v_t)");
    assert_eq!(damper["applied"], false, "{damper}");
    assert!(
        damper["actual"].as_f64().expect("actual") > 50.0,
        "{damper}"
    );
    let wheel = entry("m_t*der(v_t)");
    assert_eq!(wheel["applied"], true, "{wheel}");
}

/// `mocca reduce examples/quarter_car.mo` with `args`: its ranking, as JSON.
fn quarter_car_ranking(args: &[&str]) -> Vec<serde_json::Value> {
    let car = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/quarter_car.mo");
    let all = [&["reduce", car, "--format", "json"][..], args].concat();
    mocca_json(&all)["ranking"]
        .as_array()
        .expect("ranking")
        .clone()
}

/// `--relative-to sum` gives Sodja and Žlajpah's Table 3 figures themselves: relative to the
/// sum of the equation's terms, not their mean, they are the default figures divided by the
/// equation's N terms, and within 20 % of the paper's (`-m_t*g` |m_r| 0.06, `-m_s*g` 0.50,
/// `k1_t*(x_t - x_r)` 7.9e-4 and σ_r 2.9e-4, `k1_s*(x_s - x_t)` 8.3e-4 and 3.2e-4,
/// `-beta_t*(v_t - der(x_r))` σ_r 2.8e-3, `-beta_s*(v_s - v_t)` 0.10).
#[test]
fn figures_relative_to_the_sum_are_the_papers_table_3() {
    let by_term = |args: &[&str]| {
        let ranking = quarter_car_ranking(&[&["--all"][..], args].concat());
        (ranking.iter())
            .map(|e| {
                let key = (
                    e["term"].as_str().unwrap().to_string(),
                    e["line"].as_u64().unwrap(),
                );
                (
                    key,
                    (e["m_r"].as_f64().unwrap(), e["sigma_r"].as_f64().unwrap()),
                )
            })
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let (mean, sum) = (by_term(&[]), by_term(&["--relative-to", "sum"]));
    // Terms per equation, by line: der(x_s) = v_s (2), the body (4), der(x_t) = v_t (2), the
    // wheel (6), the tyre and suspension springs (3 each), the road (2).
    let terms_of_line = |line: u64| match line {
        23 | 25 | 29 => 2.0,
        24 => 4.0,
        26 => 6.0,
        _ => 3.0,
    };
    assert_eq!(mean.len(), sum.len());
    for (key, &(m, s)) in &mean {
        let n = terms_of_line(key.1);
        let (ms, ss) = sum[key];
        assert!((m / n - ms).abs() <= 1e-12 * m.abs().max(1e-300), "{key:?}");
        assert!((s / n - ss).abs() <= 1e-12 * s.abs().max(1e-300), "{key:?}");
    }
    let close = |x: f64, paper: f64| (x.abs() / paper - 1.0).abs() < 0.2;
    for (term, line, m_r, sigma_r) in [
        ("m_t*g", 26, Some(0.06), None),
        ("m_s*g", 24, Some(0.50), None),
        ("k1_t*(x_t - x_r)", 27, Some(7.9e-4), Some(2.9e-4)),
        ("k1_s*(x_s - x_t)", 28, Some(8.3e-4), Some(3.2e-4)),
        ("-beta_t*(v_t - der(x_r))", 26, None, Some(2.8e-3)),
        ("-beta_s*(v_s - v_t)", 24, None, Some(0.10)),
    ] {
        let (m, s) = sum[&(term.to_string(), line)];
        assert!(m_r.is_none_or(|p| close(m, p)), "{term}: m_r {m}");
        assert!(sigma_r.is_none_or(|p| close(s, p)), "{term}: σ_r {s}");
    }
}

/// `--error-on unknowns` measures the algebraic variables too: deleting the wheel's weight
/// (m_t·g = 359 N) then errs at least by the tyre force's shift at rest, 359 N against its
/// largest magnitude over the run (from simulate's CSV at the 50 samples), above the 5 %
/// bound, so it is undone, where the states alone err 2.5 % and keep it.
#[test]
fn error_on_unknowns_measures_the_spring_forces() {
    let verified =
        quarter_car_ranking(&["--metric", "onestep", "--verify", "--error-on", "unknowns"]);
    let gravity = (verified.iter())
        .find(|e| e["term"] == "m_t*g")
        .expect("the wheel's weight");
    let largest = quarter_car_samples("quarter_car_forces", "Fk_t")["Fk_t"]
        .iter()
        .fold(0.0f64, |m, f| m.max(f.abs()));
    let shift = 100.0 * 36.6 * 9.81 / largest;
    assert!(shift > 5.0, "{shift}");
    let actual = gravity["actual"].as_f64().expect("verified");
    assert!(actual >= 0.99 * shift, "{actual} vs {shift}");
    assert_eq!(gravity["applied"], false, "{gravity}");
}

/// The quarter car's `vars` at the 50 instants over 3 s that `reduce` samples by default (its
/// BDF reference at 1e-8), from `simulate`'s CSV (written under `name`).
fn quarter_car_samples(name: &str, vars: &str) -> std::collections::BTreeMap<String, Vec<f64>> {
    let step = format!("{}", 3.0 / 49.0);
    let (csv, err, code) = cli_support::simulate_csv(
        name,
        &[
            "simulate",
            "examples/quarter_car.mo",
            "--method",
            "bdf",
            "--tol",
            "1e-8",
            "--step",
            &step,
            "--vars",
            vars,
        ],
    );
    assert_eq!(code, 0, "{err}");
    cli_support::csv_columns(&csv)
}
