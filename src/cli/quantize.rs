//! `lilypad quantize IN.gguf OUT.gguf TYPE [--no-mtp] [--imatrix FILE]`: a BF16/F16 GGUF to one
//! of llama.cpp's quantisation types, by llama.cpp's own quantizer. A thin shell over
//! [`crate::convert::quantize`]: a progress bar over the tensors on stderr, then a summary.

use crate::convert::quantize::{self, QuantType, QuantizeOptions, QuantizeReport};
use crate::convert::Mtp;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::process::ExitCode;

/// The offered type names, for help and error messages.
pub(super) fn type_names() -> String {
    QuantType::ALL.map(|t| t.name()).join(", ")
}

fn parse_type(s: &str) -> Result<QuantType, String> {
    QuantType::from_name(s).ok_or_else(|| format!("unknown type {s:?}; one of {}", type_names()))
}

#[derive(Debug, clap::Args)]
pub struct QuantizeArgs {
    /// The BF16, F16 or F32 GGUF file to quantise (from `lilypad convert`)
    pub input: PathBuf,
    /// The GGUF file to write (replaced only once it is complete)
    pub output: PathBuf,
    /// q8_0, q6_k, q5_k_m, q5_k_s, q5_1, q5_0, q4_k_m, q4_k_s, q4_1, q4_0, iq4_xs, iq4_nl,
    /// q3_k_l, q3_k_m, q3_k_s, q2_k (or f16/bf16 to change the half type)
    #[arg(value_parser = parse_type)]
    pub ty: QuantType,
    /// Leave out the input's multi-token-prediction block
    #[arg(long)]
    pub no_mtp: bool,
    /// Importance matrix (as `llama-imatrix` writes it, GGUF or legacy .dat)
    #[arg(long)]
    pub imatrix: Option<PathBuf>,
    /// Worker threads (0: one per core)
    #[arg(long, default_value_t = 0)]
    pub threads: u32,
}

/// The bar `quantize` and `convert` draw over llama.cpp's tensors.
pub(super) fn quantize_bar() -> ProgressBar {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template(
            "{prefix:>10} [{bar:30}] {pos}/{len} tensors, {elapsed} {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar.set_prefix("quantising");
    bar
}

pub(super) fn print_quantize_report(r: &QuantizeReport) {
    let types: Vec<String> = r.types.iter().map(|(t, n)| format!("{n} {t}")).collect();
    eprintln!(
        "wrote {} ({}: {:.3} GB from {:.3} GB, {:.1}%) in {:.1} s",
        r.output.display(),
        r.ty.name(),
        r.output_bytes as f64 / 1e9,
        r.input_bytes as f64 / 1e9,
        100.0 * r.output_bytes as f64 / r.input_bytes.max(1) as f64,
        r.seconds
    );
    eprintln!(
        "  tensors: {}; MTP block {}{}",
        types.join(", "),
        if r.mtp { "kept" } else { "absent" },
        if r.imatrix_entries > 0 {
            format!("; importance matrix of {} tensors", r.imatrix_entries)
        } else {
            String::new()
        }
    );
}

pub(super) fn run(args: &QuantizeArgs) -> anyhow::Result<ExitCode> {
    let opts = QuantizeOptions {
        input: args.input.clone(),
        output: args.output.clone(),
        ty: args.ty,
        mtp: if args.no_mtp { Mtp::Drop } else { Mtp::Keep },
        imatrix: args.imatrix.clone(),
        threads: args.threads,
    };
    eprintln!(
        "quantising {} to {} with llama.cpp",
        args.input.display(),
        args.ty.name()
    );
    let bar = quantize_bar();
    let report = quantize::quantize(&opts, |p| {
        bar.set_length(p.total as u64);
        bar.set_position(p.index.saturating_sub(1) as u64);
        bar.set_message(p.name.clone());
    });
    bar.finish_and_clear();
    print_quantize_report(&report?);
    Ok(ExitCode::SUCCESS)
}
