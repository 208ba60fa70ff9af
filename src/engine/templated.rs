//! [`TemplatedModel`]: an engine behind the chat template, the one model the agent and
//! `lilypad serve` talk to. It takes a conversation ([`TurnRequest`]: messages, tools, cap,
//! sampling, sequence) and starts a generation: for an engine that reads text it renders the
//! conversation with its [`Renderer`] first, for one that reads chat messages (a remote
//! server, which applies its own template) it passes them on.
//!
//! Invariants: the text an engine reads is exactly what the renderer produces for the
//! request, so the prompts the scripted engine records are what a real model would read; a
//! prompt that cannot be rendered fails with [`EngineError::Prompt`] before the engine sees
//! anything.
//!
//! Does not own: parsing the output (`crate::prompt::Parser`, run by the caller).

use super::stream::GenerationStream;
use super::traits::Engine;
use super::types::{
    EngineError, Figures, GenerateRequest, Prompt, PromptForm, SamplingParams, SequenceId,
    TokenReport,
};
use crate::prompt::{GenerationPrompt, Renderer, ToolSpec};
use crate::protocol::Message;
use std::path::Path;
use std::sync::Arc;

/// One turn's input.
#[derive(Debug, Clone)]
pub struct TurnRequest {
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    pub max_tokens: u32,
    pub sampling: SamplingParams,
    /// The engine sequence the conversation lives in.
    pub sequence: SequenceId,
    /// Keep the memory snapshot at this prompt's turn boundary (the start of its last
    /// message) beyond the rolling ones, so that a rewind to this turn is served from it
    /// ([`GenerateRequest::pin_turn`]). The agent sets it on every turn.
    pub pin_turn: bool,
    /// What to report of the tokens besides their text (rollouts ask for log-probabilities
    /// and the prompt's tokens).
    pub report: TokenReport,
}

/// An engine and the template that turns conversations into its prompts.
pub struct TemplatedModel {
    engine: Arc<dyn Engine>,
    /// `None` only for engines that read chat messages.
    renderer: Option<Renderer>,
}

impl TemplatedModel {
    /// `engine` behind `renderer` (used only if the engine reads text).
    pub fn new(engine: Arc<dyn Engine>, renderer: Renderer) -> Self {
        Self {
            engine,
            renderer: Some(renderer),
        }
    }

    /// An engine that applies the chat template itself (a remote server).
    pub fn chat(engine: Arc<dyn Engine>) -> Self {
        Self {
            engine,
            renderer: None,
        }
    }

    pub fn engine(&self) -> &Arc<dyn Engine> {
        &self.engine
    }

    /// One line for status bars and logs.
    pub fn describe(&self) -> String {
        self.engine.describe()
    }

    /// The prompt the engine reads for `request`.
    fn prompt(&self, request: &TurnRequest) -> Result<Prompt, EngineError> {
        match (self.engine.reads(), &self.renderer) {
            (PromptForm::Text | PromptForm::Tokens, Some(r)) => Ok(Prompt::Text(r.render(
                &request.messages,
                &request.tools,
                GenerationPrompt::Add,
            )?)),
            (PromptForm::Chat, _) => Ok(Prompt::Chat {
                messages: request.messages.clone(),
                tools: request.tools.clone(),
            }),
            (PromptForm::Text | PromptForm::Tokens, None) => Err(EngineError::PromptForm {
                engine: "this engine",
                reads: PromptForm::Text,
                given: PromptForm::Chat,
            }),
        }
    }

    /// The engine request for a turn (rendered, not started).
    pub fn request(&self, turn: &TurnRequest) -> Result<GenerateRequest, EngineError> {
        Ok(GenerateRequest {
            sequence: turn.sequence,
            prompt: self.prompt(turn)?,
            max_tokens: turn.max_tokens,
            sampling: turn.sampling.clone(),
            pin_turn: turn.pin_turn,
            report: turn.report,
            tool_grammar: if turn.sampling.tool_grammar {
                crate::prompt::tool_call_grammar(&turn.tools)
            } else {
                None
            },
        })
    }

    /// Read `turn`'s prompt once into its sequence and copy it into each of `copies` (see
    /// [`Engine::share_prompt`]); `None` when the engine keeps no memory to share.
    pub fn share_prompt(
        &self,
        turn: &TurnRequest,
        copies: &[SequenceId],
    ) -> Result<Option<Figures>, EngineError> {
        let prompt = self.prompt(turn)?;
        self.engine.share_prompt(turn.sequence, &prompt, copies)
    }

    /// Start a turn.
    pub fn start(&self, turn: &TurnRequest) -> Result<GenerationStream, EngineError> {
        self.engine.generate(self.request(turn)?)
    }

    /// Save the default sequence's memory (see [`Engine::save_state`]).
    pub fn save_state(&self, path: &Path) -> Result<Option<usize>, EngineError> {
        self.engine.save_state(SequenceId::DEFAULT, path)
    }

    /// Save the memory of conversation `sequence`.
    pub fn save_state_of(
        &self,
        sequence: SequenceId,
        path: &Path,
    ) -> Result<Option<usize>, EngineError> {
        self.engine.save_state(sequence, path)
    }

    /// Load memory saved by [`Self::save_state`].
    pub fn load_state(&self, path: &Path) -> Result<Option<usize>, EngineError> {
        self.engine.load_state(SequenceId::DEFAULT, path)
    }
}
