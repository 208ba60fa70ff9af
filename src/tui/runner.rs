//! The event loop: agent events, keys, start-up progress and finished background jobs in;
//! effects performed; frames drawn at most [`super::FRAMES_PER_SECOND`] times a second and
//! only when something changed. Agent events are drained in batches so a fast stream costs one
//! frame, not one frame per piece.

use super::actions::{self, ActionError, KeyReader};
use super::app::{App, AppOptions, Effect, PatchDecision};
use super::terminal::TerminalGuard;
use super::{Backend, SessionOutcome, Startup, TuiError, TuiOptions, FRAMES_PER_SECOND};
use crate::diff::{patch, FileDiff};
use crate::protocol::{Event, Op, RequestId};
use crossterm::event::{Event as TermEvent, KeyEventKind, MouseEventKind};
use std::time::Duration;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::time::{sleep_until, Instant};

/// Most agent events applied before a frame may be drawn.
const EVENT_BATCH: usize = 4096;

/// Results of background jobs.
enum Job {
    Diff(RequestId, u32, FileDiff),
    Patch(Result<(Vec<u8>, Vec<FileDiff>), ActionError>),
    PatchDone(Result<PatchDecision, ActionError>),
}

struct Loop {
    app: App,
    guard: TerminalGuard,
    keys: KeyReader,
    backend: Option<Backend>,
    /// What the person sent before the session was ready, in order.
    held: Vec<Op>,
    jobs_tx: UnboundedSender<Job>,
    jobs_rx: UnboundedReceiver<Job>,
    task: Option<String>,
    step_mode: bool,
}

/// Run a live session: start-up messages arrive on `startup` (progress, then the backend).
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
    let mut lp = Loop::new(app, options.task.clone(), options.step_mode)?;
    for n in &options.notices {
        lp.app
            .transcript
            .notice(super::transcript::Level::Warning, n.clone());
    }
    lp.app.on_progress("starting…".into(), None);
    lp.run(Some(&mut startup)).await?;
    Ok(SessionOutcome {
        session_id: lp.app.status.session_id.clone(),
        patch: lp.app.patch.clone(),
    })
}

/// Step through recorded events.
pub async fn replay(theme: super::Theme, events: Vec<Event>) -> Result<(), TuiError> {
    let app = App::new(AppOptions {
        theme,
        repo: None,
        has_patch: false,
        replay: true,
    });
    let mut lp = Loop::new(app, None, false)?;
    let fx = lp.app.start_replay(events);
    lp.perform(fx);
    lp.run(None).await
}

