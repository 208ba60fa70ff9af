//! `lilypad prompt CONV.json`: print the exact prompt text the model would read for a
//! conversation file (OpenAI chat format), rendered with the model's own chat template when
//! `--model` names a GGUF file that has one, else with the built-in template.

use anyhow::Context;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::config::Settings;
use crate::prompt::{
    parse_conversation, template_from_gguf, GenerationPrompt, PromptSettings, Renderer,
    TemplateChoice, TemplateOrigin, Thinking, ToolsForm,
};
use crate::protocol::Message;

#[derive(Debug, clap::Args)]
pub struct PromptArgs {
    /// Conversation file: {"messages": [...], "tools": [...]} in the OpenAI chat format
    /// ("tools" optional: the five Lilypad tools when absent)
    pub file: PathBuf,
    /// Use the built-in template even when the model file has its own
    #[arg(long)]
    pub builtin_template: bool,
    /// A Jinja chat template file to render with instead
    #[arg(long, value_name = "FILE")]
    pub template: Option<PathBuf>,
    /// How tools are written into the prompt
    #[arg(long, value_enum, default_value = "flat")]
    pub tools_form: FormArg,
    /// Close the reasoning block in the generation prompt (thinking off)
    #[arg(long)]
    pub no_thinking: bool,
    /// Stop after the last message instead of opening the assistant's turn
    #[arg(long)]
    pub no_generation_prompt: bool,
    /// Put Lilypad's system prompt first when the file has no system message
    #[arg(long)]
    pub default_system: bool,
    /// Say on standard error which template was used
    #[arg(long, short)]
    pub verbose: bool,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum FormArg {
    /// {"description", "name", "parameters", "strict": false}
    Flat,
    /// {"type": "function", "function": {...}}
    Openai,
}

pub(super) fn run(args: &PromptArgs, settings: &Settings) -> anyhow::Result<ExitCode> {
    let prompt_settings = PromptSettings {
        template_file: args.template.clone(),
        template: if args.builtin_template {
            TemplateChoice::Builtin
        } else {
            TemplateChoice::Model
        },
        tools_form: match args.tools_form {
            FormArg::Flat => ToolsForm::Flat,
            FormArg::Openai => ToolsForm::Openai,
        },
        thinking: if args.no_thinking {
            Thinking::Off
        } else {
            Thinking::On
        },
        // The profile in force (`--harness`, `[prompt] harness`) gives the tools and the
        // default system prompt.
        harness: settings.prompt.harness.clone(),
        ..PromptSettings::default()
    };
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("cannot read conversation file {}", args.file.display()))?;
    let conversation = parse_conversation(&text)
        .with_context(|| format!("in conversation file {}", args.file.display()))?;
    let tools = match conversation.tools {
        Some(tools) => tools,
        None => prompt_settings.tools()?,
    };
    let mut messages = conversation.messages;
    if args.default_system && !matches!(messages.first(), Some(Message::System { .. })) {
        messages.insert(0, Message::system(prompt_settings.system_prompt()?));
    }
    let model_template = match (&settings.engine.model, args.builtin_template) {
        (Some(path), false) if args.template.is_none() => template_from_gguf(path)?,
        _ => None,
    };
    let template = prompt_settings.choose_template(model_template)?;
    let renderer = Renderer::new(template, &prompt_settings)?;
    if args.verbose {
        let origin = match renderer.origin() {
            TemplateOrigin::File(p) => format!("template file {}", p.display()),
            TemplateOrigin::Model => "the model's own template".to_string(),
            TemplateOrigin::Builtin => "the built-in template".to_string(),
        };
        eprintln!("rendered with {origin}");
    }
    let generation = if args.no_generation_prompt {
        GenerationPrompt::Omit
    } else {
        GenerationPrompt::Add
    };
    let prompt = renderer.render(&messages, &tools, generation)?;
    let mut out = std::io::stdout().lock();
    out.write_all(prompt.as_bytes())?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
