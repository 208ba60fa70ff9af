//! What the agent talks to: a [`Model`] takes the conversation and the tools and streams a turn
//! back. The in-process engine and the scripted engine take prompt text, so their adapters
//! render the conversation with the chat template first; an engine that takes messages itself
//! (a remote server) implements [`Model`] directly and may return output already parsed.

use crate::engine::{
    EngineError, EngineHandle, GenerateRequest, GenerationStream, SamplingParams, ScriptEngine,
};
use crate::prompt::{GenerationPrompt, Renderer, ToolSpec};
use crate::protocol::Message;

/// One turn's input.
#[derive(Debug, Clone)]
pub struct TurnRequest {
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    pub max_tokens: u32,
    pub sampling: SamplingParams,
}

/// A model the agent can run turns on.
pub trait Model: Send + Sync {
    /// One line for status bars and logs, e.g. `llama.cpp: frognano.gguf (qwen35, CPU)`.
    fn describe(&self) -> String;
    /// Start a turn. Raw engines stream [`crate::engine::EngineEvent::Piece`]s that the agent
    /// parses; others may stream [`crate::engine::EngineEvent::Parsed`] output.
    fn start(&self, request: &TurnRequest) -> Result<GenerationStream, EngineError>;
    /// Save the model's memory of the conversation so a resumed session can skip reading it
    /// again; `Ok(None)` for models that keep no memory here.
    fn save_state(&self, _path: &std::path::Path) -> Result<Option<usize>, EngineError> {
        Ok(None)
    }
    /// Load memory saved by [`Model::save_state`].
    fn load_state(&self, _path: &std::path::Path) -> Result<Option<usize>, EngineError> {
        Ok(None)
    }
}

/// Render a request to prompt text with `renderer`.
fn render(renderer: &Renderer, request: &TurnRequest) -> Result<String, EngineError> {
    renderer
        .render(&request.messages, &request.tools, GenerationPrompt::Add)
        .map_err(|e| EngineError::Llama {
            doing: "rendering the prompt",
            detail: e.to_string(),
        })
}

/// The in-process llama.cpp engine behind the model's chat template.
pub struct LocalModel {
    pub engine: EngineHandle,
    pub renderer: Renderer,
}

impl Model for LocalModel {
    fn describe(&self) -> String {
        let m = self.engine.model();
        let name = m
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let place = if m.gpu_layers > 0 {
            format!("{} layers on GPU", m.gpu_layers)
        } else {
            "CPU".to_string()
        };
        format!("llama.cpp: {name} ({}, {place})", m.architecture)
    }

    fn start(&self, request: &TurnRequest) -> Result<GenerationStream, EngineError> {
        let prompt = render(&self.renderer, request)?;
        self.engine.generate(GenerateRequest {
            prompt,
            max_tokens: request.max_tokens,
            sampling: request.sampling.clone(),
        })
    }

    fn save_state(&self, path: &std::path::Path) -> Result<Option<usize>, EngineError> {
        self.engine.save_state(path).map(Some)
    }

    fn load_state(&self, path: &std::path::Path) -> Result<Option<usize>, EngineError> {
        self.engine.load_state(path).map(Some)
    }
}

/// The scripted engine (a mock of the model) behind the same rendering, so the prompts it
/// records are exactly what a real model would have read.
pub struct ScriptModel {
    pub engine: ScriptEngine,
    pub renderer: Renderer,
    pub name: String,
}

impl Model for ScriptModel {
    fn describe(&self) -> String {
        format!("script: {} (scripted replies, no model)", self.name)
    }

    fn start(&self, request: &TurnRequest) -> Result<GenerationStream, EngineError> {
        let prompt = render(&self.renderer, request)?;
        self.engine.generate(GenerateRequest {
            prompt,
            max_tokens: request.max_tokens,
            sampling: request.sampling.clone(),
        })
    }
}
