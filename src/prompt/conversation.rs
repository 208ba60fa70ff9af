//! Reading a conversation file in the OpenAI chat format: `{"messages": [...], "tools": [...]}`
//! (or a bare list of messages), as `lilypad prompt` takes it.
//!
//! Owns: the leniencies of that format (content as a string, `null` or a list of text parts;
//! `developer` as `system`; `reasoning_content` or `reasoning`; tool-call arguments as a JSON
//! object or a JSON string; tools flat or nested). Does not own: rendering.

use serde_json::{Map, Value};

use super::tools::ToolSpec;
use super::PromptError;
use crate::protocol::{Message, ToolCall};

/// A parsed conversation file.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    pub messages: Vec<Message>,
    /// The file's `tools`, when it has the key (an empty list means "no tools").
    pub tools: Option<Vec<ToolSpec>>,
}

/// What is wrong with a conversation file, and where.
#[derive(Debug, thiserror::Error)]
pub enum ConversationError {
    #[error("not valid JSON: {0}")]
    Json(#[source] serde_json::Error),
    /// A value of the wrong shape; the text says what was expected.
    #[error("{0}")]
    Shape(&'static str),
    #[error("unknown role \"{0}\" (expected system, user, assistant or tool)")]
    Role(String),
    #[error("arguments are not valid JSON: {0}")]
    Arguments(#[source] serde_json::Error),
    #[error("message {index}: {source}")]
    Message {
        index: usize,
        source: Box<ConversationError>,
    },
    #[error("tool call {index}: {source}")]
    Call {
        index: usize,
        source: Box<ConversationError>,
    },
}

use ConversationError::Shape;

fn bad(e: ConversationError) -> PromptError {
    PromptError::Conversation(e)
}

/// Parse a conversation file's text.
pub fn parse_conversation(text: &str) -> Result<Conversation, PromptError> {
    let root: Value = serde_json::from_str(text).map_err(|e| bad(ConversationError::Json(e)))?;
    let (messages, tools) = match &root {
        Value::Array(list) => (list.as_slice(), None),
        Value::Object(obj) => {
            let messages = obj
                .get("messages")
                .and_then(Value::as_array)
                .ok_or_else(|| bad(Shape("expected a \"messages\" list")))?;
            let tools = match obj.get("tools") {
                None | Some(Value::Null) => None,
                Some(Value::Array(list)) => Some(
                    list.iter()
                        .map(ToolSpec::from_any)
                        .collect::<Result<Vec<_>, _>>()?,
                ),
                Some(_) => return Err(bad(Shape("\"tools\" must be a list"))),
            };
            (messages.as_slice(), tools)
        }
        _ => return Err(bad(Shape("expected an object with \"messages\" or a list"))),
    };
    let mut next_id = 0usize;
    let messages = messages
        .iter()
        .enumerate()
        .map(|(index, m)| {
            parse_message(m, &mut next_id).map_err(|e| {
                bad(ConversationError::Message {
                    index,
                    source: Box::new(e),
                })
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Conversation { messages, tools })
}

fn parse_message(value: &Value, next_id: &mut usize) -> Result<Message, ConversationError> {
    let obj = value.as_object().ok_or(Shape("expected an object"))?;
    let role = obj
        .get("role")
        .and_then(Value::as_str)
        .ok_or(Shape("missing \"role\""))?;
    let content = content_text(obj.get("content"))?;
    match role {
        "system" | "developer" => Ok(Message::System { content }),
        "user" => Ok(Message::User { content }),
        "tool" => Ok(Message::Tool {
            tool_call_id: obj
                .get("tool_call_id")
                .and_then(Value::as_str)
                .map(str::to_string),
            content,
        }),
        "assistant" => {
            let reasoning = obj
                .get("reasoning_content")
                .or_else(|| obj.get("reasoning"))
                .and_then(Value::as_str)
                .map(str::to_string);
            let tool_calls = match obj.get("tool_calls") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(calls)) => calls
                    .iter()
                    .enumerate()
                    .map(|(index, c)| {
                        parse_call(c, next_id).map_err(|e| ConversationError::Call {
                            index,
                            source: Box::new(e),
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?,
                Some(_) => return Err(Shape("\"tool_calls\" must be a list")),
            };
            Ok(Message::Assistant {
                reasoning_content: reasoning,
                content,
                tool_calls,
            })
        }
        other => Err(ConversationError::Role(other.to_string())),
    }
}

/// Content as text: a string, `null` (empty), or a list of parts whose `text` fields are joined.
fn content_text(value: Option<&Value>) -> Result<String, ConversationError> {
    match value {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            for part in parts {
                match part.get("text").and_then(Value::as_str) {
                    Some(t) => text.push_str(t),
                    None => return Err(Shape("only text content parts are supported")),
                }
            }
            Ok(text)
        }
        Some(_) => Err(Shape(
            "\"content\" must be a string, null or a list of text parts",
        )),
    }
}

fn parse_call(value: &Value, next_id: &mut usize) -> Result<ToolCall, ConversationError> {
    let inner = value.get("function").unwrap_or(value);
    let name = inner
        .get("name")
        .and_then(Value::as_str)
        .ok_or(Shape("missing function name"))?
        .to_string();
    let arguments = match inner.get("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map.clone(),
        Some(Value::String(text)) if text.trim().is_empty() => Map::new(),
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => map,
            Ok(_) => return Err(Shape("arguments must be a JSON object")),
            Err(e) => return Err(ConversationError::Arguments(e)),
        },
        Some(_) => return Err(Shape("arguments must be an object or a JSON string")),
    };
    let id = match value.get("id").and_then(Value::as_str) {
        Some(id) => id.to_string(),
        None => format!("call_{}", *next_id),
    };
    *next_id += 1;
    Ok(ToolCall {
        id,
        name,
        arguments,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_file_with_string_and_object_arguments() {
        let conv = parse_conversation(
            r#"{"messages": [
                {"role": "system", "content": "S"},
                {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                {"role": "assistant", "content": null, "reasoning_content": "R", "tool_calls": [
                    {"id": "x1", "type": "function", "function": {"name": "Read", "arguments": "{\"file_path\": \"f\", \"offset\": 2}"}},
                    {"type": "function", "function": {"name": "Glob", "arguments": {"pattern": "*"}}}
                ]},
                {"role": "tool", "tool_call_id": "x1", "content": "out"}
            ]}"#,
        )
        .unwrap();
        assert!(conv.tools.is_none());
        assert_eq!(conv.messages[1], Message::user("ab"));
        let Message::Assistant {
            reasoning_content,
            content,
            tool_calls,
        } = &conv.messages[2]
        else {
            panic!("not an assistant message");
        };
        assert_eq!(reasoning_content.as_deref(), Some("R"));
        assert_eq!(content, "");
        assert_eq!(tool_calls[0].id, "x1");
        assert_eq!(
            tool_calls[0].arguments.keys().collect::<Vec<_>>(),
            ["file_path", "offset"]
        );
        assert_eq!(tool_calls[1].id, "call_1");
        assert_eq!(tool_calls[1].arguments["pattern"], "*");
    }

    #[test]
    fn errors_say_where() {
        let err = parse_conversation(
            r#"{"messages": [{"role": "user", "content": "a"}, {"role": "robot"}]}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("message 1") && err.contains("robot"), "{err}");
        let err = parse_conversation(r#"{"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "Read", "arguments": "{oops"}}]}]}"#)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("tool call 0") && err.contains("not valid JSON"),
            "{err}"
        );
    }

    #[test]
    fn tools_in_either_form_and_bare_lists() {
        let conv = parse_conversation(
            r#"{"messages": [], "tools": [{"type": "function", "function": {"name": "A"}}, {"name": "B", "description": "d"}]}"#,
        )
        .unwrap();
        let names: Vec<String> = conv.tools.unwrap().into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["A", "B"]);
        let conv = parse_conversation(r#"[{"role": "developer", "content": "x"}]"#).unwrap();
        assert_eq!(conv.messages, [Message::system("x")]);
    }
}
