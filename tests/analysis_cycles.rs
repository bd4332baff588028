//! Cycle analysis (SPEC §7–9) on hand-built Jacobians, on small models written here, and on
//! every example of SPEC §13, against values derived by hand.

use mocca::analysis::digraph::from_dense;
use mocca::analysis::indices::{separability_index, stiffness_index};
use mocca::analysis::johnson::{Budget, enumerate_into};
use mocca::analysis::operating_point::Model;
use mocca::analysis::pcs::cycle_sets;
use mocca::analysis::{CycleAnalysis, Values, analyse};
use mocca::causal::initial_point;
use simulate_support::Loaded;

mod cli_support;
mod simulate_support;

const SQRT2: f64 = std::f64::consts::SQRT_2;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * (1.0 + b.abs())
}

fn assert_bounds(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g.is_infinite() && w.is_infinite()) || close(*g, *w),
            "h̄ {got:?}, expected {want:?}"
        );
    }
}

/// State names and J's values at the start values of a loaded model.
fn jacobian_of(m: &Loaded) -> (Vec<String>, Values) {
    let model = Model {
        dae: &m.dae,
        causal: &m.causal,
        jacobian: &m.jac,
    };
    let mut point = initial_point(&m.dae).expect("start values");
    let values = model.values_at(&mut point).expect("J at the start values");
    (model.state_names(), values)
}

fn model_text(text: &str) -> (Vec<String>, Values) {
    jacobian_of(&simulate_support::inline(text))
}

fn example(name: &str, params: &[(&str, &str)]) -> (Vec<String>, Values) {
    jacobian_of(&simulate_support::example(name, params))
}

fn cycles_at(names: &[String], values: &Values, alpha: f64) -> CycleAnalysis {
    let a = analyse(
        names.len(),
        std::slice::from_ref(values),
        alpha,
        Budget::default(),
        &mut |_| {},
    );
    assert!(a.enumeration.complete());
    a
}

/// h̄ by state name.
fn h(names: &[String], a: &CycleAnalysis, name: &str) -> f64 {
    let i = names
        .iter()
        .position(|n| n == name)
        .unwrap_or_else(|| panic!("no state {name}"));
    a.bounds.h_bar[i]
}

const WORKED: [[f64; 3]; 3] = [[-1.0, 0.5, 0.0], [0.5, -1.5, 0.5], [0.0, 0.5, -1.0]];

#[test]
fn spec_7_worked_example_on_a_hand_built_jacobian() {
    let rows: Vec<Vec<f64>> = WORKED.iter().map(|r| r.to_vec()).collect();
    let (graph, weights) = from_dense(&rows);
    let mut fold = mocca::analysis::bounds::MinFold::new(0.5, 3, std::slice::from_ref(&weights));
    let layers = [weights.log_abs.as_slice()];
    let e = enumerate_into(&graph, &layers, Budget::default(), &mut fold, &mut |_| {});
    assert_eq!(e.cycles, 5);
    assert_bounds(&fold.bounds.h_bar, &[SQRT2, 1.0, SQRT2]);
    // Self-loop and one 2-cycle through each end; self-loop and both 2-cycles through the middle.
    assert_eq!(fold.bounds.cycles_through, vec![2, 3, 2]);
}

#[test]
fn spec_7_worked_example_through_a_model() {
    let (names, values) = model_text(
        "model Worked\n  Real x1(start = 1); Real x2(start = 2); Real x3(start = 3);\nequation\n  \
         der(x1) = -x1 + 0.5*x2;\n  der(x2) = 0.5*x1 - 1.5*x2 + 0.5*x3;\n  der(x3) = 0.5*x2 - x3;\nend Worked;\n",
    );
    assert_eq!(names, vec!["x1", "x2", "x3"]);
    let mut dense = vec![vec![0.0; 3]; 3];
    for &(r, c, v) in &values {
        dense[r][c] = v;
    }
    assert_eq!(dense, WORKED.iter().map(|r| r.to_vec()).collect::<Vec<_>>());
    let a = cycles_at(&names, &values, 0.5);
    assert_eq!(a.enumeration.cycles, 5);
    assert_bounds(&a.bounds.h_bar, &[SQRT2, 1.0, SQRT2]);
}

