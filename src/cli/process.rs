//! The process around a command: SIGPIPE as other Unix tools have it, and where diagnostics
//! go (stderr, or a log file while the interface owns the screen).

use super::Command;

/// Rust ignores SIGPIPE, so `lilypad sessions | head` would panic on a closed pipe; a command
/// that only prints should simply stop, as other Unix tools do (the caller decides which,
/// [`ends_quietly_on_a_closed_pipe`]; the others keep SIGPIPE ignored).
pub(super) fn restore_sigpipe() {
    #[cfg(unix)]
    // SAFETY: setting a signal disposition to its default at start-up, before any thread
    // exists (argument parsing starts none), has no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Where diagnostics (`tracing`, and llama.cpp's log through it) are written.
pub(super) enum LogTo {
    Stderr,
    /// Appended to this file; `None` (no data directory) or a file that cannot be opened
    /// drops them, since the screen is not an option.
    File(Option<std::path::PathBuf>),
}

pub(super) fn init_tracing(to: LogTo, level: &str) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_new(level).unwrap_or_else(|e| {
        eprintln!("warning: log level {level:?} is not a valid filter ({e}); using `warn`");
        EnvFilter::new("warn")
    });
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    let _ = match to {
        LogTo::Stderr => builder.with_writer(std::io::stderr).try_init(),
        LogTo::File(path) => {
            let file = path.and_then(|p| {
                std::fs::create_dir_all(p.parent()?).ok()?;
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .ok()
            });
            match file {
                Some(f) => builder
                    .with_ansi(false)
                    .with_writer(std::sync::Mutex::new(f))
                    .try_init(),
                None => builder.with_writer(std::io::sink).try_init(),
            }
        }
    };
}

/// Whether `command` only prints a result and stops: such a command may end at once, quietly,
/// when its reader closes the pipe (`lilypad sessions | head`), as other Unix tools do.
///
/// Every other command keeps SIGPIPE ignored (Rust's default), so that a write to a socket or
/// pipe whose reader has gone is an error on that write: `serve` answers many clients, and one
/// that hangs up must never end the process for the others; the interface and batches talk to
/// Docker, Kubernetes and their own children over sockets and pipes.
pub(super) fn ends_quietly_on_a_closed_pipe(command: Option<&Command>) -> bool {
    matches!(
        command,
        Some(
            Command::Info(_)
                | Command::Sessions(_)
                | Command::Export(_)
                | Command::Prompt(_)
                | Command::Parse(_)
                | Command::Harness(_)
        )
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::Parser;

    #[test]
    fn only_the_commands_that_print_and_stop_end_on_a_closed_pipe() {
        for (args, quiet) in [
            (&["lilypad", "sessions"][..], true),
            (&["lilypad", "export", "-"][..], true),
            (&["lilypad", "serve"][..], false),
            (&["lilypad", "demo"][..], false),
            (&["lilypad"][..], false),
        ] {
            let cli = Cli::try_parse_from(args).unwrap();
            assert_eq!(
                ends_quietly_on_a_closed_pipe(cli.command.as_ref()),
                quiet,
                "{args:?}"
            );
        }
    }
}
