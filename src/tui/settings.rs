//! The interface's own settings (`[interface]` in the config file; `crate::config` gathers
//! them): how reasoning is shown, which key scheme is used and how the terminal is asked to get
//! the person's attention. Owns the settings' values and their order; does not read files or
//! the environment, and does not write to the terminal (`tui::notify` does).

use serde::{Deserialize, Serialize};

/// How the model's reasoning is drawn in the transcript. `r` cycles through the three.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningView {
    /// A thought streams as its last lines, then folds to one line (`✻ Thought (n lines)`).
    #[default]
    Collapsed,
    /// Every thought streams in full and stays open.
    Full,
    /// No reasoning in the transcript; the status line still says what the model thinks.
    Hidden,
}

impl ReasoningView {
    /// The next view in the cycle `r` goes through.
    pub fn next(self) -> Self {
        match self {
            ReasoningView::Collapsed => ReasoningView::Full,
            ReasoningView::Full => ReasoningView::Hidden,
            ReasoningView::Hidden => ReasoningView::Collapsed,
        }
    }

    /// The word for it, as the config file spells it.
    pub fn name(self) -> &'static str {
        match self {
            ReasoningView::Collapsed => "collapsed",
            ReasoningView::Full => "full",
            ReasoningView::Hidden => "hidden",
        }
    }
}

/// Which keys the transcript answers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyScheme {
    /// The message line is always in front: printable keys type there (also while the agent
    /// works, which queues the message), and the transcript's commands are Ctrl and Alt chords.
    #[default]
    Chat,
    /// Single-letter commands in the transcript; `i` opens the message line.
    Modal,
}

/// How a change under review is drawn (`[interface] diff`); `t` switches during a review.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DiffLayout {
    /// Side by side on a terminal of [`SPLIT_COLUMNS`] columns or more, else unified.
    #[default]
    Auto,
    /// One column: removed lines above the added ones.
    Unified,
    /// The old file on the left, the new one on the right.
    Split,
}

/// The width from which `auto` draws diffs side by side.
pub const SPLIT_COLUMNS: u16 = 140;

impl DiffLayout {
    /// Whether a diff `width` columns wide is drawn side by side. `one_sided`: the file is new
    /// or deleted, so one side would be empty; `auto` keeps it in one column rather than leave
    /// half the width blank and wrap the other half.
    pub fn is_split(self, width: u16, one_sided: bool) -> bool {
        match self {
            DiffLayout::Auto => width >= SPLIT_COLUMNS && !one_sided,
            DiffLayout::Unified => false,
            DiffLayout::Split => true,
        }
    }

    /// The other layout than the one drawn (what `t` switches to).
    pub fn toggled(self, width: u16, one_sided: bool) -> Self {
        if self.is_split(width, one_sided) {
            DiffLayout::Unified
        } else {
            DiffLayout::Split
        }
    }
}

/// How the terminal is asked to get the person's attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NotifyMethod {
    /// OSC 9 where the terminal is known to show it (iTerm2, WezTerm, kitty, Ghostty), else
    /// BEL.
    #[default]
    Auto,
    /// The bell character.
    Bel,
    /// A desktop notification through OSC 9.
    Osc9,
    /// A desktop notification through OSC 777 (`notify;title;body`).
    Osc777,
    /// Never.
    Off,
}

/// What the person is told about when the terminal is not in focus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotifyEvent {
    /// A change or a command waits for review.
    ReviewWaiting,
    /// The agent finished the task (or stopped) and waits for a message.
    TaskFinished,
    /// An attempt's check command (`--check`) ran: passed or failed.
    CheckResult,
    /// The task stopped because the context is full (in place of `task_finished`, when both
    /// are asked for).
    ContextFull,
}

fn default_notify() -> Vec<NotifyEvent> {
    vec![
        NotifyEvent::ReviewWaiting,
        NotifyEvent::TaskFinished,
        NotifyEvent::CheckResult,
        NotifyEvent::ContextFull,
    ]
}

/// `[interface]`: settings of the terminal interface.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct InterfaceSettings {
    /// `collapsed` (the default), `full` or `hidden`.
    pub reasoning: ReasoningView,
    /// `chat` (the default) or `modal`.
    pub keys: KeyScheme,
    /// How diffs are drawn: `auto` (the default: split from 140 columns), `unified` or
    /// `split`.
    pub diff: DiffLayout,
    /// Past this many lines (20,000 by default) a file's diff is drawn without syntax colours
    /// or word emphasis, and its header says so.
    pub highlight_limit: usize,
    /// How to notify: `auto` (the default), `bel`, `osc9`, `osc777` or `off`.
    pub notify_method: NotifyMethod,
    /// Which events notify (when the terminal has lost focus): `review_waiting`,
    /// `task_finished`, `check_result`, `context_full`; all by default.
    #[serde(default = "default_notify")]
    pub notify: Vec<NotifyEvent>,
    /// A program run on each event of `notify`, whether or not the terminal has focus, with
    /// the event as a JSON object for its last argument (as Codex's `notify`):
    /// `["notify-send", "lilypad"]`. Empty: none.
    pub notify_command: Vec<String>,
    /// Draw on the terminal's alternate screen (the default); `false` (`--no-alt-screen`)
    /// draws on the main screen, whose last frame stays in the scrollback after exit.
    pub alternate_screen: bool,
    /// Take the mouse's reports (the wheel scrolls the view; the default); `false` leaves the
    /// mouse to the terminal, whose own selection and scrollback then work.
    pub mouse: bool,
}

