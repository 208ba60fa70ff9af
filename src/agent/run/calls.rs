//! Running one tool call under the approval policy: read-only calls run; edits are proposed,
//! shown, and applied only as approved (possibly as the person edited them); commands are
//! shown and run only when approved. Rejections and refusals become the call's result, so the
//! model learns why.

use super::{Agent, Halt};
use crate::protocol::{
    ApprovalKind, ApprovalRequest, Event, Op, Policy, Resolution, ReviewDecision, ToolCall,
    ToolCategory, REJECTED_RESULT,
};
use crate::tools::{Before, ToolResult};
use tokio::sync::mpsc::UnboundedReceiver;

fn result(content: String, is_error: bool) -> ToolResult {
    ToolResult { content, is_error }
}

impl Agent {
    /// Run `call`; returns its result and how it was settled, or a halt.
    pub(super) async fn run_call(
        &mut self,
        call: &ToolCall,
        ops: &mut UnboundedReceiver<Op>,
    ) -> Result<(ToolResult, Resolution), Halt> {
        let Some(category) = crate::tools::category(&call.name) else {
            // Unknown tools get the tools layer's own answer.
            return Ok((self.tools.run(call).await, Resolution::Auto));
        };
        let policy = self.config.policy.get(category);
        if policy == Policy::Deny {
            let text = format!(
                "PermissionError: {} calls are disabled in this session; do not retry this tool",
                match category {
                    ToolCategory::ReadOnly => "read-only",
                    ToolCategory::Edits => "file-editing",
                    ToolCategory::Commands => "command",
                }
            );
            return Ok((result(text, true), Resolution::Denied));
        }
        match category {
            ToolCategory::ReadOnly => {
                let r = self.execute(call, ops).await?;
                Ok((r, Resolution::Auto))
            }
            ToolCategory::Edits => self.run_edit(call, category, policy, ops).await,
            ToolCategory::Commands => self.run_command(call, category, policy, ops).await,
        }
    }

    async fn run_edit(
        &mut self,
        call: &ToolCall,
        category: ToolCategory,
        policy: Policy,
        ops: &mut UnboundedReceiver<Op>,
    ) -> Result<(ToolResult, Resolution), Halt> {
        let change = match self.tools.propose(call).await {
            Ok(c) => c,
            // Invalid arguments, a missing file, an ambiguous edit: nothing to approve.
            Err(r) => return Ok((r, Resolution::Skipped)),
        };
        if policy == Policy::Auto {
            let r = self.tools.apply(&change, &change.new_text).await;
            return Ok((r, Resolution::Auto));
        }
        let (before, binary_before) = match &change.before {
            Before::New => (None, false),
            Before::Text(t) => (Some(t.clone()), false),
            Before::Binary(_) => (None, true),
        };
        let kind = ApprovalKind::Change {
            path: change.shown_path.clone(),
            before,
            after: change.new_text.clone(),
            binary_before,
        };
        match self.ask(call, category, kind, ops).await? {
            ReviewDecision::Approve => Ok((
                self.tools.apply(&change, &change.new_text).await,
                Resolution::Approved,
            )),
            ReviewDecision::ApproveForSession => {
                let mut raised = self.config.policy;
                raised.set(category, Policy::Auto);
                self.set_policy(raised);
                Ok((
                    self.tools.apply(&change, &change.new_text).await,
                    Resolution::Approved,
                ))
            }
            ReviewDecision::ApproveHunks {
                text,
                kept,
                dropped,
                feedback,
            } => {
                let mut r = self.tools.apply(&change, &text).await;
                if !r.is_error {
                    r.content.push('\n');
                    r.content.push_str(&partly_applied(
                        &change.shown_path,
                        &kept,
                        &dropped,
                        feedback.as_deref(),
                    ));
                }
                Ok((r, Resolution::Edited))
            }
            // Prefix rules are for commands; for a change it is a plain approval.
            ReviewDecision::ApprovePrefix { .. } => Ok((
                self.tools.apply(&change, &change.new_text).await,
                Resolution::Approved,
            )),
            ReviewDecision::ApproveEdited { text } => {
                let mut r = self.tools.apply(&change, &text).await;
                if !r.is_error && text != change.new_text {
                    r.content.push_str(EDITED_NOTE);
                }
                Ok((r, Resolution::Edited))
            }
            ReviewDecision::ApproveWithFeedback { text, feedback } => {
                let mut r = self.tools.apply(&change, &text).await;
                let edited = text != change.new_text;
                if !r.is_error {
                    if edited {
                        r.content.push_str(EDITED_NOTE);
                    }
                    r.content.push_str(&format!(
                        "\nThe user approved it and says:\n{}",
                        feedback.trim()
                    ));
                }
                let how = if edited {
                    Resolution::Edited
                } else {
                    Resolution::Approved
                };
                Ok((r, how))
            }
            ReviewDecision::Reject { feedback } => Ok((
                result(rejection("change", &feedback), true),
                Resolution::Rejected,
            )),
        }
    }

