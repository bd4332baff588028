//! Cycle analysis (SPEC §7–9) on hand-built Jacobians, on small models written here, and on
//! every example of SPEC §13, against values derived by hand.

use std::process::Command;

use mocca::analysis::digraph::from_dense;
use mocca::analysis::indices::{separability_index, stiffness_index};
use mocca::analysis::johnson::{Budget, enumerate_into};
use mocca::analysis::operating_point::Model;
use mocca::analysis::pcs::cycle_sets;
use mocca::analysis::{CycleAnalysis, Values, analyse};
use mocca::causal::initial_point;
use simulate_support::Loaded;

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
fn half_car_cancelled_couplings_are_no_edges_and_the_angle_rate_is_a_hub() {
    let (names, values) = example("half_car.mo", &[]);
    let a = cycles_at(&names, &values, 0.5);
    // 2 k_f L_f = 2 k_r L_r: z and theta do not feed each other's accelerations. Left: self-loops
    // of v_z and w_theta, z ↔ v_z, theta ↔ w_theta, v_z ↔ w_theta.
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
fn power_shaft_angle_has_no_bound() {
    let (names, values) = example("power_shaft.mo", &[]);
    let a = cycles_at(&names, &values, 0.5);
    assert_eq!(a.enumeration.cycles, 3);
    assert_eq!(h(&names, &a, "mech.inertia.phi"), f64::INFINITY);
    assert_eq!(a.bounds.h_bar.iter().filter(|x| x.is_finite()).count(), 3);
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

fn mocca(args: &[&str]) -> (String, i32) {
    let out = Command::new(env!("CARGO_BIN_EXE_mocca"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("mocca runs");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code().unwrap_or(-1),
    )
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
