//! Plain data shared by every layer: chat messages, tool calls, operations sent to the agent
//! (`Op`) and events it emits (`Event`). Serde types only; nothing heavy may be imported here.
