//! Keys to actions (through the one key map) and what each action does in each context.

use super::review::ChangeVerdict;
use super::{AgentState, App, Effect, Mode, Overlay, PatchDecision, Review};
use crate::protocol::{Event, Op, ReviewDecision};
use crate::tui::keymap::{lookup, Action, Context};
use crate::tui::text_input::TextInput;
use crate::tui::transcript::{Level, Transcript};
use crate::tui::Direction;
use crossterm::event::KeyEvent;

impl App {
    /// The contexts keys are looked up in now, most specific first.
    pub fn contexts(&self) -> Vec<Context> {
        use Context as C;
        match &self.overlay {
            Some(Overlay::Help) => return vec![C::Help, C::Anywhere],
            Some(Overlay::ConfirmQuit(_)) => return vec![C::Confirm, C::Anywhere],
            Some(Overlay::ContextFull(_)) => return vec![C::ContextChoice, C::Anywhere],
            None => {}
        }
        match &self.mode {
            Mode::Review(Review::Change(c)) if c.feedback.is_some() => {
                vec![C::Feedback, C::Anywhere]
            }
            Mode::Review(Review::Command(c)) if c.feedback.is_some() => {
                vec![C::Feedback, C::Anywhere]
            }
            Mode::Review(Review::Change(_)) => vec![C::Diff, C::Browse, C::Anywhere],
            Mode::Review(Review::Command(_)) => vec![C::Command, C::Browse, C::Anywhere],
            Mode::Patch(p) if p.save_path.is_some() => vec![C::SavePath, C::Anywhere],
            Mode::Patch(_) => vec![C::Patch, C::Browse, C::Anywhere],
            Mode::Transcript if self.input_focus => vec![C::Input, C::Anywhere],
            Mode::Transcript if self.replay.is_some() => {
                vec![C::Replay, C::Transcript, C::Browse, C::Anywhere]
            }
            Mode::Transcript => vec![C::Transcript, C::Browse, C::Anywhere],
        }
    }

