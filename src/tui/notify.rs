//! Getting the person's attention while the terminal is out of focus: the bytes of a bell or
//! of a desktop notification (OSC 9, OSC 777) for `[interface] notify_method`, and the window
//! title that says what the session waits for. Owns the choice of bytes only; the runner
//! decides when (focus lost, an event in `[interface] notify`) and writes them.

use super::app::{AgentState, App, Mode};
use super::settings::{NotifyEvent, NotifyMethod};

/// The title of the window for what the session is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TitleState {
    Starting,
    Working,
    AwaitingReview,
    WaitingForMessage,
    Ended,
}

impl TitleState {
    /// What `app`'s session is doing, for its window title.
    pub fn of(app: &App) -> Self {
        if matches!(app.mode, Mode::Review(_)) {
            return TitleState::AwaitingReview;
        }
        match app.status.state {
            AgentState::Starting => TitleState::Starting,
            AgentState::Ended | AgentState::Replay => TitleState::Ended,
            AgentState::WaitingForReview => TitleState::AwaitingReview,
            s if s.is_busy() => TitleState::Working,
            _ => TitleState::WaitingForMessage,
        }
    }

    /// The window title, "lilypad - awaiting review".
    pub fn title(self) -> String {
        let what = match self {
            TitleState::Starting => "starting",
            TitleState::Working => "working",
            TitleState::AwaitingReview => "awaiting review",
            TitleState::WaitingForMessage => "waiting for a message",
            TitleState::Ended => "ended",
        };
        format!("lilypad - {what}")
    }
}

/// The JSON object `[interface] notify_command` gets for its last argument: the event's
/// `type` (`review_waiting`, `task_finished`), the `message` shown, and the repository.
pub fn payload(
    kind: NotifyEvent,
    message: &str,
    repo: Option<&std::path::Path>,
) -> serde_json::Value {
    serde_json::json!({
        "type": kind,
        "message": message,
        "repo": repo,
    })
}

/// Terminals known to show OSC 9 as a desktop notification, by `TERM_PROGRAM` or `TERM`.
fn shows_osc9(term_program: Option<&str>, term: Option<&str>) -> bool {
    matches!(
        term_program,
        Some("iTerm.app" | "WezTerm" | "ghostty" | "Ghostty")
    ) || term.is_some_and(|t| t.contains("kitty") || t.contains("ghostty"))
}

/// What is written for `message` with `method` (`None`: nothing). `term_program` and `term`
/// are the environment's `TERM_PROGRAM` and `TERM`, for `auto`.
pub fn sequence(
    method: NotifyMethod,
    message: &str,
    term_program: Option<&str>,
    term: Option<&str>,
) -> Option<String> {
    // Control characters would end the sequence early or be taken as commands.
    let text: String = message.chars().filter(|c| !c.is_control()).collect();
    let method = match method {
        NotifyMethod::Auto if shows_osc9(term_program, term) => NotifyMethod::Osc9,
        NotifyMethod::Auto => NotifyMethod::Bel,
        other => other,
    };
    match method {
        NotifyMethod::Off => None,
        NotifyMethod::Bel | NotifyMethod::Auto => Some("\x07".into()),
        NotifyMethod::Osc9 => Some(format!("\x1b]9;{text}\x1b\\")),
        NotifyMethod::Osc777 => Some(format!("\x1b]777;notify;lilypad;{text}\x1b\\")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_rings_the_bell_unless_the_terminal_shows_notifications() {
        let m = "a change waits for review";
        assert_eq!(
            sequence(NotifyMethod::Auto, m, None, Some("xterm-256color")).as_deref(),
            Some("\x07")
        );
        assert_eq!(
            sequence(NotifyMethod::Auto, m, Some("WezTerm"), None).as_deref(),
            Some("\x1b]9;a change waits for review\x1b\\")
        );
        assert_eq!(
            sequence(NotifyMethod::Auto, m, None, Some("xterm-kitty")).as_deref(),
            Some("\x1b]9;a change waits for review\x1b\\")
        );
        assert_eq!(sequence(NotifyMethod::Off, m, None, None), None);
    }

    #[test]
    fn control_characters_cannot_end_the_sequence() {
        let s = sequence(NotifyMethod::Osc777, "done\x07\x1b]0;x", None, None).unwrap();
        assert_eq!(s, "\x1b]777;notify;lilypad;done]0;x\x1b\\");
    }

    #[test]
    fn titles_say_what_the_session_waits_for() {
        assert_eq!(
            TitleState::AwaitingReview.title(),
            "lilypad - awaiting review"
        );
    }
}
