//! `mocca separability`: the parametric separability map of SPEC §8 over an α grid, as JSON or
//! text, and drawn as SVG. The cycles are listed once, each folded into the bounds at every α
//! of the grid (`analysis::analyse_grid`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde_json::json;

use super::Format;
use super::cycles::{
    BudgetArgs, Loaded, PointArgs, ProgressBar, WeakArg, load, raise_budget_advice, stop_name,
};
use super::model::ModelArgs;
use super::table::{Align, print_table};
use crate::analysis::analyse_grid;
use crate::analysis::johnson::Stop;
use crate::analysis::picture;
use crate::analysis::separability::{SeparabilityMap, grid, separability_map};
use crate::numfmt::format_number;

#[derive(Args, Debug)]
pub struct SeparabilityArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// The α grid: `FROM:TO:COUNT` (evenly spaced, both ends included) or a list `a,b,c`.
    #[arg(long, default_value = "0.05:1:20", value_parser = parse_alphas)]
    pub alphas: AlphaGrid,
    /// Draw the map to this SVG file.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Draw the map to this PNG file.
    #[arg(long, value_name = "FILE")]
    pub png: Option<PathBuf>,
    #[command(flatten)]
    pub budget: BudgetArgs,
    #[command(flatten)]
    pub point: PointArgs,
    /// Weak connections: `coupled` analyses the model they join, `split` the decoupled
    /// subsystems the partitioned solver integrates.
    #[arg(long, value_enum, default_value_t = WeakArg::Coupled)]
    pub weak: WeakArg,
}

#[derive(Clone, Debug, PartialEq)]
pub struct AlphaGrid(pub Vec<f64>);

/// The most α values a grid may have: the bounds take a value per state and α.
const MAX_ALPHAS: usize = 10_000;

fn parse_alphas(text: &str) -> Result<AlphaGrid, String> {
    let positive = |s: &str| super::cycles::positive(s.trim());
    let alphas = if let [from, to, count] = text.split(':').collect::<Vec<_>>()[..] {
        let count: usize = count
            .trim()
            .parse()
            .ok()
            .filter(|&c| c > 0)
            .ok_or_else(|| format!("`{count}` is not a positive count"))?;
        if count > MAX_ALPHAS {
            return Err(format!("at most {MAX_ALPHAS} values of α, not {count}"));
        }
        grid(positive(from)?, positive(to)?, count)
    } else if text.contains(':') {
        return Err("expected FROM:TO:COUNT".to_string());
    } else {
        text.split(',')
            .map(positive)
            .collect::<Result<Vec<_>, _>>()?
    };
    if alphas.is_empty() {
        return Err("no α given".to_string());
    }
    Ok(AlphaGrid(alphas))
}

pub fn run(args: &SeparabilityArgs) -> ExitCode {
    for path in [&args.svg, &args.png].into_iter().flatten() {
        if let Err(message) = super::check_writable(path) {
            return super::failure_without_source(message, ExitCode::from(1));
        }
    }
    let loaded = match load(&args.model, &args.point, args.weak) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let n = loaded.names.len();
    let mut bar = ProgressBar::new("cycles");
    let alphas = &args.alphas.0;
    let analysis = analyse_grid(n, &loaded.points, alphas, args.budget.budget(), &mut |p| {
        bar.observe(p)
    });
    bar.finish();
    let enumeration = &analysis.enumeration;
    let map = separability_map(&analysis.bounds, alphas);
    let title = format!("separability map, {n} states");
    let pictures = [
        (&args.svg, picture::Format::Svg),
        (&args.png, picture::Format::Png),
    ];
    for (path, format) in pictures {
        let Some(path) = path else { continue };
        let written = super::write_whole(path, |p| {
            picture::write(format, &map, &loaded.names, &title, p).map_err(std::io::Error::other)
        });
        if let Err(message) = written {
            return super::failure_without_source(message, ExitCode::from(1));
        }
    }
    let names = |v: &[usize]| {
        v.iter()
            .map(|&i| loaded.names[i].clone())
            .collect::<Vec<_>>()
    };
    match args.model.format() {
        Format::Json => super::print_json(&json!({
            "alphas": map.alphas,
            "order": names(map.orders.last().map(Vec::as_slice).unwrap_or_default()),
            "orders": map.orders.iter().map(|o| names(o)).collect::<Vec<_>>(),
            "terms": map.terms,
            "cycles": enumeration.cycles,
            "complete": enumeration.complete(),
            "budget": {
                "stopped": enumeration.stopped.map(stop_name),
                "max_cycles": args.budget.budget().max_cycles,
                "max_seconds": args.budget.budget().max_time.map(|t| t.as_secs_f64()),
            },
            "operating_point": loaded.point.kind,
            "operating_points": loaded.point.description,
            "modes": loaded.point.modes_json(),
            "weak": loaded.weak.name(),
        })),
        Format::Text => print_text(&map, &loaded, enumeration.cycles, enumeration.stopped),
    }
    super::leave_allocated(loaded);
    ExitCode::SUCCESS
}

/// Per α: the index s(α) and where the largest gap falls (the split point).
fn print_text(map: &SeparabilityMap, loaded: &Loaded, cycles: u64, stopped: Option<Stop>) {
    let names = &loaded.names;
    outln!(
        "{} cycles{}, at {}, weak connections {}",
        cycles,
        stopped
            .map(|s| format!(" ({} hit: incomplete)", stop_name(s)))
            .unwrap_or_default(),
        loaded.point.text(),
        loaded.weak.name()
    );
    if let Some(stop) = stopped {
        outln!("{}", raise_budget_advice(stop));
    }
    let rows: Vec<Vec<String>> = map
        .alphas
        .iter()
        .enumerate()
        .map(|(k, &alpha)| {
            let Some(terms) = &map.terms[k] else {
                return vec![
                    format_number(alpha),
                    "—".to_string(),
                    "undefined (fewer than two distinct finite h̄)".to_string(),
                ];
            };
            let index = 1.0 - terms.iter().sum::<f64>() / terms.len() as f64;
            let peak = terms
                .iter()
                .position(|&t| t == 1.0)
                .expect("the widest gap has term 1");
            let order = &map.orders[k];
            let split = format!(
                "after {} fast state(s): {} | {}",
                peak + 1,
                names[order[peak]],
                names[order[peak + 1]]
            );
            vec![format_number(alpha), format_number(index), split]
        })
        .collect();
    print_table(
        &["α", "s(α)", "split (largest gap)"],
        &rows,
        &[Align::Right, Align::Right, Align::Left],
    );
}
