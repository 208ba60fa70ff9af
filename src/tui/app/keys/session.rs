//! Keys that act on the session itself, whatever is in front ([`App::act_anywhere`]): the
//! help, quitting, suspending, the approval policy (Shift-Tab), exporting, the person's own
//! commands (`!cmd`, the check); and what the questions over everything decide (the full
//! context's, rewinding to a turn), whose keys are `overlays`'.

use super::super::pr_keys::Unsent;
use super::super::{AgentState, App, Effect, Overlay};
use crate::protocol::Op;
use crate::tui::keymap::Action;
use crate::tui::text_input::TextInput;
use crate::tui::transcript::Level;

impl App {
    /// The keys that work whatever is in front: the help, quitting (Ctrl-C interrupts
    /// first), suspending, and in a live session the approval policy, exporting the session
    /// and the check. `None`: not one of them, the mode in front takes the action.
    pub(super) fn act_anywhere(&mut self, action: Action) -> Option<Vec<Effect>> {
        use Action as A;
        let live = self.replay.is_none();
        Some(match action {
            A::Help => {
                self.overlay = Some(Overlay::Help);
                self.help_scroll = 0;
                Vec::new()
            }
            A::InterruptOrQuit => self.interrupt_or_quit(),
            A::Suspend => vec![Effect::Suspend],
            // Anywhere, a review included: a request already asked keeps its question.
            A::CycleApprovals if live => self.cycle_approvals(),
            A::ExportSession if live => vec![Effect::ExportSession],
            A::RunCheck if live => match self.check.clone() {
                Some(command) => self.start_shell(command),
                None => {
                    self.transcript.notice(
                        Level::Warning,
                        "no check command: set `check` under [sandbox] in the config file or the repository's .lilypad/config.toml",
                    );
                    Vec::new()
                }
            },
            A::CycleApprovals | A::ExportSession | A::RunCheck => Vec::new(),
            A::Quit => match self.warn_unsent(A::Quit) {
                Unsent::Warned => Vec::new(),
                Unsent::Again => self.quit_now(),
                Unsent::None => self.ask_to_quit(),
            },
            _ => return None,
        })
    }

    /// Shift-Tab, `/approvals`: ask the agent for the next preset policy. The status line
    /// shows it at once, so that presses in quick succession step on from it; the agent's
    /// `ApprovalPolicyChanged` confirms it.
    pub(super) fn cycle_approvals(&mut self) -> Vec<Effect> {
        let state = self.status.state;
        let Some(current) = self.status.approval_policy else {
            self.transcript.notice(
                Level::Info,
                "the approval policy can be changed once the session has started",
            );
            return Vec::new();
        };
        if state == AgentState::Ended {
            return Vec::new();
        }
        let policy = current.next_preset();
        self.status.approval_policy = Some(policy);
        vec![Effect::Send(Op::SetApprovalPolicy { policy })]
    }

    /// `!cmd` sent: the command runs in the sandbox for the person (once the agent is
    /// between tasks), and its output goes with the next message.
    pub(super) fn run_shell(&mut self, text: &str, command: String) -> Vec<Effect> {
        if !self.shell_can_run() {
            return Vec::new();
        }
        self.take_message(text);
        self.start_shell(command)
    }

    /// Whether the person's command can run now (else a notice says why not).
    pub(super) fn shell_can_run(&mut self) -> bool {
        let state = self.status.state;
        if state == AgentState::Starting || (!state.accepts_message() && !state.is_busy()) {
            self.transcript.notice(
                Level::Warning,
                "the session is not running: the command cannot run",
            );
            return false;
        }
        true
    }

    /// Run `command` in the sandbox as the person's (see [`Self::run_shell`]).
    pub(super) fn start_shell(&mut self, command: String) -> Vec<Effect> {
        if !self.shell_can_run() {
            return Vec::new();
        }
        let state = self.status.state;
        let when = if state.is_busy() {
            "runs in the sandbox once the agent has finished"
        } else {
            self.shell_before = Some(state);
            self.status.state = AgentState::RunningTool;
            "running in the sandbox… Esc interrupts"
        };
        self.transcript
            .notice(Level::Info, format!("$ {command}  ({when})"));
        vec![Effect::Send(Op::Shell { command })]
    }

    /// Ctrl-C: while the agent works, interrupt it and ask whether to quit as well (a second
    /// Ctrl-C answers yes); otherwise quit, asking first when work would be lost.
    pub(super) fn interrupt_or_quit(&mut self) -> Vec<Effect> {
        if self.status.state.is_busy() && self.replay.is_none() {
            self.transcript
                .notice(Level::Warning, "interrupting… (Ctrl-C again quits)");
            self.overlay = Some(Overlay::ConfirmQuit(
                "Interrupted. Quit and end the session as well?".into(),
            ));
            return vec![Effect::Send(Op::Interrupt)];
        }
        match self.warn_unsent(Action::InterruptOrQuit) {
            Unsent::Warned => Vec::new(),
            Unsent::Again => self.quit_now(),
            Unsent::None => self.ask_to_quit(),
        }
    }

    /// Quit, asking first when work would be lost.
    pub(super) fn ask_to_quit(&mut self) -> Vec<Effect> {
        match self.quit_question() {
            Some(q) => {
                self.overlay = Some(Overlay::ConfirmQuit(q));
                Vec::new()
            }
            None => self.quit_now(),
        }
    }

    /// The person's answer to the full-context question.
    pub(super) fn context_choice(&mut self, action: Action) -> Vec<Effect> {
        let Some(Overlay::ContextFull(text)) = self.overlay.take() else {
            return Vec::new();
        };
        let op = match action {
            Action::ContinueFresh => Op::ContinueFresh { text },
            Action::DropOldResults => Op::DropOldResults { text: Some(text) },
            _ => {
                // Back to the message line with the text as it was.
                self.composer.input = TextInput::with_text(&text);
                self.input_focus = true;
                return Vec::new();
            }
        };
        self.status.state = AgentState::Generating;
        vec![Effect::Send(op)]
    }

    /// `R`: ask which turn to go back to (the one before the last, to begin with).
    pub(super) fn open_rewind(&mut self) -> Vec<Effect> {
        if self.replay.is_some() || self.status.state == AgentState::Ended {
            return Vec::new();
        }
        let mut turns = self.transcript.turns();
        if !turns.contains(&0) {
            turns.insert(0, 0);
        }
        if turns.len() < 2 {
            self.transcript
                .notice(Level::Info, "no earlier turn to rewind to yet");
            return Vec::new();
        }
        let turn = turns[turns.len() - 2];
        self.input_focus = false;
        self.overlay = Some(Overlay::Rewind { turn, turns });
        Vec::new()
    }

    /// The person's answer in the rewind question: another turn, go, or not.
    pub(super) fn rewind_choice(&mut self, action: Action) -> Vec<Effect> {
        let Some(Overlay::Rewind { turn, turns }) = &mut self.overlay else {
            return Vec::new();
        };
        let at = turns.iter().position(|t| t == turn).unwrap_or(0);
        match action {
            Action::EarlierTurn => *turn = turns[at.saturating_sub(1)],
            Action::LaterTurn => *turn = turns[(at + 1).min(turns.len() - 1)],
            Action::Submit => {
                let turn = *turn;
                self.overlay = None;
                if self.status.state.is_busy() {
                    self.transcript
                        .notice(Level::Warning, "interrupting, then rewinding…");
                }
                return vec![Effect::Send(Op::Rewind { turn })];
            }
            _ => self.overlay = None,
        }
        Vec::new()
    }
}