impl Loop {
    fn new(app: App, task: Option<String>, step_mode: bool) -> Result<Self, TuiError> {
        let guard = TerminalGuard::enter()?;
        // Syntax rules load lazily; do it now, off the draw path, while the model loads.
        std::thread::spawn(crate::diff::highlight::prewarm);
        let (jobs_tx, jobs_rx) = unbounded_channel();
        Ok(Self {
            app,
            guard,
            keys: KeyReader::start(),
            backend: None,
            held: Vec::new(),
            jobs_tx,
            jobs_rx,
            task,
            step_mode,
        })
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
            let events_open = self.backend.is_some();
            let startup_open = startup.is_some();
            tokio::select! {
                msg = async { match startup.as_mut() { Some(s) => s.recv().await, None => None } }, if startup_open => {
                    match msg {
                        Some(m) => self.on_startup(m),
                        None => startup = None,
                    }
                    dirty = true;
                }
                ev = async { match self.backend.as_mut() { Some(b) => b.events.recv().await, None => None } }, if events_open => {
                    match ev {
                        Some(ev) => {
                            self.on_agent_event(ev);
                            // Drain what else is queued: one frame for the whole batch.
                            for _ in 0..EVENT_BATCH {
                                let next = self.backend.as_mut().and_then(|b| b.events.try_recv().ok());
                                match next {
                                    Some(ev) => self.on_agent_event(ev),
                                    None => break,
                                }
                            }
                        }
                        None => {
                            // The agent is gone; keep the screen until the person quits.
                            if let Some(b) = self.backend.as_mut() {
                                b.events.close();
                            }
                            self.backend.as_mut().map(|b| b.patch.take());
                            self.backend = None;
                            self.app.status.state = super::app::AgentState::Ended;
                        }
                    }
                    dirty = true;
                }
                key = self.keys.rx.recv() => {
                    match key {
                        Some(TermEvent::Key(k)) if k.kind != KeyEventKind::Release => {
                            let fx = self.app.on_key(k);
                            self.perform(fx);
                        }
                        Some(TermEvent::Paste(text)) => {
                            for c in text.chars().filter(|c| !c.is_control()) {
                                let k = crossterm::event::KeyEvent::from(crossterm::event::KeyCode::Char(c));
                                if self.app.contexts().first().is_some_and(|c| c.is_text_entry()) {
                                    let fx = self.app.on_key(k);
                                    self.perform(fx);
                                }
                            }
                        }
                        Some(TermEvent::Mouse(m)) => {
                            let to = match m.kind {
                                MouseEventKind::ScrollUp => Some(super::Direction::Back),
                                MouseEventKind::ScrollDown => Some(super::Direction::Forward),
                                _ => None,
                            };
                            if let Some(to) = to {
                                let fx = self.app.on_wheel(to);
                                self.perform(fx);
                            }
                        }
                        Some(_) => {}
                        None => return Ok(()),
                    }
                    dirty = true;
                }
                Some(job) = self.jobs_rx.recv() => {
                    match job {
                        Job::Diff(id, revision, d) => self.app.on_diff_of(id, revision, d),
                        Job::Patch(r) => self.app.on_patch(r),
                        Job::PatchDone(r) => self.app.on_patch_done(r),
                    }
                    dirty = true;
                }
                _ = tick.tick() => dirty = true,
                _ = sleep_until(next_frame), if dirty => {
                    self.guard.term.draw(|f| super::views::draw(f, &self.app))?;
                    dirty = false;
                    next_frame = Instant::now() + frame;
                }
            }
            if self.app.quitting {
                self.finish().await;
                return Ok(());
            }
        }
    }

    fn on_startup(&mut self, msg: Startup) {
        match msg {
            Startup::Progress { label, fraction } => self.app.on_progress(label, fraction),
            Startup::Failed(m) => self.app.on_startup_failed(&m),
            Startup::Notice(m) => self
                .app
                .transcript
                .notice(super::transcript::Level::Warning, m),
            Startup::Ready(mut backend) => {
                self.app.options.has_patch = backend.patch.is_some();
                let history = std::mem::take(&mut backend.history);
                let resumed = !history.is_empty();
                if resumed {
                    let fx = self.app.load_history(history);
                    self.perform(fx);
                }
                if self.step_mode {
                    self.app.status.step_mode = true;
                    let _ = backend.ops.send(Op::SetStepMode { on: true });
                }
                let held = std::mem::take(&mut self.held);
                if let Some(task) = self.task.take() {
                    let _ = backend.ops.send(Op::UserMessage { text: task });
                } else if held.is_empty() && (!resumed || self.app.status.state.accepts_message()) {
                    self.app.input_focus = true;
                }
                for op in held {
                    let _ = backend.ops.send(op);
                }
                self.app.progress = None;
                self.backend = Some(backend);
            }
        }
    }

    fn on_agent_event(&mut self, ev: Event) {
        let fx = self.app.on_event(ev);
        self.perform(fx);
    }

    fn perform(&mut self, effects: Vec<Effect>) {
        for fx in effects {
            match fx {
                // A message typed while the session starts; other ops then have nothing to act on.
                Effect::Send(op @ Op::UserMessage { .. }) if self.backend.is_none() => {
                    self.held.push(op);
                }
                Effect::Send(op) => {
                    let sent = self.backend.as_ref().map(|b| b.ops.send(op).is_ok());
                    if sent == Some(false) {
                        self.app.transcript.notice(
                            super::transcript::Level::Error,
                            "the agent is no longer running",
                        );
                    }
                }
                Effect::ComputeDiff {
                    id,
                    path,
                    before,
                    after,
                    revision,
                } => {
                    let (tx, hl) = (self.jobs_tx.clone(), self.app.hl.clone());
                    tokio::task::spawn_blocking(move || {
                        // A large file's first screens arrive coloured first, the rest after.
                        FileDiff::compute_in_stages(&path, before.as_deref(), &after, &hl, |d| {
                            let _ = tx.send(Job::Diff(id, revision, d));
                        });
                    });
                }
                Effect::ExportPatch => {
                    let Some(src) = self.backend.as_ref().and_then(|b| b.patch.clone()) else {
                        continue;
                    };
                    let (tx, hl) = (self.jobs_tx.clone(), self.app.hl.clone());
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
                        let _ = tx.send(Job::Patch(result));
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
                    let fx = self.app.on_edited(id, result);
                    self.perform(fx);
                }
                Effect::ApplyPatch(bytes) => {
                    let tx = self.jobs_tx.clone();
                    let repo = self.app.options.repo.clone();
                    tokio::task::spawn_blocking(move || {
                        let r = match repo {
                            Some(repo) => actions::apply_patch(&repo, &bytes),
                            None => Err(ActionError::NoRepository),
                        };
                        let _ = tx.send(Job::PatchDone(r));
                    });
                }
                Effect::SavePatch { path, bytes } => {
                    let tx = self.jobs_tx.clone();
                    tokio::task::spawn_blocking(move || {
                        let _ = tx.send(Job::PatchDone(actions::save_patch(&path, &bytes)));
                    });
                }
                Effect::SaveRule { prefix } => {
                    let store = self.backend.as_ref().and_then(|b| b.rules.clone());
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
                    self.app.transcript.notice(text.0, text.1);
                }
                Effect::Copy { what, text } => {
                    let term = std::env::var("TERM").ok();
                    let name: String = self.app.status.session_id.chars().take(24).collect();
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
                    self.app.on_copied(&what, result);
                }
                Effect::Quit => self.app.quitting = true,
            }
        }
    }

    /// Let the agent end the session (so its log is complete), briefly.
    async fn finish(&mut self) {
        let Some(b) = self.backend.as_mut() else {
            return;
        };
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            tokio::select! {
                ev = b.events.recv() => match ev {
                    Some(Event::SessionEnded) | None => return,
                    Some(_) => {}
                },
                _ = sleep_until(deadline) => return,
            }
        }
    }
}