    async fn run_command(
        &mut self,
        call: &ToolCall,
        category: ToolCategory,
        policy: Policy,
        ops: &mut UnboundedReceiver<Op>,
    ) -> Result<(ToolResult, Resolution), Halt> {
        if policy == Policy::Auto {
            return Ok((self.execute(call, ops).await?, Resolution::Auto));
        }
        let request = match self.tools.command_request(call) {
            Ok(r) => r,
            Err(r) => return Ok((r, Resolution::Skipped)),
        };
        if self
            .config
            .command_rules
            .iter()
            .any(|rule| rule.matches(&request.command))
        {
            return Ok((self.execute(call, ops).await?, Resolution::Auto));
        }
        let kind = ApprovalKind::Command {
            command: request.command.clone(),
            description: request.description.clone(),
            timeout_seconds: request.timeout.as_secs_f64(),
        };
        match self.ask(call, category, kind, ops).await? {
            ReviewDecision::Approve => Ok((self.execute(call, ops).await?, Resolution::Approved)),
            ReviewDecision::ApproveForSession => {
                let mut raised = self.config.policy;
                raised.set(category, Policy::Auto);
                self.set_policy(raised);
                Ok((self.execute(call, ops).await?, Resolution::Approved))
            }
            ReviewDecision::ApprovePrefix { prefix } => {
                let rule = crate::agent::CommandRule::new(&prefix);
                if !self.config.command_rules.contains(&rule) {
                    self.config.command_rules.push(rule);
                }
                Ok((self.execute(call, ops).await?, Resolution::Approved))
            }
            // Line comments are for changes: a command runs as it would without them.
            ReviewDecision::ApproveEdited { text }
            | ReviewDecision::ApproveWithFeedback { text, .. }
                if text.trim() == request.command.trim() =>
            {
                Ok((self.execute(call, ops).await?, Resolution::Approved))
            }
            ReviewDecision::ApproveEdited { text }
            | ReviewDecision::ApproveWithFeedback { text, .. } => {
                let mut edited = call.clone();
                edited
                    .arguments
                    .insert("command".into(), serde_json::Value::String(text.clone()));
                let mut r = self.execute(&edited, ops).await?;
                r.content = format!(
                    "Note: the user changed your command before running it.\nYou proposed: {}\nWhat ran: {text}\nIts output:\n{}",
                    request.command, r.content
                );
                Ok((r, Resolution::Edited))
            }
            ReviewDecision::ApproveHunks { .. } => {
                Ok((self.execute(call, ops).await?, Resolution::Approved))
            }
            ReviewDecision::Reject { feedback } => Ok((
                result(rejection("command", &feedback), true),
                Resolution::Rejected,
            )),
        }
    }

    /// Emit an approval request and wait for its answer (other operations still apply).
    async fn ask(
        &mut self,
        call: &ToolCall,
        category: ToolCategory,
        kind: ApprovalKind,
        ops: &mut UnboundedReceiver<Op>,
    ) -> Result<ReviewDecision, Halt> {
        let id = self.next_request;
        self.next_request += 1;
        self.emit(Event::ApprovalRequested(ApprovalRequest {
            id,
            call: call.clone(),
            category,
            kind,
        }));
        loop {
            match ops.recv().await {
                Some(Op::Review { id: got, decision }) if got == id => return Ok(decision),
                other => {
                    if let Some(h) = self.background_op(other) {
                        return Err(h);
                    }
                }
            }
        }
    }

    /// Run a call, streaming command output as events; an interrupt drops (kills) it.
    async fn execute(
        &mut self,
        call: &ToolCall,
        ops: &mut UnboundedReceiver<Op>,
    ) -> Result<ToolResult, Halt> {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let tools = self.tools.clone();
        let run = tools.run_streaming(call, Some(tx));
        tokio::pin!(run);
        loop {
            tokio::select! {
                r = &mut run => {
                    while let Ok(chunk) = rx.try_recv() {
                        self.live_output(&call.id, &chunk.data);
                    }
                    return Ok(r);
                }
                Some(chunk) = rx.recv() => self.live_output(&call.id, &chunk.data),
                op = ops.recv() => {
                    if let Some(h) = self.background_op(op) {
                        return Err(h);
                    }
                }
            }
        }
    }

    fn live_output(&self, call_id: &str, data: &[u8]) {
        self.emit(Event::ToolOutputDelta {
            call_id: call_id.to_string(),
            text: String::from_utf8_lossy(data).into_owned(),
        });
    }
}

/// What the model reads after a change the person edited before applying it.
const EDITED_NOTE: &str = "\nNote: the user edited your proposed change before applying it; the file now holds the user's version, so read it again before editing it further.";

/// What the model reads when a person kept only some hunks of its change.
fn partly_applied(
    path: &str,
    kept: &[crate::protocol::HunkNote],
    dropped: &[crate::protocol::HunkNote],
    feedback: Option<&str>,
) -> String {
    let list = |hunks: &[crate::protocol::HunkNote]| {
        hunks
            .iter()
            .map(|h| {
                format!(
                    "hunk {} ({}: `{}`)",
                    h.number,
                    h.header,
                    h.first_change.trim()
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let total = kept.len() + dropped.len();
    let mut out = format!(
        "Note: the user applied only part of your change to {path}. Kept {} of {total}: {}. Dropped: {}; those lines are as they were before your change.",
        kept.len(),
        list(kept),
        list(dropped),
    );
    if let Some(f) = feedback.map(str::trim).filter(|f| !f.is_empty()) {
        out.push_str(&format!(" The user says: {f}"));
    }
    out.push_str(" Read the file again before editing it further.");
    out
}

/// The result the model reads when a person says no.
fn rejection(what: &str, feedback: &str) -> String {
    let feedback = feedback.trim();
    if feedback.is_empty() {
        format!("{REJECTED_RESULT} {what}; it was not applied.")
    } else {
        format!("{REJECTED_RESULT} {what}; it was not applied. The user says: {feedback}")
    }
}
