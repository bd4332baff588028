mocca::install_allocator!();

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = mocca::cli::Cli::parse();
    let worker = std::thread::Builder::new()
        .stack_size(mocca::cli::STACK_BYTES)
        .spawn(move || mocca::cli::run(cli));
    match worker.map(|handle| handle.join()) {
        Ok(Ok(code)) => code,
        _ => {
            eprintln!("error: mocca could not start its worker thread");
            ExitCode::from(1)
        }
    }
}
