//! The event loop: agent events, keys, start-up progress and finished background jobs in;
//! effects performed; frames drawn at most [`super::FRAMES_PER_SECOND`] times a second and
//! only when something changed. Agent events are drained in batches so a fast stream costs one
//! frame, not one frame per piece.
//!
//! With several attempts (`--attempts N`) each attempt is a slot with its own [`App`] and
//! link; the attempts board ([`super::attempts`]) is in front until one is opened, and
//! `b` (or `q`) in an attempt brings the board back.

mod attention;

use super::actions::{self, ActionError, KeyReader};
use super::app::{App, AppOptions, Effect, PatchDecision};
use super::attempts::{Board, BoardEffect};
use super::history::{History, HistoryFile};
use super::keymap::{self, Action, Context};
use super::notify::TitleState;
use super::settings::{NotifyEvent, NotifyMethod};
use super::terminal::TerminalGuard;
use super::{SessionLink, SessionOutcome, Startup, TuiError, TuiOptions, FRAMES_PER_SECOND};
use crate::diff::{patch, FileDiff};
use crate::protocol::{Event, Op, RequestId};
use crossterm::event::{Event as TermEvent, KeyEventKind, MouseEventKind};
use std::time::Duration;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::time::{sleep_until, Instant};

/// Most agent events applied before a frame may be drawn.
const EVENT_BATCH: usize = 4096;

/// Results of background jobs, with the slot (attempt) they belong to.
enum Job {
    Diff(usize, RequestId, u32, FileDiff),
    Patch(usize, Result<(Vec<u8>, Vec<FileDiff>), ActionError>),
    PatchDone(usize, Result<PatchDecision, ActionError>),
    /// A patch the attempts board applied (what it was, and how that went).
    BoardApplied(String, Result<PatchDecision, ActionError>),
    /// The repository's files, for the file picker.
    Paths(usize, Result<Vec<String>, ActionError>),
    /// `/export`: where the session's Markdown went.
    Exported(usize, Result<std::path::PathBuf, ActionError>),
}

/// One session in the interface: the only one, or one of several attempts.
struct Slot {
    app: App,
    link: Option<SessionLink>,
    /// The agent has ended (its event stream closed, or `SessionEnded` came).
    ended: bool,
}

struct Loop {
    slots: Vec<Slot>,
    /// The slot whose App is in front (when the board is not).
    focus: usize,
    /// Several attempts: their board, and whether it is in front.
    board: Option<Board>,
    board_front: bool,
    guard: TerminalGuard,
    keys: KeyReader,
    /// What the person sent before the session was ready, in order.
    held: Vec<Op>,
    /// Every slot's agent events, tagged with the slot (`None`: that agent is gone).
    events_tx: UnboundedSender<(usize, Option<Event>)>,
    events_rx: UnboundedReceiver<(usize, Option<Event>)>,
    jobs_tx: UnboundedSender<Job>,
    jobs_rx: UnboundedReceiver<Job>,
    task: Option<String>,
    step_mode: bool,
    /// The board asked to end everything.
    quit_all: bool,
    /// Where sent messages are kept for the repository (`None`: not kept).
    history: Option<HistoryFile>,
    /// Whether the terminal has focus (as its focus reports say; assumed at the start).
    focused: bool,
    /// How, and for which events, to get the person's attention while out of focus.
    notify: (NotifyMethod, Vec<NotifyEvent>),
    /// Run on each event of `notify`, focused or not (`[interface] notify_command`).
    notify_command: Vec<String>,
    /// The window title last set.
    title: Option<TitleState>,
}

