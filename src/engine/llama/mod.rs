//! The in-process llama.cpp engine: one OS thread owns the model and its context; an
//! [`EngineHandle`] sends it jobs and receives results. Loading validates the file with the
//! project's GGUF reader first, so a missing, truncated or foreign file gets a precise error
//! before llama.cpp sees it.
//!
//! The context holds several sequences (`EngineSettings::sequences`): requests in different
//! [`SequenceId`]s generate together, one token of each per decode step (`step`), each
//! conversation in its own sequence with its own prefix reuse and snapshots (`pool`,
//! `memory`); [`EngineHandle::fork`] copies one conversation into another without reading.

mod heads;
mod memory;
mod occupancy;
mod placement;
mod plan;
mod pool;
mod sampler;
mod step;
mod target;
mod vocab;
mod worker;

pub use heads::saved_heads;
pub use occupancy::{Occupancy, OccupancyReading};
pub use pool::{MemoryReport, SequenceMemory};
pub use vocab::tokenize_texts;

use super::stream::GenerationStream;
use super::traits::Engine;
use super::types::{
    EngineError, EngineEvent, Figures, GenerateRequest, Prompt, PromptForm, SequenceId,
};
use crate::engine::EngineSettings;
use crate::gguf::GgufFile;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc};
use tokio::sync::mpsc::unbounded_channel;

pub use super::backend::{gpu_offload_available, gpu_offload_compiled};

/// Attention-cache bytes per token of context at F16, from the file's metadata (hybrid models
/// only cache their full-attention layers; the recurrent state is fixed-size).
pub fn kv_bytes_per_token(file: &GgufFile) -> u64 {
    let layers = file.arch_u64("block_count").unwrap_or(0);
    let interval = file.arch_u64("full_attention_interval").unwrap_or(1).max(1);
    let heads = file.arch_u64("attention.head_count_kv").unwrap_or(0);
    let k = file.arch_u64("attention.key_length").unwrap_or(0);
    let v = file.arch_u64("attention.value_length").unwrap_or(0);
    layers / interval * heads * (k + v) * 2
}

/// Recurrent-state bytes of one sequence (F32), from the file's metadata: for each Gated
/// DeltaNet layer a convolution state of `(conv_kernel - 1) x (inner + 2 x groups x state)`
/// and a delta-rule state of `state x inner` values, as llama.cpp sizes them (`n_embd_r`,
/// `n_embd_s`). About 50 MiB for FrogNano; 0 for a model without recurrent layers.
pub fn recurrent_bytes_per_sequence(file: &GgufFile) -> u64 {
    let Some(interval) = file.arch_u64("full_attention_interval").filter(|&i| i > 1) else {
        return 0;
    };
    let nextn = file.arch_u64("nextn_predict_layers").unwrap_or(0);
    let layers = file
        .arch_u64("block_count")
        .unwrap_or(0)
        .saturating_sub(nextn);
    let recurrent = layers - layers / interval;
    let conv = file
        .arch_u64("ssm.conv_kernel")
        .unwrap_or(0)
        .saturating_sub(1);
    let state = file.arch_u64("ssm.state_size").unwrap_or(0);
    let groups = file.arch_u64("ssm.group_count").unwrap_or(0);
    let inner = file.arch_u64("ssm.inner_size").unwrap_or(0);
    recurrent * (conv * (inner + 2 * groups * state) + state * inner) * 4
}

/// What was loaded, for status lines and `doctor`.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedModel {
    pub path: PathBuf,
    pub architecture: String,
    pub parameters: u64,
    pub layers: u32,
    pub trained_context: u32,
    pub context: u32,
    pub vocabulary: u32,
    pub gpu_layers: u32,
    pub threads: u32,
    /// Sequences the context holds (requests that can generate together).
    pub sequences: u32,
    /// Tokens the MTP layer drafts per step; 0 when decoding does not draft.
    pub draft_tokens: u32,
    /// Bytes of the vocabulary's longest token (special tokens written out): the most text
    /// one token can stand for, which bounds a prompt's token count from below by its size.
    pub longest_token_bytes: u32,
    pub chat_template: Option<String>,
}

