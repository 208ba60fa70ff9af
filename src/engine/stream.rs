//! A generation in progress, as every engine kind delivers it: a channel of [`EngineEvent`]s
//! and a cancellation flag the producer checks before each token.

use super::types::{EngineError, EngineEvent, Generation};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedReceiver;

/// A generation in progress: events arrive on `events`; `cancel` stops it within one token.
pub struct GenerationStream {
    pub events: UnboundedReceiver<EngineEvent>,
    cancel: Arc<AtomicBool>,
}

impl GenerationStream {
    pub fn new(events: UnboundedReceiver<EngineEvent>, cancel: Arc<AtomicBool>) -> Self {
        Self { events, cancel }
    }

    /// Ask the engine to stop; the stream then ends with `StopReason::Cancelled`.
    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }

    /// A handle that can cancel from elsewhere (another thread or task).
    pub fn canceller(&self) -> Arc<AtomicBool> {
        self.cancel.clone()
    }

    /// Block until the end; returns the raw text and the outcome.
    pub fn wait(mut self) -> Result<(String, Generation), EngineError> {
        let mut text = String::new();
        while let Some(ev) = self.events.blocking_recv() {
            match ev {
                EngineEvent::Piece(p) => text.push_str(&p),
                // Raw text only: parsed output has no single text form.
                EngineEvent::Parsed(_) | EngineEvent::Sampled(_) => {}
                EngineEvent::Done(g) => return Ok((text, g)),
                EngineEvent::Failed(e) => return Err(e),
            }
        }
        Err(EngineError::Stopped)
    }
}
