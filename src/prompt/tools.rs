//! Tool definitions as the model sees them: name, description and JSON schema of each tool, the
//! five built-in Lilypad tools (from `assets/tools.json`), the form the tools take in the prompt,
//! and the parameter types the output parser uses to type call arguments.
//!
//! Owns: the interface of the tools towards the model (names, parameter names, types, order,
//! required sets). Does not own: running tools or formatting their results (`crate::tools`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::sync::Arc;

use super::PromptError;

/// The five Lilypad tools, in the order the model was trained with.
const BUILTIN_TOOLS: &str = include_str!("../../assets/tools.json");

/// One tool offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// JSON schema of the arguments: `{"type": "object", "properties": {...}, "required": [...]}`.
    #[serde(default = "empty_object_schema")]
    pub parameters: Value,
}

fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {}})
}

/// How tools are written into the prompt's `<tools>` block.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolsForm {
    /// `{"description": ..., "name": ..., "parameters": ..., "strict": false}` (MODEL.md's
    /// best guess at what the training server sent).
    #[default]
    Flat,
    /// OpenAI's nested form: `{"type": "function", "function": {"name", "description",
    /// "parameters"}}`.
    Openai,
}

impl ToolSpec {
    /// The tool as one JSON value in the chosen form, keys in a fixed order.
    pub fn to_prompt_value(&self, form: ToolsForm) -> Value {
        let mut m = Map::new();
        match form {
            ToolsForm::Flat => {
                m.insert(
                    "description".into(),
                    Value::String(self.description.clone()),
                );
                m.insert("name".into(), Value::String(self.name.clone()));
                m.insert("parameters".into(), self.parameters.clone());
                m.insert("strict".into(), Value::Bool(false));
            }
            ToolsForm::Openai => {
                let mut f = Map::new();
                f.insert("name".into(), Value::String(self.name.clone()));
                f.insert(
                    "description".into(),
                    Value::String(self.description.clone()),
                );
                f.insert("parameters".into(), self.parameters.clone());
                m.insert("type".into(), Value::String("function".into()));
                m.insert("function".into(), Value::Object(f));
            }
        }
        Value::Object(m)
    }

    /// Read a tool from either form: flat `{name, description, parameters}` or OpenAI's
    /// `{"type": "function", "function": {...}}`.
    pub fn from_any(value: &Value) -> Result<Self, PromptError> {
        let inner = value.get("function").unwrap_or(value);
        serde_json::from_value(inner.clone()).map_err(|e| PromptError::Tools {
            what: "a tool definition".into(),
            message: e.to_string(),
        })
    }

    /// The declared type of one parameter; [`ParamType::Unknown`] when the tool has no such
    /// parameter.
    pub fn param_type(&self, param: &str) -> ParamType {
        match self.parameters.get("properties").and_then(|p| p.get(param)) {
            Some(schema) => ParamType::from_schema(schema),
            None => ParamType::Unknown,
        }
    }
}

/// The five built-in tools.
pub fn builtin_tools() -> Vec<ToolSpec> {
    // The asset is part of the binary and checked by the tests below, so parsing cannot fail in
    // a released build; fall back to an empty list rather than panic if it ever did.
    parse_tools(BUILTIN_TOOLS).unwrap_or_default()
}

/// Parse a JSON list of tools in either form.
pub fn parse_tools(text: &str) -> Result<Vec<ToolSpec>, PromptError> {
    let value: Value = serde_json::from_str(text).map_err(|e| PromptError::Tools {
        what: "the tool list".into(),
        message: e.to_string(),
    })?;
    let items = value.as_array().ok_or_else(|| PromptError::Tools {
        what: "the tool list".into(),
        message: "expected a JSON array of tools".into(),
    })?;
    items.iter().map(ToolSpec::from_any).collect()
}

/// The type a schema gives a parameter, as far as typing raw call text needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamType {
    String,
    Integer,
    Number,
    Boolean,
    Object,
    Array,
    /// Not declared by the tool (or the tool is unknown): kept as a string.
    Unknown,
}

impl ParamType {
    /// From a property schema: `"type": "integer"` or `"type": ["integer", "null"]` (the first
    /// non-null entry counts). No type means string.
    pub fn from_schema(schema: &Value) -> Self {
        let name = match schema.get("type") {
            Some(Value::String(s)) => s.as_str(),
            Some(Value::Array(list)) => list
                .iter()
                .filter_map(Value::as_str)
                .find(|t| *t != "null")
                .unwrap_or("string"),
            _ => "string",
        };
        match name {
            "integer" | "int" => Self::Integer,
            "number" | "float" => Self::Number,
            "boolean" | "bool" => Self::Boolean,
            "object" | "dict" => Self::Object,
            "array" | "list" => Self::Array,
            _ => Self::String,
        }
    }
}

