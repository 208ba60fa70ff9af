//! Stepping through a recorded session: a turn on, a turn back (rebuilt from the start), or
//! to the end.

use super::super::{AgentState, App, Effect};
use crate::protocol::Event;
use crate::tui::transcript::Transcript;
use crate::tui::Direction;

impl App {
    /// Start a replay of recorded events (nothing is shown until the first step).
    pub fn start_replay(&mut self, events: Vec<Event>) -> Vec<Effect> {
        self.replay = Some((events, 0));
        self.status.state = AgentState::Replay;
        self.replay_step(Direction::Forward)
    }

    /// Apply events up to and including the next turn end; `None` at the end.
    pub(super) fn replay_advance(&mut self) -> Option<Vec<Effect>> {
        let (events, pos) = self.replay.as_mut()?;
        if *pos >= events.len() {
            return None;
        }
        let mut batch = Vec::new();
        while *pos < events.len() {
            let ev = events[*pos].clone();
            *pos += 1;
            let stop = matches!(ev, Event::TurnFinished { .. });
            batch.push(ev);
            if stop {
                break;
            }
        }
        let mut fx = Vec::new();
        for ev in batch {
            fx.extend(self.on_event(ev));
        }
        Some(fx)
    }

    pub(super) fn replay_step(&mut self, to: Direction) -> Vec<Effect> {
        if to == Direction::Forward {
            return self.replay_advance().unwrap_or_default();
        }
        // Back: rebuild from the start up to the turn before this one.
        let Some((events, pos)) = self.replay.take() else {
            return Vec::new();
        };
        // The last turn end strictly before the current position (0: the very start).
        let target = events[..pos.min(events.len())]
            .iter()
            .enumerate()
            .rev()
            .filter(|(i, e)| matches!(e, Event::TurnFinished { .. }) && i + 1 < pos)
            .map(|(i, _)| i + 1)
            .next()
            .unwrap_or(0);
        self.transcript = Transcript::new();
        let elapsed = self.status.elapsed_override;
        self.status = Default::default();
        self.status.state = AgentState::Replay;
        self.status.elapsed_override = elapsed;
        self.replay = Some((events.clone(), target));
        let mut fx = Vec::new();
        for ev in events.into_iter().take(target) {
            fx.extend(self.on_event(ev));
        }
        fx
    }
}
