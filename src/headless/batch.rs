//! Batch runs: every task of a tasks file run `attempts` times, up to `parallel` attempts at
//! once, each in its own sandbox (a pod with `--sandbox kube`), with its own seed
//! ([`super::attempts`]) and engine sequence. Each finished attempt is recorded atomically
//! under `{out}/results/<instance_id>/<attempt>/` ([`super::results`]), so the same command run
//! again skips what finished and runs again what did not (or failed to start);
//! `predictions.jsonl`, Leaf's `results.jsonl` and `summary.json` ([`super::leaf`]),
//! `report.json` and `report.md` are rebuilt from those records. An attempt that ends in an
//! error in Leaf's terms is tried again from scratch, up to the plan's `max_attempts`; one
//! that still fails is reported and recorded with its error; the others go on. A batch
//! sweeps the leftovers of dead processes at its start; a Kubernetes batch whose attempts all
//! take the same pod creates the next pods ahead of need
//! ([`crate::sandbox::SandboxPool`]). What differs between kinds of task (a line, a Harbor
//! task, a PatchEval CVE: the repository, the sandbox, the verifier) is the kind's
//! ([`super::kind`]); an attempt here is the same steps for every kind: its seed and engine,
//! its preparation, the task run ([`super::run_task`]), its result recorded.

use super::attempts::{attempt_seed, engine_for};
use super::kind::{BatchTask, Place, PrepareError, TaskKind};
use super::progress::{Progress, ProgressMode};
use super::results::{AttemptResult, PredictionsAppender, ResultStore};
use super::{run_task, AttemptRun, EventOutput, RunFacts, RunMode, TaskRun};
use crate::config::Settings;
use crate::launch::check::CheckSpec;
use crate::launch::{self, EngineChoice, LaunchError, SessionOptions};
use crate::protocol::Event;
use crate::sandbox::image::lock::{ImageLock, LockError};
use crate::sandbox::{SandboxKind, SandboxPool};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use thiserror::Error;

/// What a batch runs and how.
#[derive(Debug, Clone)]
pub struct BatchPlan {
    pub tasks: Vec<BatchTask>,
    /// The repository of tasks that name none (`--repo`).
    pub default_repo: PathBuf,
    /// Local clones of "owner/name" repositories (`--repos-dir`).
    pub repos_dir: Option<PathBuf>,
    /// The sandbox image of tasks that name none (`--image-template`, see
    /// [`super::sources::image_for`]).
    pub image_template: Option<String>,
    /// Where every task's image holds its repository (`--image-workdir`, with
    /// `--image-template` and without `--repos-dir`): the sandbox works there, on the image's
    /// checkout, instead of on a copy of a local repository.
    pub image_workdir: Option<String>,
    /// Attempts per task (at least 1).
    pub attempts: u32,
    /// Whether the run set its own wall time (`--wall-time` or a preset): it then holds for
    /// Harbor tasks too, over their `[agent] timeout_sec`.
    pub run_wall_time: bool,
    /// Tries of an attempt that ends in an error, inside this run (at least 1).
    pub max_attempts: u32,
    /// The run's limits, recorded in every session's provenance.
    pub limits: crate::session::RunLimits,
    /// The seed of attempt 1; attempt n uses `base + n - 1`.
    pub base_seed: u32,
    pub parallel: usize,
    /// In-process engines to spread the attempts over (`--replicas`) [default: one per GPU
    /// device llama.cpp lists, at most `parallel`; one without a GPU].
    pub replicas: Option<usize>,
    pub out: PathBuf,
    pub check: Option<CheckSpec>,
    pub preset: Option<String>,
    pub progress: ProgressMode,
    /// The run's resolved settings, for the report's header (an object).
    pub header: serde_json::Value,
    /// Write each attempt's rollout (`rollout.json`, `trajectory.atif.json`).
    pub rollout: bool,
    /// Look at the weight file before each attempt and load it anew when it was replaced
    /// (`super::weights`).
    pub reload_weights: bool,
    /// A digest lock in Leaf's format (`--image-lock`): every task's image is replaced by the
    /// reference it pins before anything starts, and a task it does not pin stops the run.
    pub image_lock: Option<PathBuf>,
}

