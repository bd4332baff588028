//! The machine's floor for timing one step: a fixed piece of work of about a microsecond
//! (the length of one step of the clocked controller benchmark), done and timed 100 000 times
//! as an emitted binary times its steps. Whatever spread it shows (the kernel's timer
//! interrupt, other processes) no step of emitted code can be below.
//!
//! `rustc -O benches/step_floor.rs -o target/step_floor && target/step_floor`

use std::hint::black_box;
use std::time::Instant;

fn main() {
    let mut seconds = Vec::with_capacity(100_000);
    let mut x = black_box(0.5f64);
    for _ in 0..100_000 {
        let start = Instant::now();
        for _ in 0..350 {
            x = black_box(x * 0.999_999 + 1e-7);
        }
        seconds.push(start.elapsed().as_secs_f64());
    }
    black_box(x);
    let mut sorted = seconds.clone();
    sorted.sort_by(f64::total_cmp);
    let at = |q: f64| sorted[((sorted.len() as f64 * q) as usize).min(sorted.len() - 1)];
    let (median, p999, largest) = (at(0.5), at(0.999), sorted[sorted.len() - 1]);
    let slow = seconds.iter().filter(|&&s| s > 2.0 * median).count();
    println!(
        "median {:.2} µs, 99.9th percentile {:.2} µs ({:.2}×), largest {:.1} µs ({:.1}×), {} of {} steps above 2× the median",
        median * 1e6,
        p999 * 1e6,
        p999 / median,
        largest * 1e6,
        largest / median,
        slow,
        seconds.len()
    );
}