#[test]
fn dc_motor_angle_has_no_bound() {
    let (names, values) = example("dc_motor.mo", &[]);
    let a = cycles_at(&names, &values, 0.5);
    // Self-loops of I and w, and I ↔ w; phi only reads w.
    assert_eq!(a.enumeration.cycles, 3);
    // J_II = −R/L = −2, J_ww = −b/J = −10; I ↔ w: |(−k_m/L)(k_m/J)| = 0.02.
    assert!(close(h(&names, &a, "I"), 1.5 / 2.0));
    assert!(close(h(&names, &a, "w"), 1.5 / 10.0));
    assert_eq!(h(&names, &a, "phi"), f64::INFINITY);
    assert!(close(stiffness_index(&a.bounds.h_bar).unwrap(), 5.0));
}

#[test]
fn two_masses_have_two_time_scales() {
    let (names, values) = example("two_masses.mo", &[]);
    let a = cycles_at(&names, &values, 0.5);
    // Self-loops v1, v2; x1↔v1, v1↔v2, x2↔v2; x1→v1→v2→x1, x2→v2→v1→x2; x1→v1→x2→v2→x1.
    assert_eq!(a.enumeration.cycles, 8);
    // The stiff spring: x1 ↔ v1 with |1 · (−(k1+k2))| = 501; the soft side x2 ↔ v2 with 6.
    let fast = (0.5f64 / 501.0).sqrt();
    let slow = (0.5f64 / 6.0).sqrt();
    assert!(close(h(&names, &a, "x1"), fast) && close(h(&names, &a, "v1"), fast));
    assert!(close(h(&names, &a, "x2"), slow) && close(h(&names, &a, "v2"), slow));
    // Two clusters of equal bounds: one gap, N − 1 = 3 terms (0, 1, 0).
    assert!(close(
        separability_index(&a.bounds.h_bar).unwrap(),
        1.0 - 1.0 / 3.0
    ));
}

#[test]
fn half_car_cancellation_residue_is_no_edge() {
    let (names, values) = example("half_car.mo", &[]);
    let a = cycles_at(&names, &values, 0.5);
    // 2 k_f L_f = 2 k_r L_r on paper; in floating point ∂der(v_z)/∂theta comes out 0 and
    // ∂der(w_theta)/∂z 7e-15, within a few ulps of its terms' magnitude (24): rounding, so
    // 0 and no edge. The cycles are the self-loops of v_z and w_theta, z ↔ v_z,
    // theta ↔ w_theta and v_z ↔ w_theta; not z → v_z → w_theta → z.
    assert_eq!(a.enumeration.cycles, 5);
    // v_z: J = −(2k_f + 2k_r)/M = −98 ⇒ z ↔ v_z gives sqrt(0.5/98).
    assert!(close(h(&names, &a, "z"), (0.5f64 / 98.0).sqrt()));
    // theta ↔ w_theta: (2k_f L_f² + 2k_r L_r²)/J = 50.4.
    assert!(close(h(&names, &a, "theta"), (0.5f64 / 50.4).sqrt()));
    let all: Vec<usize> = (0..4).collect();
    let sets = cycle_sets(&a.graph, &all);
    let hub_names: Vec<&str> = sets.hubs.iter().map(|(v, _)| names[*v].as_str()).collect();
    assert_eq!(hub_names, vec!["v_z", "w_theta"]);
    assert_eq!(sets.blocks.len(), 3);
}

