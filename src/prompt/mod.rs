//! Everything between a conversation and the text the model reads, and between the text the
//! model writes and typed tool calls.
//!
//! Owns:
//! - the tool definitions offered to the model (`tools`) and the system prompt, both from a
//!   harness profile (`harness`; the built-in one is `assets/harness/lilypad.toml`) and
//!   overridable through [`PromptSettings`];
//! - prompt rendering from the model's own Jinja chat template, or from the built-in template
//!   (`assets/chat_template.jinja`) when the model has none (`render`, with Python-compatible
//!   filters from `pyjson`);
//! - reading OpenAI-style conversation files (`conversation`);
//! - finding and joining the project instructions (`AGENTS.md` files: `project_doc`);
//! - the streaming output parser (`parser`, values typed by `typing`, Python literals read by
//!   `pyliteral`), and the grammar that keeps tool calls well formed (`grammar`).
//!
//! Does not own: running anything (tools, the model), tokenisation, or reading GGUF files (the
//! template string comes from `crate::gguf`).
//!
//! Format decisions where the model card leaves facts open are listed in `docs/prompt-format.md`.

mod conversation;
mod grammar;
mod harness;
mod parser;
pub mod project_doc;
mod pyjson;
mod pyliteral;
mod render;
mod tools;
mod turn;
mod typing;

pub use conversation::{parse_conversation, Conversation, ConversationError};
pub use grammar::tool_call_grammar;
pub use harness::{
    find_leaf_tools, import_leaf, Harness, HarnessError, HarnessSource, BUILTIN_PROFILE,
};
pub use parser::{CallEnd, ParseEvent, ParsedCallError, Parser, Start};
pub use pyjson::{dumps as python_json_dumps, DumpOptions};
pub use render::{GenerationPrompt, Renderer};
pub use tools::{builtin_tools, parse_tools, ParamType, ToolSchemas, ToolSpec, ToolsForm};
pub use turn::{parse_all, ParsedTurn};
pub use typing::type_value;

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Lilypad's own chat template, for models whose file carries none.
pub const BUILTIN_TEMPLATE: &str = include_str!("../../assets/chat_template.jinja");

/// The built-in profile's system prompt.
pub fn default_system_prompt() -> String {
    Harness::builtin().system_prompt
}

/// Errors of prompt rendering and of reading prompt inputs.
#[derive(Debug, Error)]
pub enum PromptError {
    #[error("cannot read {what} from {path}: {source}")]
    Read {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{what} is not valid: {message}")]
    Tools { what: String, message: String },
    /// Carries minijinja's error, with the template line and column.
    #[error("the chat template does not compile: {}", render::describe(.0))]
    TemplateSyntax(#[source] minijinja::Error),
    #[error("the chat template failed while rendering: {}", render::describe(.0))]
    Render(#[source] minijinja::Error),
    #[error("the conversation is not valid: {0}")]
    Conversation(#[source] ConversationError),
    /// Boxed: a TOML error is large, and this type travels inside the engine's errors.
    #[error(transparent)]
    Harness(Box<HarnessError>),
    #[error("cannot read the chat template from model file {path}: {source}")]
    Gguf {
        path: PathBuf,
        source: crate::gguf::GgufError,
    },
}

impl From<HarnessError> for PromptError {
    fn from(e: HarnessError) -> Self {
        Self::Harness(Box::new(e))
    }
}

/// Which template renders prompts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TemplateChoice {
    /// The model's own template when its file has one, else the built-in one.
    #[default]
    Model,
    /// Always the built-in template.
    Builtin,
}

/// Whether the generation prompt opens a reasoning block (`<think>\n`) or closes an empty one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Thinking {
    #[default]
    On,
    Off,
}

/// Settings of this module. Plain data with defaults that match how the model was trained; the
/// config layer fills it in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PromptSettings {
    /// Harness profile file (system prompt and tools; `lilypad harness import` writes one from
    /// Leaf); `None` is the built-in profile. The settings below override its parts.
    pub harness: Option<PathBuf>,
    /// Text that replaces the profile's system prompt.
    pub system_prompt: Option<String>,
    /// File whose contents replace the default system prompt (when `system_prompt` is unset).
    pub system_prompt_file: Option<PathBuf>,
    /// JSON file with the tool list (flat or OpenAI form) that replaces the five built-in tools.
    pub tools_file: Option<PathBuf>,
    /// Jinja chat template file used instead of both the model's and the built-in template.
    pub template_file: Option<PathBuf>,
    /// Model template or built-in template.
    pub template: TemplateChoice,
    /// How tools are written in the prompt.
    pub tools_form: ToolsForm,
    /// Thinking on (as trained) or off.
    pub thinking: Thinking,
    /// Names read in a directory that has neither `AGENTS.override.md` nor `AGENTS.md`, in
    /// order (default `["CLAUDE.md"]`); see `project_doc`.
    pub project_doc_fallback_filenames: Vec<String>,
    /// The cap on the project instructions' text, in bytes (default 32 KiB).
    pub project_doc_max_bytes: usize,
    /// Whether the tasks of a batch (`lilypad run --tasks`) read the project instructions too
    /// (default: no; single runs and interactive sessions do).
    pub project_doc_in_batches: bool,
}

impl Default for PromptSettings {
    fn default() -> Self {
        Self {
            harness: None,
            system_prompt: None,
            system_prompt_file: None,
            tools_file: None,
            template_file: None,
            template: TemplateChoice::default(),
            tools_form: ToolsForm::default(),
            thinking: Thinking::default(),
            project_doc_fallback_filenames: vec!["CLAUDE.md".to_string()],
            project_doc_max_bytes: project_doc::DEFAULT_MAX_BYTES,
            project_doc_in_batches: false,
        }
    }
}

/// Where the template in use came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateOrigin {
    File(PathBuf),
    Model,
    Builtin,
}

