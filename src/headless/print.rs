//! Readable one-line forms of events for headless output without `--json`. Deltas are printed
//! as they come (reasoning dimmed by a `~` margin is left to terminals; here plain text).

use crate::protocol::Event;

/// The text to print for an event; empty for events not worth a line.
pub fn render_line(e: &Event) -> String {
    match e {
        Event::SessionStarted {
            session_id,
            model,
            sandbox,
            ..
        } => format!("session {session_id}: {model}; {sandbox}"),
        Event::UserMessage { text } => format!("task: {text}"),
        Event::MessageQueued { text } => format!("queued: {text}"),
        Event::ProjectInstructions { files, .. } => {
            format!("project instructions: {}", files.join(", "))
        }
        Event::ConversationRestarted { old_context_tokens } => {
            format!("conversation restarted (the old one held {old_context_tokens} tokens)")
        }
        Event::ToolResultsDropped {
            dropped,
            context_tokens,
        } => format!(
            "{} old tool results dropped; context about {context_tokens}",
            dropped.len()
        ),
        Event::TurnStarted { turn: step } => format!("-- step {step}"),
        Event::ReasoningDelta { .. } | Event::ContentDelta { .. } => String::new(),
        Event::TurnRevised { .. } => "(turn revised: earlier text was reasoning)".into(),
        Event::ToolCallStarted { .. }
        | Event::ToolCallArgumentDelta { .. }
        | Event::ToolOutputDelta { .. } => String::new(),
        Event::ToolCallReady { call } => format!(
            "call {} {}",
            call.name,
            serde_json::Value::Object(call.arguments.clone())
        ),
        Event::MalformedCall { message } => format!("malformed call: {message}"),
        Event::ApprovalRequested(r) => format!("approval needed for {}", r.call.name),
        Event::ToolResult {
            name,
            content,
            resolution,
            ..
        } => {
            let first = content.lines().next().unwrap_or("");
            let more = content.lines().count().saturating_sub(1);
            format!("result {name} ({resolution:?}): {first} [+{more} lines]")
        }
        Event::TurnFinished {
            turn: step,
            stop,
            figures,
            context_tokens,
        } => format!(
            "   step {step} done ({stop:?}): {} prompt tokens ({} reused), {} generated; context {context_tokens}",
            figures.prompt_tokens, figures.reused_tokens, figures.generated_tokens
        ),
        Event::Paused { turn: step } => format!("paused after step {step}"),
        Event::TaskFinished {
            reason,
            final_answer,
        } => match final_answer {
            Some(a) => format!("finished ({reason:?}): {a}"),
            None => format!("finished ({reason:?})"),
        },
        Event::CheckFinished {
            command,
            passed,
            exit_code,
            ..
        } => match (passed, exit_code) {
            (true, _) => format!("check passed: {command}"),
            (false, Some(c)) => format!("check failed (exit {c}): {command}"),
            (false, None) => format!("check timed out: {command}"),
        },
        Event::ShellRan {
            command, attached, ..
        } => match attached {
            true => format!("$ {command} (ran; attached to the next message)"),
            false => format!("$ {command} (interrupted)"),
        },
        Event::TurnRecorded { .. } => String::new(),
        Event::ApprovalPolicyChanged { policy } => {
            format!("approval policy: {}", policy.short_spec())
        }
        Event::Rewound {
            turn,
            messages,
            from_turn,
            ..
        } => format!(
            "rewound from step {from_turn} to the end of step {turn} ({messages} messages kept; files restored)"
        ),
        Event::CommentsRecorded { comments } => format!(
            "review comments recorded (not sent to the model):\n{}",
            crate::protocol::RecordedComment::numbered(comments)
        ),
        Event::Error { message } => format!("error: {message}"),
        Event::SessionEnded => String::new(),
    }
}
