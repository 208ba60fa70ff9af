//! How a batch shows its progress: on a terminal, a live view (indicatif: done, running and
//! failed attempts, ETA, and a line per running attempt with its step); with `--json`, one
//! JSON object per event on stdout (`batch_started`, `attempt_started`, `attempt_step`,
//! `attempt_finished`, `batch_finished`); otherwise a readable line per started and finished
//! attempt on stderr. Owns only the display; the figures come from the batch.

use super::results::AttemptResult;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use serde_json::json;
use std::collections::HashMap;
use std::io::Write;
use std::sync::Mutex;

/// Where progress goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    /// The live view on stderr (a terminal).
    Bars,
    /// JSON lines on stdout.
    Json,
    /// Readable lines on stderr.
    Lines,
}

impl ProgressMode {
    /// `--json` gives JSON lines; otherwise the live view when stderr is a terminal.
    pub fn choose(json: bool) -> Self {
        use std::io::IsTerminal;
        if json {
            Self::Json
        } else if std::io::stderr().is_terminal() {
            Self::Bars
        } else {
            Self::Lines
        }
    }
}

struct Bars {
    main: ProgressBar,
    running: HashMap<(String, u32), ProgressBar>,
    multi: MultiProgress,
}

struct State {
    done: usize,
    failed: usize,
    running: usize,
    bars: Option<Bars>,
}

/// The batch's progress display; shared by the running attempts.
pub struct Progress {
    mode: ProgressMode,
    state: Mutex<State>,
}

fn key(id: &str, attempt: u32) -> String {
    format!("{id}#{attempt}")
}

impl Progress {
    /// Start showing a batch of `to_run` attempts (`skipped` already finished earlier).
    pub fn start(mode: ProgressMode, to_run: usize, skipped: usize) -> Self {
        let bars = (mode == ProgressMode::Bars).then(|| {
            let multi = MultiProgress::new();
            let main = multi.add(ProgressBar::new(to_run as u64));
            if let Ok(style) = ProgressStyle::with_template(
                "{bar:30} {pos}/{len} attempts  {msg}  [{elapsed_precise}, ETA {eta}]",
            ) {
                main.set_style(style);
            }
            Bars {
                main,
                running: HashMap::new(),
                multi,
            }
        });
        let p = Self {
            mode,
            state: Mutex::new(State {
                done: 0,
                failed: 0,
                running: 0,
                bars,
            }),
        };
        match mode {
            ProgressMode::Json => p.json(json!({
                "event": "batch_started", "attempts": to_run, "skipped": skipped
            })),
            ProgressMode::Lines => {
                eprintln!("batch: {to_run} attempts to run ({skipped} finished earlier, skipped)")
            }
            ProgressMode::Bars => p.with(|s| refresh(s)),
        }
        p
    }

    fn with(&self, f: impl FnOnce(&mut State)) {
        if let Ok(mut s) = self.state.lock() {
            f(&mut s);
        }
    }

    fn json(&self, v: serde_json::Value) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{v}");
        let _ = out.flush();
    }

    pub fn attempt_started(&self, id: &str, attempt: u32, seed: u32) {
        self.with(|s| {
            s.running += 1;
            if let Some(b) = &mut s.bars {
                let bar = b.multi.add(ProgressBar::new_spinner());
                bar.set_message(format!("{} starting", key(id, attempt)));
                b.running.insert((id.to_string(), attempt), bar);
            }
            refresh(s);
        });
        match self.mode {
            ProgressMode::Json => self.json(json!({
                "event": "attempt_started", "instance_id": id, "attempt": attempt, "seed": seed
            })),
            ProgressMode::Lines => eprintln!("started {} (seed {seed})", key(id, attempt)),
            ProgressMode::Bars => {}
        }
    }

    pub fn attempt_step(&self, id: &str, attempt: u32, step: u32) {
        match self.mode {
            ProgressMode::Json => self.json(json!({
                "event": "attempt_step", "instance_id": id, "attempt": attempt, "step": step
            })),
            ProgressMode::Bars => self.with(|s| {
                if let Some(bar) = s
                    .bars
                    .as_ref()
                    .and_then(|b| b.running.get(&(id.to_string(), attempt)))
                {
                    bar.set_message(format!("{} step {step}", key(id, attempt)));
                    bar.tick();
                }
            }),
            ProgressMode::Lines => {}
        }
    }

    pub fn attempt_finished(&self, r: &AttemptResult) {
        self.with(|s| {
            s.running = s.running.saturating_sub(1);
            s.done += 1;
            if !r.finished() {
                s.failed += 1;
            }
            if let Some(b) = &mut s.bars {
                if let Some(bar) = b.running.remove(&(r.instance_id.clone(), r.attempt)) {
                    bar.finish_and_clear();
                    b.multi.remove(&bar);
                }
                b.main.inc(1);
            }
            refresh(s);
        });
        let reason = r
            .finish_reason
            .and_then(|f| serde_json::to_value(f).ok())
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| "error".into());
        match self.mode {
            ProgressMode::Json => self.json(json!({
                "event": "attempt_finished", "instance_id": r.instance_id, "attempt": r.attempt,
                "finish_reason": r.finish_reason, "check_passed": r.passed(), "error": r.error,
                "steps": r.steps, "seconds": r.seconds,
            })),
            ProgressMode::Lines => {
                let check = match r.passed() {
                    Some(true) => ", check passed",
                    Some(false) => ", check failed",
                    None => "",
                };
                match &r.error {
                    Some(e) => eprintln!("failed {}: {e}", key(&r.instance_id, r.attempt)),
                    None => eprintln!(
                        "finished {}: {reason} after {} steps{check}",
                        key(&r.instance_id, r.attempt),
                        r.steps
                    ),
                }
            }
            ProgressMode::Bars => {
                if let Some(e) = &r.error {
                    self.with(|s| {
                        if let Some(b) = &s.bars {
                            b.main
                                .println(format!("failed {}: {e}", key(&r.instance_id, r.attempt)));
                        }
                    });
                }
            }
        }
    }

    /// The end of the batch: the live view is cleared; JSON mode writes `batch_finished`.
    pub fn finish(&self, totals: &super::report::Totals) {
        self.with(|s| {
            if let Some(b) = &s.bars {
                b.main.finish_and_clear();
            }
        });
        if self.mode == ProgressMode::Json {
            self.json(json!({ "event": "batch_finished", "totals": totals }));
        }
    }
}

fn refresh(s: &State) {
    if let Some(b) = &s.bars {
        b.main.set_message(format!(
            "done {} · running {} · failed {}",
            s.done, s.running, s.failed
        ));
    }
}
