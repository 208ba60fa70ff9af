//! Ways out of a full context, asked for by the person after a task stopped at the limit
//! (headless runs keep the trained rule and stop there):
//!
//! - a fresh conversation on the same workspace ([`Op::ContinueFresh`]): the system prompt,
//!   then one user message that carries the conversation's original task, the session patch
//!   so far and the person's new message;
//! - dropping the oldest tool results ([`Op::DropOldResults`]): each is replaced by a
//!   one-line note until the estimated size leaves room for a whole turn.
//!
//! Both report what they did as events, so the session log rebuilds the same conversation,
//! and both re-count the context instead of keeping the stale figure of the last turn.
//!
//! [`Op::ContinueFresh`]: crate::protocol::Op::ContinueFresh
//! [`Op::DropOldResults`]: crate::protocol::Op::DropOldResults

use super::Agent;
use crate::protocol::{DroppedResult, Event, Message};

/// Largest patch carried into a fresh conversation, in bytes; a longer one is cut (the model
/// can still see all of it with `git diff` in the workspace).
const MAX_CARRIED_PATCH: usize = 48 * 1024;

impl Agent {
    /// Replace the conversation with a fresh one carrying the task, the patch and `text`.
    pub(super) async fn restart_conversation(&mut self, text: String) {
        let task = original_task(&self.messages).unwrap_or_default();
        // The instructions head the new conversation's first message again (`push_user`).
        let task = match &self.config.instructions {
            Some(ins) => task.strip_prefix(&ins.block).unwrap_or(&task).to_string(),
            None => task,
        };
        let patch = match crate::sandbox::workspace::Checkout::of(self.tools.sandbox().as_ref())
            .export_patch()
            .await
        {
            Ok(p) => String::from_utf8_lossy(&p).into_owned(),
            Err(e) => {
                self.emit(Event::Error {
                    message: format!(
                        "the patch so far could not be read for the new conversation: {e}"
                    ),
                });
                String::new()
            }
        };
        self.emit(Event::ConversationRestarted {
            old_context_tokens: self.context_tokens,
        });
        self.messages = vec![Message::system(self.config.system_prompt.clone())];
        self.context_tokens = 0;
        // The turns before the restart are no longer in the conversation: none to go back to.
        self.turn_ends.clear();
        self.push_user(continuation_message(&task, &patch, &text));
    }

    /// Drop the oldest tool results until the conversation should fit with room for a turn.
    /// Returns false (and says why) when nothing more can be dropped.
    pub(super) fn drop_old_results(&mut self) -> bool {
        let limit = self.config.context_limit as usize;
        let room = (self.config.max_turn_tokens as usize).min(limit / 2);
        let target = limit.saturating_sub(room) * 9 / 10;
        let plan = plan_drops(&self.messages, self.context_tokens, target);
        if plan.indices.is_empty() {
            self.emit(Event::Error {
                message:
                    "no tool results are left to drop; continue in a fresh conversation instead"
                        .into(),
            });
            return false;
        }
        let mut dropped = Vec::new();
        for i in plan.indices {
            if let Message::Tool {
                tool_call_id,
                content,
            } = &mut self.messages[i]
            {
                let note = dropped_note(content.chars().count());
                *content = note.clone();
                dropped.push(DroppedResult {
                    call_id: tool_call_id.clone().unwrap_or_default(),
                    note,
                });
            }
        }
        self.context_tokens = plan.estimate;
        self.emit(Event::ToolResultsDropped {
            dropped,
            context_tokens: plan.estimate,
        });
        true
    }
}

/// The first user message after the system prompt: the task this conversation was given.
fn original_task(messages: &[Message]) -> Option<String> {
    messages.iter().find_map(|m| match m {
        Message::User { content } => Some(content.clone()),
        _ => None,
    })
}

/// The first message of a continuation conversation.
pub(crate) fn continuation_message(task: &str, patch: &str, text: &str) -> String {
    let mut m = String::new();
    m.push_str(task.trim_end());
    m.push_str(
        "\n\n---\nThe conversation about this task reached the context limit and was restarted. ",
    );
    if patch.trim().is_empty() {
        m.push_str("No files have been changed so far.\n");
    } else {
        let cut = if patch.len() > MAX_CARRIED_PATCH {
            let mut end = MAX_CARRIED_PATCH;
            while !patch.is_char_boundary(end) {
                end -= 1;
            }
            &patch[..end]
        } else {
            patch
        };
        m.push_str(
            "These changes are already in the working tree (`git diff` shows them):\n\n```diff\n",
        );
        m.push_str(cut.trim_end());
        if cut.len() < patch.len() {
            m.push_str("\n[... the rest of the diff is cut; run `git diff` to see it all]");
        }
        m.push_str("\n```\n");
    }
    if !text.trim().is_empty() {
        m.push('\n');
        m.push_str(text.trim());
    }
    m
}