    /// A key press.
    pub fn on_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        let contexts = self.contexts();
        match lookup(&contexts, &key) {
            Some(action) => self.act(action, contexts[0]),
            None => {
                if contexts[0].is_text_entry() {
                    if let Some(field) = self.text_field() {
                        field.handle(&key);
                    }
                }
                Vec::new()
            }
        }
    }

    fn text_field(&mut self) -> Option<&mut TextInput> {
        match &mut self.mode {
            Mode::Review(r) => r.feedback_mut().as_mut(),
            Mode::Patch(p) => p.save_path.as_mut(),
            Mode::Transcript => Some(&mut self.input),
        }
    }

    fn act(&mut self, action: Action, ctx: Context) -> Vec<Effect> {
        use Action as A;
        match action {
            A::Help => {
                self.overlay = Some(Overlay::Help);
                Vec::new()
            }
            A::Quit => match self.quit_question() {
                Some(q) => {
                    self.overlay = Some(Overlay::ConfirmQuit(q));
                    Vec::new()
                }
                None => self.quit_now(),
            },
            A::Yes => {
                self.overlay = None;
                self.quit_now()
            }
            A::No => {
                self.overlay = None;
                Vec::new()
            }
            A::Cancel if ctx == Context::Help => {
                self.overlay = None;
                Vec::new()
            }
            A::ContinueFresh | A::DropOldResults | A::Cancel if ctx == Context::ContextChoice => {
                self.context_choice(action)
            }
            _ => match ctx {
                Context::Diff | Context::Command | Context::Feedback => self.act_review(action),
                Context::Patch | Context::SavePath => self.act_patch(action),
                _ => self.act_transcript(action),
            },
        }
    }

    fn act_review(&mut self, action: Action) -> Vec<Effect> {
        use Action as A;
        let Mode::Review(review) = &mut self.mode else {
            return Vec::new();
        };
        let id = review.request().id;
        match (action, review) {
            (A::Submit, r) => {
                let text = r
                    .feedback_mut()
                    .take()
                    .map(|mut f| f.take())
                    .unwrap_or_default();
                let feedback = if text.trim().is_empty() {
                    "The user rejected this without comment.".to_string()
                } else {
                    text
                };
                self.decide(id, ReviewDecision::Reject { feedback })
            }
            (A::Cancel, r) => {
                *r.feedback_mut() = None;
                Vec::new()
            }
            (A::Reject, r) => {
                *r.feedback_mut() = Some(TextInput::default());
                Vec::new()
            }
            (A::ApproveForSession, _) => self.decide(id, ReviewDecision::ApproveForSession),
            (A::Approve, Review::Command(_)) => self.decide(id, ReviewDecision::Approve),
            (A::Approve, Review::Change(c)) => match c.approve() {
                ChangeVerdict::Send(d) => self.decide(id, d),
                ChangeVerdict::AskWhy => {
                    c.feedback = Some(TextInput::default());
                    Vec::new()
                }
            },
            (A::ToggleHunk, Review::Change(c)) => {
                c.toggle_focused();
                Vec::new()
            }
            (A::NextHunk | A::PrevHunk, Review::Change(c)) => {
                c.move_focus(toward(action, A::NextHunk));
                Vec::new()
            }
            (A::ScrollUp | A::ScrollDown, Review::Change(c)) => {
                c.scroll_by(if action == A::ScrollUp { -1 } else { 1 });
                Vec::new()
            }
            (A::PageUp | A::PageDown, Review::Change(c)) => {
                let p = c.page.get().max(1) as isize;
                c.scroll_by(if action == A::PageUp { -p } else { p });
                Vec::new()
            }
            (A::OpenEditor, Review::Change(c)) => vec![Effect::OpenEditor {
                id,
                path: c.path.clone(),
                text: c.after.clone(),
            }],
            _ => Vec::new(),
        }
    }

    fn act_patch(&mut self, action: Action) -> Vec<Effect> {
        use Action as A;
        let Mode::Patch(p) = &mut self.mode else {
            return Vec::new();
        };
        match action {
            A::ApplyPatch => vec![Effect::ApplyPatch(p.raw.clone())],
            A::SavePatch => {
                let default = match &self.options.repo {
                    Some(r) => r.join(format!(
                        "lilypad-{}.patch",
                        short_id(&self.status.session_id)
                    )),
                    None => format!("lilypad-{}.patch", short_id(&self.status.session_id)).into(),
                };
                p.save_path = Some(TextInput::with_text(&default.display().to_string()));
                Vec::new()
            }
            A::Submit => {
                let path = p.save_path.take().map(|mut t| t.take()).unwrap_or_default();
                if path.trim().is_empty() {
                    return Vec::new();
                }
                vec![Effect::SavePatch {
                    path: path.trim().into(),
                    bytes: p.raw.clone(),
                }]
            }
            A::Cancel if p.save_path.is_some() => {
                p.save_path = None;
                Vec::new()
            }
            A::Cancel => {
                self.mode = Mode::Transcript;
                self.input_focus = self.status.state.accepts_message();
                Vec::new()
            }
            A::DiscardPatch => {
                self.on_patch_done(Ok(PatchDecision::Discarded));
                Vec::new()
            }
            A::NextHunk | A::PrevHunk => {
                p.move_focus(toward(action, A::NextHunk));
                Vec::new()
            }
            A::ScrollUp | A::ScrollDown => {
                p.scroll_by(if action == A::ScrollUp { -1 } else { 1 });
                Vec::new()
            }
            A::PageUp | A::PageDown => {
                let n = p.page.get().max(1) as isize;
                p.scroll_by(if action == A::PageUp { -n } else { n });
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    fn act_transcript(&mut self, action: Action) -> Vec<Effect> {
        use Action as A;
        match action {
            A::Submit => {
                let text = self.input.text().trim().to_string();
                if text.is_empty() {
                    return Vec::new();
                }
                let state = self.status.state;
                if self.context_full && state.accepts_message() {
                    // Sent only once the person has chosen how to make room.
                    self.input.take();
                    self.input_focus = false;
                    self.overlay = Some(Overlay::ContextFull(text));
                    return Vec::new();
                }
                if !state.accepts_message() && !state.is_busy() {
                    self.transcript.notice(
                        Level::Warning,
                        "the session is not running: the message cannot be sent",
                    );
                    return Vec::new();
                }
                // While the agent works or is paused, the agent queues the message for the
                // next turn boundary (and says so with `MessageQueued`).
                self.input.take();
                self.input_focus = false;
                vec![Effect::Send(Op::UserMessage { text })]
            }
            A::Cancel => {
                self.input_focus = false;
                Vec::new()
            }
            A::FocusInput => {
                if self.replay.is_some() {
                    return Vec::new();
                }
                self.input_focus = true;
                Vec::new()
            }
            A::Interrupt => {
                if self.status.state.is_busy() && self.replay.is_none() {
                    self.transcript.notice(Level::Warning, "interrupting…");
                    return vec![Effect::Send(Op::Interrupt)];
                }
                Vec::new()
            }
            A::ToggleStepMode if self.replay.is_none() => {
                self.status.step_mode = !self.status.step_mode;
                vec![Effect::Send(Op::SetStepMode {
                    on: self.status.step_mode,
                })]
            }
            A::StepOnce if self.status.state == AgentState::Paused => {
                self.status.state = AgentState::Generating;
                vec![Effect::Send(Op::Step)]
            }
            A::ShowPatch => {
                if self.options.has_patch && self.replay.is_none() {
                    return vec![Effect::ExportPatch];
                }
                Vec::new()
            }
            A::ScrollUp => self.scroll(-1),
            A::ScrollDown => self.scroll(1),
            A::PageUp => {
                self.transcript.page(Direction::Back);
                Vec::new()
            }
            A::PageDown => {
                self.transcript.page(Direction::Forward);
                Vec::new()
            }
            A::Top => {
                self.transcript.to_top();
                Vec::new()
            }
            A::Bottom => {
                self.transcript.to_bottom();
                Vec::new()
            }
            A::NextItem | A::PrevItem => {
                let ctx = self.render_ctx_owned();
                self.transcript
                    .select(toward(action, A::NextItem), &ctx.as_ctx());
                Vec::new()
            }
            A::ToggleItem => {
                let ctx = self.render_ctx_owned();
                self.transcript.toggle_selected(&ctx.as_ctx());
                Vec::new()
            }
            A::ToggleReasoning => {
                self.show_reasoning = !self.show_reasoning;
                self.bump_epoch();
                Vec::new()
            }
            A::ReplayNext => self.replay_step(Direction::Forward),
            A::ReplayPrev => self.replay_step(Direction::Back),
            A::ReplayEnd => {
                let mut fx = Vec::new();
                while let Some(more) = self.replay_advance() {
                    fx.extend(more);
                }
                fx
            }
            _ => Vec::new(),
        }
    }

    /// The person's answer to the full-context question.
    fn context_choice(&mut self, action: Action) -> Vec<Effect> {
        let Some(Overlay::ContextFull(text)) = self.overlay.take() else {
            return Vec::new();
        };
        let op = match action {
            Action::ContinueFresh => Op::ContinueFresh { text },
            Action::DropOldResults => Op::DropOldResults { text: Some(text) },
            _ => {
                // Back to the message line with the text as it was.
                self.input = TextInput::with_text(&text);
                self.input_focus = true;
                return Vec::new();
            }
        };
        self.status.state = AgentState::Generating;
        vec![Effect::Send(op)]
    }

    fn scroll(&mut self, d: isize) -> Vec<Effect> {
        self.transcript.scroll_by(d);
        Vec::new()
    }

    fn render_ctx_owned(&self) -> OwnedCtx {
        OwnedCtx {
            theme: self.theme.clone(),
            hl: self.hl.clone(),
            show_reasoning: self.show_reasoning,
            epoch: self.epoch,
        }
    }

    /// Start a replay of recorded events (nothing is shown until the first step).
    pub fn start_replay(&mut self, events: Vec<Event>) -> Vec<Effect> {
        self.replay = Some((events, 0));
        self.status.state = AgentState::Replay;
        self.replay_step(Direction::Forward)
    }

    /// Apply events up to and including the next turn end; `None` at the end.
    fn replay_advance(&mut self) -> Option<Vec<Effect>> {
        let (events, pos) = self.replay.as_mut()?;
        if *pos >= events.len() {
            return None;
        }
        let mut batch = Vec::new();
        while *pos < events.len() {
            let ev = events[*pos].clone();
            *pos += 1;
            let stop = matches!(ev, Event::TurnFinished { .. });
            batch.push(ev);
            if stop {
                break;
            }
        }
        let mut fx = Vec::new();
        for ev in batch {
            fx.extend(self.on_event(ev));
        }
        Some(fx)
    }

    fn replay_step(&mut self, to: Direction) -> Vec<Effect> {
        if to == Direction::Forward {
            return self.replay_advance().unwrap_or_default();
        }
        // Back: rebuild from the start up to the turn before this one.
        let Some((events, pos)) = self.replay.take() else {
            return Vec::new();
        };
        // The last turn end strictly before the current position (0: the very start).
        let target = events[..pos.min(events.len())]
            .iter()
            .enumerate()
            .rev()
            .filter(|(i, e)| matches!(e, Event::TurnFinished { .. }) && i + 1 < pos)
            .map(|(i, _)| i + 1)
            .next()
            .unwrap_or(0);
        self.transcript = Transcript::new();
        let elapsed = self.status.elapsed_override;
        self.status = Default::default();
        self.status.state = AgentState::Replay;
        self.status.elapsed_override = elapsed;
        self.replay = Some((events.clone(), target));
        let mut fx = Vec::new();
        for ev in events.into_iter().take(target) {
            fx.extend(self.on_event(ev));
        }
        fx
    }
}

/// The direction of one action of a next/previous pair: forward when it is `next`.
fn toward(action: Action, next: Action) -> Direction {
    if action == next {
        Direction::Forward
    } else {
        Direction::Back
    }
}

fn short_id(id: &str) -> String {
    if id.is_empty() {
        "session".into()
    } else {
        id.chars().take(24).collect()
    }
}

/// A render context that owns its parts, for transcript calls made while `self` is borrowed.
struct OwnedCtx {
    theme: crate::tui::theme::Theme,
    hl: crate::diff::Highlighter,
    show_reasoning: bool,
    epoch: u64,
}

impl OwnedCtx {
    fn as_ctx(&self) -> crate::tui::transcript::RenderCtx<'_> {
        crate::tui::transcript::RenderCtx {
            theme: &self.theme,
            hl: &self.hl,
            show_reasoning: self.show_reasoning,
            epoch: self.epoch,
        }
    }
}
