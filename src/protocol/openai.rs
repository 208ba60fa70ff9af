//! Messages in the OpenAI chat format (`role`, `content`, `reasoning_content`, `tool_calls`,
//! `tool_call_id`): with arguments as a JSON string for remote servers and trajectories, as a
//! mapping for chat templates.

use super::Message;
use serde_json::{json, Map, Value};

/// How tool-call arguments are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgumentsAs {
    /// A JSON string, as the OpenAI API and trajectories have them.
    JsonString,
    /// A mapping, as chat templates expect them.
    Object,
}

/// One message in the OpenAI chat format, arguments as a JSON string.
pub fn message_json(message: &Message) -> Value {
    message_openai(message, ArgumentsAs::JsonString)
}

/// One message in the OpenAI chat format.
pub fn message_openai(message: &Message, arguments: ArgumentsAs) -> Value {
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
                                "arguments": match arguments {
                                    ArgumentsAs::JsonString => {
                                        Value::Object(c.arguments.clone()).to_string().into()
                                    }
                                    ArgumentsAs::Object => Value::Object(c.arguments.clone()),
                                },
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
