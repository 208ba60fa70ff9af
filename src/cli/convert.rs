//! `lilypad convert DIR -o OUT.gguf --type bf16|f16|q8_0 [--no-mtp]`: a Hugging Face Qwen3.5
//! checkpoint to GGUF. A thin shell over [`crate::convert`]: parses arguments, draws progress
//! bars on stderr (an overall one and one per tensor; hidden when stderr is not a terminal) and
//! prints a summary.

use crate::convert::{self, ConvertOptions, Mtp, OutType};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum TypeArg {
    Bf16,
    F16,
    #[value(name = "q8_0")]
    Q8_0,
    /// Full precision (twice the size of bf16; for checks)
    F32,
}

#[derive(Debug, clap::Args)]
pub struct ConvertArgs {
    /// Checkpoint directory (config.json, *.safetensors, tokenizer.json, tokenizer_config.json)
    pub dir: PathBuf,
    /// The GGUF file to write (replaced only once the conversion is complete)
    #[arg(short, long)]
    pub output: PathBuf,
    /// Element type of the weight matrices (norms and small vectors stay F32)
    #[arg(long = "type", value_enum, default_value = "bf16")]
    pub ty: TypeArg,
    /// Leave out the multi-token-prediction block (smaller; no self-speculative decoding)
    #[arg(long)]
    pub no_mtp: bool,
}

pub(super) fn run(args: &ConvertArgs) -> anyhow::Result<ExitCode> {
    let opts = ConvertOptions {
        input: args.dir.clone(),
        output: args.output.clone(),
        out_type: match args.ty {
            TypeArg::Bf16 => OutType::Bf16,
            TypeArg::F16 => OutType::F16,
            TypeArg::Q8_0 => OutType::Q8_0,
            TypeArg::F32 => OutType::F32,
        },
        mtp: if args.no_mtp { Mtp::Drop } else { Mtp::Keep },
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
    let report = convert::convert(&opts, |p| {
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
    });
    tensor.finish_and_clear();
    overall.finish_and_clear();
    let report = report?;
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
    Ok(ExitCode::SUCCESS)
}
