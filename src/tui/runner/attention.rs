//! Getting the person's attention: the bell or a desktop notification while the terminal is
//! out of focus, `[interface] notify_command` on each event, and the window title that says
//! what the session in front does. Owns none of the events' meaning (the loop decides which
//! event is which kind).

use super::super::notify::{self, TitleState};
use super::super::settings::NotifyEvent;
use super::Loop;

impl Loop {
    /// Run `[interface] notify_command` for `kind` (if `notify` has it) with the event as JSON
    /// for its last argument; not waited for, and a program that cannot start is logged.
    pub(super) fn run_notify_command(&self, slot: usize, kind: NotifyEvent, message: &str) {
        let Some((program, args)) = self.notify_command.split_first() else {
            return;
        };
        if !self.notify.1.contains(&kind) {
            return;
        }
        let payload = notify::payload(kind, message, self.slots[slot].app.options.repo.as_deref());
        let started = std::process::Command::new(program)
            .args(args)
            .arg(payload.to_string())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        match started {
            // Reaped on a thread of its own, so that it never stays a zombie.
            Ok(mut child) => {
                std::thread::spawn(move || child.wait());
            }
            Err(e) => tracing::warn!("notify_command {program}: {e}"),
        }
    }

    /// Ring the bell or send a notification for `kind`, if the terminal is out of focus and
    /// `[interface] notify` has it.
    pub(super) fn call_attention(&mut self, kind: NotifyEvent, message: &str) {
        use std::io::Write;
        if self.focused || !self.notify.1.contains(&kind) {
            return;
        }
        let (program, term) = (
            std::env::var("TERM_PROGRAM").ok(),
            std::env::var("TERM").ok(),
        );
        let Some(bytes) =
            notify::sequence(self.notify.0, message, program.as_deref(), term.as_deref())
        else {
            return;
        };
        let mut out = std::io::stdout();
        if let Err(e) = out.write_all(bytes.as_bytes()).and_then(|_| out.flush()) {
            tracing::warn!("could not notify: {e}");
        }
    }

    /// The window title for what the session in front does, when that changed.
    pub(super) fn set_title(&mut self) {
        let state = TitleState::of(&self.slots[self.focus.min(self.slots.len() - 1)].app);
        if self.title == Some(state) {
            return;
        }
        self.title = Some(state);
        if let Err(e) = crossterm::execute!(
            std::io::stdout(),
            crossterm::terminal::SetTitle(state.title())
        ) {
            tracing::warn!("could not set the window title: {e}");
        }
    }
}
