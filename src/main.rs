//! The `lilypad` binary: parses the command line and hands off to [`lilypad::cli`].
//! `anyhow` lives here and in `cli` only; every library module returns typed errors.

fn main() -> std::process::ExitCode {
    lilypad::cli::main()
}
