//! `mocca emit` (SPEC §12): every example emitted, built offline (one shared target directory)
//! and run, its CSV equal to `mocca simulate`'s with the same method, bit for bit; a parameter
//! given to the binary at run time gives `simulate -p`'s trajectory; the same input writes the
//! same files; bad input is refused without leaving anything half-written.

#[path = "cli_support/mod.rs"]
mod cli_support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use cli_support::{csv_columns, mocca, simulate_csv, temp_path};

/// One emitted crate built at a time: the builds share a target directory (and the machine).
static BUILDS: Mutex<()> = Mutex::new(());

fn crates_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("emitted-crates")
}

fn target_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("emitted-target")
}

/// Emits `model` with `args` into a crate named `name`, builds it and returns its binary.
fn emit_and_build(name: &str, model: &str, args: &[&str]) -> PathBuf {
    let dir = crates_dir().join(name);
    let dir_text = dir.to_str().expect("utf-8").to_string();
    let mut all = vec!["emit", model, "--out", &dir_text, "--force"];
    all.extend(args);
    let (_, err, code) = mocca(&all);
    assert_eq!(code, 0, "{name}: {err}");
    let _one = BUILDS.lock().unwrap_or_else(|e| e.into_inner());
    let built = Command::new(env!("CARGO"))
        .args(["build", "--release", "--offline", "--quiet"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", target_dir())
        .output()
        .expect("cargo runs");
    assert!(
        built.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    // Binaries of one name from different crates would overwrite each other: keep a copy.
    let binary = target_dir().join("release").join(binary_name(&dir));
    let kept = crates_dir().join(format!("{name}.bin"));
    std::fs::copy(&binary, &kept).expect("the binary was built");
    kept
}

/// The `[[bin]]` name of the crate at `dir`.
fn binary_name(dir: &Path) -> String {
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).expect("manifest");
    let bin = manifest.split("[[bin]]").nth(1).expect("a binary");
    let name = bin.split('"').nth(1).expect("its name");
    name.to_string()
}

/// Runs an emitted binary with `args`, writing CSV; returns the CSV, stderr and exit code.
fn run_binary(binary: &Path, name: &str, args: &[&str]) -> (String, String, i32) {
    let out = temp_path(&format!("{name}.csv"));
    let output = Command::new(binary)
        .args(args)
        .args(["--out", out.to_str().expect("utf-8")])
        .output()
        .expect("the binary runs");
    let csv = std::fs::read_to_string(&out).unwrap_or_default();
    (
        csv,
        String::from_utf8_lossy(&output.stderr).into_owned(),
        output.status.code().unwrap_or(-1),
    )
}

/// Emits, builds and runs `model` and simulates it with the same `args`; the two CSVs.
fn emitted_and_simulated(name: &str, model: &str, args: &[&str]) -> (String, String) {
    let ((emitted, err, code), (simulated, sim_err, sim_code)) = both_runs(name, model, args);
    assert_eq!(code, 0, "{name}: {err}");
    assert_eq!(sim_code, 0, "{name}: {sim_err}");
    (emitted, simulated)
}

/// The crate's run and `simulate`'s of `model` with `args`, each `(csv, stderr, exit code)`.
type Run = (String, String, i32);
fn both_runs(name: &str, model: &str, args: &[&str]) -> (Run, Run) {
    let binary = emit_and_build(name, model, args);
    let emitted = run_binary(&binary, name, &[]);
    let mut sim = vec!["simulate", model];
    sim.extend(args);
    (emitted, simulate_csv(&format!("{name}_simulated"), &sim))
}

/// Implicit Euler at 0.01 to t = 1.
const IMPLICIT_EULER_TO_1: [&str; 6] = [
    "--method",
    "implicit-euler",
    "--step",
    "0.01",
    "--stop",
    "1",
];

/// [`emitted_and_simulated`] of a model given as text.
fn text_emitted_and_simulated(name: &str, text: &str, args: &[&str]) -> (String, String) {
    let file = cli_support::model_file(name, text);
    emitted_and_simulated(name, file.to_str().expect("utf-8"), args)
}

/// Every example with an explicit and an implicit method (each of the six methods used): the
/// emitted binary's CSV is the same text as `simulate`'s, every number bit for bit.
#[test]
fn every_example_runs_as_simulate_runs_it() {
    let methods = [
        ("euler", "implicit-euler"),
        ("midpoint", "trapezoidal"),
        ("heun", "implicit-midpoint"),
    ];
    let examples = [
        ("bouncing_ball", "3"),
        ("dc_motor", "1"),
        ("half_car", "1"),
        ("heat_exchanger", "2"),
        ("heat_exchanger_nonlinear", "2"),
        ("power_shaft", "1"),
        ("quarter_car", "3"),
        ("quarter_car_components", "3"),
        ("rc_ladder", "5"),
        ("rc_ladder_weak", "5"),
        ("two_masses", "2"),
    ];
    for (k, (example, stop)) in examples.iter().enumerate() {
        let (explicit, implicit) = methods[k % methods.len()];
        for method in [explicit, implicit] {
            let name = format!("{example}_{method}");
            let model = format!("examples/{example}.mo");
            let args = ["--method", method, "--step", "0.001", "--stop", stop];
            let (emitted, simulated) = emitted_and_simulated(&name, &model, &args);
            assert!(emitted.lines().count() > 100, "{name}: {emitted}");
            assert_eq!(emitted, simulated, "{name}");
        }
    }
}

/// More than 64 states: the implicit stage's Newton matrix is factored by the static sparse
/// LU whose ordering and fill were written into the crate.
#[test]
fn a_large_model_uses_the_written_sparse_factorization() {
    let args = [
        "-p",
        "N=100",
        "--method",
        "trapezoidal",
        "--step",
        "0.01",
        "--stop",
        "2",
    ];
    let name = "heat_exchanger_sparse";
    let (emitted, simulated) = emitted_and_simulated(name, "examples/heat_exchanger.mo", &args);
    let model =
        std::fs::read_to_string(crates_dir().join(name).join("src/model.rs")).expect("model.rs");
    assert!(model.contains("pub const WHOLE_SPARSE: Option<&SparseTables> = Some("));
    assert_eq!(emitted, simulated);
}

/// Oscillators far too fast for the step (`tests/data/stiff_rotations.mo`, 70 states): implicit
/// Euler's Newton matrix has 1 on its diagonal and 2000 beside it, so the static LU's diagonal
/// pivots grow a row past their limit and are refused; the crate then solves with the
/// runtime's pivoting sparse LU, as `simulate` does: the same CSV, bit for bit, and each
/// oscillator's `z = x + i·y` steps as implicit Euler's closed form `z ← (z + i·h·w)/(1 + h +
/// i·h·w)` says.
#[test]
fn a_newton_matrix_the_static_lu_refuses_is_solved_by_the_pivoting_lu_as_in_simulate() {
    let args: Vec<&str> = IMPLICIT_EULER_TO_1[..5]
        .iter()
        .chain(&["0.05"])
        .copied()
        .collect();
    let model = "tests/data/stiff_rotations.mo";
    let (emitted, simulated) = emitted_and_simulated("stiff_rotations", model, &args);
    assert_eq!(emitted, simulated);
    let run = csv_columns(&simulated);
    let (h, w) = (0.01, 2e5);
    let mut expected = vec![(0.0f64, 0.0f64)];
    for _ in 0..5 {
        // (x + i·y + i·h·w) / (1 + h + i·h·w), by its real and imaginary parts.
        let (x, y) = *expected.last().expect("a point");
        let (a, b) = (x, y + h * w);
        let (c, d) = (1.0 + h, h * w);
        let norm = c * c + d * d;
        expected.push(((a * c + b * d) / norm, (b * c - a * d) / norm));
    }
    assert_eq!(run["time"].len(), expected.len());
    for i in [1, 35] {
        let got = run[&format!("x[{i}]")].iter().zip(&run[&format!("y[{i}]")]);
        for (k, ((xi, yi), (x, y))) in got.zip(&expected).enumerate() {
            assert!(
                (xi - x).abs() < 1e-12 && (yi - y).abs() <= 1e-9 * y.abs(),
                "step {k}: {xi}, {yi} against {x}, {y}"
            );
        }
    }
}

/// 4 200 states in a Newton matrix factored every step: its ordering has two pieces and a
/// separator (SPEC §9's set of shared nodes), written as the pieces' own solves, which the
/// binary factors and solves at once on two threads. One thread or two, it writes what
/// `simulate` writes, bit for bit; a thread count that is no whole number from 1 is refused.
#[test]
fn a_newton_matrix_in_pieces_runs_on_two_threads_as_simulate_runs_it() {
    let args = [
        "-p",
        "N=1400",
        "--method",
        "implicit-euler",
        "--step",
        "0.01",
        "--stop",
        "0.2",
    ];
    let name = "heat_exchanger_pieces";
    let model = "examples/heat_exchanger_nonlinear.mo";
    let binary = emit_and_build(name, model, &args);
    let written =
        std::fs::read_to_string(crates_dir().join(name).join("src/model.rs")).expect("model.rs");
    assert!(written.contains("solve: Solve::Pieces(&WHOLE_PIECES)"));
    let mut sim = vec!["simulate", model];
    sim.extend(args);
    let (simulated, err, code) = simulate_csv(&format!("{name}_simulated"), &sim);
    assert_eq!(code, 0, "{err}");
    assert_eq!(simulated.lines().count(), 22);
    for threads in ["1", "2"] {
        let (emitted, err, code) = run_binary(&binary, name, &["--threads", threads]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(emitted, simulated, "{threads} threads");
    }
    let (_, err, code) = run_binary(&binary, name, &["--threads", "0"]);
    assert_eq!(code, 2);
    assert!(err.contains("`--threads 0`"), "{err}");
}

/// Mixed methods, multirate levels and both interpolations, and weak subsystems stepped apart
/// (Gauss–Seidel, Jacobi, each with a mixed method): the partition chosen at emit time (by
/// `--fast` or by cycle analysis) steps in the crate as in `simulate`, bit for bit.
#[test]
fn partitions_run_as_simulate_runs_them() {
    let cases: [(&str, &str, &[&str]); 4] = [
        (
            "mixed_euler_fast",
            "heat_exchanger",
            &["--method", "mixed-euler", "--fast", "T_w[*]"],
        ),
        (
            "mixed_trapezoidal_auto",
            "heat_exchanger_nonlinear",
            &["--method", "mixed-trapezoidal", "--partition", "auto"],
        ),
        (
            "mixed_midpoint_levels",
            "heat_exchanger",
            &[
                "--method",
                "mixed-midpoint",
                "-p",
                "N=100",
                "--partition",
                "auto",
                "--levels",
                "2",
                "--multirate",
                "4",
            ],
        ),
        (
            "mixed_euler_hold",
            "quarter_car",
            &[
                "--method",
                "mixed-euler",
                "--fast",
                "x_t,v_t",
                "--multirate",
                "3",
                "--interpolate",
                "hold",
            ],
        ),
    ];
    let weak: [(&str, &str, &[&str]); 3] = [
        (
            "weak_gauss_seidel",
            "rc_ladder_weak",
            &["--method", "trapezoidal", "--partition", "weak"],
        ),
        (
            "weak_jacobi",
            "rc_ladder_weak",
            &[
                "--method",
                "heun",
                "--partition",
                "weak",
                "--exchange",
                "jacobi",
            ],
        ),
        (
            "weak_mixed",
            "power_shaft",
            &[
                "--method",
                "mixed-euler",
                "--partition",
                "weak",
                "--fast",
                "*",
            ],
        ),
    ];
    for (name, example, options) in cases.into_iter().chain(weak) {
        let mut args = vec!["--step", "0.01", "--stop", "2"];
        args.extend(options);
        let model = format!("examples/{example}.mo");
        let (emitted, simulated) = emitted_and_simulated(name, &model, &args);
        assert_eq!(emitted, simulated, "{name}");
    }
}

/// The binary's `--param R2.R=5` gives `simulate -p R2.R=5`'s trajectory, and the parameters
/// bound to a changed one follow it.
#[test]
fn a_parameter_changed_at_run_time_is_simulate_with_it() {
    let args = ["--method", "heun", "--step", "0.01", "--stop", "5"];
    let binary = emit_and_build("rc_ladder_param", "examples/rc_ladder.mo", &args);
    let (emitted, err, code) = run_binary(&binary, "rc_param", &["--param", "R2.R=5"]);
    assert_eq!(code, 0, "{err}");
    let mut sim = vec!["simulate", "examples/rc_ladder.mo", "-p", "R2.R=5"];
    sim.extend(args);
    let (simulated, err, code) = simulate_csv("rc_param_simulated", &sim);
    assert_eq!(code, 0, "{err}");
    assert_eq!(emitted, simulated);
    let (default, ..) = run_binary(&binary, "rc_default", &[]);
    assert_ne!(csv_columns(&default)["C2.v"], csv_columns(&emitted)["C2.v"]);
    let (_, err, code) = run_binary(&binary, "rc_unknown", &["--param", "R9.R=1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no parameter `R9.R`"), "{err}");
}

/// The same model and options write the same files, byte for byte.
#[test]
fn the_same_input_writes_the_same_crate() {
    let read = |dir: &Path| -> Vec<(String, Vec<u8>)> {
        [
            "Cargo.toml",
            "src/lib.rs",
            "src/main.rs",
            "src/model.rs",
            "src/runtime.rs",
        ]
        .iter()
        .map(|f| (f.to_string(), std::fs::read(dir.join(f)).expect("written")))
        .collect()
    };
    let mut crates = Vec::new();
    for k in 0..2 {
        let dir = temp_path(&format!("deterministic_{k}"));
        let (_, err, code) = mocca(&[
            "emit",
            "examples/heat_exchanger_nonlinear.mo",
            "-p",
            "N=80",
            "--method",
            "implicit-euler",
            "--out",
            dir.to_str().expect("utf-8"),
        ]);
        assert_eq!(code, 0, "{err}");
        crates.push(read(&dir));
    }
    assert_eq!(crates[0], crates[1]);
}

#[test]
fn bad_emit_input_is_refused_and_nothing_is_half_written() {
    let dir = temp_path("occupied");
    std::fs::create_dir_all(&dir).expect("made");
    std::fs::write(dir.join("keep.txt"), "mine").expect("written");
    let dir_text = dir.to_str().expect("utf-8");
    let (_, err, code) = mocca(&["emit", "examples/rc_ladder.mo", "--out", dir_text]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("is not empty"), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.join("keep.txt")).expect("kept"),
        "mine"
    );
    let fresh = temp_path("never_written");
    let fresh_text = fresh.to_str().expect("utf-8");
    let (_, err, code) = mocca(&[
        "emit",
        "examples/rc_ladder.mo",
        "--method",
        "bdf",
        "--out",
        fresh_text,
    ]);
    assert_eq!(code, 2, "{err}");
    let (_, err, code) = mocca(&["emit", "examples/no_such_model.mo", "--out", fresh_text]);
    assert_eq!(code, 1, "{err}");
    let (_, err, code) = mocca(&[
        "emit",
        "examples/heat_exchanger.mo",
        "--method",
        "mixed-euler",
        "--fast",
        "T_nowhere[*]",
        "--out",
        fresh_text,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("T_nowhere"), "{err}");
    assert!(!fresh.exists());
    let siblings: Vec<String> = std::fs::read_dir(fresh.parent().expect("parent"))
        .expect("listed")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("never_written"))
        .collect();
    assert!(siblings.is_empty(), "{siblings:?}");
}

/// `I − hJ` singular (`der(x) = 100 x` at h = 0.01): the emitted binary stops with an error,
/// as `simulate` does.
#[test]
fn a_singular_implicit_stage_is_an_error_of_the_binary() {
    let model = cli_support::model_file(
        "singular_stage",
        "model Singular Real x(start = 1, fixed = true); equation der(x) = 100*x; end Singular;",
    );
    let model = model.to_str().expect("utf-8");
    let args = IMPLICIT_EULER_TO_1;
    let binary = emit_and_build("singular_stage", model, &args);
    let (_, err, code) = run_binary(&binary, "singular_run", &[]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("singular"), "{err}");
    let mut sim = vec!["simulate", model];
    sim.extend(args);
    let (_, err, code) = simulate_csv("singular_simulated", &sim);
    assert_eq!(code, 1, "{err}");
}

/// The weak RC ladder emitted with its subsystems apart (SPEC §10): below its stability limit
/// the emitted binary settles to the circuit's steady state, above it grows without bound, for
/// Gauss–Seidel and Jacobi alike, the limits those of `G_L⁻¹ G_R` and of Jacobi's map
/// (derived in `tests/simulate_jacobi.rs`). One crate per exchange: `R2`, `C2` and the step
/// are given to the binary at run time.
#[test]
fn the_weak_ladder_keeps_its_stability_boundary() {
    // (R2, C2, Jacobi's limit, Gauss–Seidel's limit).
    let limits = [
        (0.1, 1.0, 0.2212, 0.4),
        (0.3, 3.0, 1.982, 3.920),
        (0.1, 10.0, 2.485, 4.878),
    ];
    for exchange in ["gauss-seidel", "jacobi"] {
        let args = [
            "--method",
            "implicit-euler",
            "--partition",
            "weak",
            "--exchange",
            exchange,
        ];
        let name = format!("weak_ladder_{exchange}");
        let binary = emit_and_build(&name, "examples/rc_ladder_weak.mo", &args);
        for (r2, c2, jacobi, gauss_seidel) in limits {
            let limit = if exchange == "jacobi" {
                jacobi
            } else {
                gauss_seidel
            };
            let i = 1.0 / (0.1 + r2 + 1.0);
            let steady = [1.0 - 0.1 * i, i];
            for (factor, stable) in [(0.8, true), (1.25, false)] {
                let step = factor * limit;
                let (r2_text, c2_text) = (format!("R2.R={r2}"), format!("C2.C={c2}"));
                let (step_text, stop_text) = (step.to_string(), (400.0 * step).to_string());
                let (csv, err, code) = run_binary(
                    &binary,
                    &format!("{name}_{r2}_{c2}_{factor}"),
                    &[
                        "--param", &r2_text, "--param", &c2_text, "--step", &step_text, "--stop",
                        &stop_text,
                    ],
                );
                assert_eq!(code, 0, "{err}");
                let columns = csv_columns(&csv);
                let deviation = |k: usize| {
                    let b = (columns["C1.v"][k] - steady[0]).abs();
                    let c = (columns["C2.v"][k] - steady[1]).abs();
                    if b.is_nan() || c.is_nan() {
                        f64::INFINITY
                    } else {
                        b.max(c)
                    }
                };
                let rows = columns["time"].len();
                let peak = (0..rows).map(deviation).fold(0.0, f64::max);
                let case = format!("{exchange} R2={r2} C2={c2} at {factor} × {limit}");
                if stable {
                    assert!(peak < 2.0 && deviation(rows - 1) < 1e-6, "{case}: {peak}");
                } else {
                    assert!(peak > 1e6, "{case}: peak {peak}");
                }
            }
        }
    }
}

/// Two lines of 200 cells coupled through weak variables: with Jacobi exchange and 400 states
/// the emitted binary steps the second subsystem on a second thread (on a machine with two
/// processors), and still writes what `simulate` writes, bit for bit.
#[test]
fn jacobi_subsystems_on_two_threads_run_as_simulate_runs_them() {
    let model = cli_support::model_file(
        "two_lines",
        "model TwoLines
           parameter Integer N = 200;
           parameter Real k = 50;
           Real a[N](each start = 1, each fixed = true);
           Real b[N](each start = 0, each fixed = true);
           weak Real a_end;
           weak Real b_end;
         equation
           a_end = a[N];
           b_end = b[1];
           der(a[1]) = k*(-a[1] + a[2]);
           for i in 2:N-1 loop
             der(a[i]) = k*(a[i-1] - 2*a[i] + a[i+1]);
             der(b[i]) = k*(b[i-1] - 2*b[i] + b[i+1]);
           end for;
           der(a[N]) = k*(a[N-1] - 2*a[N] + b_end);
           der(b[1]) = k*(a_end - 2*b[1] + b[2]);
           der(b[N]) = k*(b[N-1] - b[N]);
         end TwoLines;",
    );
    let model = model.to_str().expect("utf-8");
    for method in ["implicit-euler", "heun"] {
        let args = [
            "--method",
            method,
            "--step",
            "0.001",
            "--stop",
            "0.5",
            "--partition",
            "weak",
            "--exchange",
            "jacobi",
        ];
        let name = format!("two_lines_{method}");
        let (emitted, simulated) = emitted_and_simulated(&name, model, &args);
        assert_eq!(emitted, simulated, "{name}");
    }
}

/// A rig's loop: `Simulation::new` then `step(h)` 500 times, in a program of its own built
/// against the emitted library, ends where the binary's run ends, bit for bit.
#[test]
fn a_rig_stepping_the_library_ends_where_the_binary_does() {
    let args = ["--method", "trapezoidal", "--step", "0.01", "--stop", "5"];
    let binary = emit_and_build("rc_ladder_rig", "examples/rc_ladder.mo", &args);
    let (csv, err, code) = run_binary(&binary, "rig_binary", &[]);
    assert_eq!(code, 0, "{err}");
    let last = csv.lines().last().expect("rows").to_string();
    let dir = crates_dir().join("rc_ladder_rig");
    std::fs::create_dir_all(dir.join("examples")).expect("made");
    std::fs::write(
        dir.join("examples/rig.rs"),
        "fn main() {
            let model = emitted::Model::new();
            let mut sim = emitted::Simulation::new(model, 0.0).expect(\"initialises\");
            for _ in 0..500 {
                sim.step(0.01).expect(\"steps\");
            }
            let x: Vec<String> = sim.states().iter().map(|x| emitted::runtime::number(*x)).collect();
            println!(\"{},{}\", emitted::runtime::number(sim.time()), x.join(\",\"));
            let v = sim.value(\"R2.i\").expect(\"evaluates\").expect(\"a variable\");
            println!(\"{}\", emitted::runtime::number(v));
        }",
    )
    .expect("written");
    let _one = BUILDS.lock().unwrap_or_else(|e| e.into_inner());
    let run = Command::new(env!("CARGO"))
        .args([
            "run",
            "--release",
            "--offline",
            "--quiet",
            "--example",
            "rig",
        ])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", target_dir())
        .output()
        .expect("cargo runs");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let printed = String::from_utf8_lossy(&run.stdout);
    let mut lines = printed.lines();
    let (rig_states, binary_states) = (
        lines
            .next()
            .expect("states")
            .split_once(',')
            .expect("time, states")
            .1,
        last.split_once(',').expect("time, states").1,
    );
    assert_eq!(rig_states, binary_states);
    // An algebraic variable by name, at the state: what `simulate` records there.
    let mut sim = vec!["simulate", "examples/rc_ladder.mo", "--vars", "R2.i"];
    sim.extend(args);
    let (recorded, err, code) = simulate_csv("rig_r2", &sim);
    assert_eq!(code, 0, "{err}");
    let last_recorded = recorded.lines().last().expect("rows");
    let r2 = last_recorded.split_once(',').expect("time, R2.i").1;
    assert_eq!(lines.next(), Some(r2));
}

/// A nonlinear algebraic loop between the states' derivatives (`y + z³ = x2`,
/// `z = y + 0.5 x2 + 0.1 x1`): the implicit stage's Jacobian entries through it come from a
/// generated tangent pass (the implicit function theorem over the loop), for the whole model
/// and for a fast level's rows alone, and the runs are `simulate`'s bit for bit.
#[test]
fn jacobians_through_algebraic_loops_run_as_simulate_runs_them() {
    let model = cli_support::model_file(
        "loopy",
        "model Loopy
           Real x1(start = 1, fixed = true);
           Real x2(start = 0, fixed = true);
           Real y;
           Real z;
         equation
           der(x1) = -0.5*x1 + 0.1*x2;
           der(x2) = -50*y + x1;
           y + z^3 = x2;
           z = y + 0.5*x2 + 0.1*x1;
         end Loopy;",
    );
    let model = model.to_str().expect("utf-8");
    let cases: [(&str, &[&str]); 3] = [
        ("loopy_implicit_euler", &["--method", "implicit-euler"]),
        ("loopy_trapezoidal", &["--method", "trapezoidal"]),
        (
            "loopy_mixed",
            &[
                "--method",
                "mixed-euler",
                "--fast",
                "x2",
                "--multirate",
                "3",
            ],
        ),
    ];
    for (name, options) in cases {
        let mut args = vec!["--step", "0.01", "--stop", "2"];
        args.extend(options);
        let (emitted, simulated) = emitted_and_simulated(name, model, &args);
        assert_eq!(emitted, simulated, "{name}");
        let code = std::fs::read_to_string(crates_dir().join(name).join("src/model.rs"))
            .expect("model.rs");
        assert!(code.contains("loop_tangent(r, t, w, &STEP_"), "{name}");
    }
}

/// A ramp that ends at `t0 + d = 0.025 + 0.05`, an ulp past the grid point 0.075: the
/// emitted crate rounds its breakpoints to 15 digits as `simulate` does, so both end the
/// ramp on the grid point, and their CSVs are the same text.
#[test]
fn a_breakpoint_an_ulp_off_the_grid_runs_as_simulate_runs_it() {
    let text = "model RampEnd
           parameter Real t0 = 0.025;
           parameter Real d = 0.05;
           Real x(start = 0, fixed = true);
         equation
           der(x) = -10*x + (if time < t0 + d then time else 0.0);
         end RampEnd;";
    let args = [
        "--method",
        "implicit-euler",
        "--step",
        "0.005",
        "--stop",
        "0.1",
    ];
    let (emitted, simulated) = text_emitted_and_simulated("ramp_end", text, &args);
    assert_eq!(emitted, simulated);
}

/// A switch in `if`: x falls at −1 to 0.5 (at t = 0.5), then at −0.2.
const SWITCH_IN_IF: &str = "model SwitchInIf
  Real x(start = 1, fixed = true);
equation
  der(x) = if x > 0.5 then -1 else -0.2;
end SwitchInIf;
";

/// Relations that switch inside a step make state events in the crate as in `simulate`: a
/// switch in `if` (its crossing at x = 0.5 located inside a step), a mass that sticks through
/// `pre` (event iteration), and `floor` of a state (a stepwise function's jumps). The CSVs are
/// the same text, the rows before and after each event included.
#[test]
fn state_events_run_as_simulate_runs_them() {
    let models = [
        ("switch_in_if", SWITCH_IN_IF, "implicit-euler"),
        (
            "sticking_mass",
            include_str!("data/slide.mo"),
            "trapezoidal",
        ),
        (
            "floor_of_a_state",
            "model FloorOfState
               Real x(start = 0, fixed = true);
               Real y(start = 0, fixed = true);
             equation
               der(x) = 3 - x;
               der(y) = floor(2*x);
             end FloorOfState;",
            "heun",
        ),
    ];
    for (name, text, method) in models {
        let args = ["--method", method, "--step", "0.01", "--stop", "2"];
        let (emitted, simulated) = text_emitted_and_simulated(name, text, &args);
        let times = csv_columns(&emitted)["time"].clone();
        let repeated = times.windows(2).filter(|w| w[0] == w[1]).count();
        assert!(repeated >= 1, "{name}: no event rows");
        assert_eq!(emitted, simulated, "{name}");
    }
}

/// `when` clauses run in the crate as in `simulate`, the CSVs the same text: a sampled PI
/// controller (`sample`, `pre`, discrete Reals and an Integer) beside a Boolean with
/// hysteresis through `elsewhen` on state crossings; and a model with every other action (a
/// `when` statement, `edge` and `change`, `initial()`, a warning-level assert, `terminate` on
/// a time event, `terminal()`), whose crate warns and ends at t = 1.7 as `simulate` does.
#[test]
fn when_clauses_run_as_simulate_runs_them() {
    let args = [
        "--method",
        "implicit-euler",
        "--step",
        "0.01",
        "--stop",
        "2",
    ];
    let sampled = include_str!("data/sampled_pi.mo");
    let (emitted, simulated) = text_emitted_and_simulated("sampled_pi", sampled, &args);
    let times = csv_columns(&emitted)["time"].clone();
    let events = times.windows(2).filter(|w| w[0] == w[1]).count();
    assert!(events >= 40, "{events} events");
    assert_eq!(emitted, simulated);
    let file = cli_support::model_file("stopper", include_str!("data/stopper.mo"));
    let model = file.to_str().expect("utf-8");
    let args = ["--method", "trapezoidal", "--step", "0.01", "--stop", "2"];
    let ((emitted, err, code), (simulated, sim_err, sim_code)) = both_runs("stopper", model, &args);
    assert_eq!((code, sim_code), (0, 0), "{err}\n{sim_err}");
    assert!(
        err.contains("assertion false at the event at time 0.35"),
        "{err}"
    );
    assert!(
        err.contains("terminated the run at time 1.7: done at 1.7"),
        "{err}"
    );
    assert_eq!(csv_columns(&emitted)["time"].last(), Some(&1.7));
    assert_eq!(emitted, simulated);
}

/// Events under `--partition weak`: two RC stages coupled weakly, a relay on the first (a
/// state event every few steps, located by stepping both subsystems again from the step's
/// start with the weak values exchanged then) and a `sample` counter. Gauss–Seidel with
/// implicit Euler and Jacobi with the trapezoidal rule write `simulate --partition weak`'s
/// CSV, bit for bit.
#[test]
fn weak_subsystems_with_events_run_as_simulate_runs_them() {
    let text = include_str!("data/relay_weak.mo");
    for (name, method, exchange) in [
        ("relay_weak_gs", "implicit-euler", "gauss-seidel"),
        ("relay_weak_jacobi", "trapezoidal", "jacobi"),
    ] {
        let args = [
            "--model",
            "RelayWeak",
            "--method",
            method,
            "--step",
            "0.01",
            "--stop",
            "3",
            "--partition",
            "weak",
            "--exchange",
            exchange,
        ];
        let (emitted, simulated) = text_emitted_and_simulated(name, text, &args);
        let times = &csv_columns(&emitted)["time"];
        let events = times.windows(2).filter(|w| w[0] == w[1]).count();
        assert!(events >= 100, "{name}: {events} events");
        assert_eq!(emitted, simulated, "{name}");
    }
}

/// `--events step` handles a crossing at the end of the step that saw it: every step is one
/// step of the method (no step is taken again), so the switch of `der(x) = if x > 0.5 then
/// -1 else -0.2` comes up to a step late, and x stays within a step's change of the located
/// run's.
#[test]
fn events_at_step_ends_cost_one_step_each() {
    let file = cli_support::model_file("switch_at_step_end", SWITCH_IN_IF);
    let model = file.to_str().expect("utf-8");
    let h: f64 = 0.0137;
    let step = h.to_string();
    let args = ["--method", "euler", "--step", &step, "--stop", "1"];
    let located = emit_and_build("switch_located", model, &args);
    let mut at_end = args.to_vec();
    at_end.extend(["--events", "step"]);
    let stepped_binary = emit_and_build("switch_at_step_end", model, &at_end);
    let stepped = &stepped_binary;
    let run = |binary: &Path, name: &str| {
        let (csv, err, code) = run_binary(binary, name, &["--format", "json"]);
        assert_eq!(code, 0, "{name}: {err}");
        csv_columns(&csv)
    };
    let (located, stepped) = (run(&located, "located"), run(stepped, "stepped"));
    let steps = (1.0 / h).round();
    let mut times = stepped["time"].clone();
    times.dedup();
    // Every row on the grid: no step was split at the crossing.
    assert_eq!(times.len() as f64, steps + 1.0);
    assert!(
        times
            .iter()
            .all(|t| (t * steps - (t * steps).round()).abs() < 1e-9)
    );
    let event = stepped["time"]
        .windows(2)
        .position(|w| w[0] == w[1])
        .expect("an event");
    let t_event = stepped["time"][event];
    assert!(
        (0.5..0.5 + 1.0 / steps + 1e-12).contains(&t_event),
        "{t_event}"
    );
    let (x_located, x_stepped) = (located["x"].last().unwrap(), stepped["x"].last().unwrap());
    assert!(
        (x_located - x_stepped).abs() <= 0.8 / steps + 1e-12,
        "{x_located} {x_stepped}"
    );
    assert_step_times(&stepped_binary, steps as u64);
}

/// The step times an emitted binary reports with `--format json`: one per step, so the
/// largest is one of the `steps` steps and the median ≤ the 99.9th percentile ≤ the largest.
fn assert_step_times(binary: &Path, steps: u64) {
    let output = Command::new(binary)
        .args(["--format", "json"])
        .output()
        .expect("the binary runs");
    assert!(output.status.success(), "{output:?}");
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let seconds = |key: &str| {
        json[key]
            .as_f64()
            .unwrap_or_else(|| panic!("{key}: {json}"))
    };
    let (median, p999, largest) = (
        seconds("median_step_s"),
        seconds("p999_step_s"),
        seconds("largest_step_s"),
    );
    assert!(0.0 < median && median <= p999 && p999 <= largest, "{json}");
    assert_eq!(json["steps"].as_u64(), Some(steps), "{json}");
    let index = json["largest_step_index"].as_u64().expect("an index");
    assert!(index < steps, "{json}");
}

/// Clocked equations solved together at a tick (a cubic, a loop of two, an unknown that
/// reads itself) run in the crate by the shared Newton as in `simulate`: the same CSV.
#[test]
fn clocked_loops_run_as_simulate_runs_them() {
    let text = "model ClockedLoops\n  Clock c = Clock(0.1);\n  Real u = sample(time, c);\n  Real x(start = 0.5);\n  Real a, b, z;\nequation\n  x^3 + x = u + 1;\n  a + b = u;\n  a - b = 1;\n  z = 0.5*z + u;\nend ClockedLoops;\n";
    let (emitted, simulated) =
        text_emitted_and_simulated("clocked_loops", text, &IMPLICIT_EULER_TO_1);
    assert_eq!(emitted, simulated);
    assert!(emitted.lines().count() > 100, "{emitted}");
}

/// The MSL examples of `tests/data/msl_emitted.txt` (those that match their reference under
/// `simulate`, run with implicit Euler at their output interval, with and without events:
/// `when` clauses, `sample`, clocked partitions, clutches and diodes that switch, thyristors
/// fired by a pulse),
/// emitted with the library and run as `simulate` runs them: the same CSV text, every number
/// bit for bit (the crate evaluates the model at each point it records where the model has
/// asserts, as `simulate` does, so that its algebraic loops start from the same guesses).
/// Together they make more than 5 000 events.
#[test]
fn msl_examples_run_as_simulate_runs_them() {
    let Some(msl) = cli_support::msl_or_skip() else {
        return;
    };
    let lib = format!("--lib={}", msl.to_str().expect("utf-8"));
    let examples = include_str!("data/msl_emitted.txt");
    let mut events = 0;
    for model in examples.lines() {
        let name = model.rsplit('.').next().expect("a name");
        let args = ["--model", model, "--method", "implicit-euler"];
        let (emitted, simulated) = emitted_and_simulated(name, &lib, &args);
        assert_eq!(emitted, simulated, "{model}");
        let times = &csv_columns(&emitted)["time"];
        events += times.windows(2).filter(|w| w[0] == w[1]).count();
    }
    assert!(events > 5000, "{events} events");
}

/// The model's `assert`s stop the crate where they stop `simulate`: checked at every point
/// it records, a warning-level one reported once with its first time, an error-level one
/// ending the run with exit code 1 at the first output time it fails (x = t passes 0.55
/// between 0.5 and 0.6).
#[test]
fn asserts_stop_the_crate_where_they_stop_simulate() {
    let text = "model Rising
           Real x(start = 0, fixed = true);
         equation
           der(x) = 1;
           assert(x < 0.35, \"x passed 0.35\", AssertionLevel.warning);
           assert(x < 0.55, \"x passed 0.55\");
         end Rising;";
    let file = cli_support::model_file("rising", text);
    let model = file.to_str().expect("utf-8");
    let args = ["--method", "euler", "--step", "0.1", "--stop", "1"];
    let ((_, err, code), (_, sim_err, sim_code)) = both_runs("rising", model, &args);
    assert_eq!((code, sim_code), (1, 1), "{err}\n{sim_err}");
    assert!(
        err.contains("assertion failed at time 0.6: x passed 0.55"),
        "{err}"
    );
    assert!(
        sim_err.contains("assertion failed at time 0.6"),
        "{sim_err}"
    );
    let args = ["--method", "euler", "--step", "0.1", "--stop", "0.5"];
    let binary = emit_and_build("rising_to_half", model, &args);
    let (_, err, code) = run_binary(&binary, "rising_to_half", &[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("warning: assertion false at time 0.4: x passed 0.35"),
        "{err}"
    );
}

/// An initial system short of conditions: `der(x) = 0` for two free states. The crate takes
/// the states `simulate` takes as fixed at their start values (y, which no initial equation
/// reads), so x starts at the steady state 3 and both runs are the same.
#[test]
fn an_initial_system_short_of_conditions_is_completed_as_simulate_completes_it() {
    let text = "model ShortOfConditions
           Real x(start = 2);
           Real y(start = 3);
         initial equation
           der(x) = 0;
         equation
           der(x) = -x + y;
           der(y) = -y;
         end ShortOfConditions;";
    let args = IMPLICIT_EULER_TO_1;
    let (emitted, simulated) = text_emitted_and_simulated("short_of_conditions", text, &args);
    let first = &csv_columns(&emitted);
    assert!(
        (first["x"][0] - 3.0).abs() < 1e-9,
        "x(0) = {}",
        first["x"][0]
    );
    assert_eq!(emitted, simulated);
}

/// Initial systems that Newton from the start values cannot solve: `sqrt(x) = 2` from x = −1
/// along the model's `homotopy()` (its simplified `0.5·x = 2` first), and a cubic spring at
/// rest, whose Jacobian vanishes at the start, by the fixed-point homotopy. The crate solves
/// them with the runtime's `init`, as `simulate` does: the same CSV, bit for bit, from the
/// exact initial states.
#[test]
fn initial_systems_past_newton_are_solved_as_simulate_solves_them() {
    // The models `tests/correct_answers.rs` simulates.
    let homotopy = include_str!("data/homotopy_start.mo");
    let cubic = include_str!("data/cubic_at_rest.mo");
    let args = IMPLICIT_EULER_TO_1;
    let (emitted, simulated) = text_emitted_and_simulated("homotopy_start", homotopy, &args);
    assert!(
        (csv_columns(&emitted)["x"][0] - 4.0).abs() < 1e-9,
        "{emitted}"
    );
    assert_eq!(emitted, simulated);
    let (emitted, simulated) = text_emitted_and_simulated("cubic_at_rest", cubic, &args);
    let rest = -(2.0f64 * 9.81 / 500.0).cbrt();
    assert!(
        (csv_columns(&emitted)["s"][0] - rest).abs() < 1e-9,
        "{emitted}"
    );
    assert_eq!(emitted, simulated);
}

/// A function kept as code (a Newton iteration to a tolerance) is one generated Rust function
/// with its tangent mode: the binary's CSV is `simulate`'s, bit for bit, with a fixed-step
/// implicit method (Jacobians through the tangent) and an explicit one.
#[test]
fn a_function_kept_as_code_runs_as_simulate_runs_it() {
    let text = format!(
        "model Cube\n{}  Real x(start = 8, fixed = true);\n  Real r;\nequation\n  r = cubeRoot(x);\n  der(x) = -r;\nend Cube;\n",
        include_str!("data/cube_root.mo")
    );
    for method in ["implicit-euler", "heun"] {
        let args = ["--method", method, "--step", "0.01", "--stop", "1"];
        let (emitted, simulated) =
            text_emitted_and_simulated(&format!("kept_{method}"), &text, &args);
        assert_eq!(emitted, simulated, "{method}");
    }
    // A record in and a record out: the fields are slots of the same program.
    let records = text.replace(
        "  r = cubeRoot(x);",
        "  s = Pair(cubeRoot(x), 0);\n  t = swapped(s);\n  r = t.b;",
    );
    let records = records.replacen(
        "model Cube\n",
        "model Cube\n  record Pair\n    Real a;\n    Real b;\n  end Pair;\n  function swapped\n    input Pair p;\n    output Pair q;\n  protected\n    Real k = 0;\n  algorithm\n    q.a := p.b;\n    q.b := p.a;\n    while k < p.a loop\n      k := k + 1;\n    end while;\n  end swapped;\n  Pair s;\n  Pair t;\n",
        1,
    );
    let (emitted, simulated) =
        text_emitted_and_simulated("kept_records", &records, &IMPLICIT_EULER_TO_1);
    assert_eq!(emitted, simulated);
    let x = cli_support::csv_columns(&simulated)["x"].clone();
    assert!((x[x.len() - 1] - 8.0).abs() > 0.5, "{simulated}");
}

/// The standard library's random generators (their C functions written in Rust, copied into
/// the crate with the runtime) draw in the emitted crate what they draw in `simulate`.
#[test]
fn the_random_generators_run_as_simulate_runs_them() {
    let Some(msl) = cli_support::msl_or_skip() else {
        return;
    };
    let lib = msl.to_str().expect("utf-8");
    let args = ["--lib", lib, "--step", "0.05", "--stop", "1"];
    let text = include_str!("data/random_generators.mo");
    let (emitted, simulated) = text_emitted_and_simulated("random_generators", text, &args);
    assert_eq!(emitted, simulated);
    let drawn = cli_support::csv_columns(&simulated)["drawn"].clone();
    assert!(drawn.last().is_some_and(|&s| s > 0.0), "{simulated}");
}

/// The real FFT (`ModelicaFFT_kiss_fftr`, in Rust in the runtime) and its tangent in the
/// Jacobian compute in the emitted crate what they compute in `simulate`.
#[test]
fn the_fft_runs_as_simulate_runs_it() {
    let Some(msl) = cli_support::msl_or_skip() else {
        return;
    };
    let lib = msl.to_str().expect("utf-8");
    let args = [
        "--lib",
        lib,
        "--method",
        "implicit-euler",
        "--step",
        "0.05",
        "--stop",
        "1",
    ];
    let text = include_str!("data/fft_decay.mo");
    let (emitted, simulated) = text_emitted_and_simulated("fft_decay", text, &args);
    assert_eq!(emitted, simulated);
    let x = cli_support::csv_columns(&simulated)["x"].clone();
    assert!(x.last().is_some_and(|&x| x < 0.95), "{simulated}");
}

#[test]
fn writes_at_events_run_as_simulate_runs_them() {
    let args = [
        "--method",
        "implicit-euler",
        "--step",
        "0.01",
        "--stop",
        "1.1",
    ];
    let mut written = Vec::new();
    for name in ["writes_emitted", "writes_simulated"] {
        let dir = temp_path(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a directory");
        let text = include_str!("data/writes.mo").replace("DIR", dir.to_str().expect("utf-8"));
        let file = cli_support::model_file(name, &text);
        let model = file.to_str().expect("utf-8");
        if name == "writes_emitted" {
            let binary = emit_and_build(name, model, &args);
            let (_, err, code) = run_binary(&binary, name, &[]);
            assert_eq!(code, 0, "{err}");
        } else {
            let (_, err, code) = simulate_csv(name, &[&["simulate", model][..], &args].concat());
            assert_eq!(code, 0, "{err}");
        }
        let log = std::fs::read_to_string(dir.join("log.txt")).expect("a log");
        let mat = std::fs::read(dir.join("m.mat")).expect("a MAT file");
        written.push((log, mat));
    }
    assert_eq!(written[0].0.lines().count(), 4, "{}", written[0].0);
    assert_eq!(written[0], written[1]);
}