/// Run a live session: start-up messages arrive on `startup` (progress, then the link).
pub async fn run(
    options: TuiOptions,
    mut startup: UnboundedReceiver<Startup>,
) -> Result<SessionOutcome, TuiError> {
    let mut app = App::new(AppOptions {
        theme: options.theme.clone(),
        repo: options.repo.clone(),
        has_patch: false,
        replay: false,
    });
    app.reasoning = options.reasoning;
    app.keys = options.keys;
    app.diff_layout = options.diff;
    app.hl = app.hl.clone().with_limit(options.highlight_limit);
    let history = match (&options.history, &options.repo) {
        (Some(path), Some(repo)) => Some(HistoryFile::new(path.clone(), repo)),
        (Some(path), None) => std::env::current_dir()
            .ok()
            .map(|cwd| HistoryFile::new(path.clone(), &cwd)),
        (None, _) => None,
    };
    if let Some(h) = &history {
        app.composer.sent = History::new(h.load());
    }
    let prompts = super::prompts::load(&options.prompt_dirs);
    app.prompts = prompts.prompts;
    app.check = options.check.clone();
    let mut lp = Loop::new(app, options.task.clone(), options.step_mode, options.screen)?;
    lp.history = history;
    lp.notify = options.notify.clone();
    lp.notify_command = options.notify_command.clone();
    for n in &options.notices {
        lp.app_mut()
            .transcript
            .notice(super::transcript::Level::Warning, n.clone());
    }
    for problem in prompts.problems {
        lp.app_mut().transcript.notice(
            super::transcript::Level::Warning,
            format!("{problem}; the palette leaves it out"),
        );
    }
    lp.app_mut().on_progress("starting…".into(), None);
    lp.run(Some(&mut startup)).await?;
    Ok(lp.outcome())
}

/// Step through recorded events.
pub async fn replay(theme: super::Theme, events: Vec<Event>) -> Result<(), TuiError> {
    let app = App::new(AppOptions {
        theme,
        repo: None,
        has_patch: false,
        replay: true,
    });
    let mut lp = Loop::new(app, None, false, super::Screen::default())?;
    let fx = lp.app_mut().start_replay(events);
    lp.perform(0, fx);
    lp.run(None).await
}

impl Loop {
    fn new(
        app: App,
        task: Option<String>,
        step_mode: bool,
        screen: super::Screen,
    ) -> Result<Self, TuiError> {
        let guard = TerminalGuard::enter(screen)?;
        // Syntax rules load lazily; do it now, off the draw path, while the model loads.
        std::thread::spawn(crate::diff::highlight::prewarm);
        let (jobs_tx, jobs_rx) = unbounded_channel();
        let (events_tx, events_rx) = unbounded_channel();
        Ok(Self {
            slots: vec![Slot {
                app,
                link: None,
                ended: false,
            }],
            focus: 0,
            board: None,
            board_front: false,
            guard,
            keys: KeyReader::start(),
            held: Vec::new(),
            events_tx,
            events_rx,
            jobs_tx,
            jobs_rx,
            task,
            step_mode,
            quit_all: false,
            history: None,
            focused: true,
            notify: (NotifyMethod::Off, Vec::new()),
            notify_command: Vec::new(),
            title: None,
        })
    }

    /// The App in front (with the board in front: the selected attempt's).
    fn app_mut(&mut self) -> &mut App {
        let i = self.focus.min(self.slots.len() - 1);
        &mut self.slots[i].app
    }

    /// How the session (or the attempts) ended, for the summary.
    fn outcome(&self) -> SessionOutcome {
        let ids: Vec<&str> = self
            .slots
            .iter()
            .map(|s| s.app.status.session_id.as_str())
            .filter(|id| !id.is_empty())
            .collect();
        let patch = match &self.board {
            None => self.slots[0].app.patch.clone(),
            Some(b) => match (
                &b.applied,
                self.slots.iter().find(|s| {
                    matches!(
                        s.app.patch,
                        PatchDecision::Applied { .. } | PatchDecision::Saved { .. }
                    )
                }),
            ) {
                (_, Some(s)) => s.app.patch.clone(),
                (Some(_), None) => match &self.slots[0].app.options.repo {
                    Some(repo) => PatchDecision::Applied { repo: repo.clone() },
                    None => PatchDecision::Undecided,
                },
                (None, None)
                    if !b.cards.is_empty()
                        && b.cards
                            .iter()
                            .all(|c| c.patch.as_ref().is_some_and(|(raw, _)| raw.is_empty())) =>
                {
                    PatchDecision::Empty
                }
                (None, None) => PatchDecision::Undecided,
            },
        };
        SessionOutcome {
            session_id: ids.join(", "),
            patch,
        }
    }

