//! `lilypad quant-check REFERENCE.gguf CANDIDATE.gguf [--text FILE] [--json]`: how far a
//! quantised model's next-token distributions are from its reference's. A thin shell over
//! [`crate::quality`]: reads the text (or renders the built-in sample), prints a table or JSON.
//! `--threads` (per model; default half the cores each, as both run at once) and
//! `--gpu-layers` are the global engine options.

use crate::config::Settings;
use crate::quality::{self, CheckOptions, CheckReport, Summary};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct QuantCheckArgs {
    /// The reference model (bf16 or f16)
    pub reference: PathBuf,
    /// The candidate: a quantisation of the reference
    pub candidate: PathBuf,
    /// Text to read, special tokens parsed (default: the built-in sample of a scripted
    /// 40-turn agent session, rendered with Lilypad's chat template)
    #[arg(long)]
    pub text: Option<PathBuf>,
    /// Chunk length in tokens: each chunk is read from empty memory and its second half is
    /// scored (as `llama-perplexity -c`)
    #[arg(long, default_value_t = 512)]
    pub chunk: usize,
    /// Score at most this many chunks
    #[arg(long)]
    pub chunks: Option<usize>,
    /// Positions per batch
    #[arg(long, default_value_t = 128)]
    pub batch: u32,
    /// Print the report as JSON instead of a table
    #[arg(long)]
    pub json: bool,
    /// Also write every scored position's figures to this file (JSON lines)
    #[arg(long)]
    pub positions: Option<PathBuf>,
}

fn row(label: &str, s: &Summary) -> String {
    format!(
        "{label:<11} {:>9} {:>10.6} {:>10.6} {:>10.6} {:>8.2}% {:>8.2}% {:>10.4} {:>10.4}",
        s.positions,
        s.kl_mean,
        s.kl_p99,
        s.kl_max,
        100.0 * s.top1_agreement,
        100.0 * s.top5_miss,
        s.perplexity_reference,
        s.perplexity_candidate
    )
}

/// The report as the table `quant-check` prints.
pub(super) fn table(r: &CheckReport) -> String {
    let mut out = format!(
        "candidate {} ({:.1} MB) against reference {} ({:.1} MB)\n{} tokens, {} chunks of {}, second half of each scored\n\n",
        r.candidate.display(),
        r.candidate_bytes as f64 / 1e6,
        r.reference.display(),
        r.reference_bytes as f64 / 1e6,
        r.tokens,
        r.chunks,
        r.ctx
    );
    out.push_str(&format!(
        "{:<11} {:>9} {:>10} {:>10} {:>10} {:>9} {:>9} {:>10} {:>10}\n",
        "positions",
        "count",
        "KL mean",
        "KL p99",
        "KL max",
        "top-1",
        "top-5 out",
        "PPL ref",
        "PPL cand"
    ));
    out.push_str(&row("all", &r.all));
    out.push('\n');
    out.push_str(&row("tool calls", &r.tool_calls));
    out.push('\n');
    out
}

pub(super) fn run(args: &QuantCheckArgs, settings: &Settings) -> anyhow::Result<ExitCode> {
    let text = match &args.text {
        Some(p) => std::fs::read_to_string(p)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", p.display()))?,
        None => quality::sample::builtin()?,
    };
    let opts = CheckOptions {
        reference: args.reference.clone(),
        candidate: args.candidate.clone(),
        text,
        ctx: args.chunk,
        chunks: args.chunks,
        threads: settings.engine.threads,
        batch: args.batch,
        gpu_layers: settings.engine.gpu_layers,
        keep_positions: args.positions.is_some(),
    };
    let report = quality::run(&opts, |done, total| {
        eprint!("\rchunk {done}/{total}");
        if done == total {
            eprintln!();
        }
    })?;
    if let Some(path) = &args.positions {
        let mut f = std::io::BufWriter::new(
            std::fs::File::create(path)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?,
        );
        for p in &report.positions {
            serde_json::to_writer(&mut f, p)?;
            f.write_all(b"\n")?;
        }
        f.flush()?;
    }
    if args.json {
        let mut value = serde_json::to_value(&report)?;
        if let Some(o) = value.as_object_mut() {
            o.remove("positions");
        }
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        print!("{}", table(&report));
    }
    Ok(ExitCode::SUCCESS)
}