/// A chat template's source and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatTemplate {
    pub source: String,
    pub origin: TemplateOrigin,
}

impl ChatTemplate {
    pub fn builtin() -> Self {
        Self {
            source: BUILTIN_TEMPLATE.to_string(),
            origin: TemplateOrigin::Builtin,
        }
    }
}

fn read_file(what: &'static str, path: &Path) -> Result<String, PromptError> {
    std::fs::read_to_string(path).map_err(|source| PromptError::Read {
        what,
        path: path.to_path_buf(),
        source,
    })
}

impl PromptSettings {
    /// The harness profile in force: the configured file or the built-in one.
    pub fn harness(&self) -> Result<Harness, PromptError> {
        match &self.harness {
            Some(path) => Ok(Harness::load(path)?),
            None => Ok(Harness::builtin()),
        }
    }

    /// The system prompt in force: override text, override file, or the profile's.
    pub fn system_prompt(&self) -> Result<String, PromptError> {
        if let Some(text) = &self.system_prompt {
            return Ok(text.clone());
        }
        if let Some(path) = &self.system_prompt_file {
            return read_file("the system prompt", path);
        }
        Ok(self.harness()?.system_prompt.trim_end().to_string())
    }

    /// The tools in force: the override file or the profile's.
    pub fn tools(&self) -> Result<Vec<ToolSpec>, PromptError> {
        match &self.tools_file {
            Some(path) => parse_tools(&read_file("the tool list", path)?),
            None => Ok(self.harness()?.tools),
        }
    }

    /// The template in force, given the model's own (if it has one).
    pub fn choose_template(
        &self,
        model_template: Option<String>,
    ) -> Result<ChatTemplate, PromptError> {
        if let Some(path) = &self.template_file {
            return Ok(ChatTemplate {
                source: read_file("the chat template", path)?,
                origin: TemplateOrigin::File(path.clone()),
            });
        }
        match (self.template, model_template) {
            (TemplateChoice::Model, Some(source)) if !source.trim().is_empty() => {
                Ok(ChatTemplate {
                    source,
                    origin: TemplateOrigin::Model,
                })
            }
            _ => Ok(ChatTemplate::builtin()),
        }
    }
}

/// The chat template stored in a GGUF file (`tokenizer.chat_template`), if it has one.
pub fn template_from_gguf(path: &Path) -> Result<Option<String>, PromptError> {
    let file = crate::gguf::GgufFile::open(path).map_err(|source| PromptError::Gguf {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(file.chat_template().map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_system_prompt_is_three_sentences() {
        let text = PromptSettings::default().system_prompt().unwrap();
        assert_eq!(text.matches(". ").count() + 1, 3, "{text}");
        assert!(!text.ends_with('\n'));
    }

    #[test]
    fn overrides_take_precedence() {
        let dir = tempfile::tempdir().unwrap();
        let sp = dir.path().join("sp.md");
        std::fs::write(&sp, "From a file.").unwrap();
        let tools = dir.path().join("tools.json");
        std::fs::write(
            &tools,
            r#"[{"type":"function","function":{"name":"Only","description":"d","parameters":{"type":"object","properties":{}}}}]"#,
        )
        .unwrap();
        let tpl = dir.path().join("t.jinja");
        std::fs::write(&tpl, "{{ messages | length }}").unwrap();
        let mut s = PromptSettings {
            system_prompt_file: Some(sp),
            tools_file: Some(tools),
            ..Default::default()
        };
        assert_eq!(s.system_prompt().unwrap(), "From a file.");
        s.system_prompt = Some("Inline.".into());
        assert_eq!(s.system_prompt().unwrap(), "Inline.");
        assert_eq!(s.tools().unwrap()[0].name, "Only");
        assert_eq!(
            s.choose_template(Some("model".into())).unwrap().origin,
            TemplateOrigin::Model
        );
        assert_eq!(
            s.choose_template(None).unwrap().origin,
            TemplateOrigin::Builtin
        );
        s.template = TemplateChoice::Builtin;
        assert_eq!(
            s.choose_template(Some("model".into())).unwrap().origin,
            TemplateOrigin::Builtin
        );
        s.template_file = Some(tpl.clone());
        assert_eq!(
            s.choose_template(None).unwrap().origin,
            TemplateOrigin::File(tpl)
        );
    }

    #[test]
    fn missing_override_file_names_the_path() {
        let s = PromptSettings {
            tools_file: Some("/nonexistent/tools.json".into()),
            ..Default::default()
        };
        let err = s.tools().unwrap_err().to_string();
        assert!(err.contains("/nonexistent/tools.json"), "{err}");
    }

    #[test]
    fn settings_deserialize_from_toml_like_data() {
        let s: PromptSettings =
            serde_json::from_str(r#"{"tools_form": "openai", "thinking": "off"}"#).unwrap();
        assert_eq!(s.tools_form, ToolsForm::Openai);
        assert_eq!(s.thinking, Thinking::Off);
    }
}