/// The note that replaces a dropped result of `chars` characters.
fn dropped_note(chars: usize) -> String {
    format!("[This tool result ({chars} characters) was removed to fit the context window.]")
}

/// Which tool messages to drop, oldest first, and the estimated token count afterwards.
#[derive(Debug, PartialEq)]
struct DropPlan {
    indices: Vec<usize>,
    estimate: usize,
}

/// Estimate tokens by the conversation's characters, scaled by the last measured count
/// (`tokens` for the whole conversation as it is), and drop the oldest tool results until the
/// estimate is at most `target`. Results already replaced by a note are not counted again.
fn plan_drops(messages: &[Message], tokens: usize, target: usize) -> DropPlan {
    let size = |m: &Message| match m {
        Message::System { content } | Message::User { content } => content.chars().count(),
        Message::Assistant {
            reasoning_content,
            content,
            tool_calls,
        } => {
            content.chars().count()
                + reasoning_content
                    .as_deref()
                    .map_or(0, |r| r.chars().count())
                + tool_calls
                    .iter()
                    .map(|c| {
                        serde_json::Value::Object(c.arguments.clone())
                            .to_string()
                            .len()
                    })
                    .sum::<usize>()
        }
        Message::Tool { content, .. } => content.chars().count(),
    };
    let total: usize = messages.iter().map(size).sum::<usize>().max(1);
    let per_char = tokens as f64 / total as f64;
    let mut chars = total;
    let mut indices = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        if (chars as f64 * per_char) as usize <= target {
            break;
        }
        if let Message::Tool { content, .. } = m {
            if content.starts_with("[This tool result (") {
                continue;
            }
            let note = dropped_note(content.chars().count()).chars().count();
            chars = chars - content.chars().count() + note;
            indices.push(i);
        }
    }
    DropPlan {
        indices,
        estimate: (chars as f64 * per_char).ceil() as usize,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conversation() -> Vec<Message> {
        vec![
            Message::system("s".repeat(100)),
            Message::user("fix it"),
            Message::assistant(None, "", vec![]),
            Message::tool(Some("call_1".into()), "a".repeat(1000)),
            Message::assistant(None, "", vec![]),
            Message::tool(Some("call_2".into()), "b".repeat(1000)),
            Message::assistant(None, "", vec![]),
            Message::tool(Some("call_3".into()), "c".repeat(1000)),
        ]
    }

    #[test]
    fn drops_oldest_results_until_the_estimate_fits() {
        let m = conversation();
        // 3106 characters measured as 3106 tokens: fitting 2500 needs one result gone.
        let plan = plan_drops(&m, 3106, 2500);
        assert_eq!(plan.indices, vec![3]);
        assert!(plan.estimate <= 2500 && plan.estimate > 2000, "{plan:?}");
        let plan = plan_drops(&m, 3106, 1300);
        assert_eq!(plan.indices, vec![3, 5]);
        assert_eq!(plan_drops(&m, 3106, 5000).indices, Vec::<usize>::new());
    }

    #[test]
    fn notes_are_not_dropped_twice() {
        let mut m = conversation();
        if let Message::Tool { content, .. } = &mut m[3] {
            *content = dropped_note(1000);
        }
        let plan = plan_drops(&m, 3000, 1500);
        assert_eq!(plan.indices, vec![5, 7]);
    }

    #[test]
    fn the_continuation_carries_task_patch_and_message() {
        let m = continuation_message("fix the bug", "diff --git a/x b/x\n+y\n", "also add a test");
        assert!(m.starts_with("fix the bug\n"));
        assert!(m.contains("```diff\ndiff --git a/x b/x\n+y\n```"));
        assert!(m.ends_with("also add a test"));
        let empty = continuation_message("t", "", "");
        assert!(empty.contains("No files have been changed"));
        let long = "é".repeat(MAX_CARRIED_PATCH);
        let cut = continuation_message("t", &long, "go");
        assert!(cut.contains("the rest of the diff is cut"));
        assert!(cut.len() < long.len() + 400);
    }
}
