use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    mocca::cli::run(mocca::cli::Cli::parse())
}
