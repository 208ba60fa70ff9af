//! Going back to the end of an earlier turn ([`Op::Rewind`]): the conversation is cut back to
//! what it held then (from the agent's map of where each turn ended), the workspace's files are
//! restored to that turn's record and the later records dropped
//! (`Sandbox::rewind_to_turn`), and the step count goes on from that turn. The model's memory
//! needs nothing here: the next prompt extends the prompts of that turn, and the engine serves
//! it from the snapshot it pinned at that turn's boundary (requests ask for the pin with
//! `TurnRequest::pin_turn`).
//!
//! What happened is one [`Event::Rewound`], which the session log keeps and rebuilding honours,
//! so a resumed session or a replay shows the conversation as it was after the rewind.
//!
//! [`Op::Rewind`]: crate::protocol::Op::Rewind

use super::Agent;
use crate::protocol::Event;

impl Agent {
    /// Go back to the end of turn `turn` (see the module docs); an error event says why not
    /// when the turn is not one to go back to, and nothing changes then.
    pub(in crate::agent) async fn rewind(&mut self, turn: u32) {
        let Some(end) = self.turn_ends.iter().find(|t| t.turn == turn).copied() else {
            let earliest = self.turn_ends.first().map(|t| t.turn);
            let message = match earliest {
                Some(first) if turn < first => format!(
                    "cannot rewind to turn {turn}: the conversation was restarted after it \
                     (the earliest turn to go back to is {first})"
                ),
                _ if turn > self.step => format!(
                    "cannot rewind to turn {turn}: the session is at turn {}",
                    self.step
                ),
                _ => format!("cannot rewind to turn {turn}: the conversation has no such turn"),
            };
            self.emit(Event::Error { message });
            return;
        };
        if let Err(e) = crate::sandbox::workspace::Checkout::of(self.tools.sandbox().as_ref())
            .rewind_to_turn(turn)
            .await
        {
            self.emit(Event::Error {
                message: format!("cannot rewind to turn {turn}: the files were not restored: {e}"),
            });
            return;
        }
        let from_turn = self.step;
        self.messages.truncate(end.messages);
        self.turn_ends.retain(|t| t.turn <= turn);
        self.step = turn;
        self.context_tokens = end.context_tokens;
        self.pending.clear();
        self.queued.clear();
        self.full = false;
        self.emit(Event::Rewound {
            turn,
            messages: end.messages,
            context_tokens: end.context_tokens,
            from_turn,
        });
    }
}
