//! `convert --type q4_k_m` and the other llama.cpp types: the checkpoint is first converted to
//! BF16 (lossless for a BF16 checkpoint) in a temporary file beside the output, which
//! [`super::quantize`] then quantises into the output; the temporary file is removed whatever
//! happens. The disk needs room for both files while it runs.

use super::quantize::{self, QuantType, QuantizeOptions, QuantizeProgress, QuantizeReport};
use super::{convert, ConvertError, ConvertOptions, ConvertReport, OutType, Progress};
use std::path::PathBuf;

/// The element type `lilypad convert --type` asks for: one the converter writes itself
/// (bf16, f16, f32 and its bit-exact q8_0), or one of llama.cpp's quantisations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Direct(OutType),
    Llama(QuantType),
}

impl Target {
    pub fn from_name(name: &str) -> Option<Self> {
        let lower = name.to_ascii_lowercase();
        Some(match lower.as_str() {
            "bf16" => Self::Direct(OutType::Bf16),
            "f16" => Self::Direct(OutType::F16),
            "f32" => Self::Direct(OutType::F32),
            "q8_0" => Self::Direct(OutType::Q8_0),
            other => Self::Llama(QuantType::from_name(other)?),
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Direct(t) => t.name(),
            Self::Llama(q) => q.name(),
        }
    }
}

/// Both halves' reports.
#[derive(Debug, Clone)]
pub struct QuantizedReport {
    pub convert: ConvertReport,
    pub quantize: QuantizeReport,
}

/// Convert `opts.input` to BF16 in a temporary file, then quantise it to `ty` into
/// `opts.output` (`opts.out_type` is ignored). The MTP choice applies to the conversion.
pub fn convert_quantized(
    opts: &ConvertOptions,
    ty: QuantType,
    imatrix: Option<PathBuf>,
    convert_progress: impl FnMut(&Progress<'_>),
    quantize_progress: impl FnMut(&QuantizeProgress),
) -> Result<QuantizedReport, ConvertError> {
    let dir = quantize::output_dir(&opts.output);
    let intermediate = tempfile::Builder::new()
        .prefix(".lilypad-convert-")
        .suffix(".bf16.gguf.partial")
        .tempfile_in(&dir)
        .map_err(|e| ConvertError::io(&dir, e))?;
    let first = ConvertOptions {
        output: intermediate.path().to_path_buf(),
        out_type: OutType::Bf16,
        ..opts.clone()
    };
    let convert = convert(&first, convert_progress)?;
    let quantize = quantize::quantize(
        &QuantizeOptions {
            input: intermediate.path().to_path_buf(),
            output: opts.output.clone(),
            ty,
            mtp: super::Mtp::Keep,
            imatrix,
            threads: 0,
        },
        quantize_progress,
    )?;
    drop(intermediate);
    Ok(QuantizedReport { convert, quantize })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_by_name() {
        assert_eq!(
            Target::from_name("q8_0"),
            Some(Target::Direct(OutType::Q8_0))
        );
        assert_eq!(
            Target::from_name("BF16"),
            Some(Target::Direct(OutType::Bf16))
        );
        assert_eq!(
            Target::from_name("q4_k_m"),
            Some(Target::Llama(QuantType::Q4KM))
        );
        assert_eq!(Target::from_name("q9"), None);
    }
}
