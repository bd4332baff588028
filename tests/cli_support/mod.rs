//! Shared by the tests that run the `mocca` binary: running it, and files of their own for
//! its inputs and outputs.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

/// Runs mocca in the repository's folder: stdout, stderr, exit code. A process that dies by a
/// signal (a stack overflow aborts) fails the test whatever it expected.
pub fn mocca(args: &[&str]) -> (String, String, i32) {
    mocca_in(std::path::Path::new(env!("CARGO_MANIFEST_DIR")), args)
}

/// [`mocca`] in the folder `dir` (where the files a model writes land).
pub fn mocca_in(dir: &std::path::Path, args: &[&str]) -> (String, String, i32) {
    let out = Command::new(env!("CARGO_BIN_EXE_mocca"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("mocca runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let Some(code) = out.status.code() else {
        panic!("mocca {args:?} died by a signal ({}): {stderr}", out.status);
    };
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
        code,
    )
}

/// Runs mocca, which must succeed, and reads its stdout as JSON.
pub fn mocca_json(args: &[&str]) -> serde_json::Value {
    let (out, err, code) = mocca(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    serde_json::from_str(&out).expect("JSON")
}

/// A path of its own in a folder of this test process (created), named `name`.
pub fn temp_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mocca-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    dir.join(name)
}

/// Writes `text` to `NAME.mo` of its own and returns its path.
pub fn model_file(name: &str, text: &str) -> PathBuf {
    let path = temp_path(&format!("{name}.mo"));
    std::fs::write(&path, text).expect("model written");
    path
}

/// Runs `mocca ARGS --out FILE.csv` and returns the CSV written (empty if none), stderr and
/// the exit code; the file is removed.
pub fn simulate_csv(name: &str, args: &[&str]) -> (String, String, i32) {
    let out = temp_path(&format!("{name}.csv"));
    let path = out.to_str().expect("utf-8").to_string();
    let mut all = args.to_vec();
    all.extend(["--out", &path]);
    let (_, err, code) = mocca(&all);
    let csv = std::fs::read_to_string(&out).unwrap_or_default();
    let _ = std::fs::remove_file(&out);
    (csv, err, code)
}

/// The columns of a CSV `simulate` wrote, by header name (`time` included).
pub fn csv_columns(csv: &str) -> std::collections::BTreeMap<String, Vec<f64>> {
    let mut lines = csv.lines();
    let names: Vec<&str> = lines.next().expect("header").split(',').collect();
    let mut columns = std::collections::BTreeMap::<String, Vec<f64>>::new();
    for line in lines {
        for (name, v) in names.iter().zip(line.split(',')) {
            columns
                .entry(name.to_string())
                .or_default()
                .push(v.parse().expect("number"));
        }
    }
    columns
}

/// `mocca reduce`'s error measure computed from two runs' columns: the largest deviation of
/// each variable of `full` (time aside: record its states) that `reduced` has too, in percent
/// of its largest magnitude in `full`.
pub fn deviation_percent(
    full: &std::collections::BTreeMap<String, Vec<f64>>,
    reduced: &std::collections::BTreeMap<String, Vec<f64>>,
) -> f64 {
    let mut worst = 0.0f64;
    for (name, a) in full.iter().filter(|(name, _)| *name != "time") {
        let Some(b) = reduced.get(name) else {
            continue;
        };
        let largest = a.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let scale = if largest > 0.0 { largest } else { 1.0 };
        for (x, y) in a.iter().zip(b) {
            worst = worst.max((x - y).abs() / scale);
        }
    }
    100.0 * worst
}

/// The Modelica Standard Library beside the repository (`../shared/msl`), if it is there.
pub fn msl() -> Option<PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/msl");
    dir.join("Modelica/package.mo").is_file().then_some(dir)
}

/// The MSL's directory, or `None` after saying the calling test is skipped without it.
pub fn msl_or_skip() -> Option<PathBuf> {
    let msl = msl();
    if msl.is_none() {
        eprintln!("skipped: no ../shared/msl");
    }
    msl
}

/// The reference piecewise linear between its rows.
pub fn interpolate(times: &[f64], values: &[f64], t: f64) -> f64 {
    let i = times.partition_point(|&x| x <= t);
    if i == 0 {
        return values[0];
    }
    if i >= times.len() {
        return values[values.len() - 1];
    }
    let (a, b) = (times[i - 1], times[i]);
    if b == a {
        return values[i - 1];
    }
    values[i - 1] + (values[i] - values[i - 1]) * (t - a) / (b - a)
}

/// How many of `(times, ys)` lie outside the csv-compare tube around the reference `(rt, ry)`
/// of a run over `span` (the MSL's reference results are judged so): a point is inside when
/// it is within the half-height of the reference's range over the half-width around its time.
pub fn outside_tube(
    times: &[f64],
    ys: &[f64],
    (rt, ry): (&[f64], &[f64]),
    span: (f64, f64),
) -> usize {
    let width = 0.002 * (span.1 - span.0).max(span.0.abs());
    let (lo, hi) = ry
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &y| {
            (l.min(y), h.max(y))
        });
    let height = 0.002 * (hi - lo).max(lo.abs()).max(0.001);
    times
        .iter()
        .zip(ys)
        .filter(|&(&t, &y)| {
            let first = rt.partition_point(|&x| x < t - width);
            let last = rt.partition_point(|&x| x <= t + width);
            let ends = [
                interpolate(rt, ry, t - width),
                interpolate(rt, ry, t + width),
            ];
            let (l, h) = ends
                .iter()
                .chain(&ry[first..last])
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| {
                    (l.min(v), h.max(v))
                });
            !(l - height <= y && y <= h + height)
        })
        .count()
}
