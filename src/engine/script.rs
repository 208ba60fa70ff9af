//! The scripted engine: a mock of the model that replays raw model outputs from a file, one
//! turn per request, streamed in small pieces like a real engine would. It exists so the demo,
//! the interface tests and the agent tests get realistic model behaviour (reasoning, tool calls,
//! malformed calls, truncated turns) without weights. It records every prompt it receives so
//! tests can check what the model would have seen. Turn N of the script is the answer to
//! request N; the one look it takes at the prompt is for a branch: a turn followed by
//! `=== turn: if rejected ===` is answered by that alternative instead when the prompt's last
//! tool result says the person rejected the call (so the demo follows the person's decisions).
//!
//! Script format: UTF-8 text; each turn starts with a line `=== turn ===` (or
//! `=== turn: token_cap ===` for a turn cut by the token cap, or `=== turn: if rejected ===`
//! for the alternative of the turn before it); everything up to the next such line, without
//! its final newline, is the raw model output. Lines before the first marker are comments.

use super::stream::GenerationStream;
use super::traits::Engine;
use super::types::{
    EngineError, EngineEvent, Figures, GenerateRequest, Generation, PromptForm, Reuse, StopReason,
};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc::unbounded_channel;

/// One scripted model turn.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptTurn {
    pub output: String,
    pub stop: StopReason,
}

#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    #[error("cannot read script {path}: {source}")]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("script {path} has no `=== turn ===` line")]
    Empty { path: std::path::PathBuf },
    #[error("script {path}, line {line}: unknown turn marker {marker:?} (use `=== turn ===`, `=== turn: token_cap ===` or `=== turn: if rejected ===`)")]
    Marker {
        path: std::path::PathBuf,
        line: usize,
        marker: String,
    },
}

/// A script: its turns, and the alternatives of some of them after a rejection (by turn index).
struct Parsed {
    turns: Vec<ScriptTurn>,
    on_rejection: HashMap<usize, ScriptTurn>,
}

/// Parse a script's text (its `if rejected` alternatives left out).
pub fn parse_script(text: &str, path: &Path) -> Result<Vec<ScriptTurn>, ScriptError> {
    parse(text, path).map(|p| p.turns)
}

fn parse(text: &str, path: &Path) -> Result<Parsed, ScriptError> {
    let mut turns: Vec<ScriptTurn> = Vec::new();
    let mut on_rejection = HashMap::new();
    // The turn being read: how it stops, whether it is the alternative of the turn before, its
    // lines.
    let mut current: Option<(StopReason, bool, Vec<&str>)> = None;
    let mut finish = |current: Option<(StopReason, bool, Vec<&str>)>,
                      turns: &mut Vec<ScriptTurn>| {
        if let Some((stop, alternative, lines)) = current {
            let turn = ScriptTurn {
                output: lines.join("\n"),
                stop,
            };
            match (alternative, turns.len()) {
                (true, n) if n > 0 => {
                    on_rejection.insert(n - 1, turn);
                }
                _ => turns.push(turn),
            }
        }
    };
    for (i, line) in text.lines().enumerate() {
        if let Some(marker) = line
            .strip_prefix("=== turn")
            .and_then(|r| r.strip_suffix("==="))
        {
            let (stop, alternative) = match marker.trim() {
                "" => (StopReason::EndOfGeneration, false),
                ": token_cap" => (StopReason::TokenCap, false),
                ": if rejected" if current.is_some() => (StopReason::EndOfGeneration, true),
                other => {
                    return Err(ScriptError::Marker {
                        path: path.to_path_buf(),
                        line: i + 1,
                        marker: other.to_string(),
                    })
                }
            };
            finish(current.take(), &mut turns);
            current = Some((stop, alternative, Vec::new()));
        } else if let Some((_, _, lines)) = &mut current {
            lines.push(line);
        }
    }
    finish(current, &mut turns);
    if turns.is_empty() {
        return Err(ScriptError::Empty {
            path: path.to_path_buf(),
        });
    }
    Ok(Parsed {
        turns,
        on_rejection,
    })
}

/// Whether the last tool result in `prompt` says the person rejected the call.
fn last_result_rejected(prompt: &str) -> bool {
    prompt
        .rfind("<tool_response>")
        .map(|at| &prompt[at..])
        .map(|tail| tail.split("</tool_response>").next().unwrap_or(tail))
        .is_some_and(|result| result.contains(crate::protocol::REJECTED_RESULT))
}