#[test]
fn rc_ladder_weak_connection_cuts_the_two_cycle() {
    let (names, values) = example("rc_ladder.mo", &[]);
    let a = cycles_at(&names, &values, 0.5);
    // J = [[−11, 1], [1, −2]]: two self-loops and C1.v ↔ C2.v with product 1.
    assert_eq!(a.enumeration.cycles, 3);
    assert_bounds(&a.bounds.h_bar, &[1.5 / 11.0, 0.5f64.sqrt()]);
    // With `weak`, each side reads the other's last value: no dependency, no 2-cycle, and the
    // capacitor side's diagonal loses R2 (J = [[−11, 0], [0, −1]]).
    let (names, values) = example("rc_ladder_weak.mo", &[]);
    let a = cycles_at(&names, &values, 0.5);
    assert_eq!(a.enumeration.cycles, 2);
    assert_bounds(&a.bounds.h_bar, &[1.5 / 11.0, 1.5]);
}

#[test]
fn power_shaft_split_at_the_weak_shaft_leaves_the_angle_without_bound() {
    // The library's default Jacobian holds weak reads: the decoupled subsystems.
    let (names, values) = example("power_shaft.mo", &[]);
    let a = cycles_at(&names, &values, 0.5);
    assert_eq!(a.enumeration.cycles, 3);
    assert_eq!(h(&names, &a, "mech.inertia.phi"), f64::INFINITY);
    assert_eq!(a.bounds.h_bar.iter().filter(|x| x.is_finite()).count(), 3);
}

#[test]
fn entries_many_decades_apart_are_all_edges() {
    let (names, values) = model_text(
        "model Decades\n  Real x(start = 1); Real y(start = 1);\nequation\n  \
         der(x) = -1e7*x + 1e-7*y;\n  der(y) = -1e-7*x - y;\nend Decades;\n",
    );
    let a = cycles_at(&names, &values, 0.5);
    // Two self-loops and x ↔ y, whose product is 1e-14.
    assert_eq!(a.enumeration.cycles, 3);
    assert_eq!(a.bounds.cycles_through, vec![2, 2]);
    // y's own bound 1.5 is below the 2-cycle's sqrt(0.5 / 1e-14).
    assert_bounds(&a.bounds.h_bar, &[1.5e-7, 1.5]);
}

#[test]
fn quarter_cars_flat_and_from_components_agree() {
    let (n1, v1) = example("quarter_car.mo", &[]);
    let (n2, v2) = example("quarter_car_components.mo", &[]);
    let a1 = cycles_at(&n1, &v1, 0.5);
    let a2 = cycles_at(&n2, &v2, 0.5);
    // The road x_r is driven by time only: on no cycle. The four others: self-loops of v_s and
    // v_t, x_s ↔ v_s, x_t ↔ v_t, v_s ↔ v_t, and the 3- and 4-cycles through the spring x_s − x_t.
    assert_eq!(a1.enumeration.cycles, 8);
    assert_eq!(a2.enumeration.cycles, 8);
    assert_eq!(h(&n1, &a1, "x_r"), f64::INFINITY);
    assert_eq!(a1.bounds.h_bar.iter().filter(|x| x.is_finite()).count(), 4);
    assert_eq!(a2.bounds.h_bar.iter().filter(|x| x.is_finite()).count(), 4);
}

/// Cycles of the counterflow heat exchanger with N volumes: 3N self-loops, 2N wall 2-cycles
/// (stream a ↔ wall, wall ↔ stream b) and, for every pair of wall volumes j < i, the loop
/// wall i → a_i → a_{i−1} → … → a_j → wall j → b_{N−j+1} → … → b_{N−i+1} → wall i.
fn heat_exchanger_cycles(n: u64) -> u64 {
    3 * n + 2 * n + n * (n - 1) / 2
}

#[test]
fn heat_exchanger_cycles_follow_the_counterflow_structure() {
    for n in [3u64, 10, 30] {
        let size = n.to_string();
        let (names, values) = example("heat_exchanger.mo", &[("N", &size)]);
        let a = cycles_at(&names, &values, 0.5);
        assert_eq!(a.enumeration.cycles, heat_exchanger_cycles(n), "N = {n}");
        assert!(a.bounds.h_bar.iter().all(|x| x.is_finite()));
        // One strongly connected component: one block, no hub.
        let all: Vec<usize> = (0..names.len()).collect();
        let sets = cycle_sets(&a.graph, &all);
        assert_eq!((sets.blocks.len(), sets.hubs.len()), (1, 0));
    }
}

