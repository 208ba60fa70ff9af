//! What answers behind `lilypad serve`: an [`Engine`] (the in-process engine, or the scripted
//! engine of `--engine script:FILE`, which replays raw model outputs so that clients can be
//! tested against exact replies: tool calls, malformed calls, truncated turns) behind the chat
//! template (the model's own, or the built-in one when the file has none or for the scripted
//! engine), rendered with thinking on or off as each request asks.

use crate::engine::{
    Engine, EngineError, GenerateRequest, GenerationStream, TemplatedModel, TurnRequest,
};
use crate::prompt::{PromptError, PromptSettings, Renderer, Thinking};
use std::sync::Arc;

/// One engine behind two templated models: thinking on and off.
pub struct ServedModel {
    thinking: TemplatedModel,
    plain: TemplatedModel,
}

impl ServedModel {
    /// Renderers from `prompt` settings with the given template (see
    /// [`PromptSettings::choose_template`]).
    pub fn new(
        engine: Arc<dyn Engine>,
        prompt: &PromptSettings,
        model_template: Option<String>,
    ) -> Result<Self, PromptError> {
        let template = prompt.choose_template(model_template)?;
        let on = PromptSettings {
            thinking: Thinking::On,
            ..prompt.clone()
        };
        let off = PromptSettings {
            thinking: Thinking::Off,
            ..prompt.clone()
        };
        Ok(Self {
            thinking: TemplatedModel::new(engine.clone(), Renderer::new(template.clone(), &on)?),
            plain: TemplatedModel::new(engine, Renderer::new(template, &off)?),
        })
    }

    /// The engine request for a turn, rendered with thinking on or off; the turn's sequence
    /// names its conversation's slot.
    pub fn request(
        &self,
        thinking: Thinking,
        turn: &TurnRequest,
    ) -> Result<GenerateRequest, EngineError> {
        match thinking {
            Thinking::On => self.thinking.request(turn),
            Thinking::Off => self.plain.request(turn),
        }
    }

    /// The engine both templated models share.
    pub fn engine(&self) -> &Arc<dyn Engine> {
        self.thinking.engine()
    }

    /// Start generating a request made by [`Self::request`].
    pub fn generate(&self, request: GenerateRequest) -> Result<GenerationStream, EngineError> {
        self.thinking.engine().generate(request)
    }
}
