//! `mocca emit --partition weak --fmu DIR`: one FMU per weak subsystem and an SSP archive
//! that connects them, for a co-simulation master to run the split model. Each subsystem is
//! a model of its own (`structure::split`), emitted and built as `--fmu FILE.fmu` builds one;
//! the master holds each input over its communication step, so a Jacobi master (FMPy's
//! `simulate_ssp`) runs what `simulate --partition weak --exchange jacobi` runs.

use std::path::Path;
use std::process::ExitCode;

use serde_json::json;

use super::Format;
use super::emit::{EmitArgs, FmiType, FmuDescription, build_fmu, write_directory};
use super::partition::PartitionArg;
use super::simulate::{Grid, Integrator, one_system_order};
use crate::causal::{Point, causal_form, initial_point};
use crate::dae::{Dae, ScalarType, VarKind};
use crate::emit::{Settings, Stepping, crate_files, fmu, ssp};
use crate::jacobian::{WeakReadsAs, ode_jacobian_with};
use crate::partition::MixedMethod;
use crate::simulate::fixed_step::Method;
use crate::simulate::init::initialise;
use crate::simulate::model::{CompiledModel, Layout};
use crate::source::SourceMap;
use crate::structure::Structure;
use crate::structure::split::{SubsystemModel, subsystem_models};

/// The options `--fmu DIR` takes: weak subsystems, a fixed-step method, no `--out`.
pub(super) fn check_usage(args: &EmitArgs, mixed: Option<MixedMethod>) -> Result<(), String> {
    match args.partition.partition {
        PartitionArg::Weak => {}
        PartitionArg::Auto => {
            return Err(
                "`--fmu DIR` writes one FMU per weak subsystem, which exchange values \
                        once per communication step; `--partition auto`'s levels exchange at \
                        every stage, so they are not FMUs of their own: give `--partition \
                        weak`, or write one FMU with `--fmu FILE.fmu`"
                    .into(),
            );
        }
        PartitionArg::None => {
            return Err(
                "`--fmu DIR` writes one FMU per weak subsystem: give `--partition \
                        weak` (a path ending in `.fmu` writes one FMU of the whole model)"
                    .into(),
            );
        }
    }
    if mixed.is_some() {
        return Err("`--fmu DIR` takes a fixed-step method for every subsystem".into());
    }
    if args.out.is_some() {
        return Err("`--out` is for one crate; `--fmu DIR` builds one per subsystem".into());
    }
    Ok(())
}

/// Splits the prepared model into its subsystem models, builds an FMU of each and writes
/// them and the SSP into `dir`.
pub(super) fn run(
    args: &EmitArgs,
    (mut dae, structure, sources): (Dae, &Structure, &SourceMap),
    grid: Grid,
    dir: &Path,
) -> ExitCode {
    let Integrator::Fixed(method) = Integrator::of(args.method) else {
        unreachable!("a fixed-step method, checked by check_usage")
    };
    let fail = |message: String| super::failure_without_source(message, ExitCode::from(1));
    let point = match consistent_point(&mut dae, structure, grid.start) {
        Ok(point) => point,
        Err(message) => return fail(message),
    };
    let models = match subsystem_models(&dae, structure, &point.vars) {
        Ok(models) => models,
        Err(diagnostic) => {
            super::report(sources, &[diagnostic]);
            return ExitCode::from(1);
        }
    };
    if models.len() < 2 {
        return fail(format!(
            "`{}` is one subsystem: there is nothing to split (write one FMU with `--fmu \
             FILE.fmu`)",
            dae.model
        ));
    }
    let work = std::env::temp_dir().join(format!("mocca-ssp-{}", std::process::id()));
    let built: Result<Vec<Built>, String> = (models.iter())
        .map(|m| subsystem_fmu(args, m, (method, grid), &work, sources))
        .collect();
    let _ = std::fs::remove_dir_all(&work);
    let built = match built {
        Ok(built) => built,
        Err(message) => return fail(message),
    };
    let archive = system_archive(&dae.model, &models, &built, (grid.start, grid.stop));
    let ssp_name = format!("{}.ssp", crate::emit::binary_name(&dae.model));
    let mut files: Vec<(String, Vec<u8>)> = (models.iter().zip(built))
        .map(|(m, b)| (format!("{}.fmu", m.name), b.fmu))
        .collect();
    files.push((ssp_name.clone(), archive));
    if let Err(message) = write_directory(dir, &files) {
        return fail(message);
    }
    report(args, &dae.model, &models, &dir.join(&ssp_name));
    ExitCode::SUCCESS
}

/// Every variable at the whole model's consistent initial point, weak reads held: where
/// `simulate --partition weak` starts, and the subsystem models' inputs with it.
fn consistent_point(dae: &mut Dae, structure: &Structure, t0: f64) -> Result<Point, String> {
    let causal = causal_form(dae, structure);
    let jac = ode_jacobian_with(dae, &causal, WeakReadsAs::Held);
    let start = initial_point(dae)
        .map_err(|f| format!("a parameter or start value cannot be evaluated: {f:?}"))?;
    let mut model = CompiledModel::new(dae, &causal, &jac, &start, &Layout::whole(&causal));
    model.enter_interval_from(t0);
    initialise(dae, &causal, &mut model, t0)
        .map_err(|f| format!("the model does not initialise: {f:?}"))?;
    Ok(model.point())
}

