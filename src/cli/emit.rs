//! `mocca emit`: writes the model as a standalone Rust crate that integrates it with a fixed
//! step (SPEC §12), into a fresh directory or, with `--force`, over an existing one, never
//! leaving half a crate behind.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use serde_json::json;

use super::Format;
use super::emit_system;
use super::model::{ModelArgs, load_for_simulation};
use super::partition::{ExchangeArg, PartitionArg, PartitionArgs, Subject, choose};
use super::simulate::{GridArgs, Integrator, MethodArg, one_system_order};
use crate::causal::{causal_form, initial_point};
use crate::dae::VarKind;
use crate::diagnostics::Diagnostic;
use crate::emit::{EventMode, Settings, Stepping, crate_files, fmu};
use crate::jacobian::ode_jacobian_with;
use crate::simulate::run::Exchange;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FmiType {
    Cs,
    Me,
}

/// How an emitted crate handles a relation that switches inside a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum EventsArg {
    /// The crossing located and the step taken again to it, as `simulate` does: the same
    /// numbers as `simulate` with the same method and step
    Locate,
    /// Handled at the end of the step that crossed, no step taken again: a fixed cost per
    /// step for real time; a switch comes up to one step late
    Step,
}

#[derive(Args, Debug)]
pub struct EmitArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// The fixed-step method the crate integrates with
    #[arg(long, value_parser = emitted_method(), default_value = "implicit-euler")]
    pub method: MethodArg,
    /// The crate's default grid (`--step`, `--start`, `--stop`, which its binary takes too)
    /// and the Newton tolerance of its implicit stages
    #[command(flatten)]
    pub grid: GridArgs,
    #[command(flatten)]
    pub partition: PartitionArgs,
    /// How the crate handles a crossing inside a step: of a relation of the equations (`if x > 0.5 then …`, `floor`) or of a `when` condition (`when h < 0`); time events (`sample`, breakpoints) always end a step at their instant
    #[arg(long, value_enum, default_value_t = EventsArg::Locate)]
    pub events: EventsArg,
    /// The directory to write the crate into (created; it must be empty or absent)
    #[arg(long, value_name = "DIR", required_unless_present = "fmu")]
    pub out: Option<PathBuf>,
    /// Build the crate as an FMI 2.0 co-simulation FMU and write it to FILE.fmu (the crate
    /// goes to `--out` when given, else to a temporary directory); with `--partition weak`
    /// and a directory DIR (a path not ending in `.fmu`), one FMU per weak subsystem and an
    /// SSP archive of them
    #[arg(long, value_name = "FILE.fmu|DIR")]
    pub fmu: Option<PathBuf>,
    /// The FMU's interfaces: `cs` co-simulation; `me` Model Exchange as well
    #[arg(long, value_enum, default_value_t = FmiType::Cs, requires = "fmu")]
    pub fmi_type: FmiType,
    /// Replace what DIR holds
    #[arg(long)]
    pub force: bool,
}

pub(super) fn event_mode(events: EventsArg) -> EventMode {
    match events {
        EventsArg::Locate => EventMode::Locate,
        EventsArg::Step => EventMode::Step,
    }
}

/// The methods an emitted crate can integrate with: every method of `simulate` but `bdf`
/// (listed so by `emit --help`).
fn emitted_method() -> impl clap::builder::TypedValueParser<Value = MethodArg> {
    let fixed = (MethodArg::value_variants().iter())
        .filter(|&&m| m != MethodArg::Bdf)
        .filter_map(ValueEnum::to_possible_value);
    clap::builder::TypedValueParser::map(
        clap::builder::PossibleValuesParser::new(fixed),
        |name: String| MethodArg::from_str(&name, false).expect("one of the values listed"),
    )
}

