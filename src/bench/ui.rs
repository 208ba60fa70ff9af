//! The interface's render cost, drawn by the real `App` and views into ratatui's `TestBackend`
//! (so terminal output itself is not included):
//! - frames while tokens stream into a new turn below a 10,000-line transcript (200 tokens/s at
//!   60 frames/s is about 3.3 tokens a frame; each frame here takes 4), against the same stream
//!   below a 10-line transcript and against the 60 fps frame budget;
//! - the CPU that takes when paced as the interface paces it (200 tokens/s, 60 frames/s,
//!   sleeping between frames): this thread's CPU time over wall time, long transcript vs short;
//! - a 5,000-line file changed every 10 lines: from the change request to the first drawn
//!   review (its first screens coloured) and to the fully coloured review, against the 100 ms
//!   target; and computing the fully coloured diff against syntect highlighting both whole
//!   texts line by line (how diffs were coloured before the painter).

use super::agent_turns::ratio;
use super::{percentile, Figure};
use crate::diff::FileDiff;
use crate::protocol::{
    ApprovalKind, ApprovalRequest, Event, Figures, Reuse, StopReason, ToolCall, ToolCategory,
};
use crate::tui::app::{App, AppOptions, Effect};
use crate::tui::{views, Theme};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use std::time::Instant;

const WIDTH: u16 = 120;
const HEIGHT: u16 = 40;
const TOKENS_PER_FRAME: usize = 4;
pub(super) const FRAME_BUDGET: f64 = 1.0 / 60.0;
const DIFF_TARGET: f64 = 0.1;

#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub transcript_lines: usize,
    pub frames: usize,
    pub p50: f64,
    pub p99: f64,
    pub short_p50: f64,
    pub short_p99: f64,
    /// Share of one core the frames take at 60 frames/s (p50 frame time x 60).
    pub cpu_share: f64,
    /// Measured share of one core (this thread's CPU time / wall time) while 200 tokens/s
    /// stream at 60 frames/s below the long transcript, and below the 10-line one.
    pub paced_cpu: f64,
    pub paced_cpu_short: f64,
    pub diff_lines: usize,
    /// Change request to the first drawn review (first stage coloured).
    pub diff_seconds: f64,
    /// Change request to the drawn review with every line coloured.
    pub diff_full_seconds: f64,
    /// Computing the fully coloured diff alone (no interface).
    pub diff_compute_seconds: f64,
    /// Highlighting the old and the new text whole, line by line, with syntect.
    pub whole_texts_seconds: f64,
}

pub fn run(
    transcript_lines: usize,
    frames: usize,
    diff_lines: usize,
    paced_seconds: f64,
) -> std::io::Result<Outcome> {
    let (p50, p99) = stream_frames(transcript_lines, frames)?;
    let paced_cpu = paced_stream_cpu(transcript_lines, paced_seconds)?;
    let paced_cpu_short = paced_stream_cpu(10, paced_seconds)?;
    let (short_p50, short_p99) = stream_frames(10, frames)?;
    let (first, full) = diff_review(diff_lines)?;
    Ok(Outcome {
        transcript_lines,
        frames,
        p50,
        p99,
        short_p50,
        short_p99,
        cpu_share: p50 * 60.0,
        paced_cpu,
        paced_cpu_short,
        diff_lines,
        diff_seconds: first,
        diff_full_seconds: full,
        diff_compute_seconds: diff_compute(diff_lines),
        whole_texts_seconds: whole_texts(diff_lines),
    })
}

pub(super) fn new_app() -> App {
    App::new(AppOptions {
        theme: Theme::dark(),
        repo: None,
        has_patch: true,
        replay: false,
    })
}

fn figures() -> Figures {
    Figures {
        prompt_tokens: 2_000,
        reused_tokens: 1_800,
        evaluated_tokens: 200,
        reuse: Reuse::Extended,
        generated_tokens: 100,
        prefill_seconds: 0.1,
        decode_seconds: 1.0,
        dropped_pin: None,
        draft: None,
    }
}

/// Feed events, computing each diff whole and at once, where the runner colours it in stages
/// in the background.
pub(super) fn feed(app: &mut App, ev: Event) {
    for fx in app.on_event(ev) {
        if let Effect::ComputeDiff {
            id,
            path,
            before,
            after,
            revision,
        } = fx
        {
            let d = FileDiff::compute_with(&path, before.as_deref(), &after, &app.hl);
            app.on_diff_of(id, revision, d);
        }
    }
}