/// A prompt as text (tokenised by the engine, special tokens parsed) or as token ids.
pub(crate) enum PromptInput {
    Text(String),
    Tokens(Vec<u32>),
}

pub(crate) enum Job {
    Generate {
        request: GenerateRequest,
        /// The prompt's tokens when the caller tokenised it (a text prompt, on the caller's
        /// thread: see [`EngineHandle::generate`]).
        tokens: Option<Vec<llama_cpp_2::token::LlamaToken>>,
        events: tokio::sync::mpsc::UnboundedSender<EngineEvent>,
        cancel: Arc<AtomicBool>,
        trace: Option<mpsc::Sender<Vec<f32>>>,
    },
    Logits {
        sequence: SequenceId,
        prompt: PromptInput,
        reply: mpsc::Sender<Result<(Vec<f32>, Figures), EngineError>>,
    },
    Score {
        tokens: Vec<u32>,
        from: usize,
        reply: mpsc::SyncSender<Result<ScoredRows, EngineError>>,
    },
    Detokenize {
        tokens: Vec<u32>,
        reply: mpsc::Sender<String>,
    },
    /// Each token's bytes, special tokens written out.
    Pieces {
        tokens: Vec<u32>,
        reply: mpsc::Sender<Vec<Vec<u8>>>,
    },
    Reset {
        reply: mpsc::Sender<Result<(), EngineError>>,
    },
    SaveState {
        sequence: SequenceId,
        path: PathBuf,
        reply: mpsc::Sender<Result<usize, EngineError>>,
    },
    LoadState {
        sequence: SequenceId,
        path: PathBuf,
        reply: mpsc::Sender<Result<usize, EngineError>>,
    },
    Fork {
        from: SequenceId,
        to: SequenceId,
        reply: mpsc::Sender<Result<usize, EngineError>>,
    },
    Memory {
        reply: mpsc::Sender<MemoryReport>,
    },
    /// Drop these conversations (their memory in a sequence, or parked), each once it is not
    /// generating; nothing answers.
    Forget {
        sequences: Vec<SequenceId>,
    },
    /// Stop the thread as if it had failed (tests of what survives an engine failure).
    Halt {
        done: mpsc::Sender<()>,
    },
}

/// Next-token logits of consecutive positions, from [`EngineHandle::score`]: row `i` is the
/// distribution after the token at position `start + i`, `n_vocab` floats per row.
#[derive(Debug, Clone)]
pub struct ScoredRows {
    pub start: usize,
    pub rows: usize,
    pub n_vocab: usize,
    pub logits: Vec<f32>,
}

impl ScoredRows {
    /// The logits after position `start + i`.
    pub fn row(&self, i: usize) -> &[f32] {
        &self.logits[i * self.n_vocab..(i + 1) * self.n_vocab]
    }
}

/// The batches of a [`EngineHandle::score`] job as they are computed; at most two wait in the
/// channel, so memory stays at a few batches of logits however long the text.
pub struct ScoreStream {
    rx: mpsc::Receiver<Result<ScoredRows, EngineError>>,
}

impl Iterator for ScoreStream {
    type Item = Result<ScoredRows, EngineError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.rx.recv().ok()
    }
}

/// Refuse a prompt of `bytes` bytes that cannot fit `model`'s context whatever its tokens, from
/// its size alone: on the caller's thread, before it joins the engine's queue, so a pasted 20 MB
/// log is turned away at once instead of being tokenised on the engine thread while every
/// other request waits. One token stands for at most `longest_token_bytes` bytes, and NFC (applied
/// before tokenising) makes text at most 3 times shorter in bytes (three Hangul jamo, 9 bytes,
/// compose into one 3-byte syllable), so a prompt has at least `bytes / (3 * longest)` tokens.
/// Prompts under that bound are counted exactly by the engine as before.
pub(crate) fn fits(bytes: usize, model: &LoadedModel) -> Result<(), EngineError> {
    let per_token = 3 * (model.longest_token_bytes.max(1) as usize);
    let at_least = bytes / per_token;
    if at_least > model.context as usize {
        return Err(EngineError::PromptTooLarge {
            bytes,
            at_least,
            ctx: model.context,
        });
    }
    Ok(())
}

