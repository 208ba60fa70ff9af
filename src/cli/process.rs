//! The process around a command: SIGPIPE as other Unix tools have it, and where diagnostics
//! go (stderr, or a log file while the interface owns the screen).

/// Rust ignores SIGPIPE, so `lilypad sessions | head` would panic on a closed pipe; a command
/// that only prints should simply stop, as other Unix tools do (the caller decides which,
/// `super::ends_quietly_on_a_closed_pipe`; the others keep SIGPIPE ignored).
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