pub fn run(args: &EmitArgs) -> ExitCode {
    let integrator = Integrator::of(args.method);
    let mixed = match integrator {
        Integrator::Fixed(_) => None,
        Integrator::Mixed(m) => Some(m),
        Integrator::Bdf => {
            return super::usage_error("`emit` takes a fixed-step method, not `bdf`");
        }
    };
    if let Err(m) = args.partition.check(mixed) {
        return super::usage_error(m);
    }
    if let Err(m) = args.grid.check() {
        return super::usage_error(m);
    }
    let system = args.fmu.as_deref().filter(|p| !is_fmu_file(p));
    if let Some(dir) = system {
        if let Err(m) = emit_system::check_usage(args, mixed) {
            return super::usage_error(m);
        }
        if let Err(message) = check_directory(dir, args.force) {
            return super::failure_without_source(message, ExitCode::from(1));
        }
    }
    if let Some(out) = &args.out
        && let Err(message) = check_directory(out, args.force)
    {
        return super::failure_without_source(message, ExitCode::from(1));
    }
    if let Some(fmu) = args.fmu.as_deref().filter(|p| is_fmu_file(p))
        && let Err(message) = super::check_writable(fmu)
    {
        return super::failure_without_source(message, ExitCode::from(1));
    }
    let (flat, structure) = match load_for_simulation(&args.model) {
        Ok(ok) => ok,
        Err(code) => return code,
    };
    let mut dae = flat.dae;
    let grid = args.grid.resolve(&dae.experiment);
    let steps = match grid.steps() {
        Ok(n) => n,
        Err(m) => return super::usage_error(m),
    };
    if let Some(choice) = dae.state_choices.first() {
        let warning = Diagnostic::warning(
            "the emitted solver does not check index reduction's choice of states, nor choose \
             them again, as `simulate` does: away from the start values it may run on with \
             poorly determined states",
        )
        .at(
            dae.equations[choice.equations[0]].span,
            "differentiated to reduce the index",
        )
        .with_note(
            "run the model with `mocca simulate` over the same interval to check the choice",
        );
        super::report(&flat.sources, &[warning]);
    }
    if let Some(dir) = system {
        return emit_system::run(args, (dae, &structure, &flat.sources), grid, dir);
    }
    let split = args.partition.partition == PartitionArg::Weak;
    let (causal, weak) = one_system_order(
        causal_form(&mut dae, &structure),
        &dae,
        args.partition.partition,
        &flat.sources,
    );
    let jac = ode_jacobian_with(&mut dae, &causal, weak);
    let start = match initial_point(&dae) {
        Ok(p) => p,
        Err(f) => {
            let message = format!("a parameter or start value cannot be evaluated: {f:?}");
            return super::failure_without_source(message, ExitCode::from(1));
        }
    };
    let chosen = match (integrator, mixed) {
        (_, Some(method)) => {
            let subject = Subject {
                sources: &flat.sources,
                dae: &dae,
                causal: &causal,
                jacobian: &jac,
            };
            match choose(&args.partition, method, &subject, (grid.step, steps)) {
                Ok(chosen) => Some(chosen.partition),
                Err(code) => return code,
            }
        }
        _ => None,
    };
    let stepping = match (integrator, &chosen) {
        (Integrator::Fixed(m), _) => Stepping::Single(m),
        (_, Some(partition)) => Stepping::Mixed(partition),
        _ => unreachable!("a fixed-step or a mixed method, checked above"),
    };
    let exchange = match args.partition.exchange {
        ExchangeArg::GaussSeidel => Exchange::GaussSeidel,
        ExchangeArg::Jacobi => Exchange::Jacobi,
    };
    let settings = Settings {
        method: stepping,
        weak: split.then_some((&structure, exchange)),
        grid: (grid.start, grid.stop, grid.step),
        tol: grid.tol,
        events: event_mode(args.events),
    };
    let mut files = crate_files(&dae, &causal, &jac, &start, settings);
    if args.fmu.is_some() {
        fmu::make_fmu_crate(&mut files, args.fmi_type == FmiType::Me);
    }
    let crate_dir = args
        .out
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("mocca-fmu-{}", std::process::id())));
    if let Err(message) = write_directory(&crate_dir, &files) {
        return super::failure_without_source(message, ExitCode::from(1));
    }
    if let Some(path) = &args.fmu {
        let outputs: Vec<_> = (dae.var_ids())
            .filter(|&v| dae.var(v).output && dae.var(v).kind != VarKind::Alias)
            .collect();
        let description = FmuDescription {
            facts: fmu::Facts {
                dae: &dae,
                states: &causal.states,
                start: &start,
                outputs: &outputs,
            },
            grid: (grid.start, grid.stop, grid.step),
            model_exchange: args.fmi_type == FmiType::Me,
        };
        let packed = build_fmu(&crate_dir, &files, &description).and_then(|archive| {
            super::write_whole(path, |partial| std::fs::write(partial, &archive))
        });
        if args.out.is_none() {
            let _ = std::fs::remove_dir_all(&crate_dir);
        }
        if let Err(message) = packed {
            return super::failure_without_source(message, ExitCode::from(1));
        }
    }
    let name = |i: &usize| dae.var(causal.states[*i]).name.as_str();
    let levels: Vec<(Vec<&str>, &str, u64)> = match stepping {
        Stepping::Single(m) => vec![(
            causal
                .states
                .iter()
                .map(|&v| dae.var(v).name.as_str())
                .collect(),
            m.name(),
            1,
        )],
        Stepping::Mixed(p) => p
            .parts()
            .into_iter()
            .rev()
            .filter(|part| !part.states.is_empty())
            .map(|part| {
                (
                    part.states.iter().map(name).collect(),
                    part.method.name(),
                    part.rate,
                )
            })
            .collect(),
    };
    let out = args
        .fmu
        .as_ref()
        .or(args.out.as_ref())
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    match args.model.format() {
        Format::Json => super::print_json(&json!({
            "model": dae.model,
            "partitions": levels.iter().map(|(states, method, rate)| json!({
                "states": states, "method": method, "rate": rate,
            })).collect::<Vec<_>>(),
            "out": out,
        })),
        Format::Text => {
            outln!(
                "emitted {} to {out}: {} states, step {}",
                dae.model,
                causal.states.len(),
                crate::numfmt::Number(grid.step)
            );
            for (states, method, rate) in &levels {
                outln!("  {method} ×{rate}: {} states", states.len());
            }
            if args.fmu.is_some() {
                outln!("run it with FMPy: python3 -m fmpy simulate {out}");
            } else {
                outln!("build and run: cd {out} && cargo run --release -- --out result.csv");
            }
        }
    }
    super::leave_allocated((dae, causal, jac, structure));
    ExitCode::SUCCESS
}

