//! `lilypad convert DIR -o OUT.gguf --type bf16|f16|q8_0|q4_k_m|... [--no-mtp]`: a Hugging Face
//! Qwen3.5 checkpoint to GGUF. A thin shell over [`crate::convert`]: parses arguments, draws
//! progress bars on stderr (an overall one and one per tensor; hidden when stderr is not a
//! terminal) and prints a summary. The llama.cpp types go through a BF16 file first.

use super::quantize::{print_quantize_report, quantize_bar, type_names};
use crate::convert::{self, ConvertOptions, Mtp, OutType, Target};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn parse_target(s: &str) -> Result<Target, String> {
    Target::from_name(s).ok_or_else(|| format!("unknown type {s:?}; one of f32, {}", type_names()))
}

#[derive(Debug, clap::Args)]
pub struct ConvertArgs {
    /// Checkpoint directory (config.json, *.safetensors, tokenizer.json, tokenizer_config.json)
    pub dir: PathBuf,
    /// The GGUF file to write (replaced only once the conversion is complete)
    #[arg(short, long)]
    pub output: PathBuf,
    /// Element type of the weight matrices: bf16, f16, f32 and q8_0 are written directly;
    /// q6_k, q5_k_m, q4_k_m, q4_0 and the other llama.cpp types are quantised by llama.cpp
    /// from a temporary bf16 file (norms and small vectors stay F32)
    #[arg(long = "type", value_parser = parse_target, default_value = "bf16")]
    pub ty: Target,
    /// Leave out the multi-token-prediction block (smaller; no self-speculative decoding)
    #[arg(long)]
    pub no_mtp: bool,
    /// Importance matrix for the llama.cpp types (as `llama-imatrix` writes it)
    #[arg(long)]
    pub imatrix: Option<PathBuf>,
}

pub(super) fn run(args: &ConvertArgs) -> anyhow::Result<ExitCode> {
    if args.imatrix.is_some() && matches!(args.ty, Target::Direct(_)) {
        anyhow::bail!("--imatrix applies only to the llama.cpp types (q6_k, q4_k_m, ...)");
    }
    let mtp = if args.no_mtp { Mtp::Drop } else { Mtp::Keep };
    let checked = convert_checked(&args.dir, &args.output, args.ty, mtp, args.imatrix.clone())?;
    Ok(match checked {
        Vocabulary::Same => ExitCode::SUCCESS,
        Vocabulary::Differs => ExitCode::FAILURE,
    })
}

/// How the converted vocabulary compared with the checkpoint's tokenizer.json.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Vocabulary {
    Same,
    /// llama.cpp tokenises some texts differently (the report is printed).
    Differs,
}

/// Convert the checkpoint in `dir` to `output` as `ty`, with progress bars and a summary on
/// stderr, then check the vocabulary (the output stays either way; the caller decides).
pub(super) fn convert_checked(
    dir: &Path,
    output: &Path,
    ty: Target,
    mtp: Mtp,
    imatrix: Option<PathBuf>,
) -> anyhow::Result<Vocabulary> {
    let opts = ConvertOptions {
        input: dir.to_path_buf(),
        output: output.to_path_buf(),
        out_type: match ty {
            Target::Direct(t) => t,
            Target::Llama(_) => OutType::Bf16,
        },
        mtp,
    };
    let bars = MultiProgress::new();
    let overall = bars.add(ProgressBar::hidden());
    overall.set_style(
        ProgressStyle::with_template("{prefix:>10} [{bar:30}] {pos}/{len} tensors, {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    overall.set_prefix("converting");
    let tensor = bars.add(ProgressBar::hidden());
    tensor.set_style(
        ProgressStyle::with_template("{prefix:>10} [{bar:30}] {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    tensor.set_prefix("tensor");
    let mut current = usize::MAX;
    let on_convert = |p: &convert::Progress<'_>| {
        if p.index != current {
            current = p.index;
            overall.set_length(p.total as u64);
            overall.set_position(p.index as u64);
            tensor.set_length(p.rows);
            tensor.set_message(p.name.to_string());
        }
        tensor.set_position(p.done);
        if p.done == p.rows {
            overall.set_position(p.index as u64 + 1);
        }
    };
    let (report, quantized) = match ty {
        Target::Direct(_) => (convert::convert(&opts, on_convert), None),
        Target::Llama(q) => {
            let qbar = bars.add(quantize_bar());
            let r = convert::convert_quantized(&opts, q, imatrix, on_convert, |p| {
                tensor.finish_and_clear();
                overall.finish_and_clear();
                qbar.set_length(p.total as u64);
                qbar.set_position(p.index.saturating_sub(1) as u64);
                qbar.set_message(p.name.clone());
            });
            qbar.finish_and_clear();
            match r {
                Ok(r) => (Ok(r.convert), Some(r.quantize)),
                Err(e) => (Err(e), None),
            }
        }
    };
    tensor.finish_and_clear();
    overall.finish_and_clear();
    let report = report?;
    if let Some(q) = &quantized {
        eprintln!(
            "converted to bf16 ({:.2} GB) in {:.1} s, then quantised by llama.cpp",
            report.output_bytes as f64 / 1e9,
            report.seconds
        );
        print_quantize_report(q);
        return vocabulary_check(dir, output);
    }
    let types: Vec<String> = report
        .types
        .iter()
        .map(|(t, n)| format!("{n} {t}"))
        .collect();
    eprintln!(
        "wrote {} ({:.2} GB from {:.2} GB of checkpoint tensors) in {:.1} s",
        report.output.display(),
        report.output_bytes as f64 / 1e9,
        report.input_bytes as f64 / 1e9,
        report.seconds
    );
    eprintln!(
        "  {} tensors ({}), {} left out; vocabulary {} ({} defined), chat template {}",
        report.tensors,
        types.join(", "),
        report.dropped.len(),
        report.vocabulary,
        report.defined_tokens,
        if report.chat_template {
            "included"
        } else {
            "absent"
        }
    );
    vocabulary_check(dir, output)
}

/// The converted vocabulary against the checkpoint's tokenizer.json (`quality::vocab`): the
/// report, and whether they agree.
fn vocabulary_check(dir: &Path, output: &Path) -> anyhow::Result<Vocabulary> {
    let tokenizer = dir.join("tokenizer.json");
    let r = crate::quality::vocab::check(&tokenizer, output)?;
    if r.mismatches.is_empty() {
        eprintln!(
            "  vocabulary check: {} texts ({} tokens: code, prose, CJK, emoji, every added token) \
             tokenised the same by tokenizer.json and by llama.cpp",
            r.texts, r.tokens
        );
        return Ok(Vocabulary::Same);
    }
    eprintln!(
        "error: llama.cpp tokenises {} of {} texts differently from tokenizer.json; the model would \
         read other tokens than it was trained on:",
        r.mismatches.len(),
        r.texts
    );
    for m in r.mismatches.iter().take(3) {
        eprintln!(
            "  {:?}\n    tokenizer.json {:?}\n    llama.cpp      {:?}",
            m.text, m.expected, m.got
        );
    }
    Ok(Vocabulary::Differs)
}