#[test]
fn heat_exchanger_stream_a_is_the_fast_part() {
    let (names, values) = example("heat_exchanger.mo", &[]);
    let a = cycles_at(&names, &values, 0.5);
    // c_a M_a / N = 42 J/K per stream-a volume against (w_a c_a + G_a/N) = 5000 W/K: J = −119.05,
    // so the self-loop bound is 1.5/119.05 = 0.0126, far below the wall's and stream b's.
    let levels = mocca::analysis::partition::propose(&a.bounds.h_bar, None, 1);
    let fast: Vec<&str> = levels[0].fast.iter().map(|&i| names[i].as_str()).collect();
    let want: Vec<String> = (1..=10).map(|i| format!("T_a[{i}]")).collect();
    assert_eq!(fast, want);
    assert!(close(h(&names, &a, "T_a[1]"), 1.5 * 42.0 / 5000.0));
}

/// Runs mocca: stdout and exit code.
fn mocca(args: &[&str]) -> (String, i32) {
    let (out, _, code) = cli_support::mocca(args);
    (out, code)
}

#[test]
fn cycles_command_prints_the_dc_motor() {
    let (text, code) = mocca(&["cycles", "examples/dc_motor.mo"]);
    assert_eq!(code, 0);
    insta::assert_snapshot!("cycles_dc_motor_text", text);
    let (json, code) = mocca(&["cycles", "examples/dc_motor.mo", "--format", "json"]);
    assert_eq!(code, 0);
    let value: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    insta::assert_json_snapshot!("cycles_dc_motor_json", value);
}

