//! `--partition auto` checks the explicit step of the levels it chose from cycle bounds: a
//! bound is a gain bound, not a stability proof. A three-mass chain with one stiff damped
//! spring (k = 400, d = 2) has the relative mode λ = −d ± √(d² − 2k) = −2 ± 28.2i and cycle
//! bounds h̄ = 0.035 on the four states around it, so at h = 0.01 cycle analysis calls every
//! state slow; explicit Euler's factor on that mode is |1 + hλ| = 1.019 > 1, and the run grew
//! to 10⁹ with exit code 0. Now those four states (one cluster of equal bounds) move to the
//! implicit level, with a warning giving the figures, and the run stays with the BDF
//! reference.

mod cli_support;

use cli_support::{csv_columns, model_file, simulate_csv};

const CHAIN: &str = "model Chain3
  parameter Real k1 = 1, k2 = 400, k3 = 1, d = 2;
  Real x1(start = 1, fixed = true), v1(start = 0, fixed = true);
  Real x2(start = 0, fixed = true), v2(start = 0, fixed = true);
  Real x3(start = 0, fixed = true), v3(start = 0, fixed = true);
equation
  der(x1) = v1;
  der(v1) = -k1*x1 - k2*(x1 - x2) - d*(v1 - v2);
  der(x2) = v2;
  der(v2) = k2*(x1 - x2) + d*(v1 - v2) - k3*(x2 - x3);
  der(x3) = v3;
  der(v3) = k3*(x2 - x3) - 0.1*v3;
end Chain3;
";

#[test]
fn explicit_levels_beyond_their_stability_limit_move_to_the_implicit_level() {
    let file = model_file("chain3", CHAIN);
    let file = file.to_str().unwrap();
    let grid = ["--step", "0.01", "--stop", "10", "--vars", "x1,x2,x3"];
    let (reference, err, code) = simulate_csv(
        "chain3_bdf",
        &[
            &["simulate", file, "--method", "bdf", "--tol", "1e-10"][..],
            &grid[..],
        ]
        .concat(),
    );
    assert_eq!(code, 0, "{err}");
    let reference = csv_columns(&reference);
    // The error of implicit Euler, every state implicit, at the same step: the mixed run may
    // not be far worse.
    let (implicit, err, code) = simulate_csv(
        "chain3_implicit",
        &[
            &["simulate", file, "--method", "implicit-euler"][..],
            &grid[..],
        ]
        .concat(),
    );
    assert_eq!(code, 0, "{err}");
    let implicit = csv_columns(&implicit);
    let worst = |run: &std::collections::BTreeMap<String, Vec<f64>>, name: &str| {
        (run[name].iter().zip(&reference[name]))
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max)
    };
    for levels in [
        &[][..],
        &["--multirate", "2"][..],
        &["--levels", "2", "--multirate", "2"][..],
    ] {
        let args = [
            &[
                "simulate",
                file,
                "--method",
                "mixed-euler",
                "--partition",
                "auto",
            ][..],
            levels,
            &grid[..],
        ]
        .concat();
        let (csv, err, code) = simulate_csv("chain3_mixed", &args);
        assert_eq!(code, 0, "{levels:?}: {err}");
        assert!(
            err.contains("spectral radius 1.019")
                && err.contains("x1, v1, x2, v2 moved to the implicit level"),
            "{levels:?}: {err}"
        );
        let run = csv_columns(&csv);
        for name in ["x1", "x2", "x3"] {
            let (mixed, implicit) = (worst(&run, name), worst(&implicit, name));
            assert!(
                mixed < 1.5 * implicit + 1e-3,
                "{levels:?}: {name} is off by {mixed}, implicit Euler by {implicit}"
            );
        }
    }
}
