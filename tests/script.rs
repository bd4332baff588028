//! `mocca script`: a script's calls print what the subcommands they stand for print, and a
//! script mocca cannot run is an error pointing into it.

#[path = "cli_support/mod.rs"]
mod cli_support;

use cli_support::{mocca, temp_path};

/// Lines that do not report a time measured.
fn steady(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.contains("time  ") && !l.contains("wall time"))
        .map(str::to_string)
        .collect()
}

fn script(name: &str, text: &str) -> String {
    let path = temp_path(name);
    std::fs::write(&path, text).expect("script written");
    path.to_str().expect("path").to_string()
}

#[test]
fn a_scripts_calls_print_what_their_subcommands_print() {
    let car = format!("{}/examples/quarter_car.mo", env!("CARGO_MANIFEST_DIR"));
    let path = script(
        "run.mos",
        &format!(
            "// comments and blank lines are fine\n\
             loadFile(\"{car}\");\n\
             simulate(QuarterCar, startTime=0, stopTime=3, method=\"dassl\", numberOfIntervals=300);\n\
             /* the component may be left out */\n\
             reduceDAE(0, 3, \"statistical\", 5, false);\n\
             cycles(QuarterCar, alpha=0.3);\n"
        ),
    );
    let (out, err, code) = mocca(&["script", &path]);
    assert_eq!(code, 0, "{err}");
    let mut expected = String::new();
    for args in [
        &[
            "simulate",
            &car,
            "--model",
            "QuarterCar",
            "--method",
            "bdf",
            "--start",
            "0",
            "--stop",
            "3",
            "--step",
            "0.01",
        ][..],
        &[
            "reduce",
            &car,
            "--model",
            "QuarterCar",
            "--start",
            "0",
            "--stop",
            "3",
            "--metric",
            "statistical",
            "--tol",
            "5",
        ],
        &["cycles", &car, "--model", "QuarterCar", "--alpha", "0.3"],
    ] {
        let (o, e, c) = mocca(args);
        assert_eq!(c, 0, "{args:?}: {e}");
        expected.push_str(&o);
    }
    assert_eq!(steady(&out), steady(&expected));
}

#[test]
fn a_script_mocca_cannot_run_is_an_error_at_its_place() {
    let car = format!("{}/examples/quarter_car.mo", env!("CARGO_MANIFEST_DIR"));
    let cases = [
        ("plot(x);\n", "unknown command `plot`", "1:1"),
        (
            &*format!("loadFile(\"{car}\");\nsimulate(QuarterCar, colour=2);\n"),
            "takes no argument `colour`",
            "2:22",
        ),
        ("loadFile(\"a.mo\")\nsimulate(Q);\n", "expected `;`", "2:1"),
        ("simulate(Q, stopTime=1);\n", "no file is loaded", "1:1"),
        ("cycles(Q, alpha=\"x);\n", "unterminated string", "1:17"),
        (
            &*format!("loadFile(\"{car}\");\nreduceDAE(0, 3, \"statistical\", 5, 7);\n"),
            "expected true or false",
            "2:35",
        ),
    ];
    for (text, message, place) in cases {
        let path = script("bad.mos", text);
        let (_, err, code) = mocca(&["script", &path]);
        assert_eq!(code, 1, "{text}: {err}");
        assert!(err.contains(message), "{text}: {err}");
        assert!(err.contains(&format!("bad.mos:{place}")), "{text}: {err}");
    }
}

/// `loadFile` of a missing file, or of one with a syntax error, is reported at that call with
/// the file's name, and the script ends with exit code 1 (it went on past the call).
#[test]
fn a_file_that_cannot_be_loaded_is_reported_at_its_call() {
    let broken = temp_path("broken.mo");
    std::fs::write(
        &broken,
        "model Broken\n  Real x\nequation\n  der(x) = -x;\nend Broken;\n",
    )
    .expect("model written");
    for (file, says) in [
        ("no_such_file.mo", "cannot read"),
        (broken.to_str().expect("path"), "syntax errors"),
    ] {
        let path = script("load.mos", &format!("loadFile(\"{file}\");\n"));
        let (out, err, code) = mocca(&["script", &path]);
        assert_eq!(code, 1, "{file}: {out}{err}");
        assert!(
            err.contains(says) && err.contains(file.rsplit('/').next().unwrap()),
            "{err}"
        );
        assert!(err.contains("loadFile(\""), "points at the call: {err}");
    }
}
