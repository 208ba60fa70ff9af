//! Plain data shared by every layer: chat messages, tool calls, operations sent to the agent
//! (`Op`) and events it emits (`Event`). Serde types only; nothing heavy may be imported here.

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
