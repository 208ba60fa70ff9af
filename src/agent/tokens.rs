//! The tokens of a session's model turns, kept for rollouts: each turn's prompt as the engine
//! read it and every sampled token with its log-probability. A run that wants them hands the
//! agent a [`TokenLog`] ([`super::AgentConfig::tokens`]); the agent then asks the engine to
//! report them and appends one [`TurnTokens`] per settled turn (a cancelled turn, which the
//! conversation does not keep, is left out too).
//!
//! They stay out of the event stream and the session log: a long task's prompts are millions
//! of ids. Does not own: the rollout files (`headless::rollout`).

use crate::engine::{Generation, SampledToken, StopReason};
use std::sync::{Arc, Mutex, PoisonError};

/// One model turn's tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnTokens {
    /// 1-based, as the session's events number turns.
    pub turn: u32,
    /// The prompt as the engine read it (empty when the engine does not tokenise here, e.g. a
    /// remote server that returned no ids).
    pub prompt: Vec<u32>,
    /// Every sampled token, an ending end-of-generation token included.
    pub sampled: Vec<SampledToken>,
    pub stop: StopReason,
}

/// A shared, growing list of turns' tokens.
#[derive(Debug, Clone, Default)]
pub struct TokenLog(Arc<Mutex<Vec<TurnTokens>>>);

impl TokenLog {
    pub fn new() -> Self {
        Self::default()
    }

    pub(super) fn record(&self, turn: u32, generation: &Generation) {
        let entry = TurnTokens {
            turn,
            prompt: generation.prompt_tokens.clone().unwrap_or_default(),
            sampled: generation.sampled.clone(),
            stop: generation.stop,
        };
        // A poisoned lock only means another holder panicked mid-push; the list is whole.
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(entry);
    }

    /// The turns so far, in order.
    pub fn turns(&self) -> Vec<TurnTokens> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}
