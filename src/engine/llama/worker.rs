//! The engine thread: loads the model, creates the context, then serves jobs one at a time
//! until the handle is dropped. Everything that touches llama.cpp after loading happens here.

use super::memory::Memory;
use super::slots::Slots;
use super::{sampler, Job, LoadedModel, PromptInput, ScoredRows};
use crate::engine::types::{EngineError, EngineEvent, Figures, Generation, SequenceId, StopReason};
use crate::engine::EngineSettings;
use crate::engine::Utf8Stream;
use crate::gguf::GgufFile;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Instant;

/// Everything the thread needs, resolved before it starts.
pub(super) struct Plan {
    path: PathBuf,
    architecture: String,
    chat_template: Option<String>,
    ctx: u32,
    gpu_layers: u32,
    threads: u32,
    batch: u32,
    ubatch: u32,
    max_snapshots: usize,
    snapshot_interval: usize,
    conversation_slots: usize,
    /// Attention-cache bytes per token, for the out-of-memory message.
    kv_bytes_per_token: u64,
}

impl Plan {
    pub(super) fn new(path: &std::path::Path, file: &GgufFile, s: &EngineSettings) -> Self {
        let threads = if s.threads > 0 {
            s.threads
        } else {
            std::thread::available_parallelism()
                .map(|n| n.get().min(16) as u32)
                .unwrap_or(4)
        };
        let gpu_layers = match s.gpu_layers {
            Some(n) => n,
            None if super::gpu_offload_compiled() => 999,
            None => 0,
        };
        Self {
            path: path.to_path_buf(),
            architecture: file.architecture().unwrap_or("unknown").to_string(),
            chat_template: file.chat_template().map(str::to_string),
            ctx: s.ctx,
            gpu_layers,
            threads,
            batch: s.batch.max(1),
            ubatch: s.ubatch.clamp(1, s.batch.max(1)),
            max_snapshots: s.max_snapshots,
            snapshot_interval: s.snapshot_interval as usize,
            conversation_slots: s.conversation_slots.max(1) as usize,
            kv_bytes_per_token: super::kv_bytes_per_token(file),
        }
    }
}

