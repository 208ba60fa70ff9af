//! Quantising a BF16/F16/F32 GGUF file with llama.cpp's own quantizer (`llama_model_quantize`,
//! the code behind `llama-quantize`): the K-quants and the legacy 32-block types. Which tensor
//! gets which type is llama.cpp's decision for the file's architecture (for `qwen35` the
//! embedding, shared with the output, is kept at Q6_K, some `attn_v`/`ffn_down` layers get more
//! bits in the `_M` mixes, a tensor whose rows are not a multiple of the 256-element K-quant
//! block falls back to a 32-block type): Lilypad adds no rules of its own.
//!
//! This module owns the typed front: the list of offered types, checks on the input (readable
//! GGUF, nothing already quantised), the MTP block kept or dropped, the optional importance
//! matrix, writing through a temporary file renamed only when complete, and progress. The
//! unsafe calls into llama.cpp live in [`ffi`]. Not owned here: the Hugging Face conversion
//! (`super::write`), running the result (`engine`).

mod ffi;
mod imatrix;

use super::Mtp;
use crate::gguf::{GgmlType, GgufError, GgufFile};
use std::path::{Path, PathBuf};
use std::time::Instant;
use thiserror::Error;

pub use ffi::LlamaQuantizeError;
pub use imatrix::{read_imatrix, ImatrixEntry, ImatrixError};

/// A quantisation type as `llama-quantize` names it, with its `LLAMA_FTYPE_*` number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QuantType {
    Q8_0,
    Q6K,
    Q5KM,
    Q5KS,
    Q5_1,
    Q5_0,
    Q4KM,
    Q4KS,
    Q4_1,
    Q4_0,
    Q3KL,
    Q3KM,
    Q3KS,
    Q2K,
    Iq4Xs,
    Iq4Nl,
    /// Plain F16/BF16 copies (no quantisation); useful to change the half type.
    F16,
    Bf16,
}

impl QuantType {
    /// Every type offered, largest first.
    pub const ALL: [QuantType; 18] = [
        Self::Bf16,
        Self::F16,
        Self::Q8_0,
        Self::Q6K,
        Self::Q5KM,
        Self::Q5KS,
        Self::Q5_1,
        Self::Q5_0,
        Self::Q4KM,
        Self::Q4KS,
        Self::Q4_1,
        Self::Q4_0,
        Self::Iq4Xs,
        Self::Iq4Nl,
        Self::Q3KL,
        Self::Q3KM,
        Self::Q3KS,
        Self::Q2K,
    ];

    /// The name `llama-quantize` and `lilypad` accept (lower case).
    pub fn name(self) -> &'static str {
        match self {
            Self::Q8_0 => "q8_0",
            Self::Q6K => "q6_k",
            Self::Q5KM => "q5_k_m",
            Self::Q5KS => "q5_k_s",
            Self::Q5_1 => "q5_1",
            Self::Q5_0 => "q5_0",
            Self::Q4KM => "q4_k_m",
            Self::Q4KS => "q4_k_s",
            Self::Q4_1 => "q4_1",
            Self::Q4_0 => "q4_0",
            Self::Q3KL => "q3_k_l",
            Self::Q3KM => "q3_k_m",
            Self::Q3KS => "q3_k_s",
            Self::Q2K => "q2_k",
            Self::Iq4Xs => "iq4_xs",
            Self::Iq4Nl => "iq4_nl",
            Self::F16 => "f16",
            Self::Bf16 => "bf16",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        let lower = name.to_ascii_lowercase();
        Self::ALL.into_iter().find(|t| t.name() == lower)
    }

    /// `general.file_type`, `LLAMA_FTYPE_MOSTLY_*` in llama.h.
    pub fn file_type(self) -> u32 {
        match self {
            Self::F16 => 1,
            Self::Q4_0 => 2,
            Self::Q4_1 => 3,
            Self::Q8_0 => 7,
            Self::Q5_0 => 8,
            Self::Q5_1 => 9,
            Self::Q2K => 10,
            Self::Q3KS => 11,
            Self::Q3KM => 12,
            Self::Q3KL => 13,
            Self::Q4KS => 14,
            Self::Q4KM => 15,
            Self::Q5KS => 16,
            Self::Q5KM => 17,
            Self::Q6K => 18,
            Self::Iq4Nl => 25,
            Self::Iq4Xs => 30,
            Self::Bf16 => 32,
        }
    }
}

/// What to quantise, and how.
#[derive(Debug, Clone)]
pub struct QuantizeOptions {
    pub input: PathBuf,
    pub output: PathBuf,
    pub ty: QuantType,
    pub mtp: Mtp,
    /// An importance matrix (`llama-imatrix` output, GGUF or legacy `.dat`).
    pub imatrix: Option<PathBuf>,
    /// Worker threads; 0 means one per core.
    pub threads: u32,
}

/// Where quantisation stands: llama.cpp reports each tensor as it starts it.
#[derive(Debug, Clone)]
pub struct QuantizeProgress {
    /// 1-based index of the tensor being quantised, and the number of tensors.
    pub index: usize,
    pub total: usize,
    pub name: String,
}

/// What a quantisation produced.
#[derive(Debug, Clone)]
pub struct QuantizeReport {
    pub output: PathBuf,
    pub ty: QuantType,
    pub input_bytes: u64,
    pub output_bytes: u64,
    /// Tensor count per GGUF type name in the output.
    pub types: std::collections::BTreeMap<String, usize>,
    /// Whether the output keeps an MTP block.
    pub mtp: bool,
    pub imatrix_entries: usize,
    pub seconds: f64,
}