/// Settings of the scripted engine (from the environment: `LILYPAD_SCRIPT_DELAY_MS`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScriptSettings {
    /// Milliseconds between streamed pieces (0: as fast as they are read), for watching a
    /// replay and for tests that need a request to last.
    pub piece_delay_ms: u64,
}

/// The scripted engine (a mock of the model; see the module docs).
#[derive(Debug, Clone)]
pub struct ScriptEngine {
    turns: Arc<Vec<ScriptTurn>>,
    /// The alternatives of some turns, when the last tool result was a rejection.
    on_rejection: Arc<HashMap<usize, ScriptTurn>>,
    next: Arc<Mutex<usize>>,
    prompts: Arc<Mutex<Vec<String>>>,
    /// Pause between pieces, so that streaming is visible in the interface.
    pub piece_delay: Duration,
    /// Characters per piece.
    pub piece_chars: usize,
    /// What `describe` calls the script (its file, or `demo`).
    pub name: String,
}

impl ScriptEngine {
    pub fn from_file(path: &Path) -> Result<Self, ScriptError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let mut engine = Self::from_text(&text, path)?;
        engine.name = path.display().to_string();
        Ok(engine)
    }

    /// The engine of a script's text (`path` names it in errors), with its `if rejected`
    /// alternatives.
    pub fn from_text(text: &str, path: &Path) -> Result<Self, ScriptError> {
        let parsed = parse(text, path)?;
        let mut engine = Self::new(parsed.turns);
        engine.on_rejection = Arc::new(parsed.on_rejection);
        Ok(engine)
    }

    pub fn new(turns: Vec<ScriptTurn>) -> Self {
        Self {
            turns: Arc::new(turns),
            on_rejection: Arc::default(),
            next: Arc::new(Mutex::new(0)),
            prompts: Arc::new(Mutex::new(Vec::new())),
            piece_delay: Duration::ZERO,
            piece_chars: 3,
            name: "script".to_string(),
        }
    }

    /// Every prompt received so far, in order.
    pub fn prompts(&self) -> Vec<String> {
        self.prompts.lock().map(|p| p.clone()).unwrap_or_default()
    }

    /// Turns not yet played.
    pub fn remaining(&self) -> usize {
        let next = self.next.lock().map(|n| *n).unwrap_or(0);
        self.turns.len().saturating_sub(next)
    }

    /// Play the next turn. Past the end of the script the engine answers with an empty final
    /// reply, which ends any agent loop.
    pub fn generate(&self, request: GenerateRequest) -> Result<GenerationStream, EngineError> {
        let prompt = request.text("the scripted engine")?.to_string();
        let turn = {
            let mut next = self.next.lock().map_err(|_| EngineError::Stopped)?;
            let alternative = self
                .on_rejection
                .get(&*next)
                .filter(|_| last_result_rejected(&prompt));
            let t = alternative
                .or_else(|| self.turns.get(*next))
                .cloned()
                .unwrap_or(ScriptTurn {
                    output: String::new(),
                    stop: StopReason::EndOfGeneration,
                });
            *next += 1;
            t
        };
        let prompt_chars = prompt.chars().count();
        if let Ok(mut p) = self.prompts.lock() {
            p.push(prompt);
        }
        let (tx, rx) = unbounded_channel();
        let cancel = Arc::new(AtomicBool::new(false));
        let flag = cancel.clone();
        let (delay, chunk) = (self.piece_delay, self.piece_chars.max(1));
        let max = request.max_tokens as usize;
        std::thread::spawn(move || {
            let chars: Vec<char> = turn.output.chars().collect();
            let mut sent = 0;
            let mut stop = turn.stop;
            for piece in chars.chunks(chunk) {
                if flag.load(Ordering::Relaxed) {
                    stop = StopReason::Cancelled;
                    break;
                }
                // One piece stands for one token: the cap applies to pieces.
                if sent >= max {
                    stop = StopReason::TokenCap;
                    break;
                }
                if tx.send(EngineEvent::Piece(piece.iter().collect())).is_err() {
                    return;
                }
                sent += 1;
                if !delay.is_zero() {
                    std::thread::sleep(delay);
                }
            }
            let figures = Figures {
                // A scripted engine has no tokenizer: a character stands for a token.
                prompt_tokens: prompt_chars,
                reused_tokens: 0,
                evaluated_tokens: prompt_chars,
                reuse: Reuse::Fresh,
                generated_tokens: sent,
                prefill_seconds: 0.0,
                decode_seconds: 0.0,
                dropped_pin: None,
                draft: None,
            };
            let _ = tx.send(EngineEvent::Done(Generation::empty(stop, figures)));
        });
        Ok(GenerationStream::new(rx, cancel))
    }
}

