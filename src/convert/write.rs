//! The conversion run: read and check everything ([`super::config`], [`super::checkpoint`],
//! [`super::mapping`], [`super::vocab`]), then stream the tensors into a temporary file in the
//! output's directory, one chunk of whole rows at a time, and rename it over the output only
//! when every byte is written and synced. Any error drops the temporary file, so a failed run
//! never leaves a partial GGUF behind.

use super::checkpoint::Checkpoint;
use super::config::ModelConfig;
use super::mapping::{plan, Plan};
use super::transform::encode;
use super::{vocab, ConvertError, ConvertOptions};
use crate::gguf::{GgufWriter, TensorSpec, Value};
use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::Instant;

/// About 4 MiB of f32 per chunk: big enough to stream fast, small enough to be invisible.
const CHUNK_ELEMENTS: u64 = 1 << 20;

/// Where the conversion stands, reported after every chunk.
#[derive(Debug, Clone)]
pub struct Progress<'a> {
    /// 0-based index of the tensor being written, and the number of tensors.
    pub index: usize,
    pub total: usize,
    pub name: &'a str,
    /// Rows of this tensor written so far, out of `rows`.
    pub done: u64,
    pub rows: u64,
}

/// What a conversion produced.
#[derive(Debug, Clone)]
pub struct ConvertReport {
    pub output: PathBuf,
    pub tensors: usize,
    /// Tensors of the checkpoint left out, with the reason.
    pub dropped: Vec<(String, &'static str)>,
    /// Tensor count per GGUF type name.
    pub types: BTreeMap<String, usize>,
    pub vocabulary: usize,
    pub defined_tokens: usize,
    pub chat_template: bool,
    pub input_bytes: u64,
    pub output_bytes: u64,
    pub seconds: f64,
}

/// Convert `opts.input` into `opts.output`, calling `progress` as tensors are written.
pub fn convert(
    opts: &ConvertOptions,
    mut progress: impl FnMut(&Progress<'_>),
) -> Result<ConvertReport, ConvertError> {
    let started = Instant::now();
    let cfg = ModelConfig::load(&opts.input)?;
    let ckpt = Checkpoint::open(&opts.input)?;
    let Plan { tensors, dropped } = plan(&cfg, &ckpt, opts.out_type, opts.mtp)?;
    let vocab = vocab::load(&opts.input, cfg.vocab_size, &cfg.root, &cfg.merged)?;

    let name = opts
        .input
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "converted model".into());
    let mut w = GgufWriter::new();
    cfg.write_metadata(&mut w, &name, opts.mtp);
    w.set("general.file_type", Value::U32(opts.out_type.file_type()))
        .set("general.quantization_version", Value::U32(2));
    vocab.write(&mut w);
    let out_path = &opts.output;
    let write_err = |source| ConvertError::Write {
        path: out_path.clone(),
        source,
    };
    let mut types = BTreeMap::new();
    for t in &tensors {
        w.add_tensor(TensorSpec::new(t.gguf_name.clone(), &t.dims, t.ty))
            .map_err(write_err)?;
        *types.entry(t.ty.name()).or_insert(0) += 1;
    }

    let dir = match out_path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let temp = tempfile::Builder::new()
        .prefix(".lilypad-convert-")
        .suffix(".gguf.partial")
        .tempfile_in(&dir)
        .map_err(|e| ConvertError::io(&dir, e))?;
    let mut stream = w
        .begin(BufWriter::with_capacity(1 << 20, temp.as_file()))
        .map_err(write_err)?;
    let mut buf = Vec::new();
    for (index, t) in tensors.iter().enumerate() {
        let src = ckpt
            .get(&t.source)
            .ok_or_else(|| ConvertError::MissingTensor {
                name: t.source.clone(),
            })?;
        let rows = t.transform.rows;
        let step = (CHUNK_ELEMENTS / t.transform.cols.max(1)).max(1);
        stream.start(&t.gguf_name).map_err(write_err)?;
        let mut done = 0;
        progress(&Progress {
            index,
            total: tensors.len(),
            name: &t.gguf_name,
            done,
            rows,
        });
        while done < rows {
            let n = step.min(rows - done);
            t.transform.rows_of(&ckpt, src, done, n, &mut buf)?;
            stream.chunk(&encode(t.ty, &buf)).map_err(write_err)?;
            done += n;
            progress(&Progress {
                index,
                total: tensors.len(),
                name: &t.gguf_name,
                done,
                rows,
            });
        }
        stream.end().map_err(write_err)?;
        ckpt.release(src);
    }
    let mut out = stream.finish().map_err(write_err)?;
    out.flush().map_err(|e| ConvertError::io(out_path, e))?;
    drop(out);
    temp.as_file()
        .sync_all()
        .map_err(|e| ConvertError::io(temp.path(), e))?;
    temp.persist(out_path)
        .map_err(|e| ConvertError::io(out_path, e.error))?;
    let output_bytes = std::fs::metadata(out_path)
        .map(|m| m.len())
        .map_err(|e| ConvertError::io(out_path, e))?;
    Ok(ConvertReport {
        output: out_path.clone(),
        tensors: tensors.len(),
        dropped,
        types,
        vocabulary: vocab.tokens.len(),
        defined_tokens: vocab.defined,
        chat_template: vocab.chat_template.is_some(),
        input_bytes: ckpt.total_bytes(),
        output_bytes,
        seconds: started.elapsed().as_secs_f64(),
    })
}
