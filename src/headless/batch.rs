//! Batch runs: many tasks from a JSONL file, up to N at a time, each in its own sandbox (a pod
//! with `--sandbox kube`), writing one predictions line per task (`instance_id`,
//! `model_patch`) and a trajectory each. A task that fails is reported and recorded with its
//! error; the others go on.

use super::{run_task, EventOutput, TaskRun};
use crate::config::Settings;
use crate::launch::{self, EngineChoice, LaunchError, SessionOptions};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// One line of a tasks file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchTask {
    pub instance_id: String,
    /// The task text (`problem_statement` is accepted too, as in SWE-bench files).
    #[serde(alias = "problem_statement")]
    pub task: String,
    /// The repository for this task; default: `--repo`.
    #[serde(default)]
    pub repo: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
struct Prediction<'a> {
    instance_id: &'a str,
    model_name_or_path: &'a str,
    model_patch: String,
    finish_reason: Option<crate::protocol::FinishReason>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// Run every task; returns (succeeded, failed) counts. Predictions go to
/// `{out}/predictions.jsonl`, trajectories and patches to `{out}/trajectories/`.
pub async fn run_batch(
    settings: &Settings,
    opts: &SessionOptions,
    tasks: Vec<BatchTask>,
    default_repo: &Path,
    parallel: usize,
    out: &Path,
) -> Result<(usize, usize), LaunchError> {
    let choice = EngineChoice::from_options(opts, settings)?;
    let traj_dir = out.join("trajectories");
    std::fs::create_dir_all(&traj_dir).map_err(|source| crate::session::SessionError::Write {
        path: traj_dir.clone(),
        source,
    })?;
    let pred_path = out.join("predictions.jsonl");
    let predictions = Arc::new(Mutex::new(std::fs::File::create(&pred_path).map_err(
        |source| crate::session::SessionError::Write {
            path: pred_path.clone(),
            source,
        },
    )?));
    // The in-process engine is loaded once and shared, and so is a remote server's client; a
    // scripted engine is per task, so every task replays its script from the start. Each task
    // has its own engine sequence: the in-process engine decodes the running tasks together,
    // each with its own memory, so interleaved tasks never re-read each other's prompts.
    let shared = match &choice {
        EngineChoice::Llama(_) | EngineChoice::Remote(_) => Some(launch::build_model(
            &choice,
            settings,
            &settings.prompt,
            |_| {},
        )?),
        EngineChoice::Script(_) => None,
    };
    let model_name = choice.label();
    let limit = Arc::new(tokio::sync::Semaphore::new(parallel.max(1)));
    let mut set = tokio::task::JoinSet::new();
    for (n, t) in tasks.into_iter().enumerate() {
        let sequence = crate::engine::SequenceId(n as u64 + 1);
        let permit_src = limit.clone();
        let settings = settings.clone();
        let opts = opts.clone();
        let choice = choice.clone();
        let shared = shared.clone();
        let predictions = predictions.clone();
        let traj_dir = traj_dir.clone();
        let repo = t.repo.clone().unwrap_or_else(|| default_repo.to_path_buf());
        let model_name = model_name.clone();
        set.spawn(async move {
            let _permit = permit_src.acquire_owned().await;
            let model = match shared {
                Some(m) => Ok(m),
                None => launch::build_model(&choice, &settings, &settings.prompt, |_| {}),
            };
            let result = match model {
                Ok(model) => {
                    let run = TaskRun {
                        settings: &settings,
                        session: &opts,
                        choice: &choice,
                        task: &t.task,
                        repo: &repo,
                        out_dir: Some(&traj_dir.join(&t.instance_id)),
                        sequence,
                    };
                    run_task(run, model, EventOutput::Quiet).await
                }
                Err(e) => Err(e),
            };
            let (line, ok) = match &result {
                Ok(o) => (
                    Prediction {
                        instance_id: &t.instance_id,
                        model_name_or_path: &model_name,
                        model_patch: String::from_utf8_lossy(&o.patch).into_owned(),
                        finish_reason: Some(o.reason),
                        error: None,
                    },
                    true,
                ),
                Err(e) => {
                    eprintln!("task {} failed: {e}", t.instance_id);
                    (
                        Prediction {
                            instance_id: &t.instance_id,
                            model_name_or_path: &model_name,
                            model_patch: String::new(),
                            finish_reason: None,
                            error: Some(e.to_string()),
                        },
                        false,
                    )
                }
            };
            if let Ok(text) = serde_json::to_string(&line) {
                if let Ok(mut f) = predictions.lock() {
                    let _ = writeln!(f, "{text}");
                    let _ = f.sync_data();
                }
            }
            ok
        });
    }
    let (mut good, mut bad) = (0, 0);
    while let Some(r) = set.join_next().await {
        match r {
            Ok(true) => good += 1,
            _ => bad += 1,
        }
    }
    Ok((good, bad))
}
