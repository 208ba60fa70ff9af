//! The engine thread: loads the model, creates the target context its [`Plan`] describes
//! (`super::plan`), then serves jobs until the handle is dropped. Everything that touches
//! llama.cpp after loading happens here.
//!
//! The loop: sample the next token of every running generation (`super::step`), take new
//! jobs, start the waiting ones that can start (a request starts when its conversation is not
//! generating already and a sequence is free or can be freed by parking an idle one), read
//! the prompts of starting generations (all but the last token; while generations run, at most
//! `prefill_chunk` tokens between two of their steps, so a long prompt joining does not stall
//! them; a prompt read to its end joins the step), then decode one batch with a token of every
//! running generation. Other jobs (logits, scoring, saving, forking) run between two steps.
//! Jobs of one conversation start in the order they came.

use super::heads::{self, HeadStore, Warm};
use super::plan::{target, Plan};
use super::pool::{MemoryReport, Pool};
use super::step::{Active, Outlet, Step};
use super::target::Target;
use super::{sampler, Job, LoadedModel, PromptInput, ScoredRows};
use crate::engine::types::{EngineError, EngineEvent, Figures, Generation, Prompt, StopReason};
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use std::collections::{HashSet, VecDeque};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::time::Instant;

pub(super) fn run(
    plan: Plan,
    mut progress: Box<dyn FnMut(f32) + Send>,
    ready: mpsc::Sender<Result<(LoadedModel, std::sync::Arc<LlamaModel>), EngineError>>,
    jobs: mpsc::Receiver<Job>,
    occupancy: std::sync::Arc<super::Occupancy>,
) {
    let backend = match crate::engine::backend::get() {
        Ok(b) => b,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let mtp = match plan.wants_mtp() {
        Ok(m) => m,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let params = LlamaModelParams::default()
        .with_n_gpu_layers(plan.gpu_layers)
        .with_split_mode(super::placement::split_mode(plan.split_mode))
        .with_load_mtp(mtp)
        .with_progress_callback(move |p| {
            progress(p);
            true
        });
    let params = if plan.devices.is_empty() {
        params
    } else {
        match params.with_devices(&plan.devices) {
            Ok(p) => p,
            Err(e) => {
                let _ = ready.send(Err(EngineError::Llama {
                    doing: "selecting the GPU devices",
                    source: Box::new(e),
                }));
                return;
            }
        }
    };
    // Shared with the handle, which tokenises text prompts on the callers' threads.
    let model = match LlamaModel::load_from_file(backend, &plan.path, &params) {
        Ok(m) => std::sync::Arc::new(m),
        Err(_) => {
            let _ = ready.send(Err(EngineError::Load {
                path: plan.path.clone(),
                arch: plan.architecture.clone(),
            }));
            return;
        }
    };
    let ctx = match target(&model, backend, &plan, mtp) {
        Ok(c) => c.with_streams(plan.streams()),
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let info = LoadedModel {
        path: plan.path.clone(),
        architecture: plan.architecture.clone(),
        parameters: model.n_params(),
        layers: model.n_layer(),
        trained_context: model.n_ctx_train(),
        context: ctx.seq_ctx(),
        vocabulary: model.n_vocab().max(0) as u32,
        // What llama.cpp offloads: nothing without a GPU device, whatever was asked.
        gpu_layers: if super::gpu_offload_available() {
            plan.gpu_layers.min(model.n_layer() + 1)
        } else {
            0
        },
        threads: plan.threads,
        sequences: plan.sequences,
        draft_tokens: ctx.draft_tokens() as u32,
        longest_token_bytes: super::vocab::longest_token_bytes(&model),
        chat_template: plan.chat_template.clone(),
    };
    let gpu_layers = info.gpu_layers;
    if ready.send(Ok((info, model.clone()))).is_err() {
        return;
    }
    let heads = match HeadStore::new(&plan, &model, gpu_layers) {
        Ok(h) => h,
        Err(e) => {
            tracing::warn!("prompt heads are not saved or loaded: {e}");
            None
        }
    };
    let seq_ctx = ctx.seq_ctx() as usize;
    let mut worker = Worker {
        model: &model,
        heads,
        ctx,
        pool: Pool::new(
            plan.sequences as usize,
            plan.batch as usize,
            plan.max_snapshots,
            plan.pinned_snapshots,
            plan.conversation_slots,
            seq_ctx,
            plan.kv_unified,
        ),
        // Room for one token of every sequence, or one generation's token and its draft.
        step: Step::new(
            (plan.sequences as usize).max(1 + plan.draft_tokens as usize),
            plan.snapshot_interval,
        ),
        waiting: VecDeque::new(),
        reading: VecDeque::new(),
        prefill_chunk: plan.prefill_chunk,
        kv_bytes_per_token: plan.kv_bytes_per_token,
        recurrent_bytes: plan.recurrent_bytes,
        occupancy,
    };
    let halted = worker.serve(&jobs);
    // A halt is answered once nothing can be sent any more: the handle's next job fails at
    // once with `EngineError::Stopped`.
    drop(worker);
    drop(jobs);
    drop(halted);
}

/// A job that has not started, with its prompt once tokenised.
struct Waiting {
    job: Job,
    tokens: Option<Vec<LlamaToken>>,
}

impl Waiting {
    /// A job as it arrives, with the tokens its caller already made of its prompt.
    fn new(mut job: Job) -> Self {
        let tokens = match &mut job {
            Job::Generate { tokens, .. } => tokens.take(),
            _ => None,
        };
        Self { job, tokens }
    }
}

/// Whether a job started (it is done, or its generation is running) or must wait.
#[expect(
    clippy::large_enum_variant,
    reason = "lives for one call and is matched at once: boxing would allocate per look"
)]
enum Start {
    Done,
    Wait(Waiting),
}

/// A generation whose prompt is being read, a chunk between two steps of the running ones.
struct Reading {
    i: usize,
    tokens: Vec<LlamaToken>,
    reading: super::memory::Reading,
    out: Outlet,
    sampling: crate::engine::types::SamplingParams,
    grammar: Option<String>,
    report: crate::engine::types::TokenReport,
    max_tokens: usize,
    started: Instant,
    /// What the prompt does about its head (`super::heads`).
    warm: Warm,
}

struct Worker<'m> {
    model: &'m LlamaModel,
    /// Saved prompt heads (`None`: off).
    heads: Option<HeadStore>,
    ctx: Target<'m>,
    pool: Pool,
    step: Step,
    waiting: VecDeque<Waiting>,
    /// Generations reading their prompts, in the order they started.
    reading: VecDeque<Reading>,
    /// Prompt tokens read per step while generations run (`usize::MAX`: no limit).
    prefill_chunk: usize,
    kv_bytes_per_token: u64,
    recurrent_bytes: u64,
    occupancy: std::sync::Arc<super::Occupancy>,
}

