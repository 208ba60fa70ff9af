//! Messages in the OpenAI chat format (`role`, `content`, `reasoning_content`, `tool_calls` with
//! arguments as a JSON string, `tool_call_id`): what remote servers receive and what
//! trajectories record.

use super::Message;
use serde_json::{json, Map, Value};

/// One message in the OpenAI chat format.
pub fn message_json(message: &Message) -> Value {
    match message {
        Message::System { content } => json!({"role": "system", "content": content}),
        Message::User { content } => json!({"role": "user", "content": content}),
        Message::Assistant {
            reasoning_content,
            content,
            tool_calls,
        } => {
            let mut m = Map::new();
            m.insert("role".into(), json!("assistant"));
            m.insert("content".into(), json!(content));
            if let Some(r) = reasoning_content {
                m.insert("reasoning_content".into(), json!(r));
            }
            if !tool_calls.is_empty() {
                let calls: Vec<Value> = tool_calls
                    .iter()
                    .map(|c| {
                        json!({
                            "id": c.id,
                            "type": "function",
                            "function": {
                                "name": c.name,
                                "arguments": Value::Object(c.arguments.clone()).to_string(),
                            },
                        })
                    })
                    .collect();
                m.insert("tool_calls".into(), Value::Array(calls));
            }
            Value::Object(m)
        }
        Message::Tool {
            tool_call_id,
            content,
        } => {
            let mut m = Map::new();
            m.insert("role".into(), json!("tool"));
            if let Some(id) = tool_call_id {
                m.insert("tool_call_id".into(), json!(id));
            }
            m.insert("content".into(), json!(content));
            Value::Object(m)
        }
    }
}