/// How the interface takes the terminal (`[interface] alternate_screen`, `mouse`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Screen {
    pub alternate: bool,
    pub mouse: bool,
}

impl Default for Screen {
    fn default() -> Self {
        Self {
            alternate: true,
            mouse: true,
        }
    }
}

impl InterfaceSettings {
    /// How the interface takes the terminal.
    pub fn screen(&self) -> Screen {
        Screen {
            alternate: self.alternate_screen,
            mouse: self.mouse,
        }
    }
}

impl Default for InterfaceSettings {
    fn default() -> Self {
        Self {
            reasoning: ReasoningView::default(),
            keys: KeyScheme::default(),
            diff: DiffLayout::default(),
            highlight_limit: crate::diff::PLAIN_TEXT_LINES,
            notify_method: NotifyMethod::default(),
            notify: default_notify(),
            notify_command: Vec::new(),
            alternate_screen: true,
            mouse: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycles_through_all_three_and_parses_their_names() {
        let mut v = ReasoningView::default();
        let mut seen = vec![];
        for _ in 0..3 {
            seen.push(v.name());
            v = v.next();
        }
        assert_eq!(seen, ["collapsed", "full", "hidden"]);
        assert_eq!(v, ReasoningView::Collapsed);
        let s: InterfaceSettings = toml::from_str("reasoning = \"hidden\"").unwrap();
        assert_eq!(s.reasoning, ReasoningView::Hidden);
        assert!(toml::from_str::<InterfaceSettings>("reasoning = \"loud\"").is_err());
    }

    #[test]
    fn keys_and_notifications_parse() {
        let d = InterfaceSettings::default();
        assert_eq!(d.keys, KeyScheme::Chat);
        assert_eq!(d.notify.len(), 4, "every event by default");
        assert!(d.alternate_screen && d.mouse && d.notify_command.is_empty());
        let s: InterfaceSettings = toml::from_str(
            "keys = \"modal\"\nnotify_method = \"osc9\"\nnotify = [\"review_waiting\"]",
        )
        .unwrap();
        let all: InterfaceSettings = toml::from_str(
            "notify = [\"check_result\", \"context_full\"]\nnotify_command = [\"notify-send\"]\nmouse = false",
        )
        .unwrap();
        assert_eq!(
            all.notify,
            [NotifyEvent::CheckResult, NotifyEvent::ContextFull]
        );
        assert_eq!(all.notify_command, ["notify-send"]);
        assert_eq!(
            all.screen(),
            Screen {
                alternate: true,
                mouse: false
            }
        );
        assert_eq!(s.keys, KeyScheme::Modal);
        assert_eq!(s.notify_method, NotifyMethod::Osc9);
        assert_eq!(s.notify, [NotifyEvent::ReviewWaiting]);
        assert!(toml::from_str::<InterfaceSettings>("keys = \"vi\"").is_err());
    }

    #[test]
    fn the_diff_layout_parses_and_auto_splits_from_140_columns() {
        assert_eq!(InterfaceSettings::default().diff, DiffLayout::Auto);
        assert_eq!(InterfaceSettings::default().highlight_limit, 20_000);
        let s: InterfaceSettings = toml::from_str("highlight_limit = 500").unwrap();
        assert_eq!(s.highlight_limit, 500);
        assert!(toml::from_str::<InterfaceSettings>("highlight_limit = -1").is_err());
        let s: InterfaceSettings = toml::from_str("diff = \"split\"").unwrap();
        assert_eq!(s.diff, DiffLayout::Split);
        assert!(toml::from_str::<InterfaceSettings>("diff = \"sideways\"").is_err());
        assert!(!DiffLayout::Auto.is_split(139, false) && DiffLayout::Auto.is_split(140, false));
        assert!(DiffLayout::Split.is_split(80, false) && !DiffLayout::Unified.is_split(200, false));
        // A new or deleted file stays in one column under `auto`, unless split is chosen.
        assert!(DiffLayout::Auto.is_split(200, false) && !DiffLayout::Auto.is_split(200, true));
        assert!(DiffLayout::Split.is_split(200, true));
        assert_eq!(DiffLayout::Auto.toggled(200, true), DiffLayout::Split);
        assert_eq!(DiffLayout::Auto.toggled(200, false), DiffLayout::Unified);
        assert_eq!(DiffLayout::Auto.toggled(100, false), DiffLayout::Split);
    }
}