/// A transcript of about `lines` lines in turns of up to 100 lines, then a new turn.
pub(super) fn history(app: &mut App, lines: usize) {
    feed(
        app,
        Event::SessionStarted {
            session_id: "bench".into(),
            model: "bench".into(),
            sandbox: "none".into(),
            workdir: "/repo".into(),
            max_steps: 1_000,
            context_limit: 131_072,
            approval_policy: None,
        },
    );
    feed(
        app,
        Event::UserMessage {
            text: "Fix the failing test.".into(),
        },
    );
    let mut step = 1;
    let mut left = lines;
    while left > 0 {
        let n = left.min(100);
        feed(app, Event::TurnStarted { turn: step });
        let mut text = String::new();
        for i in 0..n {
            text.push_str(&format!(
                "{i}: a line of earlier model output with `code` and **emphasis** in it\n"
            ));
        }
        feed(app, Event::ContentDelta { text });
        feed(
            app,
            Event::TurnFinished {
                turn: step,
                stop: StopReason::EndOfGeneration,
                figures: figures(),
                context_tokens: 2_000,
            },
        );
        step += 1;
        left -= n;
    }
    feed(app, Event::TurnStarted { turn: step });
}

/// p50 and p99 seconds of a frame (append the frame's tokens, draw) below `lines` lines.
fn stream_frames(lines: usize, frames: usize) -> std::io::Result<(f64, f64)> {
    let mut app = new_app();
    history(&mut app, lines);
    let mut term = Terminal::new(TestBackend::new(WIDTH, HEIGHT))?;
    term.draw(|f| views::draw(f, &app))?;
    let mut times = Vec::with_capacity(frames);
    let mut k = 0;
    for _ in 0..frames {
        let t = Instant::now();
        stream_tokens(&mut app, k, k + TOKENS_PER_FRAME);
        k += TOKENS_PER_FRAME;
        term.draw(|f| views::draw(f, &app))?;
        times.push(t.elapsed().as_secs_f64());
    }
    Ok((percentile(&times, 50.0), percentile(&times, 99.0)))
}

/// Stream tokens `from..to` of a repeating sentence into the turn being written.
fn stream_tokens(app: &mut App, from: usize, to: usize) {
    const WORDS: [&str; 7] = [
        "the ", "parser ", "resets ", "`depth` ", "too ", "early", ";\n",
    ];
    for k in from..to {
        feed(
            app,
            Event::ContentDelta {
                text: WORDS[k % WORDS.len()].into(),
            },
        );
    }
}

/// CPU time of the calling thread, in seconds (user + system).
fn thread_cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a rusage; RUSAGE_THREAD is supported on Linux.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) } != 0 {
        return f64::NAN;
    }
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    t(u.ru_utime) + t(u.ru_stime)
}