/// Look-up of parameter types by tool name, for the parser. Cheap to clone (shared).
#[derive(Debug, Clone, Default)]
pub struct ToolSchemas {
    tools: Arc<[ToolTypes]>,
}

#[derive(Debug)]
struct ToolTypes {
    name: String,
    params: Vec<(String, ParamType)>,
}

impl ToolSchemas {
    pub fn new(tools: &[ToolSpec]) -> Self {
        let tools = tools
            .iter()
            .map(|t| ToolTypes {
                name: t.name.clone(),
                params: t
                    .parameters
                    .get("properties")
                    .and_then(Value::as_object)
                    .map(|props| {
                        props
                            .iter()
                            .map(|(k, v)| (k.clone(), ParamType::from_schema(v)))
                            .collect()
                    })
                    .unwrap_or_default(),
            })
            .collect();
        Self { tools }
    }

    /// The type of `param` of `tool`; `Unknown` for unknown tools and parameters.
    pub fn param_type(&self, tool: &str, param: &str) -> ParamType {
        self.tools
            .iter()
            .find(|t| t.name == tool)
            .and_then(|t| t.params.iter().find(|(p, _)| p == param))
            .map_or(ParamType::Unknown, |(_, ty)| *ty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(tool: &ToolSpec) -> Vec<(String, String)> {
        tool.parameters["properties"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v["type"].as_str().unwrap().to_string()))
            .collect()
    }

    fn required(tool: &ToolSpec) -> Vec<&str> {
        tool.parameters["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect()
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    /// MODEL.md section 2: names, parameter names, types, order and required sets.
    #[test]
    fn builtin_tools_match_the_training_interface() {
        let tools = builtin_tools();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["Read", "Write", "Edit", "Glob", "Bash"]);
        type Interface<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str]);
        let expect: [Interface; 5] = [
            (
                &[
                    ("file_path", "string"),
                    ("offset", "integer"),
                    ("limit", "integer"),
                ],
                &["file_path"],
            ),
            (
                &[("file_path", "string"), ("content", "string")],
                &["file_path", "content"],
            ),
            (
                &[
                    ("file_path", "string"),
                    ("old_string", "string"),
                    ("new_string", "string"),
                    ("replace_all", "boolean"),
                ],
                &["file_path", "old_string", "new_string"],
            ),
            (&[("pattern", "string"), ("path", "string")], &["pattern"]),
            (
                &[
                    ("command", "string"),
                    ("description", "string"),
                    ("timeout", "number"),
                ],
                &["command"],
            ),
        ];
        for (tool, (want_props, want_required)) in tools.iter().zip(expect) {
            assert_eq!(props(tool), pairs(want_props), "{}", tool.name);
            assert_eq!(required(tool), want_required, "{}", tool.name);
            assert!(!tool.description.is_empty());
            let keys: Vec<&String> = tool.parameters.as_object().unwrap().keys().collect();
            assert_eq!(keys, ["type", "properties", "required"]);
        }
    }

    #[test]
    fn forms_have_fixed_key_order() {
        let read = &builtin_tools()[0];
        let flat = read.to_prompt_value(ToolsForm::Flat);
        let keys: Vec<&String> = flat.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["description", "name", "parameters", "strict"]);
        let nested = read.to_prompt_value(ToolsForm::Openai);
        assert_eq!(nested["type"], "function");
        let keys: Vec<&String> = nested["function"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["name", "description", "parameters"]);
        assert_eq!(ToolSpec::from_any(&nested).unwrap(), *read);
        assert_eq!(ToolSpec::from_any(&flat).unwrap(), *read);
    }

    #[test]
    fn param_types_come_from_the_schema() {
        let schemas = ToolSchemas::new(&builtin_tools());
        assert_eq!(schemas.param_type("Read", "offset"), ParamType::Integer);
        assert_eq!(schemas.param_type("Bash", "timeout"), ParamType::Number);
        assert_eq!(
            schemas.param_type("Edit", "replace_all"),
            ParamType::Boolean
        );
        assert_eq!(schemas.param_type("Edit", "nope"), ParamType::Unknown);
        assert_eq!(schemas.param_type("Nope", "x"), ParamType::Unknown);
        let t = serde_json::json!({"type": ["null", "array"]});
        assert_eq!(ParamType::from_schema(&t), ParamType::Array);
    }
}