/// Why a batch stopped (an attempt's own failure is recorded as its error instead).
#[derive(Debug, Error)]
pub enum BatchError {
    #[error(transparent)]
    Launch(#[from] LaunchError),
    /// A digest lock that could not be read, or that does not pin every task's image.
    #[error(transparent)]
    ImageLock(#[from] LockError),
    #[error(transparent)]
    Weights(#[from] super::weights::WeightsError),
    #[error(transparent)]
    Sandbox(#[from] crate::sandbox::SandboxError),
    #[error(transparent)]
    Results(#[from] super::results::ResultsError),
    #[error(transparent)]
    Write(#[from] crate::session::SessionError),
    #[error("--reload-weights needs the in-process engine (a model file)")]
    ReloadNeedsModelFile,
    #[error("logging the run to Weights & Biases: {0}")]
    Wandb(#[source] super::wandb::WandbError),
    #[error("the Weights & Biases client's thread: {0}")]
    WandbClient(#[source] tokio::task::JoinError),
}

/// How a batch went.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchSummary {
    /// Attempts in the batch (tasks times attempts).
    pub attempts: usize,
    /// Finished in an earlier run, not run again.
    pub skipped: usize,
    /// Run now.
    pub ran: usize,
    /// Recorded with an error (run again next time).
    pub failed: usize,
    /// Attempts whose check passed, and attempts checked.
    pub passed: usize,
    pub checked: usize,
    /// Leaf's scoring of every recorded attempt.
    pub leaf: super::leaf::Summary,
}

/// Run the batch; see the module docs for what it writes.
pub async fn run_batch(
    settings: &Settings,
    opts: &SessionOptions,
    mut plan: BatchPlan,
) -> Result<BatchSummary, BatchError> {
    let began = std::time::Instant::now();
    // Before anything starts (no sweep, no model, no sandbox): every image pinned, or none.
    if let Some(path) = plan.image_lock.clone() {
        pin_images(&mut plan, &ImageLock::read(&path)?)?;
    }
    // The tasks of a batch leave the project instructions out unless the settings ask for
    // them: a batch's task says all there is to do.
    let mut batch_opts = opts.clone();
    batch_opts.no_project_doc |= !settings.prompt.project_doc_in_batches;
    let opts = &batch_opts;
    let choice = EngineChoice::from_options(opts, settings)?;
    // What a killed batch (or session) left behind goes first: its containers and pods, found
    // by their labels, and its workspaces.
    let kind = opts
        .sandbox
        .kind
        .or(settings.sandbox.kind)
        .unwrap_or(SandboxKind::Docker);
    let kube = kind == SandboxKind::Kube;
    let swept = crate::sandbox::sweep::sweep_all(&settings.sandbox, &plan.default_repo, kube).await;
    for (what, n) in [
        ("containers", &swept.docker),
        ("Kubernetes sessions", &swept.kube),
    ] {
        if let Ok(&n) = n.as_ref() {
            if n > 0 {
                tracing::info!(n, "the batch removed leftover {what}");
            }
        }
    }
    let store = ResultStore::new(&plan.out);
    let attempts = plan.attempts.max(1);
    let keys: Vec<(usize, u32)> = (0..plan.tasks.len())
        .flat_map(|t| (1..=attempts).map(move |a| (t, a)))
        .collect();
    let earlier: Vec<Option<AttemptResult>> = keys
        .iter()
        .map(|&(t, a)| {
            store
                .load(&plan.tasks[t].instance_id, a)
                .filter(AttemptResult::finished)
        })
        .collect();
    let finished_before: Vec<AttemptResult> = earlier.iter().flatten().cloned().collect();
    store.write_predictions(&finished_before)?;
    let appender = Arc::new(Mutex::new(PredictionsAppender::open(
        &store.predictions_path(),
    )?));
    // The in-process engine is loaded once and shared (one per GPU device, or `--replicas`),
    // and so is a remote server's client; a scripted engine is per attempt, so every attempt
    // replays its script from the start. Each attempt has its own engine sequence: an
    // in-process engine decodes the attempts running on it together, each with its own memory.
    let engine_settings = match &choice {
        EngineChoice::Llama(_) => engines_settings(settings, plan.replicas, plan.parallel),
        EngineChoice::Remote(_) => vec![settings.clone()],
        EngineChoice::Script(_) => Vec::new(),
    };
    let shared: Option<Arc<[Arc<crate::engine::TemplatedModel>]>> = match &choice {
        EngineChoice::Script(_) => None,
        _ => Some(
            engine_settings
                .iter()
                .map(|s| launch::build_model(&choice, s, &s.prompt, |_| {}))
                .collect::<Result<Vec<_>, _>>()?
                .into(),
        ),
    };
    let spread = super::spread::Spread::new(engine_settings.len());
    // The model's identity, hashed once for the whole batch (a streaming read of the file).
    let served = shared
        .as_ref()
        .and_then(|m| m.first())
        .filter(|_| matches!(choice, EngineChoice::Remote(_)))
        .map(|m| {
            settings
                .remote
                .model_name
                .clone()
                .unwrap_or_else(|| m.describe())
        });
    let hash = matches!(choice, EngineChoice::Llama(_));
    let id_choice = choice.clone();
    let identity = tokio::task::spawn_blocking(move || {
        launch::provenance::model_identity(&id_choice, hash, served)
    })
    .await
    .ok();
    let model_name = choice.label();
    let weights = match (&choice, &shared, plan.reload_weights) {
        (EngineChoice::Llama(path), Some(models), true) => {
            Some(Arc::new(super::weights::WeightWatch::new(
                path.clone(),
                engine_settings.clone(),
                models.to_vec(),
                identity.clone(),
            )?))
        }
        (_, _, true) => return Err(BatchError::ReloadNeedsModelFile),
        _ => None,
    };
    let pending: Vec<usize> = (0..keys.len()).filter(|&i| earlier[i].is_none()).collect();
    let skipped = keys.len() - pending.len();
    let progress = Arc::new(Progress::start(plan.progress, pending.len(), skipped));
    let limit = Arc::new(tokio::sync::Semaphore::new(plan.parallel.max(1)));
    // Pods ahead of need, when every attempt's pod is the same (no per-task image).
    let same_pod = !plan
        .tasks
        .iter()
        .any(|t| t.own_sandbox(plan.image_template.as_deref()));
    let pool = match same_pod {
        true => SandboxPool::start(
            kind,
            &settings.sandbox,
            &plan.default_repo,
            plan.parallel,
            pending.len(),
        )?
        .map(Arc::new),
        false => None,
    };
    // The W&B run opens before any attempt runs: a missing client or a refused key stops the
    // batch here, not after hours of attempts. Leaf's metrics are logged after every result.
    let wandb = {
        let (w, out, header) = (
            settings.wandb.clone(),
            plan.out.clone(),
            plan.header.clone(),
        );
        tokio::task::spawn_blocking(move || {
            super::wandb::WandbRun::start(&w, &out, &header, attempts as usize)
        })
        .await
        .map_err(BatchError::WandbClient)?
        .map_err(BatchError::Wandb)?
    };
    let plan = Arc::new(plan);
    let mut set = tokio::task::JoinSet::new();
    for i in pending {
        let (t, attempt) = keys[i];
        let job = Job {
            plan: plan.clone(),
            task: t,
            attempt,
            sequence: crate::engine::SequenceId(i as u64 + 1),
            settings: settings.clone(),
            opts: opts.clone(),
            choice: choice.clone(),
            shared: shared.clone(),
            spread: spread.clone(),
            weights: weights.clone(),
            facts: RunFacts {
                model: identity.clone(),
                preset: plan.preset.clone(),
                attempt: Some(attempt),
                limits: Some(plan.limits.clone()),
            },
            model_name: model_name.clone(),
            store: store.clone(),
            progress: progress.clone(),
            appender: appender.clone(),
            pool: pool.clone(),
        };
        let permit_src = limit.clone();
        set.spawn(async move {
            let _permit = permit_src.acquire_owned().await;
            (i, job.run().await)
        });
    }
    let mut results = earlier;
    let mut ran = 0;
    while let Some(r) = set.join_next().await {
        if let Ok((i, result)) = r {
            ran += 1;
            results[i] = Some(result);
            if let Some(w) = &wandb {
                let rows: Vec<super::leaf::Row> =
                    results.iter().flatten().map(super::leaf::row).collect();
                let so_far = super::leaf::summarize(
                    plan.tasks.len(),
                    keys.len(),
                    &rows,
                    began.elapsed().as_secs_f64(),
                );
                w.log(&rows, &so_far);
            }
        }
    }
    if let Some(p) = pool.and_then(Arc::into_inner) {
        p.close().await;
    }
    let all: Vec<AttemptResult> = results.into_iter().flatten().collect();
    store.write_predictions(&all)?;
    let mut header = plan.header.clone();
    if let Some(o) = header.as_object_mut() {
        o.insert("lilypad".into(), env!("CARGO_PKG_VERSION").into());
        o.insert("engine".into(), model_name.clone().into());
        if let Some(id) = identity.as_ref().and_then(|i| serde_json::to_value(i).ok()) {
            o.insert("model".into(), id);
        }
        o.insert("tasks".into(), plan.tasks.len().into());
        o.insert("attempts".into(), attempts.into());
        o.insert("max_attempts".into(), plan.max_attempts.max(1).into());
        o.insert("base_seed".into(), plan.base_seed.into());
        o.insert("parallel".into(), plan.parallel.into());
        if spread.engines() > 1 {
            o.insert("engines".into(), spread.engines().into());
        }
        if let Some(c) = &plan.check {
            o.insert("check".into(), c.command.clone().into());
        }
        if let Some(p) = &plan.preset {
            o.insert("preset".into(), p.clone().into());
        }
        if let Some(t) = &plan.image_template {
            o.insert("image_template".into(), t.clone().into());
        }
        if let Some(w) = &plan.image_workdir {
            o.insert("image_workdir".into(), w.clone().into());
        }
        if let Some(l) = &plan.image_lock {
            o.insert("image_lock".into(), l.display().to_string().into());
        }
        if let Some(r) = &settings.sandbox.image_registry {
            o.insert("image_registry".into(), r.as_str().into());
        }
        // Whose words wrap PatchEval's descriptions: Leaf's (from the user's copy) or ours.
        if let Some(from) = plan.tasks.iter().find_map(|t| match &t.kind {
            TaskKind::PatchEval(p) => Some(p.instruction_from),
            _ => None,
        }) {
            o.insert("patcheval_instruction".into(), from.into());
        }
    }
    let rows: Vec<super::leaf::Row> = all.iter().map(super::leaf::row).collect();
    let leaf = super::leaf::summarize(
        plan.tasks.len(),
        keys.len(),
        &rows,
        began.elapsed().as_secs_f64(),
    );
    super::leaf::write(&plan.out, &rows, &leaf)?;
    let report = super::report::build(&header, &all, Some(&leaf));
    report.write(&plan.out)?;
    // Everything is on disk before the run is finished: a failure here loses no result, and
    // the batch run again logs to the same W&B run.
    if let Some(w) = wandb {
        let (header, rows, leaf) = (header.clone(), rows.clone(), leaf.clone());
        tokio::task::spawn_blocking(move || w.finish(&header, &rows, &leaf))
            .await
            .map_err(BatchError::WandbClient)?
            .map_err(BatchError::Wandb)?;
    }
    progress.finish(&report.totals);
    Ok(BatchSummary {
        attempts: keys.len(),
        skipped,
        ran,
        failed: report.totals.errors,
        passed: report.totals.passed,
        checked: report.totals.checked,
        leaf,
    })
}

/// Replace every task's image by the reference `lock` pins it to; a task whose image is not
/// in the lock (or that names none: a Harbor task builds its own) stops the run, and the
/// error names every such task.
fn pin_images(plan: &mut BatchPlan, lock: &ImageLock) -> Result<(), LockError> {
    let named: Vec<(String, Option<String>)> = plan
        .tasks
        .iter()
        .map(|t| {
            (
                t.instance_id.clone(),
                t.image(plan.image_template.as_deref()),
            )
        })
        .collect();
    let pinned = lock.pin_all(&named)?;
    for (task, image) in plan.tasks.iter_mut().zip(pinned) {
        task.pin_image(image);
    }
    Ok(())
}

/// The settings of each in-process engine of a batch: `replicas` of them (default: one per
/// GPU device llama.cpp lists), never more than `parallel` (an engine no attempt can use would
/// only hold memory), each on its own device or with its share of the CPU threads.
fn engines_settings(
    settings: &Settings,
    replicas: Option<usize>,
    parallel: usize,
) -> Vec<Settings> {
    let gpus = launch::devices::gpu_devices(&settings.engine);
    let count = replicas.unwrap_or(gpus.len()).min(parallel.max(1)).max(1);
    (0..count)
        .map(|i| {
            let mut s = settings.clone();
            s.engine = launch::devices::engine_settings(&settings.engine, &gpus, i, count);
            s
        })
        .collect()
}

/// One attempt to run, with everything it needs moved in.
struct Job {
    plan: Arc<BatchPlan>,
    task: usize,
    attempt: u32,
    sequence: crate::engine::SequenceId,
    settings: Settings,
    opts: SessionOptions,
    choice: EngineChoice,
    /// The batch's engines, when they are shared (in-process or remote).
    shared: Option<Arc<[Arc<crate::engine::TemplatedModel>]>>,
    /// Which of the shared engines each running attempt is on.
    spread: Arc<super::spread::Spread>,
    weights: Option<Arc<super::weights::WeightWatch>>,
    facts: RunFacts,
    model_name: String,
    store: ResultStore,
    progress: Arc<Progress>,
    appender: Arc<Mutex<PredictionsAppender>>,
    pool: Option<Arc<SandboxPool>>,
}

impl Job {
    async fn run(mut self) -> AttemptResult {
        let task = self.plan.tasks[self.task].clone();
        let id = task.instance_id.clone();
        let seed = attempt_seed(self.plan.base_seed, self.attempt);
        self.settings.engine.sampling.seed = Some(seed);
        // The image the task names, as the sandbox runs it: under `--image-registry` when it
        // names no registry.
        let image = task.image(self.plan.image_template.as_deref()).map(|i| {
            match &self.settings.sandbox.image_registry {
                Some(r) => r.apply(&i),
                None => i,
            }
        });
        let choice = engine_for(&self.choice, self.attempt, seed);
        if matches!(choice, EngineChoice::Script(_)) {
            // The attempt's own script, as the session header names it.
            self.facts.model = None;
        }
        // Its engine for every try: the one with the fewest attempts running.
        let placed = self.spread.place();
        let engine = (self.spread.engines() > 1).then_some(placed.index);
        self.progress
            .attempt_started(&id, self.attempt, seed, engine);
        let max_tries = self.plan.max_attempts.max(1);
        let mut tries = 1;
        let result = loop {
            self.store.clear(&id, self.attempt);
            if tries > 1 {
                // From scratch: a fresh sandbox, not the session the last try left.
                self.store.forget_try(&id, self.attempt);
            }
            let result = self
                .try_once(&task, &choice, image.as_deref(), seed, tries, placed.index)
                .await;
            let (status, _, error) = super::leaf::judge(&result);
            if status == super::leaf::Status::Completed || tries >= max_tries {
                break result;
            }
            tracing::warn!(
                instance_id = %id,
                attempt = self.attempt,
                tries,
                error = error.as_deref().unwrap_or_default(),
                "the attempt ended in an error; trying it again"
            );
            tries += 1;
        };
        // Only a recorded result has its line (a result that could not be saved has none).
        // A line that cannot be made now stops the batch when it rewrites the file at its end.
        if self.store.load(&id, self.attempt).is_some() {
            let appended = self.store.prediction_line(&result).and_then(|line| {
                // A thread that panicked while appending left the file as it was.
                let mut a = self
                    .appender
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                Ok(a.append(&line)?)
            });
            if let Err(e) = appended {
                tracing::warn!(error = %e, "a predictions line could not be written");
            }
        }
        self.progress.attempt_finished(&result);
        result
    }

    /// One try of the attempt, recorded.
    async fn try_once(
        &self,
        task: &BatchTask,
        choice: &EngineChoice,
        image: Option<&str>,
        seed: u32,
        tries: u32,
        engine: usize,
    ) -> AttemptResult {
        let started = std::time::Instant::now();
        let outcome = self.attempt(task, choice, image, tries, engine).await;
        let seconds = started.elapsed().as_secs_f64();
        let mut result = AttemptResult {
            instance_id: task.instance_id.clone(),
            attempt: self.attempt,
            seed,
            model_name_or_path: self.model_name.clone(),
            finish_reason: None,
            error: None,
            check: None,
            reward: None,
            verified: false,
            tries,
            steps: 0,
            prompt_tokens: 0,
            generated_tokens: 0,
            context_tokens: 0,
            seconds,
            session_id: None,
            patch_bytes: 0,
            image: image.map(str::to_string),
            image_digest: None,
            engine: (self.spread.engines() > 1).then_some(engine),
        };
        let saved = match outcome {
            Ok(o) => {
                result.finish_reason = Some(o.reason);
                result.check = o.check;
                result.reward = o.reward;
                result.verified = o.verified;
                result.steps = o.figures.steps;
                result.prompt_tokens = o.figures.prompt_tokens;
                result.generated_tokens = o.figures.generated_tokens;
                result.context_tokens = o.figures.context_tokens;
                result.session_id = Some(o.session_id);
                result.patch_bytes = o.patch.len() as u64;
                if o.image.is_some() {
                    result.image = o.image;
                }
                result.image_digest = o.image_digest;
                self.store
                    .save_rollout(&result, o.rollout.as_ref())
                    .and_then(|()| self.store.save(&result, &o.patch, Some(&o.trajectory)))
            }
            Err(e) => {
                result.error = Some(e.to_string());
                self.store.save(&result, b"", None)
            }
        };
        if let Err(e) = saved {
            result.error = Some(format!("the result could not be recorded: {e}"));
        }
        result
    }

    async fn attempt(
        &self,
        task: &BatchTask,
        choice: &EngineChoice,
        image: Option<&str>,
        tries: u32,
        engine: usize,
    ) -> Result<super::Outcome, AttemptError> {
        let mut facts = self.facts.clone();
        let model = match (&self.weights, &self.shared) {
            (Some(w), _) => {
                let (model, identity, _) = w.current(engine).await?;
                facts.model = identity;
                model
            }
            (None, Some(m)) => m
                .get(engine)
                .or_else(|| m.first())
                .cloned()
                .ok_or(AttemptError::NoEngine)?,
            (None, None) => {
                launch::build_model(choice, &self.settings, &self.settings.prompt, |_| {})?
            }
        };
        let place = Place {
            default_repo: &self.plan.default_repo,
            repos_dir: self.plan.repos_dir.as_deref(),
            image_workdir: self.plan.image_workdir.as_deref(),
            run_wall_time: self.plan.run_wall_time,
        };
        let mut settings = self.settings.clone();
        let mut opts = self.opts.clone();
        let prepared = task
            .prepare(image, &place, &mut settings, &mut opts)
            .await?;
        let (progress, id, attempt) = (
            self.progress.clone(),
            task.instance_id.clone(),
            self.attempt,
        );
        let mut observe = move |e: &Event| match e {
            Event::TurnStarted { turn: step } => progress.attempt_step(&id, attempt, *step),
            Event::TurnFinished { figures, .. } => {
                progress.generated(figures.generated_tokens as u64)
            }
            _ => {}
        };
        // An attempt killed mid-way left its session log named in `session.json`: continue it.
        let dir = self.store.dir(&task.instance_id, self.attempt);
        let marker = dir.join("session.json");
        let resume = std::fs::read_to_string(&marker)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v["log"].as_str().map(PathBuf::from))
            .filter(|p| p.is_file());
        let on_log = move |log: &std::path::Path| {
            let text = serde_json::json!({ "log": log }).to_string();
            if let Err(e) = super::results::write_atomic(&marker, text.as_bytes()) {
                tracing::warn!(error = %e, "the attempt's session could not be noted");
            }
        };
        // Routers in front of several servers keep the attempt on one (`X-Session-ID`).
        model.engine().name_sequence(
            self.sequence,
            &format!("{}-{}", task.instance_id, self.attempt),
        );
        let run = TaskRun {
            settings: &settings,
            session: &opts,
            choice,
            task: &task.task,
            repo: &prepared.repo.path,
            check: self.plan.check.as_ref(),
            facts: &facts,
            rollout: self.plan.rollout,
            mode: RunMode::Attempt(AttemptRun {
                instance_id: &task.instance_id,
                number: self.attempt,
                base_seed: self.plan.base_seed,
                sequence: self.sequence,
                verification: &prepared.verification,
                resume: resume.as_deref(),
                on_log: &on_log,
                // The pool holds one pod per attempt: a second try makes its own.
                pool: self.pool.as_deref().filter(|_| tries == 1),
            }),
        };
        Ok(run_task(run, model, EventOutput::Observe(&mut observe)).await?)
    }
}

/// Why an attempt ended without an outcome (recorded as its error).
#[derive(Debug, Error)]
enum AttemptError {
    #[error("the batch has no engine")]
    NoEngine,
    #[error(transparent)]
    Prepare(#[from] PrepareError),
    #[error(transparent)]
    Weights(#[from] super::weights::WeightsError),
    #[error(transparent)]
    Launch(#[from] LaunchError),
    #[error(transparent)]
    Task(#[from] super::TaskError),
}
