//! The agent's [`Model`] over a remote OpenAI-compatible server: the server renders the
//! template, so the request goes out as messages and tools; the reply comes back as raw pieces
//! (the agent's parser runs) or already parsed, depending on the server (see
//! `crate::engine::remote`). Figures are the server's token counts.

use super::model::{Model, TurnRequest};
use crate::engine::remote::{ChatRequest, OutputStyle, RemoteEngine, RemoteError, RemoteSettings};
use crate::engine::{EngineError, GenerationStream};

/// A remote server as the agent's model.
pub struct RemoteModel {
    pub engine: RemoteEngine,
}

impl RemoteModel {
    /// A client; nothing is sent until the first turn.
    pub fn new(settings: &RemoteSettings) -> Result<Self, RemoteError> {
        Ok(Self {
            engine: RemoteEngine::new(settings)?,
        })
    }

    /// A client that has asked the server for its models already (blocking): an unreachable
    /// server or a refused key fails here, and `describe` names the model from the start.
    pub fn connect(settings: &RemoteSettings) -> Result<Self, RemoteError> {
        let model = Self::new(settings)?;
        model.engine.connect()?;
        Ok(model)
    }
}

impl Model for RemoteModel {
    fn describe(&self) -> String {
        let model = self
            .engine
            .model_name()
            .unwrap_or_else(|| "first listed model".to_string());
        let style = match self.engine.output_style() {
            OutputStyle::Auto => "",
            OutputStyle::Parsed => ", server parses",
            OutputStyle::Raw => ", raw text",
        };
        format!("remote: {model} at {}{style}", self.engine.endpoint().chat)
    }

    fn start(&self, request: &TurnRequest) -> Result<GenerationStream, EngineError> {
        Ok(self.engine.chat(ChatRequest {
            messages: request.messages.clone(),
            tools: request.tools.clone(),
            max_tokens: request.max_tokens,
            sampling: request.sampling.clone(),
        }))
    }
}
