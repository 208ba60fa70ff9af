//! `lilypad convert`: a Hugging Face Qwen3.5 checkpoint (config.json, safetensors, tokenizer.json)
//! to a GGUF file of architecture `qwen35` that llama.cpp loads, without Python.
//!
//! The pipeline, one file per step:
//! - [`config`]: config.json (with `text_config` merged into the root), validated into
//!   [`config::ModelConfig`], and the `qwen35.*` metadata it implies.
//! - [`checkpoint`]: the safetensors files (single or sharded), memory-mapped; tensors are read
//!   row by row as f32, whatever their stored type (BF16, F16, F32).
//! - [`mapping`]: every checkpoint tensor to its GGUF name, expected shape, output type and
//!   transform (or to "dropped": vision tower, MTP block under `--no-mtp`).
//! - [`transform`]: the value-head reordering, `-exp(A_log)`, `+1` on norms, and the element
//!   encodings; pure functions with their own unit tests.
//! - [`vocab`]: tokenizer.json and tokenizer_config.json to the GGUF `gpt2` tokenizer keys.
//! - [`write`]: the streaming writer: one chunk of rows at a time into a temporary file next to
//!   the output, renamed only when complete.
//! - [`quantize`]: llama.cpp's own quantizer (`llama_model_quantize`) on a BF16/F16 GGUF, for
//!   the K-quants and the other llama.cpp types; [`quantized`] chains it after a BF16
//!   conversion for `convert --type q4_k_m` and the like.
//!
//! Invariants: nothing is written unless the whole plan (every tensor's name, shape and type)
//! checked out first; the output path only ever holds a complete file; peak memory is one chunk
//! of rows (a few MiB) plus the metadata, never a whole tensor of the checkpoint.
//!
//! Not owned here: the GGUF byte layout ([`crate::gguf`]) and running the result (`engine`).
//! docs/convert.md describes every transform and decision.

pub mod checkpoint;
pub mod config;
pub mod mapping;
pub mod quantize;
pub mod quantized;
pub mod transform;
pub mod vocab;
pub mod write;

use std::path::{Path, PathBuf};
use thiserror::Error;

pub use quantized::{convert_quantized, QuantizedReport, Target};
pub use write::{convert, ConvertReport, Progress};

/// The element type of the converted weight matrices (vectors and norms are always F32).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutType {
    F32,
    F16,
    Bf16,
    Q8_0,
}

impl OutType {
    /// `general.file_type` as llama.cpp numbers it (`LLAMA_FTYPE_*`).
    pub fn file_type(self) -> u32 {
        match self {
            Self::F32 => 0,
            Self::F16 => 1,
            Self::Q8_0 => 7,
            Self::Bf16 => 32,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::F16 => "f16",
            Self::Bf16 => "bf16",
            Self::Q8_0 => "q8_0",
        }
    }
}

/// Whether the multi-token-prediction block is converted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mtp {
    /// Keep it as the last block (`blk.{n_layer}.nextn.*`, `nextn_predict_layers = 1`).
    Keep,
    /// Leave it out: a smaller file that cannot do self-speculative decoding.
    Drop,
}

/// What to convert, and how.
#[derive(Debug, Clone)]
pub struct ConvertOptions {
    /// The checkpoint directory (config.json, *.safetensors, tokenizer.json...).
    pub input: PathBuf,
    /// The GGUF file to write.
    pub output: PathBuf,
    pub out_type: OutType,
    pub mtp: Mtp,
}

/// Why a conversion failed. Every variant names the file or tensor concerned.
#[derive(Debug, Error)]
pub enum ConvertError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not valid JSON: {source}")]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{path}: {what}")]
    Config { path: PathBuf, what: String },
    #[error("{path}: unsupported architecture {found:?} (supported: {supported})")]
    UnknownArchitecture {
        path: PathBuf,
        found: String,
        supported: String,
    },
    #[error("{path} is not a valid safetensors file: {what}")]
    Safetensors { path: PathBuf, what: String },
    #[error("tensor {name}: {what}")]
    Tensor { name: String, what: String },
    #[error("tensor {name} has shape {found:?}, expected {expected:?}")]
    Shape {
        name: String,
        found: Vec<u64>,
        expected: Vec<u64>,
    },
    #[error("tensor {name} is missing from the checkpoint")]
    MissingTensor { name: String },
    #[error("tensor {name} is not part of a Qwen3.5 checkpoint (no GGUF name for it)")]
    UnknownTensor { name: String },
    #[error("{path}: {what}")]
    Tokenizer { path: PathBuf, what: String },
    #[error(transparent)]
    Quantize(#[from] quantize::QuantizeError),
    #[error("writing {path}: {source}")]
    Write {
        path: PathBuf,
        source: crate::gguf::GgufWriteError,
    },
}

impl ConvertError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        Self::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Read and parse a JSON file.
pub(crate) fn read_json(path: &Path) -> Result<serde_json::Value, ConvertError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConvertError::io(path, e))?;
    serde_json::from_str(&text).map_err(|source| ConvertError::Json {
        path: path.to_path_buf(),
        source,
    })
}