    /// Take `link`'s events into the shared stream, tagged with `slot`.
    fn attach(&mut self, slot: usize, mut link: SessionLink) {
        let (_closed, empty) = unbounded_channel();
        let mut events = std::mem::replace(&mut link.events, empty);
        let tx = self.events_tx.clone();
        tokio::spawn(async move {
            while let Some(ev) = events.recv().await {
                if tx.send((slot, Some(ev))).is_err() {
                    return;
                }
            }
            let _ = tx.send((slot, None));
        });
        self.slots[slot].link = Some(link);
    }

    fn busy(&self) -> bool {
        self.slots
            .iter()
            .any(|s| !s.ended && s.app.status.state.is_busy())
    }

    async fn run(
        &mut self,
        mut startup: Option<&mut UnboundedReceiver<Startup>>,
    ) -> Result<(), TuiError> {
        let frame = Duration::from_millis(1000 / FRAMES_PER_SECOND);
        let mut next_frame = Instant::now();
        let mut dirty = true;
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            let startup_open = startup.is_some();
            tokio::select! {
                msg = async { match startup.as_mut() { Some(s) => s.recv().await, None => None } }, if startup_open => {
                    match msg {
                        Some(m) => self.on_startup(m),
                        None => startup = None,
                    }
                    dirty = true;
                }
                Some((slot, ev)) = self.events_rx.recv() => {
                    match ev {
                        Some(ev) => {
                            self.on_agent_event(slot, ev);
                            // Drain what else is queued: one frame for the whole batch.
                            for _ in 0..EVENT_BATCH {
                                match self.events_rx.try_recv() {
                                    Ok((slot, Some(ev))) => self.on_agent_event(slot, ev),
                                    Ok((slot, None)) => self.on_agent_gone(slot),
                                    Err(_) => break,
                                }
                            }
                        }
                        None => self.on_agent_gone(slot),
                    }
                    dirty = true;
                }
                key = self.keys.rx.recv() => {
                    match key {
                        Some(TermEvent::Key(k)) if k.kind != KeyEventKind::Release => self.on_key(k),
                        Some(TermEvent::Paste(text)) if !self.board_front => {
                            let slot = self.focus;
                            self.slots[slot].app.on_paste(&text);
                        }
                        Some(TermEvent::Mouse(m)) if !self.board_front => {
                            let to = match m.kind {
                                MouseEventKind::ScrollUp => Some(super::Direction::Back),
                                MouseEventKind::ScrollDown => Some(super::Direction::Forward),
                                _ => None,
                            };
                            if let Some(to) = to {
                                let slot = self.focus;
                                let fx = self.slots[slot].app.on_wheel_at(to, m.row);
                                self.perform(slot, fx);
                            }
                        }
                        Some(TermEvent::FocusLost) => self.focused = false,
                        Some(TermEvent::FocusGained) => self.focused = true,
                        Some(_) => {}
                        None => return Ok(()),
                    }
                    dirty = true;
                }
                Some(job) = self.jobs_rx.recv() => {
                    self.on_job(job);
                    dirty = true;
                }
                _ = tick.tick() => dirty = true,
                _ = sleep_until(next_frame), if dirty => {
                    self.set_title();
                    let (slots, board) = (&self.slots, &self.board);
                    let (front, focus) = (self.board_front, self.focus);
                    self.guard.term.draw(|f| match board {
                        Some(b) if front => {
                            let apps: Vec<&App> = slots.iter().map(|s| &s.app).collect();
                            super::attempts::view::draw(f, b, &apps, &slots[0].app.theme)
                        }
                        _ => super::views::draw(f, &slots[focus].app),
                    })?;
                    dirty = false;
                    next_frame = Instant::now() + frame;
                }
            }
            if self.quit_all || self.slots.iter().any(|s| s.app.quitting) {
                self.finish().await;
                return Ok(());
            }
        }
    }

    fn on_startup(&mut self, msg: Startup) {
        match msg {
            Startup::Progress { label, fraction } => self.app_mut().on_progress(label, fraction),
            Startup::Failed(e) => self.app_mut().on_startup_failed(e.as_ref()),
            Startup::Notice(m) => self
                .app_mut()
                .transcript
                .notice(super::transcript::Level::Warning, m),
            Startup::Ready(mut link) => {
                let app = &mut self.slots[0].app;
                app.options.has_patch = link.patch.is_some();
                let history = std::mem::take(&mut link.history);
                let resumed = !history.is_empty();
                if resumed {
                    let fx = self.slots[0].app.load_history(history);
                    self.perform(0, fx);
                }
                if self.step_mode {
                    self.slots[0].app.status.step_mode = true;
                    let _ = link.ops.send(Op::SetStepMode { on: true });
                }
                let held = std::mem::take(&mut self.held);
                if let Some(task) = self.task.take() {
                    self.slots[0].app.composer.sent.push(&task);
                    self.remember(&task);
                    let _ = link.ops.send(Op::UserMessage { text: task });
                } else if held.is_empty()
                    && (!resumed || self.slots[0].app.status.state.accepts_message())
                {
                    self.slots[0].app.input_focus = true;
                }
                for op in held {
                    let _ = link.ops.send(op);
                }
                self.slots[0].app.progress = None;
                self.attach(0, link);
            }
            Startup::Attempts(attempts) => {
                // The attempts were started with the task already; the first slot's App
                // (which showed the start-up) becomes attempt 1. What was typed meanwhile
                // follows the task in every attempt.
                self.task = None;
                let held = std::mem::take(&mut self.held);
                let n = attempts.len();
                let seeds: Vec<u32> = attempts.iter().map(|a| a.seed).collect();
                let options = self.slots[0].app.options.clone();
                let (reasoning, keys) = (self.slots[0].app.reasoning, self.slots[0].app.keys);
                for (i, a) in attempts.into_iter().enumerate() {
                    if i >= self.slots.len() {
                        let mut app = App::new(options.clone());
                        app.reasoning = reasoning;
                        app.keys = keys;
                        self.slots.push(Slot {
                            app,
                            link: None,
                            ended: false,
                        });
                    }
                    let app = &mut self.slots[i].app;
                    app.options.has_patch = a.link.patch.is_some();
                    app.progress = None;
                    app.attempt_label = Some(format!("attempt {} of {n} · b: all", i + 1));
                    if self.step_mode {
                        app.status.step_mode = true;
                        let _ = a.link.ops.send(Op::SetStepMode { on: true });
                    }
                    for op in &held {
                        let _ = a.link.ops.send(op.clone());
                    }
                    self.attach(i, a.link);
                }
                self.board = Some(Board::new(&seeds));
                self.board_front = true;
            }
        }
    }

    fn on_agent_event(&mut self, slot: usize, ev: Event) {
        if let Some(b) = self.board.as_mut() {
            b.on_event(slot, &ev);
        }
        if matches!(ev, Event::SessionEnded) {
            self.slots[slot].ended = true;
        }
        let attention = match &ev {
            Event::ApprovalRequested(_) => Some((
                NotifyEvent::ReviewWaiting,
                "lilypad: a change or a command waits for review",
            )),
            Event::TaskFinished {
                reason: crate::protocol::FinishReason::ContextLimit,
                ..
            } if self.notify.1.contains(&NotifyEvent::ContextFull) => Some((
                NotifyEvent::ContextFull,
                "lilypad: the context is full; the task stopped",
            )),
            Event::TaskFinished { .. } => {
                Some((NotifyEvent::TaskFinished, "lilypad: the task finished"))
            }
            Event::CheckFinished { passed: true, .. } => {
                Some((NotifyEvent::CheckResult, "lilypad: the check passed"))
            }
            Event::CheckFinished { passed: false, .. } => {
                Some((NotifyEvent::CheckResult, "lilypad: the check failed"))
            }
            _ => None,
        };
        let fx = self.slots[slot].app.on_event(ev);
        self.perform(slot, fx);
        if let Some((kind, message)) = attention {
            self.run_notify_command(slot, kind, message);
            self.call_attention(kind, message);
        }
    }

    /// Slot `slot`'s agent is gone; its screen stays until the person quits.
    fn on_agent_gone(&mut self, slot: usize) {
        let s = &mut self.slots[slot];
        s.ended = true;
        s.link = None;
        s.app.status.state = super::app::AgentState::Ended;
    }

    fn on_key(&mut self, k: crossterm::event::KeyEvent) {
        if self.board_front {
            let busy = self.busy();
            let Some(board) = self.board.as_mut() else {
                return;
            };
            let fx = board.on_key(k, busy);
            self.perform_board(fx);
            return;
        }
        let slot = self.focus;
        let app = &self.slots[slot].app;
        let typing = app.contexts().first().is_some_and(|c| c.is_text_entry());
        if self.board.is_some()
            && !typing
            && app.overlay.is_none()
            && keymap::lookup(&[Context::Attempt], &k) == Some(Action::BackToBoard)
        {
            self.board_front = true;
            if let Some(b) = self.board.as_mut() {
                b.selected = slot;
            }
            return;
        }
        let fx = self.slots[slot].app.on_key(k);
        self.perform(slot, fx);
    }

    fn on_job(&mut self, job: Job) {
        match job {
            Job::Diff(slot, id, revision, d) => self.slots[slot].app.on_diff_of(id, revision, d),
            Job::Patch(slot, r) => {
                if let (Some(b), Ok((raw, files))) = (self.board.as_mut(), &r) {
                    b.on_patch(slot, raw.clone(), files.clone());
                }
                self.slots[slot].app.on_patch(r);
            }
            Job::PatchDone(slot, r) => {
                if let (Some(b), Ok(PatchDecision::Applied { .. })) = (self.board.as_mut(), &r) {
                    b.on_applied(format!("attempt {}", slot + 1), Ok(()));
                }
                self.slots[slot].app.on_patch_done(r);
            }
            Job::Paths(slot, r) => self.slots[slot].app.on_paths(r),
            Job::Exported(slot, r) => self.slots[slot].app.on_exported(r),
            Job::BoardApplied(what, r) => {
                if let Some(b) = self.board.as_mut() {
                    b.on_applied(what, r.map(|_| ()));
                }
            }
        }
    }

    fn perform_board(&mut self, effects: Vec<BoardEffect>) {
        for fx in effects {
            match fx {
                BoardEffect::Open(i) if i < self.slots.len() => {
                    self.focus = i;
                    self.board_front = false;
                }
                BoardEffect::Open(_) => {}
                BoardEffect::Apply(bytes) => {
                    let what = self
                        .board
                        .as_ref()
                        .map(|b| b.describe_apply())
                        .unwrap_or_default();
                    let tx = self.jobs_tx.clone();
                    let repo = self.slots[0].app.options.repo.clone();
                    tokio::task::spawn_blocking(move || {
                        let r = match repo {
                            Some(repo) => actions::apply_patch(&repo, &bytes),
                            None => Err(ActionError::NoRepository),
                        };
                        let _ = tx.send(Job::BoardApplied(what, r));
                    });
                }
                BoardEffect::Quit => {
                    for s in &self.slots {
                        if let Some(b) = &s.link {
                            let _ = b.ops.send(Op::Shutdown);
                        }
                    }
                    self.quit_all = true;
                }
            }
        }
    }

    /// Keep a message sent in the repository's history file (off the draw path).
    fn remember(&self, text: &str) {
        let Some(file) = self.history.clone() else {
            return;
        };
        let text = text.to_string();
        tokio::task::spawn_blocking(move || {
            if let Err(e) = file.append(&text) {
                tracing::warn!("could not keep the message in {}: {e}", file.path.display());
            }
        });
    }

    fn perform(&mut self, slot: usize, effects: Vec<Effect>) {
        for fx in effects {
            if let Effect::Send(
                Op::UserMessage { text }
                | Op::ContinueFresh { text }
                | Op::DropOldResults { text: Some(text) },
            ) = &fx
            {
                self.remember(text);
            }
            match fx {
                // A message typed while the session starts; other ops then have nothing to act on.
                Effect::Send(op @ Op::UserMessage { .. })
                    if self.slots[slot].link.is_none() && !self.slots[slot].ended =>
                {
                    self.held.push(op);
                }
                Effect::Send(op) => {
                    let s = &self.slots[slot];
                    let unsent = match (&s.link, s.ended) {
                        (_, true) => Some(op),
                        (Some(b), false) => b.ops.send(op).err().map(|e| e.0),
                        (None, false) => None,
                    };
                    if let Some(op) = unsent {
                        let mut text = String::from("the agent is no longer running");
                        // Words the person wrote are shown rather than lost.
                        if let Op::RecordComments { comments } = &op {
                            text.push_str(&format!(
                                "; these review comments were not recorded:\n{}",
                                crate::protocol::RecordedComment::numbered(comments)
                            ));
                        }
                        self.slots[slot]
                            .app
                            .transcript
                            .notice(super::transcript::Level::Error, text);
                    }
                }
                Effect::ComputeDiff {
                    id,
                    path,
                    before,
                    after,
                    revision,
                } => {
                    let (tx, hl) = (self.jobs_tx.clone(), self.slots[slot].app.hl.clone());
                    tokio::task::spawn_blocking(move || {
                        // A large file's first screens arrive coloured first, the rest after.
                        FileDiff::compute_in_stages(&path, before.as_deref(), &after, &hl, |d| {
                            let _ = tx.send(Job::Diff(slot, id, revision, d));
                        });
                    });
                }
                Effect::ExportPatch => {
                    let Some(src) = self.slots[slot].link.as_ref().and_then(|b| b.patch.clone())
                    else {
                        continue;
                    };
                    let (tx, hl) = (self.jobs_tx.clone(), self.slots[slot].app.hl.clone());
                    tokio::spawn(async move {
                        let result = match src.export().await {
                            Ok(raw) => tokio::task::spawn_blocking(move || {
                                let files = patch::parse(&String::from_utf8_lossy(&raw), &hl);
                                (raw, files)
                            })
                            .await
                            .map_err(ActionError::Parse),
                            Err(e) => Err(ActionError::Export(e)),
                        };
                        let _ = tx.send(Job::Patch(slot, result));
                    });
                }
                Effect::OpenEditor { id, path, text } => {
                    self.keys.pause();
                    let result = self
                        .guard
                        .suspended(|| actions::edit_text(&path, &text))
                        .map_err(ActionError::Terminal)
                        .and_then(|r| r);
                    self.keys.resume();
                    let fx = self.slots[slot].app.on_edited(id, result);
                    self.perform(slot, fx);
                }
                Effect::EditDraft(text) => {
                    self.keys.pause();
                    let result = self
                        .guard
                        .suspended(|| actions::edit_text("message.md", &text))
                        .map_err(ActionError::Terminal)
                        .and_then(|r| r);
                    self.keys.resume();
                    self.slots[slot].app.on_draft_edited(result);
                }
                Effect::Suspend => {
                    self.keys.pause();
                    let result = super::terminal::suspend(&mut self.guard);
                    self.keys.resume();
                    if let Err(e) = result {
                        self.slots[slot].app.transcript.notice(
                            super::transcript::Level::Error,
                            format!("taking the terminal back after a suspend: {e}"),
                        );
                    }
                }
                Effect::ApplyPatch(bytes) => {
                    let tx = self.jobs_tx.clone();
                    let repo = self.slots[slot].app.options.repo.clone();
                    tokio::task::spawn_blocking(move || {
                        let r = match repo {
                            Some(repo) => actions::apply_patch(&repo, &bytes),
                            None => Err(ActionError::NoRepository),
                        };
                        let _ = tx.send(Job::PatchDone(slot, r));
                    });
                }
                Effect::SavePatch { path, bytes } => {
                    let tx = self.jobs_tx.clone();
                    tokio::task::spawn_blocking(move || {
                        let _ = tx.send(Job::PatchDone(slot, actions::save_patch(&path, &bytes)));
                    });
                }
                Effect::SaveRule { prefix } => {
                    let store = self.slots[slot].link.as_ref().and_then(|b| b.rules.clone());
                    let text = match store.map(|s| s.save_command_prefix(&prefix)) {
                        Some(Ok(path)) => (
                            super::transcript::Level::Info,
                            format!(
                                "saved: commands starting with `{prefix}` run without asking in this repository (rule in {})",
                                path.display()
                            ),
                        ),
                        Some(Err(e)) => (
                            super::transcript::Level::Error,
                            format!("the rule was kept for this session but not saved: {e}"),
                        ),
                        None => (
                            super::transcript::Level::Warning,
                            "the rule was kept for this session; this session cannot save rules".into(),
                        ),
                    };
                    self.slots[slot].app.transcript.notice(text.0, text.1);
                }
                Effect::Copy { what, text } => {
                    let term = std::env::var("TERM").ok();
                    let name: String = self.slots[slot]
                        .app
                        .status
                        .session_id
                        .chars()
                        .take(24)
                        .collect();
                    let result = super::clipboard::copy(
                        &text,
                        if name.is_empty() { "session" } else { &name },
                        term.as_deref(),
                        &std::env::temp_dir(),
                        &mut std::io::stdout(),
                    )
                    .map_err(|source| ActionError::Io {
                        doing: "copying".into(),
                        source,
                    });
                    self.slots[slot].app.on_copied(&what, result);
                }
                Effect::ListPaths => {
                    let tx = self.jobs_tx.clone();
                    let repo = self.slots[slot].app.options.repo.clone();
                    tokio::task::spawn_blocking(move || {
                        let r = match repo {
                            // The walk of the host sandbox's listing (and Glob's): ignored
                            // files and `.git` left out.
                            Some(repo) => crate::sandbox::host::list_local(&repo, &repo)
                                .map_err(ActionError::List),
                            None => Err(ActionError::NoRepository),
                        };
                        let _ = tx.send(Job::Paths(slot, r));
                    });
                }
                Effect::ExportSession => {
                    let tx = self.jobs_tx.clone();
                    let log = self.slots[slot].link.as_ref().and_then(|l| l.log.clone());
                    tokio::task::spawn_blocking(move || {
                        let r = match log {
                            Some(log) => super::session_export::write_markdown(&log),
                            None => Err(ActionError::NoLog),
                        };
                        let _ = tx.send(Job::Exported(slot, r));
                    });
                }
                Effect::Quit => self.slots[slot].app.quitting = true,
            }
        }
    }

    /// Let the agents end their sessions (so their logs are complete), briefly.
    async fn finish(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(3);
        // A slot quitting on its own has sent its Shutdown; the board sent everyone's.
        if self.board.is_none() && self.slots[0].link.is_none() {
            return;
        }
        while self.slots.iter().any(|s| s.link.is_some() && !s.ended) {
            tokio::select! {
                ev = self.events_rx.recv() => match ev {
                    Some((slot, Some(Event::SessionEnded)) | (slot, None)) => self.slots[slot].ended = true,
                    Some(_) => {}
                    None => return,
                },
                _ = sleep_until(deadline) => return,
            }
        }
    }
}
