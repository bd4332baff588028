use std::process::ExitCode;

use clap::Parser;

/// Expression trees of big models are deep (a ground node joining 10⁵ components is a sum of
/// 10⁵ terms) and the passes over them recurse; a generous stack keeps them safe. Only the
/// pages actually used are committed.
const STACK_BYTES: usize = 4 << 30;

fn main() -> ExitCode {
    let cli = mocca::cli::Cli::parse();
    let worker = std::thread::Builder::new()
        .stack_size(STACK_BYTES)
        .spawn(move || mocca::cli::run(cli));
    match worker.map(|handle| handle.join()) {
        Ok(Ok(code)) => code,
        _ => {
            eprintln!("error: mocca could not start its worker thread");
            ExitCode::from(1)
        }
    }
}
