//! What answers behind `lilypad serve`: the in-process engine, or the scripted engine
//! (`--engine script:FILE`, which replays raw model outputs so that clients can be tested
//! against exact replies: tool calls, malformed calls, truncated turns). Both take prompt text,
//! so the server renders the conversation with the chat template first (the model's own, or the
//! built-in one when the file has none or for the scripted engine).

use crate::engine::{EngineError, EngineHandle, GenerateRequest, GenerationStream, ScriptEngine};
use crate::prompt::{GenerationPrompt, PromptError, PromptSettings, Renderer, Thinking, ToolSpec};
use crate::protocol::Message;
use std::hash::{Hash, Hasher};

/// The engine kind behind the server.
pub enum Engine {
    Llama(EngineHandle),
    Script(ScriptEngine),
}

/// The engine plus the two renderers (thinking on and off).
pub struct Backend {
    pub engine: Engine,
    thinking: Renderer,
    plain: Renderer,
}

impl Backend {
    /// Renderers from `prompt` settings with the given template (see
    /// [`PromptSettings::choose_template`]).
    pub fn new(
        engine: Engine,
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
            engine,
            thinking: Renderer::new(template.clone(), &on)?,
            plain: Renderer::new(template, &off)?,
        })
    }

    /// The exact prompt text for a request.
    pub fn render(
        &self,
        messages: &[Message],
        tools: &[ToolSpec],
        thinking: Thinking,
    ) -> Result<String, PromptError> {
        let r = match thinking {
            Thinking::On => &self.thinking,
            Thinking::Off => &self.plain,
        };
        r.render(messages, tools, GenerationPrompt::Add)
    }

    /// Start generating in the conversation's slot.
    pub fn generate(
        &self,
        slot: u64,
        request: GenerateRequest,
    ) -> Result<GenerationStream, EngineError> {
        match &self.engine {
            Engine::Llama(e) => e.generate_in(slot, request),
            Engine::Script(s) => s.generate(request),
        }
    }
}

/// Which conversation a request belongs to: its system prompt and first user message, which
/// stay the same for the life of an agent's task while everything after them grows (and the
/// reasoning of earlier turns is dropped when a new user message comes). Two different tasks
/// differ in their first user message. Never 0, the engine's default slot.
pub fn conversation_key(messages: &[Message]) -> u64 {
    // SipHash with fixed keys: stable across runs and machines.
    #[allow(deprecated)]
    let mut h = std::hash::SipHasher::new();
    for m in messages {
        match m {
            Message::System { content } => ("system", content).hash(&mut h),
            Message::User { content } => {
                ("user", content).hash(&mut h);
                break;
            }
            _ => {}
        }
    }
    h.finish().max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_follows_system_and_first_user_message() {
        let a = vec![Message::system("s"), Message::user("task A")];
        let mut a2 = a.clone();
        a2.push(Message::assistant(None, "x", vec![]));
        a2.push(Message::user("more"));
        let b = vec![Message::system("s"), Message::user("task B")];
        assert_eq!(conversation_key(&a), conversation_key(&a2));
        assert_ne!(conversation_key(&a), conversation_key(&b));
        assert_ne!(conversation_key(&[]), 0);
    }
}
