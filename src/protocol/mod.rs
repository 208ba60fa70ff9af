//! Plain data shared by every layer: chat messages, tool calls, operations sent to the agent
//! (`Op`) and events it emits (`Event`), and the approval policy they carry. Serde types only; nothing heavy may be imported here.

mod approval;
mod conversation;
mod events;
mod openai;
mod tool_name;
mod usage;

pub use approval::{ApprovalPolicy, Policy, PolicyOverride, PolicyParseError};
pub use conversation::{conversation_key, session_id};
pub use events::{
    ApprovalKind, ApprovalRequest, DroppedResult, Event, FinishReason, HunkNote, Op,
    RecordedComment, RequestId, Resolution, ReviewDecision, ToolCategory, TurnEnd, REJECTED_RESULT,
};
pub use openai::{message_json, message_openai, ArgumentsAs};
pub use tool_name::ToolName;
pub use usage::{DraftFigures, Figures, Reuse, StopReason};

use serde::{Deserialize, Serialize};

/// One tool call the model asked for, with arguments already typed by the tool's schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Stable id within a session (`call_{n}`), used to pair results with calls.
    pub id: String,
    /// Tool name exactly as the model wrote it (`Read`, `Write`, `Edit`, `Glob`, `Bash`, or
    /// anything else, which the tools layer answers with `Unknown tool: {name}`).
    pub name: String,
    /// Arguments in the order the model wrote them.
    pub arguments: serde_json::Map<String, serde_json::Value>,
}

/// One message of a conversation with the model, in the roles of the OpenAI chat format.
/// The prompt renderer turns a list of these into the exact text the model reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    /// Instructions; only meaningful as the first message.
    System { content: String },
    /// A request from the person (or the task text).
    User { content: String },
    /// A model turn: its reasoning, its visible text and the tool calls it made.
    Assistant {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning_content: Option<String>,
        #[serde(default)]
        content: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call, as the model will read it.
    Tool {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_call_id: Option<String>,
        content: String,
    },
}

impl Message {
    pub fn system(content: impl Into<String>) -> Self {
        Self::System {
            content: content.into(),
        }
    }

    pub fn user(content: impl Into<String>) -> Self {
        Self::User {
            content: content.into(),
        }
    }

    pub fn assistant(
        reasoning: Option<String>,
        content: impl Into<String>,
        tool_calls: Vec<ToolCall>,
    ) -> Self {
        Self::Assistant {
            reasoning_content: reasoning,
            content: content.into(),
            tool_calls,
        }
    }

    pub fn tool(tool_call_id: Option<String>, content: impl Into<String>) -> Self {
        Self::Tool {
            tool_call_id,
            content: content.into(),
        }
    }
}
