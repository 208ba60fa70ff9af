//! `lilypad generate`: run the engine on a raw prompt and stream the text, then print the
//! request's figures. For trying a model and measuring it outside the agent.

use crate::config::Settings;
use crate::engine::{EngineEvent, EngineHandle, GenerateRequest, SamplingParams};
use anyhow::Context;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct GenerateArgs {
    /// Raw prompt text (special tokens such as <|im_start|> are parsed)
    #[arg(long, conflicts_with = "prompt_file")]
    pub prompt: Option<String>,
    /// Read the raw prompt from a file
    #[arg(long)]
    pub prompt_file: Option<PathBuf>,
    /// Print the figures as JSON on stderr
    #[arg(long)]
    pub json: bool,
}

pub(super) fn run(args: &GenerateArgs, settings: &Settings) -> anyhow::Result<ExitCode> {
    let prompt = match (&args.prompt, &args.prompt_file) {
        (Some(p), _) => p.clone(),
        (None, Some(f)) => {
            std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?
        }
        (None, None) => anyhow::bail!("give --prompt TEXT or --prompt-file FILE"),
    };
    let e = &settings.engine;
    let model = settings.model_source().file()?.to_path_buf();
    let engine = EngineHandle::load(&model, e, |_| {})?;
    let stream = engine.generate(GenerateRequest::new(
        prompt,
        e.max_turn_tokens,
        SamplingParams::from_settings(&e.sampling),
    ))?;
    let mut events = stream.events;
    let mut out = std::io::stdout().lock();
    while let Some(ev) = events.blocking_recv() {
        match ev {
            EngineEvent::Piece(p) => {
                out.write_all(p.as_bytes())?;
                out.flush()?;
            }
            EngineEvent::Parsed(p) => writeln!(out, "{p:?}")?,
            // Not asked for here.
            EngineEvent::Sampled(_) => {}
            EngineEvent::Done(g) => {
                writeln!(out)?;
                let f = &g.figures;
                if args.json {
                    eprintln!("{}", serde_json::to_string(f)?);
                } else {
                    let drafts = f.draft.map_or(String::new(), |d| {
                        format!(
                            "; MTP drafted {}, accepted {} ({:.0}%)",
                            d.drafted,
                            d.accepted,
                            d.acceptance() * 100.0
                        )
                    });
                    eprintln!(
                        "stop: {:?}; prompt {} tokens ({} reused, {} read) at {:.0} tok/s; generated {} at {:.0} tok/s{drafts}",
                        g.stop,
                        f.prompt_tokens,
                        f.reused_tokens,
                        f.evaluated_tokens,
                        f.prefill_tokens_per_second(),
                        f.generated_tokens,
                        f.decode_tokens_per_second()
                    );
                }
                return Ok(ExitCode::SUCCESS);
            }
            EngineEvent::Failed(e) => return Err(e.into()),
        }
    }
    anyhow::bail!("the engine stopped without finishing")
}
