//! The command line: clap definitions and one module per subcommand. Each subcommand turns its
//! arguments into stage calls and prints; the library does the work.

/// `println!` that never panics: a closed stdout (`mocca … | head`) just ends the output.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// Stdout through a buffer, for long outputs: stdout alone flushes at every line. Flush it
/// at the end; write errors (a closed pipe) are ignored like `outln!`'s.
fn buffered_stdout() -> std::io::BufWriter<std::io::StdoutLock<'static>> {
    std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock())
}

/// Writes a large text through [`buffered_stdout`].
fn print_buffered(text: impl std::fmt::Display) {
    use std::io::Write as _;
    let mut w = buffered_stdout();
    let _ = write!(w, "{text}").and_then(|()| w.flush());
}

mod blt;
mod check;
mod check_all;
mod compare;
mod cycles;
mod emit;
mod emit_system;
mod flatten;
mod jacobian;
mod model;
mod parse;
mod partition;
mod reduce;
mod script;
mod separability;
mod simulate;
mod state_switch;
mod suggest_weak;
mod table;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::{Args, Parser, Subcommand, ValueEnum};
use codespan_reporting::term::termcolor::{ColorChoice, StandardStream};

use crate::diagnostics::{self, Diagnostic};
use crate::source::SourceMap;

#[derive(Parser, Debug)]
#[command(
    name = "mocca",
    version,
    about = "A Modelica compiler that finds time scales and splits models",
    after_help = EXAMPLES
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

const EXAMPLES: &str = "Examples:
  mocca check examples/rc_ladder_weak.mo           balance, sizes and weak subsystems
  mocca simulate examples/quarter_car.mo --method bdf --stop 3 --out car.csv
  mocca cycles examples/heat_exchanger.mo -p N=30  time scales and a partition proposal
  mocca suggest-weak examples/rc_ladder.mo --step 0.1   where to cut with `weak`
  mocca compare examples/heat_exchanger.mo -p N=30 --step 0.01 --stop 10
  mocca reduce examples/quarter_car.mo --stop 3 --verify --out car_reduced.mo
  mocca emit examples/rc_ladder.mo --method heun --step 0.01 --out rc_ladder_crate

Each subcommand has its own help: mocca simulate --help";

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Parse files and report syntax errors and unsupported constructs
    Parse(parse::ParseArgs),
    /// Flatten a model, check its balance and print its sizes and weak subsystems
    Check(check::CheckArgs),
    /// Print the flat model as Modelica (or, with --format json, as JSON)
    Flatten(model::ModelArgs),
    /// Match equations to unknowns and print the BLT blocks in evaluation order
    Blt(model::ModelArgs),
    /// Print the symbolic ODE Jacobian and its values at an operating point
    Jacobian(jacobian::JacobianArgs),
    /// Initialise and integrate (fixed-step methods or BDF); write CSV, compare with a
    /// reference
    Simulate(simulate::SimulateArgs),
    /// Several methods on one model at one step against a tight BDF reference: costs, RMSE,
    /// stability
    Compare(compare::CompareArgs),
    /// Term-ranking reduction: rank the terms of the equations against a reference run,
    /// delete or freeze the negligible ones, write the reduced model
    Reduce(reduce::ReduceArgs),
    /// Write the model as a standalone Rust crate that integrates it with a fixed step
    Emit(emit::EmitArgs),
    /// Run an OpenModelica-style script of loadFile, simulate, reduceDAE and cycles calls
    Script(script::ScriptArgs),
    /// Cycle analysis: per-state step bounds, stiffness and separability indices, a partition
    /// proposal and parallelisable cycle sets
    Cycles(cycles::CyclesArgs),
    /// The separability map over a grid of gain bounds α, optionally drawn as SVG or PNG
    Separability(separability::SeparabilityArgs),
    /// Rank the model's connections as weak cuts: subsystems, the decoupled scheme's spectral
    /// radius and largest stable step, lag error, cost; `--apply K` writes the K-th cut
    SuggestWeak(suggest_weak::SuggestWeakArgs),
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Format {
    #[default]
    Text,
    Json,
}

/// Inputs every subcommand takes: files or package directories, and the output format.
#[derive(Args, Debug)]
pub struct InputArgs {
    /// Modelica files or package directories (a directory holding `package.mo`); none with
    /// `--model` naming a model of a library.
    pub files: Vec<PathBuf>,
    /// Output format: text for people, json for scripts.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// The most scalars a declaration, an array expression or the model may have.
    #[arg(long, value_name = "N", default_value_t = crate::flatten::DEFAULT_MAX_SIZE)]
    pub max_size: usize,
}

/// The stack of the thread a command runs on, and of any thread it starts that walks
/// expressions. Expression trees of big models are deep (a ground node joining 10⁵ components
/// is a sum of 10⁵ terms) and the passes over them recurse; a generous stack keeps them safe.
/// Only the pages actually used are committed.
pub const STACK_BYTES: usize = 4 << 30;

/// Whether failures are reported as JSON on stdout (`--format json`), set once per run.
static JSON_FAILURES: AtomicBool = AtomicBool::new(false);

impl Command {
    fn format(&self) -> Format {
        match self {
            Command::Parse(a) => a.input.format,
            Command::Script(_) => Format::Text,
            other => other
                .model_args()
                .map_or(Format::Text, model::ModelArgs::format),
        }
    }