/// Why a quantisation failed.
#[derive(Debug, Error)]
pub enum QuantizeError {
    #[error("reading {}: {source}", path.display())]
    Input { path: PathBuf, source: GgufError },
    #[error("{}: tensor {tensor} is already {ty}; quantise from the bf16 or f16 file instead", path.display())]
    AlreadyQuantized {
        path: PathBuf,
        tensor: String,
        ty: String,
    },
    #[error("{}: the file has no MTP block to drop", path.display())]
    NoMtp { path: PathBuf },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("importance matrix {}: {source}", path.display())]
    Imatrix {
        path: PathBuf,
        #[source]
        source: ImatrixError,
    },
    #[error("a path contains a NUL byte: {}", path.display())]
    Path { path: PathBuf },
    #[error("llama.cpp could not quantise {} to {ty}: {source}", input.display())]
    Llama {
        input: PathBuf,
        ty: &'static str,
        #[source]
        source: LlamaQuantizeError,
    },
    #[error("reading the output {}: {source}", path.display())]
    Output { path: PathBuf, source: GgufError },
}

/// Quantise `opts.input` into `opts.output` with llama.cpp, calling `progress` per tensor.
pub fn quantize(
    opts: &QuantizeOptions,
    progress: impl FnMut(&QuantizeProgress),
) -> Result<QuantizeReport, QuantizeError> {
    let started = Instant::now();
    let input = GgufFile::open(&opts.input).map_err(|source| QuantizeError::Input {
        path: opts.input.clone(),
        source,
    })?;
    let allowed = [GgmlType::F32, GgmlType::F16, GgmlType::BF16];
    if let Some(t) = input.tensors.iter().find(|t| !allowed.contains(&t.ty)) {
        return Err(QuantizeError::AlreadyQuantized {
            path: opts.input.clone(),
            tensor: t.name.clone(),
            ty: t.ty.name(),
        });
    }
    let nextn = input.arch_u64("nextn_predict_layers").unwrap_or(0);
    let blocks = input.arch_u64("block_count").unwrap_or(0);
    // Dropping the MTP block: llama.cpp prunes its layer (the last one) and renumbers nothing
    // before it; the key that announces it is set to 0 so the loader expects no MTP tensors.
    let prune = match opts.mtp {
        Mtp::Keep => None,
        Mtp::Drop if nextn > 0 && blocks > 0 => Some((blocks - 1) as i32),
        Mtp::Drop => {
            return Err(QuantizeError::NoMtp {
                path: opts.input.clone(),
            })
        }
    };
    let arch = input.architecture().unwrap_or("").to_string();
    let input_bytes = input.file_size;
    drop(input);
    let imatrix = match &opts.imatrix {
        Some(p) => read_imatrix(p)?,
        None => Vec::new(),
    };

    let dir = output_dir(&opts.output);
    let temp = tempfile::Builder::new()
        .prefix(".lilypad-quantize-")
        .suffix(".gguf.partial")
        .tempfile_in(&dir)
        .map_err(|source| QuantizeError::Io {
            path: dir.clone(),
            source,
        })?;
    let threads = if opts.threads > 0 {
        opts.threads
    } else {
        std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1)
    };
    let call = ffi::Call {
        input: &opts.input,
        output: temp.path(),
        file_type: opts.ty.file_type(),
        threads,
        prune,
        nextn_key: prune.map(|_| format!("{arch}.nextn_predict_layers")),
        imatrix: &imatrix,
    };
    ffi::quantize(&call, progress).map_err(|e| match e {
        ffi::FfiError::Nul(path) => QuantizeError::Path { path },
        ffi::FfiError::Failed(source) => QuantizeError::Llama {
            input: opts.input.clone(),
            ty: opts.ty.name(),
            source,
        },
    })?;
    temp.as_file()
        .sync_all()
        .map_err(|source| QuantizeError::Io {
            path: temp.path().to_path_buf(),
            source,
        })?;
    temp.persist(&opts.output).map_err(|e| QuantizeError::Io {
        path: opts.output.clone(),
        source: e.error,
    })?;
    let out = GgufFile::open(&opts.output).map_err(|source| QuantizeError::Output {
        path: opts.output.clone(),
        source,
    })?;
    let mut types = std::collections::BTreeMap::new();
    for t in &out.tensors {
        *types.entry(t.ty.name()).or_insert(0) += 1;
    }
    Ok(QuantizeReport {
        output: opts.output.clone(),
        ty: opts.ty,
        input_bytes,
        output_bytes: out.file_size,
        types,
        mtp: out.arch_u64("nextn_predict_layers").unwrap_or(0) > 0,
        imatrix_entries: imatrix.len(),
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// The directory a file is written in (`.` for a bare file name).
pub(crate) fn output_dir(output: &Path) -> PathBuf {
    match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_file_types_are_distinct() {
        let mut seen = std::collections::BTreeSet::new();
        for t in QuantType::ALL {
            assert_eq!(QuantType::from_name(t.name()), Some(t));
            assert!(seen.insert(t.file_type()), "{}", t.name());
        }
        assert_eq!(QuantType::from_name("Q4_K_M"), Some(QuantType::Q4KM));
        assert_eq!(QuantType::Q4KM.file_type(), 15);
        assert_eq!(QuantType::from_name("q4_k"), None);
    }
}
