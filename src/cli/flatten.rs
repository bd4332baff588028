//! `mocca flatten`: prints the flat model as Modelica.

use std::process::ExitCode;

use super::model::{ModelArgs, load_and_flatten};

pub fn run(args: &ModelArgs) -> ExitCode {
    match load_and_flatten(args) {
        Ok(flat) => {
            super::report(&flat.sources, &flat.warnings);
            super::print_buffered(flat.dae.modelica());
            super::leave_allocated(flat);
            ExitCode::SUCCESS
        }
        Err((sources, diags)) => {
            super::report(&sources, &diags);
            super::exit_code(&diags)
        }
    }
}
