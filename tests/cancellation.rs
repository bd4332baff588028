//! Structural zeros that are rounding noise. In the bundled half car k_f·L_f = k_r·L_r
//! (28000·0.9 = 21000·1.2 = 25200), so ∂der(w_theta)/∂z = (2·L_f·k_f − 2·L_r·k_r)/J is exactly
//! 0; evaluated in floating point it is 7.1e-15. An entry within a few ulps of the sum of its
//! terms' magnitudes is 0: `jacobian` says it cancels, and cycle analysis takes no edge there.

mod cli_support;

use cli_support::{mocca, mocca_json};

const HALF_CAR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/half_car.mo");

fn entry(json: &serde_json::Value, row: usize, col: usize) -> &serde_json::Value {
    json["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .find(|e| e["row"] == row && e["col"] == col)
        .unwrap_or_else(|| panic!("no entry ({row}, {col})"))
}

#[test]
fn an_entry_that_cancels_to_rounding_is_zero_and_said_so() {
    // States in order: z, v_z, theta, w_theta.
    let json = mocca_json(&["jacobian", HALF_CAR, "--format", "json"]);
    let cancelled = entry(&json, 3, 0);
    assert_eq!(cancelled["value"], 0.0, "{cancelled}");
    let rounding = cancelled["cancelled"].as_f64().expect("the rounding left");
    assert!(rounding != 0.0 && rounding.abs() < 1e-13, "{rounding}");
    // A small entry that does not cancel keeps its value: with k_r = 21001 the entry is
    // 2·1.2·(−1)/2100 = −1.14e-3.
    let json = mocca_json(&["jacobian", HALF_CAR, "-p", "k_r=21001", "--format", "json"]);
    let small = entry(&json, 3, 0);
    assert!(
        (small["value"].as_f64().unwrap() + 2.4 / 2100.0).abs() < 1e-12,
        "{small}"
    );
    assert!(small.get("cancelled").is_none(), "{small}");
    let (text, _, code) = mocca(&["jacobian", HALF_CAR]);
    assert_eq!(code, 0);
    assert!(text.contains("d der(w_theta) / d z cancels"), "{text}");
}

/// The cycles through the cancelled entry are not counted: 5 cycles, not the 6 its rounding
/// made. With k_r = 21001 both `∂der(v_z)/∂theta` and `∂der(w_theta)/∂z` are real (±2.4e-3
/// and 1.1e-3 per unit) and the three cycles through them are counted: 8.
#[test]
fn cycles_through_a_cancelled_entry_are_not_counted() {
    let count = |extra: &[&str]| {
        let json = mocca_json(&[&["cycles", HALF_CAR, "--format", "json"][..], extra].concat());
        json["cycles"].as_u64().expect("a cycle count")
    };
    assert_eq!(count(&[]), 5);
    assert_eq!(count(&["-p", "k_r=21001"]), 8);
}
