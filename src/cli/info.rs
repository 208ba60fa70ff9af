//! `lilypad info F.gguf`: what a user needs to know about a model file before trusting it.
//! Reads only the header (no weights are loaded), so it is instant even for a 9 GB file.

use crate::gguf::GgufFile;
use anyhow::Context;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct InfoArgs {
    /// GGUF file to describe
    pub file: PathBuf,
    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

pub(super) fn run(args: &InfoArgs) -> anyhow::Result<ExitCode> {
    let f = GgufFile::open(&args.file)?;
    let summary = summarize(&f);
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&summary).context("serialising the summary")?
        );
    } else {
        print!("{}", render(&summary));
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, serde::Serialize)]
struct Summary {
    file: String,
    file_bytes: u64,
    gguf_version: u32,
    architecture: Option<String>,
    name: Option<String>,
    parameters: u64,
    tensors: usize,
    tensor_types: BTreeMap<String, usize>,
    layers: Option<u64>,
    mtp_layers: Option<u64>,
    trained_context: Option<u64>,
    embedding: Option<u64>,
    vocabulary: Option<usize>,
    tokenizer: Option<String>,
    chat_template: bool,
    chat_template_chars: Option<usize>,
}

fn summarize(f: &GgufFile) -> Summary {
    let mut tensor_types = BTreeMap::new();
    for t in &f.tensors {
        *tensor_types.entry(t.ty.name()).or_insert(0) += 1;
    }
    let tokenizer =
        f.get_str("tokenizer.ggml.model")
            .map(|m| match f.get_str("tokenizer.ggml.pre") {
                Some(pre) => format!("{m} (pre-tokenizer {pre})"),
                None => m.to_string(),
            });
    Summary {
        file: f.path.display().to_string(),
        file_bytes: f.file_size,
        gguf_version: f.version,
        architecture: f.architecture().map(str::to_string),
        name: f.get_str("general.name").map(str::to_string),
        parameters: f.parameter_count(),
        tensors: f.tensors.len(),
        tensor_types,
        layers: f.arch_u64("block_count"),
        mtp_layers: f.arch_u64("nextn_predict_layers"),
        trained_context: f.arch_u64("context_length"),
        embedding: f.arch_u64("embedding_length"),
        vocabulary: f
            .get("tokenizer.ggml.tokens")
            .and_then(|v| v.as_array())
            .map(<[_]>::len),
        tokenizer,
        chat_template: f.chat_template().is_some(),
        chat_template_chars: f.chat_template().map(|t| t.chars().count()),
    }
}

fn human_count(n: u64) -> String {
    match n {
        n if n >= 1_000_000_000 => format!("{:.2} B", n as f64 / 1e9),
        n if n >= 1_000_000 => format!("{:.2} M", n as f64 / 1e6),
        n if n >= 1_000 => format!("{:.1} K", n as f64 / 1e3),
        n => n.to_string(),
    }
}

fn human_bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.2} GiB", n as f64 / (1u64 << 30) as f64),
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64),
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} bytes"),
    }
}

fn render(s: &Summary) -> String {
    let unknown = || "unknown".to_string();
    let opt = |v: Option<u64>| v.map_or_else(unknown, |v| v.to_string());
    let types = s
        .tensor_types
        .iter()
        .map(|(t, n)| format!("{t} x{n}"))
        .collect::<Vec<_>>()
        .join(", ");
    let layers = match (s.layers, s.mtp_layers) {
        (Some(l), Some(m)) if m > 0 => format!("{l} (including {m} MTP)"),
        (l, _) => opt(l),
    };
    let template = match s.chat_template_chars {
        Some(n) => format!("present ({n} characters)"),
        None => "absent (Lilypad's built-in template will be used)".to_string(),
    };
    let mut out = String::new();
    let mut line = |k: &str, v: String| out.push_str(&format!("{k:<16}{v}\n"));
    line(
        "file",
        format!("{} ({})", s.file, human_bytes(s.file_bytes)),
    );
    line(
        "architecture",
        s.architecture.clone().unwrap_or_else(unknown),
    );
    if let Some(n) = &s.name {
        line("name", n.clone());
    }
    line(
        "parameters",
        format!("{} ({})", human_count(s.parameters), s.parameters),
    );
    line("tensors", format!("{} ({types})", s.tensors));
    line("layers", layers);
    line("embedding", opt(s.embedding));
    line("trained context", opt(s.trained_context));
    line(
        "vocabulary",
        match (&s.vocabulary, &s.tokenizer) {
            (Some(n), Some(t)) => format!("{n} tokens, {t}"),
            (Some(n), None) => format!("{n} tokens"),
            (None, _) => unknown(),
        },
    );
    line("chat template", template);
    line("gguf version", s.gguf_version.to_string());
    out
}