/// A subsystem model's FMU, and its settable parameters (Real) at their values, by name
/// `subsystem.parameter`.
struct Built {
    fmu: Vec<u8>,
    parameters: Vec<(String, f64)>,
}

/// The FMU of one subsystem model: emitted with `method` on `grid`, built under `work`.
fn subsystem_fmu(
    args: &EmitArgs,
    sub: &SubsystemModel,
    (method, grid): (Method, Grid),
    work: &Path,
    sources: &SourceMap,
) -> Result<Built, String> {
    let mut dae = sub.dae.clone();
    let failed = |what: &str, diags: Vec<crate::diagnostics::Diagnostic>| {
        let first = diags.into_iter().find(|d| d.is_error());
        let why = first.map_or_else(String::new, |d| format!(": {}", d.message));
        format!("{} {what}{why}", sub.name)
    };
    let structure = crate::structure::analyse(&dae).map_err(|d| failed("does not analyse", d))?;
    let causal = causal_form(&mut dae, &structure);
    let (causal, weak) = one_system_order(causal, &dae, PartitionArg::None, sources);
    let jac = ode_jacobian_with(&mut dae, &causal, weak);
    let start = initial_point(&dae).map_err(|f| format!("{}: {f:?}", sub.name))?;
    let settings = Settings {
        method: Stepping::Single(method),
        weak: None,
        grid: (grid.start, grid.stop, grid.step),
        tol: grid.tol,
        events: super::emit::event_mode(args.events),
    };
    let mut files = crate_files(&dae, &causal, &jac, &start, settings);
    let model_exchange = args.fmi_type == FmiType::Me;
    fmu::make_fmu_crate(&mut files, model_exchange);
    let crate_dir = work.join(&sub.name);
    write_directory(&crate_dir, &files)?;
    let outputs: Vec<_> = sub.outputs.iter().filter_map(|n| dae.lookup(n)).collect();
    let description = FmuDescription {
        facts: fmu::Facts {
            dae: &dae,
            states: &causal.states,
            start: &start,
            outputs: &outputs,
        },
        grid: settings.grid,
        model_exchange,
    };
    let parameters = (dae.var_ids())
        .filter(|&v| dae.var(v).kind == VarKind::Parameter && dae.var(v).ty == ScalarType::Real)
        .map(|v| {
            (
                format!("{}.{}", sub.name, dae.var(v).name),
                start.vars[v.0 as usize],
            )
        })
        .collect();
    let fmu = build_fmu(&crate_dir, &files, &description)?;
    Ok(Built { fmu, parameters })
}

/// The SSP: `SystemStructure.ssd`, the FMUs under `resources/` and the parameter values.
fn system_archive(
    model: &str,
    models: &[SubsystemModel],
    built: &[Built],
    interval: (f64, f64),
) -> Vec<u8> {
    let components: Vec<ssp::Component<'_>> = (models.iter())
        .map(|m| ssp::Component {
            name: &m.name,
            source: format!("resources/{}.fmu", m.name),
            inputs: &m.inputs,
            outputs: &m.outputs,
        })
        .collect();
    let ssd = ssp::system_structure(model, &components, interval);
    let parameters: Vec<(String, f64)> = (built.iter())
        .flat_map(|b| b.parameters.iter().cloned())
        .collect();
    let ssv = ssp::parameter_values(model, &parameters);
    let mut entries = vec![("SystemStructure.ssd".to_string(), ssd.into_bytes())];
    entries.extend((components.iter().zip(built)).map(|(c, b)| (c.source.clone(), b.fmu.clone())));
    entries.push((ssp::PARAMETERS.to_string(), ssv.into_bytes()));
    fmu::zip(&entries)
}

fn report(args: &EmitArgs, model: &str, models: &[SubsystemModel], ssp_path: &Path) {
    let ssp_text = ssp_path.display().to_string();
    match args.model.format() {
        Format::Json => super::print_json(&json!({
            "model": model,
            "ssp": ssp_text,
            "subsystems": models.iter().map(|m| json!({
                "name": m.name,
                "fmu": format!("{}.fmu", m.name),
                "states": state_names(&m.dae),
                "inputs": m.inputs,
                "outputs": m.outputs,
            })).collect::<Vec<_>>(),
        })),
        Format::Text => {
            outln!(
                "emitted {model} as {} subsystem FMUs and {ssp_text}:",
                models.len()
            );
            for m in models {
                outln!(
                    "  {}.fmu: {} states; inputs {}; outputs {}",
                    m.name,
                    state_names(&m.dae).len(),
                    list(&m.inputs),
                    list(&m.outputs)
                );
            }
            outln!(
                "a master holds inputs over its step: FMPy's simulate_ssp (Jacobi) runs what \
                 `mocca simulate --partition weak --exchange jacobi` does"
            );
        }
    }
}

fn state_names(dae: &Dae) -> Vec<&str> {
    (dae.var_ids())
        .filter(|&v| dae.var(v).kind == VarKind::State)
        .map(|v| dae.var(v).name.as_str())
        .collect()
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}