/// Share of one core used while tokens stream at 200/s and frames are drawn at 60/s (sleeping
/// between frames, as the interface does) below a transcript of `lines` lines, for `seconds`.
fn paced_stream_cpu(lines: usize, seconds: f64) -> std::io::Result<f64> {
    const TOKENS_PER_SECOND: f64 = 200.0;
    let mut app = new_app();
    history(&mut app, lines);
    let mut term = Terminal::new(TestBackend::new(WIDTH, HEIGHT))?;
    term.draw(|f| views::draw(f, &app))?;
    let (start, cpu0) = (Instant::now(), thread_cpu_seconds());
    let mut sent = 0usize;
    let mut frame = 0u32;
    while start.elapsed().as_secs_f64() < seconds {
        let due = (start.elapsed().as_secs_f64() * TOKENS_PER_SECOND) as usize;
        if due > sent {
            stream_tokens(&mut app, sent, due);
            sent = due;
        }
        term.draw(|f| views::draw(f, &app))?;
        frame += 1;
        let next = start + std::time::Duration::from_secs_f64(f64::from(frame) * FRAME_BUDGET);
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    Ok((thread_cpu_seconds() - cpu0) / start.elapsed().as_secs_f64())
}

pub(super) fn source(lines: usize, changed: bool) -> String {
    let mut out = String::new();
    for i in 0..lines {
        if changed && i % 10 == 5 {
            out.push_str(&format!(
                "    let value_{i} = compute(input, {i}).unwrap_or_default(); // fixed\n"
            ));
        } else if i % 4 == 0 {
            out.push_str(&format!("fn item_{i}(input: &str) -> Option<u32> {{\n"));
        } else {
            out.push_str(&format!("    let value_{i} = compute(input, {i})?;\n"));
        }
    }
    out
}

/// Seconds `FileDiff::compute_with` alone takes on the same change.
fn diff_compute(lines: usize) -> f64 {
    let app = new_app();
    let before = source(lines, false);
    let after = source(lines, true);
    let t = Instant::now();
    let d = FileDiff::compute_with("src/big.rs", Some(&before), &after, &app.hl);
    let s = t.elapsed().as_secs_f64();
    drop(d);
    s
}

/// Seconds `Highlighter::colour_lines` takes over the whole old and new texts.
fn whole_texts(lines: usize) -> f64 {
    let app = new_app();
    let (before, after) = (source(lines, false), source(lines, true));
    let Some(syntax) = crate::diff::Highlighter::syntax_for_path("src/big.rs") else {
        return f64::NAN;
    };
    let t = Instant::now();
    for text in [&before, &after] {
        let text_lines: Vec<&str> = text.lines().collect();
        drop(app.hl.colour_lines(syntax, &text_lines));
    }
    t.elapsed().as_secs_f64()
}

/// Seconds from the change request to the first drawn review (its first screens coloured),
/// and to the drawn review with every line coloured, the stages handed over as the runner
/// hands them.
fn diff_review(lines: usize) -> std::io::Result<(f64, f64)> {
    let mut app = new_app();
    history(&mut app, 10);
    let before = source(lines, false);
    let after = source(lines, true);
    let mut term = Terminal::new(TestBackend::new(WIDTH, HEIGHT))?;
    let call = ToolCall {
        id: "call_1".into(),
        name: "Write".into(),
        arguments: serde_json::json!({"file_path": "src/big.rs"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    };
    let t = Instant::now();
    let effects = app.on_event(Event::ApprovalRequested(ApprovalRequest {
        id: 1,
        call,
        category: ToolCategory::Edits,
        kind: ApprovalKind::Change {
            path: "src/big.rs".into(),
            before: Some(before),
            after,
            binary_before: false,
        },
    }));
    let mut drawn = Vec::new();
    let mut failed = None;
    for fx in effects {
        if let Effect::ComputeDiff {
            id,
            path,
            before,
            after,
            revision,
        } = fx
        {
            let hl = app.hl.clone();
            FileDiff::compute_in_stages(&path, before.as_deref(), &after, &hl, |d| {
                app.on_diff_of(id, revision, d);
                match term.draw(|f| views::draw(f, &app)) {
                    Ok(_) => drawn.push(t.elapsed().as_secs_f64()),
                    Err(e) => {
                        failed.get_or_insert(e);
                    }
                }
            });
        }
    }
    if let Some(e) = failed {
        return Err(e);
    }
    let first = drawn.first().copied().unwrap_or(f64::NAN);
    Ok((first, drawn.last().copied().unwrap_or(first)))
}

impl Outcome {
    pub fn figures(&self) -> Vec<Figure> {
        let b = "ui".to_string();
        let ms = |s: f64| s * 1000.0;
        vec![
            Figure {
                bench: b.clone(),
                name: format!(
                    "frame p50, streaming below a {}-line transcript",
                    self.transcript_lines
                ),
                value: ms(self.p50),
                unit: "ms".into(),
                baseline: "60 fps frame budget".into(),
                baseline_value: ms(FRAME_BUDGET),
                ratio: ratio(FRAME_BUDGET, self.p50),
                better: "higher".into(),
                target: Some(1.0),
            },
            Figure {
                bench: b.clone(),
                name: format!(
                    "frame p99, streaming below a {}-line transcript",
                    self.transcript_lines
                ),
                value: ms(self.p99),
                unit: "ms".into(),
                baseline: "60 fps frame budget".into(),
                baseline_value: ms(FRAME_BUDGET),
                ratio: ratio(FRAME_BUDGET, self.p99),
                better: "higher".into(),
                target: Some(1.0),
            },
            Figure {
                bench: b.clone(),
                name: format!(
                    "CPU, 200 tok/s at 60 fps below a {}-line transcript",
                    self.transcript_lines
                ),
                value: self.paced_cpu * 100.0,
                unit: "% of a core".into(),
                baseline: "same stream below a 10-line transcript".into(),
                baseline_value: self.paced_cpu_short * 100.0,
                ratio: ratio(self.paced_cpu, self.paced_cpu_short),
                better: "lower".into(),
                target: None,
            },
            Figure {
                bench: b.clone(),
                name: "frame p50, long transcript vs short".into(),
                value: ms(self.p50),
                unit: "ms".into(),
                baseline: "same stream below a 10-line transcript".into(),
                baseline_value: ms(self.short_p50),
                ratio: ratio(self.p50, self.short_p50),
                better: "lower".into(),
                target: None,
            },
            Figure {
                bench: b.clone(),
                name: format!(
                    "{}-line highlighted diff: change request to first drawn review",
                    self.diff_lines
                ),
                value: ms(self.diff_seconds),
                unit: "ms".into(),
                baseline: "100 ms target".into(),
                baseline_value: ms(DIFF_TARGET),
                ratio: ratio(DIFF_TARGET, self.diff_seconds),
                better: "higher".into(),
                target: Some(1.0),
            },
            Figure {
                bench: b.clone(),
                name: format!(
                    "{}-line highlighted diff: change request to every line coloured",
                    self.diff_lines
                ),
                value: ms(self.diff_full_seconds),
                unit: "ms".into(),
                baseline: "100 ms target".into(),
                baseline_value: ms(DIFF_TARGET),
                ratio: ratio(DIFF_TARGET, self.diff_full_seconds),
                better: "higher".into(),
                target: None,
            },
            Figure {
                bench: b,
                name: format!(
                    "{}-line diff fully coloured vs both texts highlighted whole",
                    self.diff_lines
                ),
                value: ms(self.diff_compute_seconds),
                unit: "ms".into(),
                baseline: "syntect over the old and new texts, line by line".into(),
                baseline_value: ms(self.whole_texts_seconds),
                ratio: ratio(self.whole_texts_seconds, self.diff_compute_seconds),
                better: "higher".into(),
                target: None,
            },
        ]
    }
}