/// Text prompts from this size on are tokenised on the caller's thread (see
/// `EngineHandle::start_generation`): tokenising 8 KiB takes a few milliseconds.
const TOKENIZE_ON_CALLER_BYTES: usize = 8 << 10;

/// A running engine. Dropping it stops the thread after the current job.
pub struct EngineHandle {
    jobs: Option<mpsc::Sender<Job>>,
    occupancy: std::sync::Arc<Occupancy>,
    thread: Option<std::thread::JoinHandle<()>>,
    model: LoadedModel,
    /// The model itself, shared with the engine's thread, for tokenising on the caller's.
    llama: Arc<llama_cpp_2::model::LlamaModel>,
}

impl EngineHandle {
    /// Load `path` on a new engine thread; `progress` receives load progress from 0 to 1.
    pub fn load(
        path: &Path,
        settings: &EngineSettings,
        progress: impl FnMut(f32) + Send + 'static,
    ) -> Result<Self, EngineError> {
        // Precise errors for missing, truncated and non-GGUF files come from our own reader.
        let file = GgufFile::open(path)?;
        let plan = plan::Plan::new(path, &file, settings);
        drop(file);
        let (jobs_tx, jobs_rx) = mpsc::channel();
        let (ready_tx, ready_rx) = mpsc::channel();
        let occupancy = std::sync::Arc::new(Occupancy::default());
        let written = occupancy.clone();
        let thread = std::thread::Builder::new()
            .name("lilypad-engine".into())
            .spawn(move || worker::run(plan, Box::new(progress), ready_tx, jobs_rx, written))
            .map_err(EngineError::Thread)?;
        match ready_rx.recv() {
            Ok(Ok((model, llama))) => Ok(Self {
                jobs: Some(jobs_tx),
                occupancy,
                thread: Some(thread),
                model,
                llama,
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => {
                let _ = thread.join();
                Err(EngineError::Stopped)
            }
        }
    }

    pub fn model(&self) -> &LoadedModel {
        &self.model
    }

    fn send(&self, job: Job) -> Result<(), EngineError> {
        self.jobs
            .as_ref()
            .ok_or(EngineError::Stopped)?
            .send(job)
            .map_err(|_| EngineError::Stopped)
    }

    /// Start generating; pieces stream in as they are decoded. Each [`SequenceId`] is a
    /// conversation with its own memory (prefix reuse, snapshots); requests in different
    /// conversations generate together, one token of each per decode step, up to
    /// `EngineSettings::sequences` at once (more wait for a sequence to finish). A
    /// conversation that has no sequence is brought in, parking the least recently used idle
    /// one in host memory; up to `EngineSettings::conversation_slots` are kept.
    pub fn generate(&self, request: GenerateRequest) -> Result<GenerationStream, EngineError> {
        self.start_generation(request, None)
    }

    /// Like [`Self::generate`], also sending the logits every token was sampled from (one
    /// row of the vocabulary per token, the first after the prompt). For tests and
    /// diagnostics.
    pub fn generate_traced(
        &self,
        request: GenerateRequest,
    ) -> Result<(GenerationStream, mpsc::Receiver<Vec<f32>>), EngineError> {
        let (tx, rx) = mpsc::channel();
        Ok((self.start_generation(request, Some(tx))?, rx))
    }

    fn start_generation(
        &self,
        request: GenerateRequest,
        trace: Option<mpsc::Sender<Vec<f32>>>,
    ) -> Result<GenerationStream, EngineError> {
        // A long text prompt is tokenised here, on the caller's thread, and refused here when
        // it cannot fit: it never holds up the engine's thread, where every running generation
        // waits for whatever it does. A short one is left to the engine (a few milliseconds),
        // so that requests sent together start together.
        let tokens = match &request.prompt {
            Prompt::Text(text) if text.len() < TOKENIZE_ON_CALLER_BYTES => {
                fits(text.len(), &self.model)?;
                None
            }
            Prompt::Text(text) => {
                fits(text.len(), &self.model)?;
                let tokens = vocab::tokenize(&self.llama, text);
                if tokens.len() > self.model.context as usize {
                    // Refused as the engine refuses it: the stream's one event.
                    let (tx, rx) = unbounded_channel();
                    let _ = tx.send(EngineEvent::Failed(EngineError::PromptTooLong {
                        prompt: tokens.len(),
                        ctx: self.model.context,
                    }));
                    return Ok(GenerationStream::new(rx, Arc::new(AtomicBool::new(false))));
                }
                Some(tokens)
            }
            Prompt::Tokens(ids) => {
                self.in_vocabulary(ids)?;
                None
            }
            Prompt::Chat { .. } => None,
        };
        let (tx, rx) = unbounded_channel();
        let cancel = Arc::new(AtomicBool::new(false));
        self.send(Job::Generate {
            request,
            tokens,
            events: tx,
            cancel: cancel.clone(),
            trace,
        })?;
        Ok(GenerationStream::new(rx, cancel))
    }

    /// Read `prompt` in the default sequence (reusing memory like a generation would) and
    /// return the logits for the next token. For tests and diagnostics.
    pub fn logits(&self, prompt: &str) -> Result<(Vec<f32>, Figures), EngineError> {
        self.logits_of(SequenceId::DEFAULT, PromptInput::Text(prompt.to_string()))
    }

    /// Like [`Self::logits`], for a prompt given as token ids.
    pub fn logits_of_tokens(&self, tokens: &[u32]) -> Result<(Vec<f32>, Figures), EngineError> {
        self.in_vocabulary(tokens)?;
        self.logits_of(SequenceId::DEFAULT, PromptInput::Tokens(tokens.to_vec()))
    }

    /// Like [`Self::logits`], in conversation `sequence`: reads the prompt into that
    /// sequence's memory (e.g. once, before forking it with [`Self::fork`]).
    pub fn logits_in(
        &self,
        sequence: SequenceId,
        prompt: &str,
    ) -> Result<(Vec<f32>, Figures), EngineError> {
        self.logits_of(sequence, PromptInput::Text(prompt.to_string()))
    }

    fn logits_of(
        &self,
        sequence: SequenceId,
        prompt: PromptInput,
    ) -> Result<(Vec<f32>, Figures), EngineError> {
        let (tx, rx) = mpsc::channel();
        self.send(Job::Logits {
            sequence,
            prompt,
            reply: tx,
        })?;
        rx.recv().map_err(|_| EngineError::Stopped)?
    }

    /// Make conversation `to` a copy of `from` without reading anything again: the attention
    /// cells of the unified cache are shared (`copy_kv_cache_seq`), the recurrent state is
    /// copied, and the tokens and snapshots go along, so `to` continues exactly as `from`
    /// would. Waits while either is generating. Returns the tokens `to` holds.
    pub fn fork(&self, from: SequenceId, to: SequenceId) -> Result<usize, EngineError> {
        let (tx, rx) = mpsc::channel();
        self.send(Job::Fork {
            from,
            to,
            reply: tx,
        })?;
        rx.recv().map_err(|_| EngineError::Stopped)?
    }

    /// How full memory is now, without asking the engine thread (see [`Occupancy`]).
    pub fn occupancy(&self) -> OccupancyReading {
        self.occupancy.read()
    }

    /// Where memory goes: the attention cache (shared, or one per sequence) and each
    /// conversation's share, with llama.cpp's own sizes of every sequence state.
    pub fn memory(&self) -> Result<MemoryReport, EngineError> {
        let (tx, rx) = mpsc::channel();
        self.send(Job::Memory { reply: tx })?;
        rx.recv().map_err(|_| EngineError::Stopped)
    }

    /// Read `tokens` from empty memory and stream the next-token logits of every position from
    /// `from` on, batch by batch (`EngineSettings::batch` positions at a time). The tokens must
    /// fit the context. Memory is empty afterwards. Dropping the stream stops the job after
    /// the current batch.
    pub fn score(&self, tokens: &[u32], from: usize) -> Result<ScoreStream, EngineError> {
        let (tx, rx) = mpsc::sync_channel(2);
        self.send(Job::Score {
            tokens: tokens.to_vec(),
            from,
            reply: tx,
        })?;
        Ok(ScoreStream { rx })
    }

    /// Token ids of `text`, special tokens parsed: on the caller's thread (the vocabulary is
    /// read-only, and llama.cpp's tokeniser may run beside a decode).
    pub fn tokenize(&self, text: &str) -> Result<Vec<u32>, EngineError> {
        if self.jobs.is_none() {
            return Err(EngineError::Stopped);
        }
        Ok(vocab::tokenize(&self.llama, text)
            .iter()
            .map(|t| t.0 as u32)
            .collect())
    }

    /// Text of `tokens` by llama.cpp's own detokeniser (control tokens omitted).
    pub fn detokenize(&self, tokens: &[u32]) -> Result<String, EngineError> {
        self.in_vocabulary(tokens)?;
        let (tx, rx) = mpsc::channel();
        self.send(Job::Detokenize {
            tokens: tokens.to_vec(),
            reply: tx,
        })?;
        rx.recv().map_err(|_| EngineError::Stopped)
    }

    /// Each token's bytes as the vocabulary has them, special tokens written out (their
    /// concatenation is the text the tokens stand for).
    pub fn token_bytes(&self, tokens: &[u32]) -> Result<Vec<Vec<u8>>, EngineError> {
        self.in_vocabulary(tokens)?;
        let (tx, rx) = mpsc::channel();
        self.send(Job::Pieces {
            tokens: tokens.to_vec(),
            reply: tx,
        })?;
        rx.recv().map_err(|_| EngineError::Stopped)
    }

    /// An error naming the first id that is not a token of the vocabulary (llama.cpp would
    /// abort the process on it).
    fn in_vocabulary(&self, tokens: &[u32]) -> Result<(), EngineError> {
        let n = self.model.vocabulary;
        match tokens.iter().find(|&&t| t >= n) {
            Some(&id) => Err(EngineError::NotAToken { id, vocabulary: n }),
            None => Ok(()),
        }
    }

    /// Save what the default sequence holds (up to the start of the last prompt's last
    /// message) to `path`, so a resumed session need not read its conversation again.
    /// Returns the tokens saved.
    pub fn save_state(&self, path: &Path) -> Result<usize, EngineError> {
        self.save_state_of(SequenceId::DEFAULT, path)
    }

    /// Like [`Self::save_state`], for conversation `sequence`.
    pub fn save_state_of(&self, sequence: SequenceId, path: &Path) -> Result<usize, EngineError> {
        let (tx, rx) = mpsc::channel();
        self.send(Job::SaveState {
            sequence,
            path: path.to_path_buf(),
            reply: tx,
        })?;
        rx.recv().map_err(|_| EngineError::Stopped)?
    }

    /// Load a state saved by [`Self::save_state`] into the default sequence. Returns its
    /// token count.
    pub fn load_state(&self, path: &Path) -> Result<usize, EngineError> {
        self.load_state_of(SequenceId::DEFAULT, path)
    }

    /// Like [`Self::load_state`], into conversation `sequence`.
    pub fn load_state_of(&self, sequence: SequenceId, path: &Path) -> Result<usize, EngineError> {
        let (tx, rx) = mpsc::channel();
        self.send(Job::LoadState {
            sequence,
            path: path.to_path_buf(),
            reply: tx,
        })?;
        rx.recv().map_err(|_| EngineError::Stopped)?
    }

    /// Tests only: stop the engine thread as a failure would (generations in progress are
    /// cancelled, waiting jobs fail). Returns once it has stopped: every later call fails with
    /// [`EngineError::Stopped`]. `lilypad serve` reaches it only through its test-only fault
    /// route (see `crate::serve`).
    #[doc(hidden)]
    pub fn halt_for_tests(&self) {
        let (tx, rx) = mpsc::channel();
        if self.send(Job::Halt { done: tx }).is_ok() {
            // Ends when the worker drops `done`, after closing its jobs channel.
            let _ = rx.recv();
        }
    }

    /// Forget every conversation that is not generating (the next request reads its prompt
    /// in full).
    pub fn reset(&self) -> Result<(), EngineError> {
        let (tx, rx) = mpsc::channel();
        self.send(Job::Reset { reply: tx })?;
        rx.recv().map_err(|_| EngineError::Stopped)?
    }
}

impl Engine for EngineHandle {
    fn describe(&self) -> String {
        let m = &self.model;
        let name = m
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let place = if m.gpu_layers > 0 {
            format!("{} layers on GPU", m.gpu_layers)
        } else {
            "CPU".to_string()
        };
        let mtp = if m.draft_tokens > 0 {
            format!(", MTP drafts {}", m.draft_tokens)
        } else {
            String::new()
        };
        format!("llama.cpp: {name} ({}, {place}{mtp})", m.architecture)
    }

    fn reads(&self) -> PromptForm {
        PromptForm::Text
    }

    fn chat_template(&self) -> Option<String> {
        self.model.chat_template.clone()
    }

    fn reads_tokens(&self) -> bool {
        true
    }

    fn vocabulary(&self) -> Option<u32> {
        Some(self.model.vocabulary)
    }

    fn generate(&self, request: GenerateRequest) -> Result<GenerationStream, EngineError> {
        EngineHandle::generate(self, request)
    }

    fn tokenize(&self, text: &str) -> Result<Option<Vec<u32>>, EngineError> {
        EngineHandle::tokenize(self, text).map(Some)
    }

    fn token_bytes(&self, tokens: &[u32]) -> Result<Option<Vec<Vec<u8>>>, EngineError> {
        EngineHandle::token_bytes(self, tokens).map(Some)
    }

    fn save_state(&self, sequence: SequenceId, path: &Path) -> Result<Option<usize>, EngineError> {
        self.save_state_of(sequence, path).map(Some)
    }

    fn load_state(&self, sequence: SequenceId, path: &Path) -> Result<Option<usize>, EngineError> {
        self.load_state_of(sequence, path).map(Some)
    }

    fn share_prompt(
        &self,
        from: SequenceId,
        prompt: &Prompt,
        copies: &[SequenceId],
    ) -> Result<Option<Figures>, EngineError> {
        if matches!(prompt, Prompt::Chat { .. }) {
            return Ok(None);
        }
        // Read as a generation of one greedy token, not as a logits job: a prompt is then
        // read a chunk at a time between the steps of the generations running (a logits job
        // reads it whole, holding them up), a long one is tokenised here, and memory ends
        // holding the prompt with a snapshot before its last token, where each copy's first
        // request comes back to (it reads that one token).
        let mut read =
            GenerateRequest::new(prompt.clone(), 1, crate::engine::SamplingParams::greedy());
        read.sequence = from;
        let (_, g) = self.generate(read)?.wait()?;
        for &to in copies.iter().filter(|&&to| to != from) {
            self.fork(from, to)?;
        }
        Ok(Some(Figures {
            generated_tokens: 0,
            decode_seconds: 0.0,
            draft: None,
            ..g.figures
        }))
    }

    fn forget(&self, sequences: &[SequenceId]) {
        // Answered by no one: a stopped engine holds nothing to forget.
        let _ = self.send(Job::Forget {
            sequences: sequences.to_vec(),
        });
    }
}

impl Drop for EngineHandle {
    fn drop(&mut self) {
        self.jobs.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod fits_tests {
    use super::*;

    fn model(context: u32, longest: u32) -> LoadedModel {
        LoadedModel {
            path: PathBuf::new(),
            architecture: String::new(),
            parameters: 0,
            layers: 0,
            trained_context: context,
            context,
            vocabulary: 0,
            gpu_layers: 0,
            threads: 1,
            sequences: 1,
            draft_tokens: 0,
            longest_token_bytes: longest,
            chat_template: None,
        }
    }

    #[test]
    fn only_prompts_no_tokenisation_could_fit_are_refused() {
        // 4,096 tokens of at most 16 bytes, NFC shrinking text at most threefold: 196,608
        // bytes could still be 4,096 tokens; one more token's worth cannot.
        let m = model(4096, 16);
        assert!(fits(4096 * 48, &m).is_ok());
        assert!(fits(4096 * 48 + 47, &m).is_ok());
        match fits(4097 * 48, &m) {
            Err(EngineError::PromptTooLarge { at_least, ctx, .. }) => {
                assert_eq!((at_least, ctx), (4097, 4096))
            }
            other => panic!("{other:?}"),
        }
        // A vocabulary not measured (0) counts one byte per token, never refusing less.
        assert!(fits(3 * 4096, &model(4096, 0)).is_ok());
    }
}
