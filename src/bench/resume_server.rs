//! `lilypad bench resume` against `llama-server`'s slot save and restore: the scripted
//! session's prompt before its last turn is read by both sides and saved (Lilypad:
//! `EngineHandle::save_state`; the server: `POST /slots/0?action=save`, with
//! `--slot-save-path`), then, alternating, each resumes from empty memory and produces the first
//! token of the next turn's prompt (Lilypad: `reset`, `load_state`, a one-token generation; the
//! server: `erase`, `restore`, `/completion` with `cache_prompt` and one predicted token). Per
//! side: wall time from before the restore to the first token, and the prompt tokens evaluated
//! after the restore (Lilypad's `evaluated_tokens`, the server's `timings.prompt_n`).
//!
//! Does not own: starting the server (`super::engine_runs`), the session (`super::resume`).

use super::agent_turns::ratio;
use super::peers::server::{Server, Slot};
use super::suite::BenchError;
use super::{median, Figure};
use crate::engine::EngineHandle;
use std::path::Path;
use std::time::Instant;

/// The slot file's name inside the server's `--slot-save-path`.
const SLOT_FILE: &str = "resume.bin";

#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub prompt_tokens: usize,
    /// Lilypad: tokens and bytes saved; median seconds to the first token; tokens evaluated.
    pub state_tokens: usize,
    pub state_bytes: u64,
    pub seconds: f64,
    pub evaluated: usize,
    /// The server: what `save` wrote; median wall seconds (restore and completion); its own
    /// median restore and prompt times (ms); tokens evaluated after the restore.
    pub server_saved: Slot,
    pub server_seconds: f64,
    pub server_restore_ms: f64,
    pub server_prompt_ms: f64,
    pub server_evaluated: usize,
}

/// `repeats` resumes each side of a `turns`-turn session, alternating; Lilypad's state file
/// goes in `dir`, the server's in its own `--slot-save-path`.
pub fn run(
    engine: &EngineHandle,
    server: &Server,
    turns: usize,
    repeats: usize,
    dir: &Path,
) -> Result<Outcome, BenchError> {
    let (saved_prompt, prompt) = super::resume::prompts(turns)?;
    let state = dir.join("against-server.state");
    let (state_tokens, state_bytes) = super::resume::save(engine, &saved_prompt, &state)?;
    server.slot("erase", SLOT_FILE)?;
    server.complete(&engine.tokenize(&saved_prompt)?)?;
    let server_saved = server.slot("save", SLOT_FILE)?;
    let tokens = engine.tokenize(&prompt)?;
    let mut out = Outcome {
        prompt_tokens: tokens.len(),
        state_tokens,
        state_bytes,
        server_saved,
        ..Outcome::default()
    };
    let (mut ours, mut theirs, mut restore_ms, mut prompt_ms) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..repeats.max(1) {
        let r = super::resume::first_token(engine, Some(&state), &prompt)?;
        ours.push(r.seconds);
        out.evaluated = r.evaluated_tokens;
        server.slot("erase", SLOT_FILE)?;
        let t = Instant::now();
        let restored = server.slot("restore", SLOT_FILE)?;
        let c = server.complete(&tokens)?;
        theirs.push(t.elapsed().as_secs_f64());
        restore_ms.push(restored.ms);
        prompt_ms.push(c.prompt_ms);
        out.server_evaluated = c.prompt_n;
    }
    out.seconds = median(&ours);
    out.server_seconds = median(&theirs);
    out.server_restore_ms = median(&restore_ms);
    out.server_prompt_ms = median(&prompt_ms);
    Ok(out)
}

impl Outcome {
    pub fn figures(&self) -> Vec<Figure> {
        vec![
            Figure {
                bench: "resume".into(),
                name: format!(
                    "time to first token resuming a {}-token session, against llama-server's slot restore (Lilypad {} tokens in {:.1} MB, the server {} tokens in {:.1} MB)",
                    self.prompt_tokens,
                    self.state_tokens,
                    self.state_bytes as f64 / 1e6,
                    self.server_saved.tokens,
                    self.server_saved.bytes as f64 / 1e6
                ),
                value: self.seconds,
                unit: "s".into(),
                baseline: "llama-server: /slots/0?action=restore then /completion (wall time)"
                    .into(),
                baseline_value: self.server_seconds,
                ratio: ratio(self.server_seconds, self.seconds),
                better: "higher".into(),
                target: None,
            },
            Figure {
                bench: "resume".into(),
                name: format!(
                    "prompt tokens evaluated after the restore, {}-token session, against llama-server",
                    self.prompt_tokens
                ),
                value: self.evaluated as f64,
                unit: "tokens".into(),
                baseline: "llama-server: timings.prompt_n after the restore".into(),
                baseline_value: self.server_evaluated as f64,
                ratio: ratio(self.evaluated as f64, self.server_evaluated as f64),
                better: "lower".into(),
                target: None,
            },
        ]
    }
}