/// Whether `path` names one FMU (it ends in `.fmu`) rather than a directory for several.
fn is_fmu_file(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("fmu"))
}

/// What the FMU's model description says besides the crate: the model (its states, the point
/// its parameters take their values at, its outputs), the default experiment, the interfaces.
pub(super) struct FmuDescription<'a> {
    pub facts: fmu::Facts<'a>,
    pub grid: (f64, f64, f64),
    pub model_exchange: bool,
}

/// Builds the FMU crate in `dir` (its `files`) and packs the FMU: the model description, the
/// shared library under `binaries/linux64/`, the sources under `sources/`.
pub(super) fn build_fmu(
    dir: &Path,
    files: &[(String, String)],
    what: &FmuDescription<'_>,
) -> Result<Vec<u8>, String> {
    let dae = what.facts.dae;
    let built = std::process::Command::new("cargo")
        .args(["build", "--release", "--lib", "--offline", "--quiet"])
        .current_dir(dir)
        .output()
        .map_err(|e| format!("cannot run cargo to build the FMU: {e}"))?;
    if !built.status.success() {
        let stderr = String::from_utf8_lossy(&built.stderr);
        return Err(format!("building the FMU's library failed:\n{stderr}"));
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|t| if t.is_absolute() { t } else { dir.join(t) })
        .unwrap_or_else(|| dir.join("target"));
    let library = target.join("release").join("libemitted.so");
    let binary = std::fs::read(&library)
        .map_err(|e| format!("cannot read the built library `{}`: {e}", library.display()))?;
    let identifier = crate::emit::binary_name(&dae.model);
    let model_rs = files
        .iter()
        .find(|(p, _)| p == "src/model.rs")
        .map_or("", |(_, text)| text.as_str());
    let guid = fmu::guid(model_rs);
    let description = fmu::model_description(
        what.facts,
        &identifier,
        &guid,
        what.grid,
        what.model_exchange,
    );
    let mut entries = vec![
        ("modelDescription.xml".to_string(), description.into_bytes()),
        (format!("binaries/linux64/{identifier}.so"), binary),
    ];
    entries.extend(
        files
            .iter()
            .map(|(p, text)| (format!("sources/{p}"), text.clone().into_bytes())),
    );
    Ok(fmu::zip(&entries))
}

/// `dir` may be written: absent, empty, or (with `force`) replaced.
pub(super) fn check_directory(dir: &Path, force: bool) -> Result<(), String> {
    let empty = match std::fs::read_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("cannot read `{}`: {e}", dir.display())),
        Ok(mut entries) => entries.next().is_none(),
    };
    if empty || force {
        Ok(())
    } else {
        Err(format!(
            "`{}` is not empty: give `--force` to replace what it holds",
            dir.display()
        ))
    }
}

/// Writes `files` (path inside, contents) into a directory beside `dir`, then puts it in
/// `dir`'s place.
pub(super) fn write_directory(
    dir: &Path,
    files: &[(String, impl AsRef<[u8]>)],
) -> Result<(), String> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "crate".to_string());
    let partial = dir.with_file_name(format!(".{name}.partial"));
    let _ = std::fs::remove_dir_all(&partial);
    let written = files.iter().try_for_each(|(path, text)| {
        let path = partial.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, text)
    });
    let replaced = written.and_then(|()| {
        if dir.exists() {
            std::fs::remove_dir_all(dir)?;
        }
        std::fs::rename(&partial, dir)
    });
    replaced.map_err(|e| {
        let _ = std::fs::remove_dir_all(&partial);
        format!("cannot write to `{}`: {e}", dir.display())
    })
}