#[test]
fn a_cycle_budget_is_reported() {
    let (json, code) = mocca(&[
        "cycles",
        "examples/heat_exchanger.mo",
        "--budget-cycles",
        "40",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(v["complete"], false);
    assert_eq!(v["cycles"], 40);
    assert_eq!(v["budget"]["stopped"], "cycle budget");
    let incomplete = v["states"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["complete"] == false)
        .count();
    assert!(incomplete > 0);
}

#[test]
fn a_time_budget_also_bounds_the_wait_for_the_stiffness_ratio() {
    // 900 states in one strongly connected block: σ_R's dense eigenvalues take far longer
    // than the millisecond allowed, so it is reported as not computed instead of awaited.
    let (json, code) = mocca(&[
        "cycles",
        "examples/heat_exchanger.mo",
        "-p",
        "N=300",
        "--budget-seconds",
        "0.001",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(v["complete"], false);
    assert!(v["stiffness_ratio"].is_null());
    let why = v["stiffness_ratio_undefined"].as_str().expect("a reason");
    assert!(why.contains("time budget"), "{why}");
}

#[test]
fn bad_usage_exits_2_and_model_errors_exit_1() {
    assert_eq!(
        mocca(&["cycles", "examples/dc_motor.mo", "--alpha", "-1"]).1,
        2
    );
    assert_eq!(
        mocca(&["cycles", "examples/dc_motor.mo", "--at", "nope=1"]).1,
        2
    );
    assert_eq!(
        mocca(&["cycles", "examples/dc_motor.mo", "--at", "I=x"]).1,
        2
    );
    assert_eq!(
        mocca(&["separability", "examples/dc_motor.mo", "--alphas", "1:0:x"]).1,
        2
    );
    // The angle integrates the speed: J is singular, there is no isolated steady state.
    assert_eq!(mocca(&["cycles", "examples/dc_motor.mo", "--steady"]).1, 1);
}

#[test]
fn steady_state_of_the_heat_exchanger_is_found() {
    let (json, code) = mocca(&[
        "cycles",
        "examples/heat_exchanger.mo",
        "--steady",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    // The model is linear: J and hence the bounds do not depend on the point.
    assert_eq!(v["cycles"], 95);
    assert!(
        v["operating_points"]
            .as_str()
            .unwrap()
            .starts_with("steady state")
    );
}

#[test]
fn separability_json_has_one_row_of_terms_per_alpha() {
    let (json, code) = mocca(&[
        "separability",
        "examples/two_masses.mo",
        "--alphas",
        "0.25,0.5,1",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(v["alphas"].as_array().unwrap().len(), 3);
    let terms = v["terms"].as_array().unwrap();
    assert_eq!(terms.len(), 3);
    // Four finite states: three gaps, the widest is 1.
    for row in terms {
        let row: Vec<f64> = row
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert_eq!(row.len(), 3);
        assert!(row.contains(&1.0));
    }
    assert_eq!(v["order"].as_array().unwrap().len(), 4);
}

#[test]
fn separability_pictures_are_written_as_svg_and_png() {
    let dir = std::env::temp_dir().join(format!("mocca-pictures-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (svg, png) = (dir.join("map.svg"), dir.join("map.png"));
    let args = [
        "separability",
        "examples/heat_exchanger.mo",
        "--svg",
        svg.to_str().unwrap(),
        "--png",
        png.to_str().unwrap(),
    ];
    assert_eq!(mocca(&args).1, 0);
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg"));
    // The axes are labelled and the rows name the states they separate: the largest gap of
    // the heat exchanger is between stream a and the wall.
    for label in ["α", "s_α(i+1, i)", "10 T_a[10]|T_w[1]"] {
        assert!(text.contains(label), "{label} missing");
    }
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    // An unwritable destination is an error, not a panic.
    let bad = [
        "separability",
        "examples/heat_exchanger.mo",
        "--png",
        "/nonexistent/dir/map.png",
    ];
    assert_eq!(mocca(&bad).1, 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `(row name, column name, value)` of every entry of `mocca jacobian --format json`.
fn jacobian_entries(args: &[&str]) -> (Vec<(String, String, f64)>, serde_json::Value) {
    let mut all = vec!["jacobian"];
    all.extend_from_slice(args);
    all.extend(["--format", "json"]);
    let (json, code) = mocca(&all);
    assert_eq!(code, 0, "{all:?}");
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    let states: Vec<String> = v["states"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect();
    let mut entries: Vec<(String, String, f64)> = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let at = |k: &str| states[e[k].as_u64().unwrap() as usize].clone();
            (at("row"), at("col"), e["value"].as_f64().unwrap())
        })
        .collect();
    entries.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    (entries, v)
}

fn json_of(args: &[&str]) -> serde_json::Value {
    let mut all = args.to_vec();
    all.extend(["--format", "json"]);
    let (json, code) = mocca(&all);
    assert_eq!(code, 0, "{all:?}");
    serde_json::from_str(&json).expect("JSON")
}

fn state_h_bound(v: &serde_json::Value, name: &str) -> serde_json::Value {
    let states = v["states"].as_array().unwrap();
    let s = states.iter().find(|s| s["name"] == name).expect("state");
    s["h_bound"].clone()
}

#[test]
fn analyses_couple_weak_connections_by_default() {
    // The same model without the `weak` marks: one system, the reference for the coupled
    // analysis.
    let text = std::fs::read_to_string("examples/power_shaft.mo").unwrap();
    let strong = text.replace(
        "connect(mech.shaft(weak tau), elec.shaft(weak phi));",
        "connect(mech.shaft, elec.shaft);",
    );
    assert_ne!(strong, text);
    let dir = std::env::temp_dir().join(format!("mocca-strong-shaft-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("power_shaft_strong.mo");
    std::fs::write(&path, strong).unwrap();
    let (coupled, v) = jacobian_entries(&["examples/power_shaft.mo"]);
    let (reference, _) = jacobian_entries(&[path.to_str().unwrap()]);
    assert_eq!(v["weak"], "coupled");
    assert_eq!(coupled.len(), reference.len());
    for (c, r) in coupled.iter().zip(&reference) {
        assert_eq!((&c.0, &c.1), (&r.0, &r.1));
        assert!(close(c.2, r.2), "{c:?} against {r:?}");
    }
    // The electrical torque reads the angle: d der(w) / d phi = −(P_base E V / X) cos(δ) / J
    // = −(100 · 1.2 · 1 / 0.5) / 2 at δ = 0.
    let torque = coupled
        .iter()
        .find(|e| e.0 == "mech.inertia.w" && e.1 == "mech.inertia.phi")
        .expect("the angle feeds the shaft's acceleration");
    assert!(close(torque.2, -120.0));
    // So the angle is on a cycle, phi ↔ w with product 120: h̄ = sqrt(0.5 / 120).
    let cycles = json_of(&["cycles", "examples/power_shaft.mo"]);
    assert_eq!(cycles["weak"], "coupled");
    let h = state_h_bound(&cycles, "mech.inertia.phi").as_f64().unwrap();
    assert!(close(h, (0.5f64 / 120.0).sqrt()), "{h}");
    let map = json_of(&["separability", "examples/power_shaft.mo"]);
    assert_eq!(map["weak"], "coupled");
    assert_eq!(map["order"].as_array().unwrap().len(), 4);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn weak_split_analyses_the_decoupled_subsystems() {
    let (split, v) = jacobian_entries(&["examples/power_shaft.mo", "--weak", "split"]);
    assert_eq!(v["weak"], "split");
    // Each side reads the other's held value: nothing crosses the shaft.
    assert_eq!(split.len(), 5);
    assert!(!split.iter().any(|e| e.1 == "mech.inertia.phi"));
    let cycles = json_of(&["cycles", "examples/power_shaft.mo", "--weak", "split"]);
    assert_eq!(cycles["weak"], "split");
    assert!(state_h_bound(&cycles, "mech.inertia.phi").is_null());
}

/// The root of `k1 u + k3 u³ = f` (increasing in u), by bisection.
fn cubic_spring_deflection(k1: f64, k3: f64, f: f64) -> f64 {
    let (mut lo, mut hi) = (-1.0, 1.0);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if k1 * mid + k3 * mid.powi(3) < f {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

#[test]
fn analyses_default_to_the_consistent_initial_state() {
    // The quarter car starts at rest under gravity (initial equations der(v) = 0): the body
    // spring carries m_s g, the tyre (m_s + m_t) g, so both cubic springs are compressed.
    let (g, m_s, m_t) = (9.81, 267.0, 36.6);
    let (k1_s, k3_s, k1_t, k3_t) = (18.742, 2.0e5, 193.915, 2.0e8);
    let u_s = cubic_spring_deflection(k1_s, k3_s, -m_s * g);
    let u_t = cubic_spring_deflection(k1_t, k3_t, -(m_s + m_t) * g);
    let stiffness = |k1: f64, k3: f64, u: f64| k1 + 3.0 * k3 * u * u;
    let entry = |entries: &[(String, String, f64)], row: &str, col: &str| {
        entries
            .iter()
            .find(|e| e.0 == row && e.1 == col)
            .unwrap_or_else(|| panic!("no entry {row}, {col}"))
            .2
    };
    let (initial, v) = jacobian_entries(&["examples/quarter_car.mo"]);
    assert_eq!(v["operating_point"], "initial");
    let want = -stiffness(k1_s, k3_s, u_s) / m_s;
    assert!(close(entry(&initial, "v_s", "x_s"), want));
    let want = -(stiffness(k1_t, k3_t, u_t) + stiffness(k1_s, k3_s, u_s)) / m_t;
    let got = entry(&initial, "v_t", "x_t");
    assert!(
        (got - want).abs() <= 1e-8 * want.abs(),
        "{got} against {want}"
    );
    // `--at start`: the start values as written, springs at rest length.
    let (start, v) = jacobian_entries(&["examples/quarter_car.mo", "--at", "start"]);
    assert_eq!(v["operating_point"], "start");
    assert!(close(entry(&start, "v_s", "x_s"), -k1_s / m_s));
    // States set on the start values, negative ones included.
    let (set, _) = jacobian_entries(&["examples/quarter_car.mo", "--at", "start,x_s=-0.05"]);
    let want = -stiffness(k1_s, k3_s, -0.05) / m_s;
    assert!(close(entry(&set, "v_s", "x_s"), want));
    let (set, _) = jacobian_entries(&["examples/quarter_car.mo", "--at", "x_s=-0.05"]);
    let want = -stiffness(k1_s, k3_s, -0.05 - u_t) / m_s;
    assert!(close(entry(&set, "v_s", "x_s"), want));
    // `cycles` and `separability` evaluate at the same point and say which.
    let cycles = json_of(&["cycles", "examples/quarter_car.mo"]);
    assert_eq!(cycles["operating_point"], "initial");
    // x_s ↔ v_s is the body's fastest cycle: h̄ = sqrt(0.5 / |J_vs,xs|) at most.
    let h = state_h_bound(&cycles, "x_s").as_f64().unwrap();
    assert!(h <= (0.5 / (stiffness(k1_s, k3_s, u_s) / m_s)).sqrt() * (1.0 + 1e-12));
    let cycles = json_of(&["cycles", "examples/quarter_car.mo", "--at", "start"]);
    assert_eq!(cycles["operating_point"], "start");
    let map = json_of(&["separability", "examples/quarter_car.mo", "--at", "start"]);
    assert_eq!(map["operating_point"], "start");
}

#[test]
fn jacobian_text_prints_short_exact_numbers_in_aligned_columns() {
    let dir = std::env::temp_dir().join(format!("mocca-decades-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("decades.mo");
    std::fs::write(
        &path,
        "model Decades\n  Real x(start = 1); Real y(start = 1);\nequation\n  \
         der(x) = -1e7*x + 1e-7*y;\n  der(y) = -1e-7*x - 2.999*y;\nend Decades;\n",
    )
    .unwrap();
    let (text, code) = mocca(&["jacobian", path.to_str().unwrap()]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    let values: Vec<&str> = lines[1..]
        .iter()
        .map(|l| l.split_whitespace().nth(6).unwrap())
        .collect();
    assert_eq!(values, ["-10000000", "1e-7", "-1e-7", "-2.999"]);
    // The values end in one column.
    let ends: Vec<usize> = lines[1..]
        .iter()
        .zip(&values)
        .map(|(l, v)| l.find(&format!(" {v} ")).unwrap() + 1 + v.len())
        .collect();
    assert!(ends.iter().all(|&e| e == ends[0]), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// 16 states all coupled: about 10¹³ simple cycles, more than any run lists.
const DENSE: &str = "model Dense\n  Real x[16](each start = 1);\nequation\n  for i in 1:16 loop\n    \
                     der(x[i]) = (-i)*x[i] + 0.1*sum(x);\n  end for;\nend Dense;\n";

#[test]
fn a_dense_graph_ends_at_the_default_budget() {
    let dir = std::env::temp_dir().join(format!("mocca-dense-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("dense.mo");
    std::fs::write(&path, DENSE).unwrap();
    let file = path.to_str().unwrap();
    let v = json_of(&["cycles", file]);
    assert_eq!(v["complete"], false);
    assert_eq!(v["cycles"], 10_000_000);
    assert_eq!(v["budget"]["stopped"], "cycle budget");
    assert_eq!(v["budget"]["max_cycles"], 10_000_000);
    assert_eq!(v["budget"]["max_seconds"], 60.0);
    let (text, code) = mocca(&["cycles", file]);
    assert_eq!(code, 0);
    assert!(
        text.contains("`--budget-cycles N` (or `unlimited`)"),
        "{text}"
    );
    let v = json_of(&["separability", file, "--alphas", "0.5"]);
    assert_eq!(v["complete"], false);
    assert_eq!(v["budget"]["stopped"], "cycle budget");
    // Without a cycle limit the clock ends it.
    let args = [
        "cycles",
        file,
        "--budget-cycles",
        "unlimited",
        "--budget-seconds",
        "0.2",
    ];
    let v = json_of(&args);
    assert_eq!(v["budget"]["stopped"], "time budget");
    assert!(v["budget"]["max_cycles"].is_null());
    assert_eq!(mocca(&["cycles", file, "--budget-cycles", "many"]).1, 2);
    std::fs::remove_dir_all(&dir).unwrap();
}
