//! Several attempts at one task (`--attempts N`): N sessions of the same task, each in its own
//! sandbox, with its own seed, session log and engine sequence, decoded together by the
//! in-process engine after one read of the first prompt (the others are forks of it).
//!
//! Owns: the seeds of attempts, the models of attempts (one shared engine, or one scripted
//! engine per attempt so that each replays its own script), opening the sandboxes and
//! starting the sessions (each with the same project instructions). Does not own: showing the attempts (the interface), choosing
//! between them, or the check that runs when one finishes ([`super::check`]).

use super::{
    agent_config, build_model, header, open_sandbox_reporting, start, EngineChoice, LaunchError,
    Running, SessionOptions,
};
use crate::agent::ApprovalPolicy;
use crate::config::Settings;
use crate::engine::{SequenceId, TemplatedModel, TurnRequest};
use crate::protocol::{Event, Message, Op};
use crate::sandbox::{self, Sandbox, SandboxSpec};
use crate::session::{self, SessionLog};
use std::path::PathBuf;
use std::sync::Arc;

/// The placeholder a scripted engine's path may hold: each attempt replays its own script.
pub const ATTEMPT_PLACEHOLDER: &str = "{attempt}";

/// The seed of attempt `attempt` (0-based): the base seed for the first, then seeds spread
/// over the whole range (the golden-ratio increment), so that two runs with the same base
/// seed give the same attempts and neighbouring bases do not share attempts.
pub fn attempt_seed(base: u32, attempt: usize) -> u32 {
    base.wrapping_add((attempt as u32).wrapping_mul(0x9E37_79B9))
}

/// A base seed when none is configured: different for every run, and the attempts of one run
/// still derive from it ([`attempt_seed`]).
pub fn fresh_base_seed() -> u32 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    t.subsec_nanos() ^ (t.as_secs() as u32) ^ std::process::id()
}

/// The engine sequence of attempt `attempt`.
pub fn attempt_sequence(attempt: usize) -> SequenceId {
    SequenceId(attempt as u64 + 1)
}

/// One running attempt.
pub struct Attempt {
    /// 0-based.
    pub index: usize,
    pub seed: u32,
    pub running: Running,
    pub sandbox: Arc<dyn Sandbox>,
}

/// What the attempts share.
pub struct AttemptsPlan<'a> {
    pub settings: &'a Settings,
    pub opts: &'a SessionOptions,
    pub spec: &'a SandboxSpec,
    pub choice: &'a EngineChoice,
    pub task: &'a str,
    pub count: usize,
    /// The first attempt's seed ([`attempt_seed`] gives the others').
    pub base_seed: u32,
    pub policy: ApprovalPolicy,
}

/// The model of each attempt: the in-process engine or a remote server is loaded once and
/// shared; a scripted engine is built per attempt, from its own script when the path holds
/// [`ATTEMPT_PLACEHOLDER`] (replaced by the 1-based attempt number).
pub fn attempt_models(
    choice: &EngineChoice,
    settings: &Settings,
    count: usize,
    progress: impl FnMut(f32) + Send + 'static,
) -> Result<Vec<Arc<TemplatedModel>>, LaunchError> {
    match choice {
        EngineChoice::Script(path) => (0..count)
            .map(|i| {
                let p = PathBuf::from(
                    path.to_string_lossy()
                        .replace(ATTEMPT_PLACEHOLDER, &(i + 1).to_string()),
                );
                build_model(&EngineChoice::Script(p), settings, &settings.prompt, |_| {})
            })
            .collect(),
        _ => {
            let m = build_model(choice, settings, &settings.prompt, progress)?;
            Ok(vec![m; count])
        }
    }
}

/// Open every attempt's sandbox (the first alone, so that an image is built once), read the
/// first prompt once for all of them where the engine allows, and start each session with the
/// task. `models[i]` is attempt i's model.
pub async fn start_attempts(
    plan: AttemptsPlan<'_>,
    models: Vec<Arc<TemplatedModel>>,
    progress: sandbox::image::Progress<'_>,
) -> Result<Vec<Attempt>, LaunchError> {
    let n = plan.count.min(models.len()).max(1);
    let mut sandboxes = vec![open_sandbox_reporting(plan.spec, progress).await?];
    let rest = (1..n).map(|_| open_sandbox_reporting(plan.spec, progress));
    match futures_util::future::try_join_all(rest).await {
        Ok(more) => sandboxes.extend(more),
        Err(e) => {
            for s in &sandboxes {
                let _ = s.close().await;
            }
            return Err(e);
        }
    }
    let dir = super::session_dir(plan.opts)?;
    let docs = super::instructions::read(plan.settings, plan.opts, &plan.spec.repo)?;
    let mut configs = Vec::with_capacity(n);
    for i in 0..n {
        let id = session::new_session_id();
        let mut c = agent_config(
            plan.settings,
            plan.opts,
            &plan.settings.prompt,
            plan.policy,
            &id,
        )?;
        c.sampling.seed = attempt_seed(plan.base_seed, i);
        c.sequence = attempt_sequence(i);
        c.instructions = docs.as_ref().map(super::instructions::for_agent);
        configs.push(c);
    }
    share_first_prompt(&models[..n], &configs, plan.task).await;
    let mut out = Vec::with_capacity(n);
    for (i, (config, sandbox)) in configs.into_iter().zip(sandboxes).enumerate() {
        let seed = config.sampling.seed;
        let mut h = header(&config, plan.spec, plan.choice, plan.task);
        h.task = plan.task.to_string();
        if let Some(d) = &docs {
            h.project_docs = super::instructions::records(d);
        }
        let log = SessionLog::create(&dir, &h)?;
        let running = start(
            models[i].clone(),
            sandbox.clone(),
            config,
            Default::default(),
            log,
        );
        let _ = running.ops.send(Op::UserMessage {
            text: plan.task.to_string(),
        });
        out.push(Attempt {
            index: i,
            seed,
            running,
            sandbox,
        });
    }
    Ok(out)
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
async fn share_first_prompt(
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
        Ok(Ok(Some(tokens))) => {
            tracing::info!(
                tokens,
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

    #[test]
    fn seeds_start_at_the_base_and_differ() {
        assert_eq!(attempt_seed(42, 0), 42);
        let seeds: Vec<u32> = (0..8).map(|i| attempt_seed(42, i)).collect();
        let mut unique = seeds.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 8);
        assert_ne!(attempt_seed(43, 1), attempt_seed(42, 2));
        assert_eq!(attempt_seed(u32::MAX, 1), 0x9E37_79B8);
    }
}