impl Worker<'_> {
    /// Run jobs until the handle is dropped, or until a halt (for tests), whose answer is
    /// returned so that it is sent only once the jobs channel is closed.
    fn serve(&mut self, jobs: &mpsc::Receiver<Job>) -> Option<mpsc::Sender<()>> {
        loop {
            self.step.sample(self.model, &mut self.ctx, &mut self.pool);
            let mut halt = None;
            if self.step.is_empty() && self.waiting.is_empty() && self.reading.is_empty() {
                match jobs.recv() {
                    Ok(Job::Halt { done }) => halt = Some(done),
                    Ok(job) => self.waiting.push_back(Waiting::new(job)),
                    Err(_) => return None,
                }
            }
            let mut gone = false;
            while halt.is_none() {
                match jobs.try_recv() {
                    Ok(Job::Halt { done }) => halt = Some(done),
                    Ok(job) => self.waiting.push_back(Waiting::new(job)),
                    Err(mpsc::TryRecvError::Empty) => break,
                    Err(mpsc::TryRecvError::Disconnected) => {
                        gone = true;
                        break;
                    }
                }
            }
            if gone || halt.is_some() {
                // The handle was dropped or halted: nothing more can be asked or awaited. A
                // halt fails the generations in flight, as a failure would; with the handle
                // gone nobody reads them.
                if halt.is_some() {
                    self.step.fail_all(&mut self.pool);
                } else {
                    self.step.cancel_all(&mut self.pool);
                }
                for w in self.waiting.drain(..) {
                    fail(w.job, EngineError::Stopped);
                }
                for r in self.reading.drain(..) {
                    self.pool.set_busy(r.i, false);
                    let _ = r.out.events.send(EngineEvent::Failed(EngineError::Stopped));
                }
                return halt;
            }
            self.start_waiting();
            self.read_prompts();
            self.step.decode(&mut self.ctx, &mut self.pool);
            self.occupancy.write(
                self.pool.used_tokens(),
                self.ctx.n_ctx() as usize,
                self.pool.parked(),
            );
        }
    }

    /// Start every waiting job that can start, in order; a job waits behind an earlier one of
    /// the same conversation. With nothing running, a job that would wait for ever fails.
    fn start_waiting(&mut self) {
        let mut blocked: HashSet<u64> = HashSet::new();
        let mut kept = VecDeque::new();
        while let Some(w) = self.waiting.pop_front() {
            let keys = job_keys(&w.job);
            if keys.iter().any(|k| blocked.contains(k)) {
                kept.push_back(w);
                continue;
            }
            match self.start(w) {
                Start::Done => {}
                Start::Wait(w) => {
                    blocked.extend(keys);
                    kept.push_back(w);
                }
            }
        }
        if self.step.is_empty() && self.reading.is_empty() {
            // Nothing runs that could free a sequence or memory: say so instead of waiting.
            for w in kept.drain(..) {
                fail(w.job, EngineError::NoSequence);
            }
        }
        self.waiting = kept;
    }

    fn start(&mut self, mut w: Waiting) -> Start {
        match w.job {
            Job::Generate { .. } => self.start_generate(w),
            Job::Logits { sequence, .. } => {
                let key = sequence.0;
                let Some(i) = self.place(key) else {
                    return Start::Wait(w);
                };
                let tokens = self.tokens_of(&mut w);
                match self.pool.make_room(&mut self.ctx, i, tokens.len()) {
                    Ok(true) => {}
                    Ok(false) => return Start::Wait(w),
                    Err(e) => {
                        fail(w.job, e);
                        return Start::Done;
                    }
                }
                if let Job::Logits { reply, .. } = w.job {
                    let _ = reply.send(self.logits(i, &tokens));
                }
                Start::Done
            }
            Job::Score {
                ref tokens, from, ..
            } => {
                let Some(i) = self.place(crate::engine::SequenceId::DEFAULT.0) else {
                    return Start::Wait(w);
                };
                let n = tokens.len();
                match self.pool.make_room(&mut self.ctx, i, n) {
                    Ok(true) => {}
                    Ok(false) => return Start::Wait(w),
                    Err(e) => {
                        fail(w.job, e);
                        return Start::Done;
                    }
                }
                if let Job::Score { tokens, reply, .. } = w.job {
                    self.score(i, &tokens, from, &reply);
                }
                Start::Done
            }
            Job::SaveState { sequence, .. } | Job::LoadState { sequence, .. } => {
                let Some(i) = self.place(sequence.0) else {
                    return Start::Wait(w);
                };
                let memory = self.pool.memory(i);
                match w.job {
                    Job::SaveState { path, reply, .. } => {
                        let _ = reply.send(memory.save(&mut self.ctx, &path));
                    }
                    Job::LoadState { path, reply, .. } => {
                        let _ = reply.send(memory.load(&mut self.ctx, &path));
                    }
                    _ => {}
                }
                Start::Done
            }
            Job::Fork { from, to, .. } => match self.pool.fork(&mut self.ctx, from.0, to.0) {
                Ok(None) => Start::Wait(w),
                Ok(Some(n)) => {
                    if let Job::Fork { reply, .. } = w.job {
                        let _ = reply.send(Ok(n));
                    }
                    Start::Done
                }
                Err(e) => {
                    fail(w.job, e);
                    Start::Done
                }
            },
            Job::Detokenize { tokens, reply } => {
                let toks: Vec<LlamaToken> = tokens.iter().map(|&t| LlamaToken(t as i32)).collect();
                let bytes = self.model.vocab().detokenize(&toks, false, false);
                let _ = reply.send(String::from_utf8_lossy(&bytes).into_owned());
                Start::Done
            }
            Job::Pieces { tokens, reply } => {
                let vocab = self.model.vocab();
                let pieces = tokens
                    .iter()
                    .map(|&t| {
                        let mut piece = Vec::new();
                        vocab.token_to_piece_into(LlamaToken(t as i32), &mut piece, true, None);
                        piece
                    })
                    .collect();
                let _ = reply.send(pieces);
                Start::Done
            }
            Job::Reset { reply } => {
                let _ = reply.send(self.pool.reset(&mut self.ctx));
                Start::Done
            }
            Job::Memory { reply } => {
                let _ = reply.send(self.report());
                Start::Done
            }
            Job::Forget { ref sequences } => {
                // After the generations of these conversations that started before it.
                if sequences.iter().any(|s| self.pool.is_busy(s.0)) {
                    return Start::Wait(w);
                }
                for s in sequences {
                    if let Err(e) = self.pool.forget(&mut self.ctx, s.0) {
                        tracing::warn!("cannot forget conversation {}: {e}", s.0);
                    }
                }
                Start::Done
            }
            // Taken by `serve` before any job starts.
            Job::Halt { .. } => Start::Done,
        }
    }

    /// The sequence of conversation `key` when it is not generating and one can be had.
    fn place(&mut self, key: u64) -> Option<usize> {
        if self.pool.is_busy(key) {
            return None;
        }
        match self.pool.acquire(&mut self.ctx, key, &[]) {
            Ok(i) => i,
            Err(e) => {
                tracing::warn!("cannot bring conversation {key} into a sequence: {e}");
                None
            }
        }
    }

    fn tokens_of(&self, w: &mut Waiting) -> Vec<LlamaToken> {
        if let Some(t) = &w.tokens {
            return t.clone();
        }
        let tokens = match &w.job {
            Job::Logits {
                prompt: PromptInput::Text(t),
                ..
            } => tokenize(self.model, t),
            Job::Logits {
                prompt: PromptInput::Tokens(ids),
                ..
            } => ids.iter().map(|&t| LlamaToken(t as i32)).collect(),
            Job::Generate { request, .. } => match &request.prompt {
                Prompt::Tokens(ids) => ids.iter().map(|&t| LlamaToken(t as i32)).collect(),
                _ => match request.text("llama.cpp") {
                    Ok(t) => tokenize(self.model, t),
                    Err(_) => Vec::new(),
                },
            },
            _ => Vec::new(),
        };
        w.tokens = Some(tokens.clone());
        tokens
    }

    fn start_generate(&mut self, mut w: Waiting) -> Start {
        let Job::Generate {
            request,
            events,
            cancel,
            trace,
            ..
        } = &w.job
        else {
            return Start::Done;
        };
        let out = Outlet {
            events: events.clone(),
            cancel: cancel.clone(),
            trace: trace.clone(),
        };
        if out.abandoned() {
            let _ = out.events.send(EngineEvent::Done(Generation::empty(
                StopReason::Cancelled,
                Figures {
                    prompt_tokens: 0,
                    reused_tokens: 0,
                    evaluated_tokens: 0,
                    reuse: crate::engine::Reuse::Fresh,
                    generated_tokens: 0,
                    prefill_seconds: 0.0,
                    decode_seconds: 0.0,
                    dropped_pin: None,
                    draft: None,
                },
            )));
            return Start::Done;
        }
        if let Err(e) = request.text("llama.cpp") {
            if !matches!(request.prompt, Prompt::Tokens(_)) {
                let _ = out.events.send(EngineEvent::Failed(e));
                return Start::Done;
            }
        }
        let (key, max_tokens, pin) = (
            request.sequence.0,
            request.max_tokens as usize,
            request.pin_turn,
        );
        let sampling = request.sampling.clone();
        let grammar = request.tool_grammar.clone();
        let report = request.report;
        let Some(i) = self.place(key) else {
            return Start::Wait(w);
        };
        let tokens = self.tokens_of(&mut w);
        let n_ctx = self.ctx.seq_ctx();
        if tokens.is_empty() || tokens.len() > n_ctx as usize {
            let e = if tokens.is_empty() {
                EngineError::EmptyPrompt
            } else {
                EngineError::PromptTooLong {
                    prompt: tokens.len(),
                    ctx: n_ctx,
                }
            };
            let _ = out.events.send(EngineEvent::Failed(e));
            return Start::Done;
        }
        match self.pool.make_room(&mut self.ctx, i, tokens.len()) {
            Ok(true) => {}
            Ok(false) => return Start::Wait(w),
            Err(e) => {
                let _ = out.events.send(EngineEvent::Failed(e));
                return Start::Done;
            }
        }
        let started = Instant::now();
        let boundary = last_message_start(self.model, &tokens);
        let memory = self.pool.memory(i);
        let warm = heads::start(
            self.heads.as_ref(),
            self.model,
            memory,
            &mut self.ctx,
            &tokens,
        );
        let reading = match memory.begin_prefill(&mut self.ctx, &tokens, boundary, pin) {
            Ok(mut r) => {
                warm.apply(&mut r);
                r
            }
            Err(e) => {
                let _ = out.events.send(EngineEvent::Failed(e));
                return Start::Done;
            }
        };
        // The sequence is this generation's from now on: no other job may use or park it, and
        // its whole prompt's room is kept for it while it is read.
        self.pool.set_busy(i, true);
        self.pool.set_reading(i, tokens.len());
        self.reading.push_back(Reading {
            i,
            tokens,
            reading,
            out,
            sampling,
            grammar,
            report,
            max_tokens,
            started,
            warm,
        });
        Start::Done
    }

    /// Read the prompts of the generations that are starting: with generations running, at
    /// most `prefill_chunk` tokens in all before their next step (oldest first), so that
    /// their time between tokens stays bounded; with none running, whole. A prompt read to
    /// its end joins the step.
    fn read_prompts(&mut self) {
        // Whether generations were running when the reading began: a prompt read to its end
        // joins the step below, so the step's state afterwards does not say.
        let running = !self.step.is_empty();
        let mut budget = match running {
            true => self.prefill_chunk,
            false => usize::MAX,
        };
        let mut read_now = 0;
        let mut kept = VecDeque::new();
        while let Some(mut r) = self.reading.pop_front() {
            if budget == 0 {
                kept.push_back(r);
                continue;
            }
            let res = self.pool.memory(r.i).read_prompt(
                &mut self.ctx,
                &r.tokens,
                &mut r.reading,
                budget,
                &r.out.cancel,
            );
            heads::finish(self.heads.as_ref(), &r.warm, &mut r.reading);
            match res {
                Ok(n) => {
                    budget = budget.saturating_sub(n);
                    read_now += n;
                }
                Err(e) => {
                    self.pool.set_busy(r.i, false);
                    let _ = r.out.events.send(EngineEvent::Failed(e));
                    continue;
                }
            }
            match r.reading.finished() {
                true => self.join(r),
                false => kept.push_back(r),
            }
        }
        self.reading = kept;
        if running {
            self.occupancy.prompt_read_between_steps(read_now);
        }
    }

    /// A generation whose prompt is read: into the step (or done, when it was cancelled).
    fn join(&mut self, r: Reading) {
        self.pool.set_reading(r.i, 0);
        let pre = r.reading.result(&r.tokens);
        let figures = Figures {
            prompt_tokens: r.tokens.len(),
            reused_tokens: pre.reused,
            evaluated_tokens: pre.evaluated,
            reuse: pre.reuse,
            generated_tokens: 0,
            prefill_seconds: r.started.elapsed().as_secs_f64(),
            decode_seconds: 0.0,
            dropped_pin: pre.dropped_pin,
            draft: None,
        };
        if pre.cancelled {
            self.pool.set_busy(r.i, false);
            let _ = r.out.events.send(EngineEvent::Done(Generation::empty(
                StopReason::Cancelled,
                figures,
            )));
            return;
        }
        let mut sampler = sampler::build(self.model, &r.sampling, r.grammar.as_deref());
        if let Some(t) = sampler.trigger().filter(|t| r.tokens.last() == Some(t)) {
            // The prompt ends inside a call already: the grammar starts triggered.
            sampler.accept(t);
        }
        let mut active = Active::new(
            r.i,
            r.max_tokens,
            r.out,
            sampler,
            figures,
            r.started,
            pre.last,
        );
        active.report(
            r.report.logprobs,
            r.report
                .prompt_tokens
                .then(|| r.tokens.iter().map(|t| t.0 as u32).collect()),
        );
        self.step.join(active);
    }

    fn logits(
        &mut self,
        i: usize,
        tokens: &[LlamaToken],
    ) -> Result<(Vec<f32>, Figures), EngineError> {
        let start = Instant::now();
        let never = AtomicBool::new(false);
        let boundary = last_message_start(self.model, tokens);
        let memory = self.pool.memory(i);
        let warm = heads::start(
            self.heads.as_ref(),
            self.model,
            memory,
            &mut self.ctx,
            tokens,
        );
        let mut reading = memory.begin_prefill(&mut self.ctx, tokens, boundary, false)?;
        warm.apply(&mut reading);
        let read = memory.read_prompt(&mut self.ctx, tokens, &mut reading, usize::MAX, &never);
        heads::finish(self.heads.as_ref(), &warm, &mut reading);
        read?;
        let pre = reading.result(tokens);
        memory.read_last(&mut self.ctx, pre.last)?;
        let figures = Figures {
            prompt_tokens: tokens.len(),
            reused_tokens: pre.reused,
            evaluated_tokens: pre.evaluated,
            reuse: pre.reuse,
            generated_tokens: 0,
            prefill_seconds: start.elapsed().as_secs_f64(),
            decode_seconds: 0.0,
            dropped_pin: pre.dropped_pin,
            draft: None,
        };
        Ok((self.ctx.get_logits_ith(0).to_vec(), figures))
    }

    fn score(
        &mut self,
        i: usize,
        tokens: &[u32],
        from: usize,
        reply: &mpsc::SyncSender<Result<ScoredRows, EngineError>>,
    ) {
        let toks: Vec<LlamaToken> = tokens.iter().map(|&t| LlamaToken(t as i32)).collect();
        let n_vocab = self.model.n_vocab().max(0) as usize;
        let sent = self
            .pool
            .memory(i)
            .score(&mut self.ctx, &toks, from, |start, rows, logits| {
                let batch = ScoredRows {
                    start,
                    rows,
                    n_vocab,
                    logits,
                };
                reply.send(Ok(batch)).is_ok()
            });
        if let Err(e) = sent {
            let _ = reply.send(Err(e));
        }
    }

    fn report(&self) -> MemoryReport {
        MemoryReport {
            context_tokens: self.ctx.n_ctx() as usize,
            used_tokens: self.pool.used_tokens(),
            sequences: self.pool.sequences(),
            kv_bytes_per_token: self.kv_bytes_per_token,
            recurrent_bytes_per_sequence: self.recurrent_bytes,
            conversations: self.pool.conversations(&self.ctx),
        }
    }
}