impl Engine for ScriptEngine {
    fn describe(&self) -> String {
        format!("script: {} (scripted replies, no model)", self.name)
    }

    fn reads(&self) -> PromptForm {
        PromptForm::Text
    }

    fn generate(&self, request: GenerateRequest) -> Result<GenerationStream, EngineError> {
        ScriptEngine::generate(self, request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::SamplingParams;

    fn req() -> GenerateRequest {
        GenerateRequest::new("p", 8192, SamplingParams::greedy())
    }

    #[test]
    fn parses_turns_and_markers() {
        let text = "comment\n=== turn ===\nthink\n</think>\n\nhi\n=== turn: token_cap ===\ncut off";
        let turns = parse_script(text, Path::new("s")).unwrap();
        assert_eq!(turns.len(), 2);
        assert_eq!(turns[0].output, "think\n</think>\n\nhi");
        assert_eq!(turns[1].stop, StopReason::TokenCap);
        assert!(parse_script("no turns", Path::new("s")).is_err());
        assert!(parse_script("=== turn: what ===\n", Path::new("s")).is_err());
    }

    #[test]
    fn replays_turns_in_order_and_records_prompts() {
        let e = ScriptEngine::new(vec![
            ScriptTurn {
                output: "héllo wörld".into(),
                stop: StopReason::EndOfGeneration,
            },
            ScriptTurn {
                output: "second".into(),
                stop: StopReason::TokenCap,
            },
        ]);
        let (t1, g1) = e.generate(req()).unwrap().wait().unwrap();
        assert_eq!(t1, "héllo wörld");
        assert_eq!(g1.stop, StopReason::EndOfGeneration);
        let (t2, g2) = e.generate(req()).unwrap().wait().unwrap();
        assert_eq!((t2.as_str(), g2.stop), ("second", StopReason::TokenCap));
        let (t3, _) = e.generate(req()).unwrap().wait().unwrap();
        assert_eq!(t3, "", "past the end: an empty final answer");
        assert_eq!(e.prompts().len(), 3);
    }

    #[test]
    fn a_turn_has_its_alternative_after_a_rejection() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.txt");
        std::fs::write(
            &path,
            "=== turn ===\nfirst\n=== turn ===\nnoted\n=== turn: if rejected ===\nunderstood\n=== turn ===\nlast",
        )
        .unwrap();
        assert_eq!(
            parse_script(&std::fs::read_to_string(&path).unwrap(), &path)
                .unwrap()
                .len(),
            3
        );
        assert!(parse_script("=== turn: if rejected ===\nx", Path::new("s")).is_err());
        let answer = |e: &ScriptEngine, prompt: &str| {
            let r = GenerateRequest::new(prompt, 8192, SamplingParams::greedy());
            e.generate(r).unwrap().wait().unwrap().0
        };
        let rejected = "<tool_response>\nThe user rejected this write; it was not applied.\n</tool_response>\n";
        let approved = "<tool_response>\nThe user rejected this earlier\n</tool_response>\n<tool_response>\nWrote NOTES.md\n</tool_response>\n";
        let e = ScriptEngine::from_file(&path).unwrap();
        assert_eq!(
            answer(&e, rejected),
            "first",
            "no alternative for the first turn"
        );
        assert_eq!(answer(&e, rejected), "understood");
        assert_eq!(answer(&e, rejected), "last");
        let e = ScriptEngine::from_file(&path).unwrap();
        answer(&e, "p");
        assert_eq!(answer(&e, approved), "noted", "only the last result counts");
    }

    #[test]
    fn token_cap_applies_to_pieces() {
        let e = ScriptEngine::new(vec![ScriptTurn {
            output: "x".repeat(300),
            stop: StopReason::EndOfGeneration,
        }]);
        let mut r = req();
        r.max_tokens = 4;
        let (text, g) = e.generate(r).unwrap().wait().unwrap();
        assert_eq!(g.stop, StopReason::TokenCap);
        assert_eq!(text.len(), 12);
    }
}