pub(super) fn run(
    plan: Plan,
    mut progress: Box<dyn FnMut(f32) + Send>,
    ready: mpsc::Sender<Result<LoadedModel, EngineError>>,
    jobs: mpsc::Receiver<Job>,
) {
    let backend = match crate::engine::backend::get() {
        Ok(b) => b,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let params = LlamaModelParams::default()
        .with_n_gpu_layers(plan.gpu_layers)
        .with_progress_callback(move |p| {
            progress(p);
            true
        });
    let model = match LlamaModel::load_from_file(backend, &plan.path, &params) {
        Ok(m) => m,
        Err(_) => {
            let _ = ready.send(Err(EngineError::Load {
                path: plan.path.clone(),
                arch: plan.architecture.clone(),
            }));
            return;
        }
    };
    let ctx_params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(plan.ctx))
        .with_n_batch(plan.batch)
        .with_n_ubatch(plan.ubatch)
        .with_n_threads(plan.threads as i32)
        .with_n_threads_batch(plan.threads as i32);
    let mut ctx = match model.new_context(backend, ctx_params) {
        Ok(c) => c,
        Err(_) => {
            let kv_mib = plan.kv_bytes_per_token * u64::from(plan.ctx) / (1 << 20);
            let _ = ready.send(Err(EngineError::ContextMemory {
                ctx: plan.ctx,
                kv_mib,
                suggest: (plan.ctx / 2).max(2048),
            }));
            return;
        }
    };
    let info = LoadedModel {
        path: plan.path.clone(),
        architecture: plan.architecture.clone(),
        parameters: model.n_params(),
        layers: model.n_layer(),
        trained_context: model.n_ctx_train(),
        context: ctx.n_ctx(),
        vocabulary: model.n_vocab().max(0) as u32,
        gpu_layers: plan.gpu_layers.min(model.n_layer() + 1),
        threads: plan.threads,
        chat_template: plan.chat_template.clone(),
    };
    if ready.send(Ok(info)).is_err() {
        return;
    }
    let mut memory = Memory::new(plan.batch as usize, plan.max_snapshots);
    let mut slots = Slots::new(plan.conversation_slots - 1);
    while let Ok(job) = jobs.recv() {
        match job {
            Job::Generate {
                request,
                events,
                cancel,
            } => {
                // The default sequence is whichever conversation is active, so an engine that
                // serves one conversation never switches.
                let key = request.sequence.0;
                if key != SequenceId::DEFAULT.0 {
                    if let Err(e) = slots.switch(&mut ctx, &mut memory, key) {
                        let _ = events.send(EngineEvent::Failed(e));
                        continue;
                    }
                }
                let run = Run {
                    request: &request,
                    events: &events,
                    cancel: &cancel,
                    snapshot_interval: plan.snapshot_interval,
                };
                let ev = match generate(&model, &mut ctx, &mut memory, run) {
                    Ok(g) => EngineEvent::Done(g),
                    Err(e) => EngineEvent::Failed(e),
                };
                let _ = events.send(ev);
            }
            Job::Logits { prompt, reply } => {
                let _ = reply.send(logits(&model, &mut ctx, &mut memory, &prompt));
            }
            Job::Score {
                tokens,
                from,
                reply,
            } => {
                let toks: Vec<LlamaToken> = tokens.iter().map(|&t| LlamaToken(t as i32)).collect();
                let n_vocab = model.n_vocab().max(0) as usize;
                let sent = memory.score(&mut ctx, &toks, from, |start, rows, logits| {
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
            Job::Tokenize { text, reply } => {
                let _ = reply.send(tokenize(&model, &text).iter().map(|t| t.0 as u32).collect());
            }
            Job::Detokenize { tokens, reply } => {
                let toks: Vec<LlamaToken> = tokens.iter().map(|&t| LlamaToken(t as i32)).collect();
                let bytes = model.vocab().detokenize(&toks, false, false);
                let _ = reply.send(String::from_utf8_lossy(&bytes).into_owned());
            }
            Job::SaveState { path, reply } => {
                let _ = reply.send(memory.save(&mut ctx, &path));
            }
            Job::LoadState { path, reply } => {
                let _ = reply.send(memory.load(&mut ctx, &path));
            }
            Job::Reset { reply } => {
                let _ = reply.send(memory.clear(&mut ctx));
            }
        }
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
    model.vocab().tokenize(text.as_bytes(), false, true)
}

/// The bytes a token stands for as generated text: control tokens are empty.
fn piece(model: &LlamaModel, tok: LlamaToken) -> Vec<u8> {
    model.vocab().token_to_piece(tok, false, None)
}

fn logits(
    model: &LlamaModel,
    ctx: &mut LlamaContext<'_>,
    memory: &mut Memory,
    prompt: &PromptInput,
) -> Result<(Vec<f32>, Figures), EngineError> {
    let tokens = match prompt {
        PromptInput::Text(t) => tokenize(model, t),
        PromptInput::Tokens(ids) => ids.iter().map(|&t| LlamaToken(t as i32)).collect(),
    };
    let start = Instant::now();
    let never = AtomicBool::new(false);
    let pre = memory.prefill(ctx, &tokens, last_message_start(model, &tokens), &never)?;
    let figures = Figures {
        prompt_tokens: tokens.len(),
        reused_tokens: pre.reused,
        evaluated_tokens: pre.evaluated,
        reuse: pre.reuse,
        generated_tokens: 0,
        prefill_seconds: start.elapsed().as_secs_f64(),
        decode_seconds: 0.0,
    };
    Ok((ctx.get_logits_ith(0).to_vec(), figures))
}

/// One generation job's inputs.
struct Run<'a> {
    request: &'a crate::engine::GenerateRequest,
    events: &'a tokio::sync::mpsc::UnboundedSender<EngineEvent>,
    cancel: &'a AtomicBool,
    snapshot_interval: usize,
}

fn generate(
    model: &LlamaModel,
    ctx: &mut LlamaContext<'_>,
    memory: &mut Memory,
    run: Run<'_>,
) -> Result<Generation, EngineError> {
    let Run {
        request,
        events,
        cancel,
        snapshot_interval,
    } = run;
    let tokens = tokenize(model, request.text("llama.cpp")?);
    let started = Instant::now();
    let pre = memory.prefill(ctx, &tokens, last_message_start(model, &tokens), cancel)?;
    let mut figures = Figures {
        prompt_tokens: tokens.len(),
        reused_tokens: pre.reused,
        evaluated_tokens: pre.evaluated,
        reuse: pre.reuse,
        generated_tokens: 0,
        prefill_seconds: started.elapsed().as_secs_f64(),
        decode_seconds: 0.0,
    };
    if pre.cancelled {
        return Ok(Generation {
            stop: StopReason::Cancelled,
            figures,
            tokens: Vec::new(),
        });
    }
    let decode_start = Instant::now();
    let mut sampler = sampler::build(model, &request.sampling, request.tool_grammar.as_deref());
    if let Some(t) = sampler.trigger().filter(|t| tokens.last() == Some(t)) {
        // The prompt ends inside a call already: the grammar starts triggered.
        sampler.accept(t);
    }
    let vocab = model.vocab();
    let mut text = Utf8Stream::new();
    let mut generated = Vec::new();
    let mut idx = 0;
    let n_ctx = ctx.n_ctx() as usize;
    let stop = loop {
        if cancel.load(Ordering::Relaxed) {
            break StopReason::Cancelled;
        }
        let tok = sampler.sample(ctx, idx);
        if vocab.is_eog(tok) {
            break StopReason::EndOfGeneration;
        }
        generated.push(tok.0 as u32);
        let s = text.push(&piece(model, tok));
        if !s.is_empty() && events.send(EngineEvent::Piece(s)).is_err() {
            // Nobody is listening any more: treat as a cancellation.
            break StopReason::Cancelled;
        }
        if generated.len() >= request.max_tokens as usize {
            break StopReason::TokenCap;
        }
        if memory.len() + 1 >= n_ctx {
            break StopReason::ContextFull;
        }
        memory.push(ctx, tok)?;
        if snapshot_interval > 0 && generated.len().is_multiple_of(snapshot_interval) {
            memory.snapshot(ctx)?;
        }
        idx = 0;
    };
    let rest = text.finish();
    if !rest.is_empty() {
        let _ = events.send(EngineEvent::Piece(rest));
    }
    figures.generated_tokens = generated.len();
    figures.decode_seconds = decode_start.elapsed().as_secs_f64();
    Ok(Generation {
        stop,
        figures,
        tokens: generated,
    })
}