/// The conversations a job belongs to (none for jobs that do not touch memory).
fn job_keys(job: &Job) -> Vec<u64> {
    match job {
        Job::Generate { request, .. } => vec![request.sequence.0],
        Job::Logits { sequence, .. }
        | Job::SaveState { sequence, .. }
        | Job::LoadState { sequence, .. } => vec![sequence.0],
        Job::Score { .. } => vec![crate::engine::SequenceId::DEFAULT.0],
        Job::Fork { from, to, .. } => vec![from.0, to.0],
        Job::Forget { sequences } => sequences.iter().map(|s| s.0).collect(),
        Job::Detokenize { .. }
        | Job::Pieces { .. }
        | Job::Reset { .. }
        | Job::Memory { .. }
        | Job::Halt { .. } => Vec::new(),
    }
}

/// Answer a job with an error.
fn fail(job: Job, e: EngineError) {
    match job {
        Job::Generate { events, .. } => {
            let _ = events.send(EngineEvent::Failed(e));
        }
        Job::Logits { reply, .. } => {
            let _ = reply.send(Err(e));
        }
        Job::Score { reply, .. } => {
            let _ = reply.send(Err(e));
        }
        Job::SaveState { reply, .. } | Job::LoadState { reply, .. } | Job::Fork { reply, .. } => {
            let _ = reply.send(Err(e));
        }
        Job::Reset { reply } => {
            let _ = reply.send(Err(e));
        }
        // These never wait, or answer no one.
        Job::Detokenize { .. }
        | Job::Pieces { .. }
        | Job::Memory { .. }
        | Job::Halt { .. }
        | Job::Forget { .. } => {}
    }
}

/// Where the prompt's last chat message starts: the last `<|im_start|>` token, if the
/// vocabulary has one. A turn boundary that survives re-rendering of the turn after it.
fn last_message_start(model: &LlamaModel, tokens: &[LlamaToken]) -> Option<usize> {
    let marker = model.vocab().tokenize(b"<|im_start|>", false, true);
    let [marker] = marker.as_slice() else {
        return None;
    };
    tokens.iter().rposition(|t| t == marker).filter(|&i| i > 0)
}

fn tokenize(model: &LlamaModel, text: &str) -> Vec<LlamaToken> {
    super::vocab::tokenize(model, text)
}