    /// The model a subcommand works on, for those that work on one.
    fn model_args(&self) -> Option<&model::ModelArgs> {
        match self {
            Command::Parse(_) | Command::Script(_) => None,
            Command::Check(a) => Some(&a.model),
            Command::Flatten(a) | Command::Blt(a) => Some(a),
            Command::Jacobian(a) => Some(&a.model),
            Command::Simulate(a) => Some(&a.model),
            Command::Compare(a) => Some(&a.model),
            Command::Reduce(a) => Some(&a.model),
            Command::Emit(a) => Some(&a.model),
            Command::Cycles(a) => Some(&a.model),
            Command::Separability(a) => Some(&a.model),
            Command::SuggestWeak(a) => Some(&a.model),
        }
    }

    /// Bad usage no argument parser sees: no input at all.
    fn usage_problem(&self) -> Option<&'static str> {
        match self {
            Command::Parse(a) if a.input.files.is_empty() => {
                Some("give the Modelica files or package directories to parse")
            }
            _ => match self.model_args() {
                Some(m) if m.files().is_empty() && m.model.is_none() => Some(
                    "give the model's FILE… or, for a model of a library, `--model NAME` \
                     (with `--lib DIR` or `MODELICAPATH`)",
                ),
                _ => None,
            },
        }
    }
}

/// Runs the parsed command line; the exit code is 0 on success, 1 when the input is wrong,
/// 2 on bad usage.
pub fn run(cli: Cli) -> ExitCode {
    JSON_FAILURES.store(cli.command.format() == Format::Json, Ordering::Relaxed);
    if let Some(problem) = cli.command.usage_problem() {
        return usage_error(problem);
    }
    match cli.command {
        Command::Parse(args) => parse::run(&args),
        Command::Check(args) => check::run(&args),
        Command::Flatten(args) => flatten::run(&args),
        Command::Blt(args) => blt::run(&args),
        Command::Jacobian(args) => jacobian::run(&args),
        Command::Simulate(args) => simulate::run(&args),
        Command::Compare(args) => compare::run(&args),
        Command::Reduce(args) => reduce::run(&args),
        Command::Emit(args) => emit::run(&args),
        Command::Script(args) => script::run(&args),
        Command::Cycles(args) => cycles::run(&args),
        Command::Separability(args) => separability::run(&args),
        Command::SuggestWeak(args) => suggest_weak::run(&args),
    }
}

/// Prints diagnostics to stderr, in colour on a terminal; with `--format json`, diagnostics
/// that hold an error are one JSON object on stdout instead (warnings alone stay on stderr,
/// beside the command's own JSON output).
pub(crate) fn report(sources: &SourceMap, diags: &[Diagnostic]) {
    if diags.is_empty() {
        return;
    }
    if JSON_FAILURES.load(Ordering::Relaxed) && diagnostics::has_errors(diags) {
        print_json(&diagnostics::to_json(sources, diags));
        return;
    }
    let choice = if std::io::stderr().is_terminal() {
        ColorChoice::Auto
    } else {
        ColorChoice::Never
    };
    let mut stderr = StandardStream::stderr(choice);
    diagnostics::emit(&mut stderr, sources, diags);
}

/// Hands a subcommand's model to the operating system instead of freeing it: the process ends
/// right after, and freeing millions of small allocations one by one takes a sizeable share of
/// a large model's run time.
pub(crate) fn leave_allocated<T>(model: T) {
    std::mem::forget(model);
}

/// Fails early, before any work, when `path` cannot be written: by creating and removing a
/// file beside it (the output itself is written only at the end, by [`write_whole`]).
pub(crate) fn check_writable(path: &std::path::Path) -> Result<(), String> {
    if path.is_dir() {
        return Err(format!("cannot write `{}`: it is a folder", path.display()));
    }
    let probe = sibling(path, "probe");
    std::fs::File::create(&probe)
        .and_then(|_| std::fs::remove_file(&probe))
        .map_err(|e| format!("cannot write `{}`: {e}", path.display()))
}

/// Writes `path` whole or not at all: `write` fills a file beside it, which then takes its
/// place.
pub(crate) fn write_whole(
    path: &std::path::Path,
    write: impl FnOnce(&std::path::Path) -> std::io::Result<()>,
) -> Result<(), String> {
    let partial = sibling(path, "partial");
    write(&partial)
        .and_then(|()| std::fs::rename(&partial, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&partial);
            format!("cannot write `{}`: {e}", path.display())
        })
}

/// A hidden file in `path`'s folder, named after it and this process, with its extension
/// (which says what a picture is encoded as).
fn sibling(path: &std::path::Path, what: &str) -> PathBuf {
    let stem = path
        .file_stem()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let extension = path
        .extension()
        .map_or_else(String::new, |e| format!(".{}", e.to_string_lossy()));
    let id = std::process::id();
    path.with_file_name(format!(".{stem}.mocca-{what}-{id}{extension}"))
}

/// Reports bad usage (an error that concerns no source text) and returns exit code 2.
pub(crate) fn usage_error(message: impl std::fmt::Display) -> ExitCode {
    failure_without_source(message, ExitCode::from(2))
}

/// Reports an error that concerns no source text (a file that cannot be written) and returns
/// `code`.
pub(crate) fn failure_without_source(message: impl std::fmt::Display, code: ExitCode) -> ExitCode {
    if JSON_FAILURES.load(Ordering::Relaxed) {
        report(&SourceMap::new(), &[Diagnostic::error(message.to_string())]);
    } else {
        eprintln!("error: {message}");
    }
    code
}

/// Exit code for a run that produced these diagnostics.
pub(crate) fn exit_code(diags: &[Diagnostic]) -> ExitCode {
    if diagnostics::has_errors(diags) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

pub(crate) fn print_json(value: &impl serde::Serialize) {
    use std::io::Write as _;
    let mut w = buffered_stdout();
    let _ = serde_json::to_writer_pretty(&mut w, value)
        .map_err(std::io::Error::from)
        .and_then(|()| writeln!(w))
        .and_then(|()| w.flush());
}
