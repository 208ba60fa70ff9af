//! The person's own commands (`Op::Shell`, `!cmd` on the message line): run in the session's
//! sandbox through the Bash tool, as a model's call would run but without approval and
//! without a turn, and kept, as `$ command` and the Bash result, for the head of the next user
//! message. An interrupt stops the command (dropping its future kills it); other operations
//! that arrive meanwhile wait for their turn in `Agent::deferred`.
//!
//! Does not own: running a command (`crate::tools`), or showing it (the interface draws
//! [`Event::ShellRan`]).
//!
//! [`Event::ShellRan`]: crate::protocol::Event::ShellRan

use super::Agent;
use crate::protocol::{Event, Op, ToolCall, ToolName};
use tokio::sync::mpsc::UnboundedReceiver;

/// What the model reads for a command the person stopped (it is not attached).
const INTERRUPTED: &str = "Interrupted: the command was stopped before it finished.";

impl Agent {
    /// Run the person's `command` (see the module docs).
    pub(in crate::agent) async fn shell(
        &mut self,
        command: String,
        ops: &mut UnboundedReceiver<Op>,
    ) {
        let mut arguments = serde_json::Map::new();
        arguments.insert("command".into(), command.clone().into());
        self.shells_run += 1;
        let call = ToolCall {
            id: format!("shell_{}", self.shells_run),
            name: ToolName::Bash.as_str().to_string(),
            arguments,
        };
        let tools = self.tools.clone();
        let run = tools.run(&call);
        tokio::pin!(run);
        let result = loop {
            tokio::select! {
                r = &mut run => break Some(r),
                op = ops.recv() => match op {
                    Some(Op::Interrupt) => break None,
                    None | Some(Op::Shutdown) => {
                        self.shutdown = true;
                        break None;
                    }
                    Some(op) => self.deferred.push_back(op),
                },
            }
        };
        let (output, attached) = match result {
            Some(r) => (r.content, true),
            None => (INTERRUPTED.to_string(), false),
        };
        if attached {
            self.attached.push(format!("$ {command}\n{output}"));
        }
        self.emit(Event::ShellRan {
            command,
            output,
            attached,
        });
    }

    /// `text` with the person's commands waiting for it at its head (and none left waiting).
    pub(in crate::agent) fn with_attached(&mut self, text: String) -> String {
        if self.attached.is_empty() {
            return text;
        }
        let mut out = std::mem::take(&mut self.attached).join("\n\n");
        out.push_str("\n\n");
        out.push_str(&text);
        out
    }
}
