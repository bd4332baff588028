mocca::install_allocator!();

use std::process::ExitCode;

use clap::Parser;

/// Stack sizes to try for the worker thread, largest first: a stack reserves address space
/// up front, and a process limited in it (`ulimit -v`, a container) cannot have the largest.
/// Only the pages a run touches are committed, whichever is taken.
const STACKS: [usize; 4] = [mocca::cli::STACK_BYTES, 1 << 30, 256 << 20, 64 << 20];

fn main() -> ExitCode {
    let mut cli = Some(mocca::cli::Cli::parse());
    for bytes in STACKS {
        let Some(args) = cli.take() else { break };
        // A spawn that fails drops the closure and the arguments it owns: they are parsed
        // again (the same way) for the next size.
        let spawned = std::thread::Builder::new()
            .stack_size(bytes)
            .spawn(move || mocca::cli::run(args));
        match spawned {
            Ok(handle) => {
                return handle.join().unwrap_or_else(|_| {
                    eprintln!("error: mocca stopped unexpectedly");
                    ExitCode::from(1)
                });
            }
            Err(_) => cli = Some(mocca::cli::Cli::parse()),
        }
    }
    // No thread could be started: run on the main thread's stack.
    mocca::cli::run(cli.unwrap_or_else(mocca::cli::Cli::parse))
}
