//! Scaling runs: generated RC chains through the `mocca` binary, end to end, with wall time
//! and peak memory from `/usr/bin/time`. Not a criterion benchmark: one run per size, since a
//! 10⁶-equation run takes seconds.
//!
//! `cargo bench --bench scaling -- [EQUATIONS...]` (default 10⁴ 10⁵ 10⁶). Each size runs
//! `flatten`, `check` and `jacobian --format json` and prints a Markdown table.

use std::path::PathBuf;
use std::process::Command;

use mocca::generate::{rc_chain, rc_chain_stages_for};

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse::<f64>().ok().map(|x| x as usize))
        .collect();
    let sizes = if sizes.is_empty() {
        vec![10_000, 100_000, 1_000_000]
    } else {
        sizes
    };
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("scaling");
    std::fs::create_dir_all(&dir).expect("create the scaling directory");
    println!("| equations | file MB | command | wall s | peak MB |");
    println!("| ---: | ---: | --- | ---: | ---: |");
    for n in sizes {
        let stages = rc_chain_stages_for(n);
        let text = rc_chain(stages);
        let path = dir.join(format!("rc_chain_{n}.mo"));
        std::fs::write(&path, &text).expect("write the generated model");
        let equations = 9 * stages + 6;
        for command in [
            &["flatten"][..],
            &["check"],
            &["jacobian", "--format", "json"],
        ] {
            let (wall, peak) = timed(command, &path);
            println!(
                "| {equations} | {:.1} | `{}` | {wall:.2} | {peak:.0} |",
                text.len() as f64 / 1e6,
                command.join(" ")
            );
        }
    }
}

/// Wall seconds and peak resident MB of `mocca COMMAND FILE`, output discarded.
fn timed(command: &[&str], path: &PathBuf) -> (f64, f64) {
    let out = Command::new("/usr/bin/time")
        .args(["-f", "%e %M", env!("CARGO_BIN_EXE_mocca")])
        .args(command)
        .arg(path)
        .stdout(std::process::Stdio::null())
        .output()
        .expect("run /usr/bin/time (GNU time is needed for peak memory)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr.lines().last().unwrap_or("");
    let mut fields = last
        .split_whitespace()
        .map(|f| f.parse::<f64>().unwrap_or(f64::NAN));
    let wall = fields.next().unwrap_or(f64::NAN);
    let peak_kb = fields.next().unwrap_or(f64::NAN);
    (wall, peak_kb / 1024.0)
}
