//! Several attempts at one task (`--attempts N`, a batch's attempts): sessions of the same
//! task, each in its own sandbox, with its own seed, session log and engine sequence, decoded
//! together by the in-process engine after one read of the first prompt (the others are forks
//! of it).
//!
//! Owns: the one rule that numbers attempts (from 1, as the person and the results folders
//! count them) and derives their seeds and engine sequences, the models of attempts (one
//! shared engine, or one scripted engine per attempt so that each replays its own script),
//! sharing the first prompt, and the check after each task. Does not own: starting the
//! sessions (`super::SessionBuilder`, `Beginning::Attempts`), showing the attempts (the
//! interface), or choosing between them.

use super::{build_model, EngineChoice, LaunchError, Running};
use crate::config::Settings;
use crate::engine::{SequenceId, TemplatedModel, TurnRequest};
use crate::protocol::{Event, Message};
use crate::sandbox::Sandbox;
use std::path::PathBuf;
use std::sync::Arc;

/// The placeholder a scripted engine's path may hold: each attempt replays its own script.
pub const ATTEMPT_PLACEHOLDER: &str = "{attempt}";

/// The seed of attempt `number` (from 1): the base seed for the first, then seeds spread
/// over the whole range (the golden-ratio increment), so that two runs with the same base
/// seed give the same attempts and neighbouring bases do not share attempts.
pub fn attempt_seed(base: u32, number: u32) -> u32 {
    base.wrapping_add(number.saturating_sub(1).wrapping_mul(0x9E37_79B9))
}

/// A base seed when none is configured: different for every run, and the attempts of one run
/// still derive from it ([`attempt_seed`]).
pub fn fresh_base_seed() -> u32 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    t.subsec_nanos() ^ (t.as_secs() as u32) ^ std::process::id()
}

/// The engine sequence of attempt `number` (from 1): its number, so that no attempt shares
/// the default sequence 0.
pub fn attempt_sequence(number: u32) -> SequenceId {
    SequenceId(u64::from(number.max(1)))
}

/// The model of each attempt: the in-process engine or a remote server is loaded once and
/// shared; a scripted engine is built per attempt, from its own script when the path holds
/// [`ATTEMPT_PLACEHOLDER`] (replaced by the 1-based attempt number).
pub fn attempt_models(
    choice: &EngineChoice,
    settings: &Settings,
    count: u32,
    progress: impl FnMut(f32) + Send + 'static,
) -> Result<Vec<Arc<TemplatedModel>>, LaunchError> {
    match choice {
        EngineChoice::Script(path) => (1..=count)
            .map(|n| {
                let p = PathBuf::from(
                    path.to_string_lossy()
                        .replace(ATTEMPT_PLACEHOLDER, &n.to_string()),
                );
                build_model(&EngineChoice::Script(p), settings, &settings.prompt, |_| {})
            })
            .collect(),
        _ => {
            // One shared engine: the builder gives it to every attempt.
            Ok(vec![build_model(
                choice,
                settings,
                &settings.prompt,
                progress,
            )?])
        }
    }
}

/// `running` with `command` run in `sandbox` after every finished task: a
/// [`Event::CheckFinished`] follows each `TaskFinished` on the events (a check that cannot run
/// at all is reported as failed, with why).
pub fn with_check(
    mut running: Running,
    sandbox: Arc<dyn Sandbox>,
    check: super::check::CheckSpec,
) -> Running {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let mut events = std::mem::replace(&mut running.events, rx);
    tokio::spawn(async move {
        while let Some(ev) = events.recv().await {
            let finished = matches!(ev, Event::TaskFinished { .. });
            if tx.send(ev).is_err() {
                return;
            }
            if finished {
                let ev = match super::check::run_check(sandbox.as_ref(), &check).await {
                    Ok(c) => Event::CheckFinished {
                        command: check.command.clone(),
                        passed: c.passed,
                        exit_code: c.exit_code,
                        output: c.output_tail,
                    },
                    Err(e) => Event::CheckFinished {
                        command: check.command.clone(),
                        passed: false,
                        exit_code: None,
                        output: format!("the check could not run: {e}"),
                    },
                };
                if tx.send(ev).is_err() {
                    return;
                }
            }
        }
    });
    running
}

/// Read the first prompt of the attempts once, into the first attempt's sequence, and copy it
/// into the others' (only when they share one engine). A failure costs only speed: each
/// attempt then reads its prompt itself.
pub(super) async fn share_first_prompt(
    models: &[Arc<TemplatedModel>],
    configs: &[crate::agent::AgentConfig],
    task: &str,
) {
    let (Some(first), Some(c)) = (models.first(), configs.first()) else {
        return;
    };
    if configs.len() < 2 || !models.iter().all(|m| Arc::ptr_eq(m, first)) {
        return;
    }
    // The first message as the agent makes it: the project instructions, then the task.
    let head = c.instructions.as_ref().map_or("", |i| i.block.as_str());
    let turn = TurnRequest {
        messages: vec![
            Message::system(c.system_prompt.clone()),
            Message::user(format!("{head}{task}")),
        ],
        tools: c.tools.clone(),
        max_tokens: c.max_turn_tokens,
        sampling: c.sampling.clone(),
        sequence: c.sequence,
        pin_turn: false,
        report: crate::engine::TokenReport::default(),
    };
    let copies: Vec<SequenceId> = configs.iter().skip(1).map(|c| c.sequence).collect();
    let model = first.clone();
    let shared = tokio::task::spawn_blocking(move || model.share_prompt(&turn, &copies)).await;
    match shared {
        Ok(Ok(Some(read))) => {
            tracing::info!(
                tokens = read.prompt_tokens,
                attempts = configs.len(),
                "the first prompt was read once for all attempts"
            )
        }
        Ok(Ok(None)) => {}
        Ok(Err(e)) => tracing::warn!(error = %e, "the attempts read their first prompt each"),
        Err(e) => tracing::warn!(error = %e, "the attempts read their first prompt each"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Attempts are numbered from 1 (they were counted from 0 here and from 1 in batches):
    // the same seeds as before, one number higher.
    #[test]
    fn seeds_start_at_the_base_and_differ() {
        assert_eq!(attempt_seed(42, 1), 42);
        let seeds: Vec<u32> = (1..=8).map(|n| attempt_seed(42, n)).collect();
        let mut unique = seeds.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 8);
        assert_ne!(attempt_seed(43, 2), attempt_seed(42, 3));
        assert_eq!(attempt_seed(u32::MAX, 2), 0x9E37_79B8);
        assert_eq!(attempt_sequence(1), SequenceId(1));
    }
}
