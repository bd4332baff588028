//! Runs the emitted model: `--stop T`, `--start T`, `--step H`, `--param NAME=VALUE`
//! (repeatable), `--out FILE.csv` (time and the states), `--format text|json` (the statistics),
//! `--threads N` (at most N threads step the model; the results do not depend on it).

use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

use emitted::runtime::number;
use emitted::{Model, Settings, integrate, model};

struct Args {
    settings: Settings,
    params: Vec<(String, f64)>,
    out: Option<String>,
    json: bool,
    threads: usize,
}

fn usage(message: &str) -> ExitCode {
    eprintln!("error: {message}");
    eprintln!(
        "usage: {} [--start T] [--stop T] [--step H] [--param NAME=VALUE]... [--out FILE.csv] [--format text|json] [--threads N]",
        model::MODEL
    );
    ExitCode::from(2)
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        settings: Settings::default(),
        params: Vec::new(),
        out: None,
        json: false,
        threads: 2,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("`{flag}` needs a value"));
        let number = |text: String| {
            text.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or(format!("`{flag}`: `{text}` is not a number"))
        };
        match flag.as_str() {
            "--start" => args.settings.start = number(value()?)?,
            "--stop" => args.settings.stop = number(value()?)?,
            "--step" => args.settings.step = number(value()?)?,
            "--param" => {
                let text = value()?;
                let (name, x) = text
                    .split_once('=')
                    .ok_or(format!("`--param {text}`: expected NAME=VALUE"))?;
                args.params.push((name.to_string(), number(x.to_string())?));
            }
            "--out" => args.out = Some(value()?),
            "--threads" => {
                let text = value()?;
                args.threads = text
                    .parse::<usize>()
                    .ok()
                    .filter(|&n| n >= 1)
                    .ok_or(format!("`--threads {text}`: expected a whole number from 1"))?;
            }
            "--format" => match value()?.as_str() {
                "text" => args.json = false,
                "json" => args.json = true,
                other => return Err(format!("`--format {other}`: expected text or json")),
            },
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    let s = args.settings;
    if !(s.stop > s.start) || !(s.step > 0.0) {
        return Err("`--stop` must come after `--start` and `--step` be positive".into());
    }
    Ok(args)
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(m) => return usage(&m),
    };
    let mut model = Model::new();
    model.set_threads(args.threads);
    for (name, x) in &args.params {
        if let Err(e) = model.set_parameter(name, *x) {
            return usage(&e.to_string());
        }
    }
    let mut csv = String::new();
    let recording = args.out.is_some();
    if recording {
        csv.push_str("time");
        for name in model::STATE_NAMES {
            csv.push(',');
            csv.push_str(name);
        }
        csv.push('\n');
    }
    let mut x = match model.initialize_over((args.settings.start, args.settings.stop)) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    // The integration alone, recording included: what a rig's step costs.
    let clock = Instant::now();
    let result = integrate(&mut model, args.settings, &mut x, |t, x| {
        if recording {
            csv.push_str(&number(t));
            for &xi in x {
                csv.push(',');
                csv.push_str(&number(xi));
            }
            csv.push('\n');
        }
    });
    let seconds = clock.elapsed().as_secs_f64();
    if let Err(e) = result {
        eprintln!("error: {e}");
        return ExitCode::from(1);
    }
    if let Some(path) = &args.out {
        // Written beside and renamed, so a failed write leaves no half file.
        let partial = format!("{path}.partial");
        let written = std::fs::write(&partial, &csv).and_then(|()| std::fs::rename(&partial, path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&partial);
            eprintln!("error: cannot write `{path}`: {e}");
            return ExitCode::from(1);
        }
    }
    let s = &model.stats;
    let events = model.event_stats().unwrap_or_default();
    for (t, message) in model.assertion_warnings() {
        eprintln!("warning: assertion false at time {t}: {message}");
    }
    for (t, message) in &events.warnings {
        eprintln!("warning: assertion false at the event at time {t}: {message}");
    }
    if let Some((t, message)) = events.terminated {
        eprintln!("note: the model terminated the run at time {t}: {message}");
    }
    let steps = StepTimes::of(model.step_seconds());
    let simulated = args.settings.stop - args.settings.start;
    let mut out = std::io::stdout().lock();
    let printed = if args.json {
        writeln!(
            out,
            "{{\"model\":\"{}\",\"steps\":{},\"f_evals\":{},\"jac_evals\":{},\"newton_iters\":{},\"factorizations\":{},\"state_events\":{},\"time_events\":{},\"largest_step_s\":{},\"largest_step_index\":{},\"median_step_s\":{},\"p999_step_s\":{},\"integration_time_s\":{},\"steps_per_second\":{},\"real_time_factor\":{}}}",
            model::MODEL,
            s.steps,
            s.f_evals,
            s.jac_evals,
            s.newton_iters,
            s.factorizations,
            events.counts.state_events,
            events.counts.time_events,
            number(steps.largest),
            steps.largest_index,
            number(steps.median),
            number(steps.p999),
            number(seconds),
            number(s.steps as f64 / seconds),
            number(simulated / seconds)
        )
    } else {
        writeln!(
            out,
            "{} from {} to {}\n  steps                 {}\n  f evaluations         {}\n  Jacobian evaluations  {}\n  Newton iterations     {}\n  LU factorizations     {}\n  events                {} state, {} time\n  one step              {:.1} µs median, {:.1} µs at the 99.9th percentile, {:.1} µs largest (step {})\n  integration time      {:.3} s\n  real-time factor      {:.1}",
            model::MODEL,
            number(args.settings.start),
            number(args.settings.stop),
            s.steps,
            s.f_evals,
            s.jac_evals,
            s.newton_iters,
            s.factorizations,
            events.counts.state_events,
            events.counts.time_events,
            steps.median * 1e6,
            steps.p999 * 1e6,
            steps.largest * 1e6,
            steps.largest_index,
            seconds,
            simulated / seconds
        )
    };
    let _ = printed;
    ExitCode::SUCCESS
}

/// What the wall times of the steps say to a rig: the slowest step (and which it was), the
/// median, and the 99.9th percentile, which tells a slow kind of step from one interrupted
/// by the machine.
struct StepTimes {
    largest: f64,
    /// The largest step's index, from 0.
    largest_index: usize,
    median: f64,
    p999: f64,
}

impl StepTimes {
    /// The times of `seconds`, one per step (0 for none).
    fn of(seconds: &[f64]) -> StepTimes {
        let largest_index = (0..seconds.len())
            .max_by(|&a, &b| seconds[a].total_cmp(&seconds[b]))
            .unwrap_or(0);
        let mut sorted = seconds.to_vec();
        sorted.sort_by(f64::total_cmp);
        let at = |q: f64| {
            let k = ((sorted.len() as f64 * q) as usize).min(sorted.len().saturating_sub(1));
            sorted.get(k).copied().unwrap_or(0.0)
        };
        StepTimes {
            largest: sorted.last().copied().unwrap_or(0.0),
            largest_index,
            median: at(0.5),
            p999: at(0.999),
        }
    }
}
