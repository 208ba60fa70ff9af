//! The in-process llama.cpp engine: one OS thread owns the model and its context; an
//! [`EngineHandle`] sends it jobs and receives results. Loading validates the file with the
//! project's GGUF reader first, so a missing, truncated or foreign file gets a precise error
//! before llama.cpp sees it.

mod memory;
mod sampler;
mod slots;
mod vocab;
mod worker;

pub use vocab::tokenize_texts;

use super::stream::GenerationStream;
use super::traits::Engine;
use super::types::{EngineError, EngineEvent, Figures, GenerateRequest, PromptForm, SequenceId};
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
        events: tokio::sync::mpsc::UnboundedSender<EngineEvent>,
        cancel: Arc<AtomicBool>,
    },
    Logits {
        prompt: PromptInput,
        reply: mpsc::Sender<Result<(Vec<f32>, Figures), EngineError>>,
    },
    Score {
        tokens: Vec<u32>,
        from: usize,
        reply: mpsc::SyncSender<Result<ScoredRows, EngineError>>,
    },
    Tokenize {
        text: String,
        reply: mpsc::Sender<Vec<u32>>,
    },
    Detokenize {
        tokens: Vec<u32>,
        reply: mpsc::Sender<String>,
    },
    Reset {
        reply: mpsc::Sender<Result<(), EngineError>>,
    },
    SaveState {
        path: PathBuf,
        reply: mpsc::Sender<Result<usize, EngineError>>,
    },
    LoadState {
        path: PathBuf,
        reply: mpsc::Sender<Result<usize, EngineError>>,
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

/// A running engine. Dropping it stops the thread after the current job.
pub struct EngineHandle {
    jobs: Option<mpsc::Sender<Job>>,
    thread: Option<std::thread::JoinHandle<()>>,
    model: LoadedModel,
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
        let plan = worker::Plan::new(path, &file, settings);
        drop(file);
        let (jobs_tx, jobs_rx) = mpsc::channel();
        let (ready_tx, ready_rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("lilypad-engine".into())
            .spawn(move || worker::run(plan, Box::new(progress), ready_tx, jobs_rx))
            .map_err(EngineError::Thread)?;
        match ready_rx.recv() {
            Ok(Ok(model)) => Ok(Self {
                jobs: Some(jobs_tx),
                thread: Some(thread),
                model,
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

    /// Start generating; pieces stream in as they are decoded. A request in a sequence other
    /// than the default one runs in that conversation slot: the engine keeps up to
    /// `EngineSettings::conversation_slots` conversations' memory and switches to the
    /// request's first (see `slots`), so interleaved conversations each keep their prefix
    /// reuse. The default sequence is whichever conversation is active.
    pub fn generate(&self, request: GenerateRequest) -> Result<GenerationStream, EngineError> {
        let (tx, rx) = unbounded_channel();
        let cancel = Arc::new(AtomicBool::new(false));
        self.send(Job::Generate {
            request,
            events: tx,
            cancel: cancel.clone(),
        })?;
        Ok(GenerationStream::new(rx, cancel))
    }

    /// Read `prompt` (reusing memory like a generation would) and return the logits for the
    /// next token. For tests and diagnostics.
    pub fn logits(&self, prompt: &str) -> Result<(Vec<f32>, Figures), EngineError> {
        self.logits_of(PromptInput::Text(prompt.to_string()))
    }

    /// Like [`Self::logits`], for a prompt given as token ids.
    pub fn logits_of_tokens(&self, tokens: &[u32]) -> Result<(Vec<f32>, Figures), EngineError> {
        self.logits_of(PromptInput::Tokens(tokens.to_vec()))
    }

    fn logits_of(&self, prompt: PromptInput) -> Result<(Vec<f32>, Figures), EngineError> {
        let (tx, rx) = mpsc::channel();
        self.send(Job::Logits { prompt, reply: tx })?;
        rx.recv().map_err(|_| EngineError::Stopped)?
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

    /// Token ids of `text`, special tokens parsed.
    pub fn tokenize(&self, text: &str) -> Result<Vec<u32>, EngineError> {
        let (tx, rx) = mpsc::channel();
        self.send(Job::Tokenize {
            text: text.to_string(),
            reply: tx,
        })?;
        rx.recv().map_err(|_| EngineError::Stopped)
    }

    /// Text of `tokens` by llama.cpp's own detokeniser (control tokens omitted).
    pub fn detokenize(&self, tokens: &[u32]) -> Result<String, EngineError> {
        let (tx, rx) = mpsc::channel();
        self.send(Job::Detokenize {
            tokens: tokens.to_vec(),
            reply: tx,
        })?;
        rx.recv().map_err(|_| EngineError::Stopped)
    }

    /// Save what is in memory (up to the start of the last prompt's last message) to `path`,
    /// so a resumed session need not read its conversation again. Returns the tokens saved.
    pub fn save_state(&self, path: &Path) -> Result<usize, EngineError> {
        let (tx, rx) = mpsc::channel();
        self.send(Job::SaveState {
            path: path.to_path_buf(),
            reply: tx,
        })?;
        rx.recv().map_err(|_| EngineError::Stopped)?
    }

    /// Load a state saved by [`Self::save_state`] into memory. Returns its token count.
    pub fn load_state(&self, path: &Path) -> Result<usize, EngineError> {
        let (tx, rx) = mpsc::channel();
        self.send(Job::LoadState {
            path: path.to_path_buf(),
            reply: tx,
        })?;
        rx.recv().map_err(|_| EngineError::Stopped)?
    }

    /// Forget everything in memory (the next request reads its prompt in full).
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
        format!("llama.cpp: {name} ({}, {place})", m.architecture)
    }

    fn reads(&self) -> PromptForm {
        PromptForm::Text
    }

    fn chat_template(&self) -> Option<String> {
        self.model.chat_template.clone()
    }

    fn generate(&self, request: GenerateRequest) -> Result<GenerationStream, EngineError> {
        EngineHandle::generate(self, request)
    }

    fn save_state(&self, sequence: SequenceId, path: &Path) -> Result<Option<usize>, EngineError> {
        active_only(sequence, "saving")?;
        EngineHandle::save_state(self, path).map(Some)
    }

    fn load_state(&self, sequence: SequenceId, path: &Path) -> Result<Option<usize>, EngineError> {
        active_only(sequence, "loading")?;
        EngineHandle::load_state(self, path).map(Some)
    }
}

/// Saved states belong to the active conversation; parked slots are not saved to files.
fn active_only(sequence: SequenceId, doing: &'static str) -> Result<(), EngineError> {
    if sequence == SequenceId::DEFAULT {
        Ok(())
    } else {
        Err(EngineError::Sequence { sequence, doing })
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
