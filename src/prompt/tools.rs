//! Tool definitions as the model sees them: name, description and JSON schema of each tool, the
//! five built-in Lilypad tools (from the built-in harness profile), the form the tools take in the prompt,
//! and the parameter types the output parser uses to type call arguments.
//!
//! Owns: the interface of the tools towards the model (names, parameter names, types, order,
//! required sets). Does not own: running tools or formatting their results (`crate::tools`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::sync::Arc;

use super::PromptError;

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
    /// `{"description": ..., "name": ..., "parameters": ..., "strict": false}` (the likeliest
    /// form the training server sent, unconfirmed: docs/prompt-format.md, "Unconfirmed facts,
    /// and what we chose").
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

/// The five built-in tools, in the order the model was trained with (the built-in harness
/// profile's).
pub fn builtin_tools() -> Vec<ToolSpec> {
    super::Harness::builtin().tools
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

/// The type a schema gives a parameter, as far as typing raw call text needs it (SGLang's
/// rules: docs/prompt-format.md, "Parsing model output").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamType {
    String,
    Integer,
    Number,
    Boolean,
    Object,
    Array,
    /// Declared with another type (or none the rules recognise): read as a Python literal.
    Literal,
    /// Not declared by the tool (or the tool is unknown): kept as a string.
    Unknown,
}

impl ParamType {
    /// From a property schema: `type` (a list: its first non-null entry), else `anyOf`/`oneOf`,
    /// `enum`, `allOf`, `properties` (object) or `items` (array); no type at all means string.
    pub fn from_schema(schema: &Value) -> Self {
        let name = infer_type(schema).unwrap_or_else(|| "string".into());
        Self::from_type_name(&name)
    }

    /// The conversion a type name selects, by the prefixes SGLang's converter tests.
    fn from_type_name(name: &str) -> Self {
        let t = name.trim().to_lowercase();
        let starts = |prefixes: &[&str]| prefixes.iter().any(|p| t.starts_with(p));
        if matches!(
            t.as_str(),
            "string" | "str" | "text" | "varchar" | "char" | "enum"
        ) {
            Self::String
        } else if starts(&["int", "uint", "long", "short", "unsigned"]) {
            Self::Integer
        } else if starts(&["num", "float"]) {
            Self::Number
        } else if matches!(t.as_str(), "boolean" | "bool" | "binary") {
            Self::Boolean
        } else if t == "object" || t.starts_with("dict") {
            Self::Object
        } else if t == "array" || t == "arr" || t.starts_with("list") {
            Self::Array
        } else {
            Self::Literal
        }
    }
}

/// The primary type name of a schema, as SGLang infers it; `None` when nothing says.
fn infer_type(schema: &Value) -> Option<String> {
    let obj = schema.as_object()?;
    match obj.get("type") {
        Some(Value::String(s)) => return Some(s.clone()),
        Some(Value::Array(list)) if !list.is_empty() => {
            let first = list.iter().find(|t| t.as_str() != Some("null"));
            return Some(match first {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => "string".into(),
            });
        }
        _ => {}
    }
    let branches = [obj.get("anyOf"), obj.get("oneOf")]
        .into_iter()
        .flatten()
        .find(|v| !v.as_array().is_some_and(Vec::is_empty) && !v.is_null());
    if let Some(Value::Array(branches)) = branches {
        let types: Vec<String> = branches.iter().filter_map(infer_type).collect();
        if !types.is_empty() {
            let mut distinct: Vec<&String> = Vec::new();
            for t in &types {
                if !distinct.contains(&t) {
                    distinct.push(t);
                }
            }
            if distinct.len() == 1 {
                return Some(types[0].clone());
            }
            if distinct.len() == 2 && distinct.iter().any(|t| *t == "null") {
                return types.iter().find(|t| *t != "null").cloned();
            }
            if distinct.iter().any(|t| *t == "string") {
                return Some("string".into());
            }
            return Some(types[0].clone());
        }
    }
    if let Some(Value::Array(values)) = obj.get("enum") {
        let mut kinds: Vec<&str> = Vec::new();
        for v in values {
            let kind = match v {
                Value::Null => "null",
                Value::Bool(_) => "boolean",
                Value::Number(n) if n.is_f64() => "number",
                Value::Number(_) => "integer",
                Value::String(_) => "string",
                Value::Array(_) => "array",
                Value::Object(_) => "object",
            };
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
        return Some(match kinds.as_slice() {
            [one] => (*one).to_string(),
            _ => "string".into(),
        });
    }
    if let Some(Value::Array(members)) = obj.get("allOf") {
        let found = members
            .iter()
            .filter_map(infer_type)
            .find(|t| t != "string");
        return Some(found.unwrap_or_else(|| "string".into()));
    }
    if obj.contains_key("properties") {
        return Some("object".into());
    }
    if obj.contains_key("items") {
        return Some("array".into());
    }
    None
}

/// A tool schema's top-level properties, from its `anyOf`/`oneOf`/`allOf` branches when it
/// declares none itself (the first declaration of a name wins).
fn schema_properties(schema: &Value) -> Vec<(String, Value)> {
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        return props.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    }
    let mut out: Vec<(String, Value)> = Vec::new();
    for keyword in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(branches)) = schema.get(keyword) {
            for branch in branches {
                for (k, v) in schema_properties(branch) {
                    if !out.iter().any(|(name, _)| *name == k) {
                        out.push((k, v));
                    }
                }
            }
        }
    }
    out
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
                params: schema_properties(&t.parameters)
                    .into_iter()
                    .map(|(k, v)| (k, ParamType::from_schema(&v)))
                    .collect(),
            })
            .collect();
        Self { tools }
    }

    /// The tool names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|t| t.name.as_str())
    }

    /// The parameter names of `tool`, in schema order (empty for unknown tools).
    pub fn params(&self, tool: &str) -> Vec<&str> {
        self.tools
            .iter()
            .find(|t| t.name == tool)
            .map(|t| t.params.iter().map(|(p, _)| p.as_str()).collect())
            .unwrap_or_default()
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

    /// docs/tools.md, "Parameters": names, parameter names, types, order and required sets.
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

    /// SGLang's inference: docs/prompt-format.md, "Parsing model output".
    #[test]
    fn schema_forms() {
        use serde_json::json;
        let ty = |v: Value| ParamType::from_schema(&v);
        assert_eq!(ty(json!({})), ParamType::String);
        assert_eq!(
            ty(json!({"anyOf": [{"type": "integer"}, {"type": "null"}]})),
            ParamType::Integer
        );
        assert_eq!(
            ty(json!({"oneOf": [{"type": "null"}, {"type": "array"}]})),
            ParamType::Array
        );
        assert_eq!(
            ty(json!({"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]})),
            ParamType::String
        );
        assert_eq!(
            ty(json!({"anyOf": [{"type": "integer"}, {"type": "boolean"}]})),
            ParamType::Integer
        );
        assert_eq!(ty(json!({"enum": ["a", "b"]})), ParamType::String);
        assert_eq!(ty(json!({"enum": [1, 2]})), ParamType::Integer);
        assert_eq!(ty(json!({"enum": [1.5]})), ParamType::Number);
        assert_eq!(ty(json!({"enum": [1, "a"]})), ParamType::String);
        assert_eq!(
            ty(json!({"allOf": [{"type": "string"}, {"type": "number"}]})),
            ParamType::Number
        );
        assert_eq!(ty(json!({"properties": {}})), ParamType::Object);
        assert_eq!(ty(json!({"items": {}})), ParamType::Array);
        assert_eq!(ty(json!({"type": "int64"})), ParamType::Integer);
        assert_eq!(ty(json!({"type": "float"})), ParamType::Number);
        assert_eq!(ty(json!({"type": "dict[str, int]"})), ParamType::Object);
        assert_eq!(ty(json!({"type": "tuple"})), ParamType::Literal);
        assert_eq!(ty(json!({"type": "null"})), ParamType::Literal);
        assert_eq!(ty(json!({"type": ["null"]})), ParamType::String);
        // Properties under a top-level union.
        let schemas = ToolSchemas::new(&[ToolSpec {
            name: "U".into(),
            description: String::new(),
            parameters: json!({"anyOf": [
                {"properties": {"a": {"type": "integer"}}},
                {"properties": {"a": {"type": "string"}, "b": {"type": "boolean"}}}
            ]}),
        }]);
        assert_eq!(schemas.param_type("U", "a"), ParamType::Integer);
        assert_eq!(schemas.param_type("U", "b"), ParamType::Boolean);
    }
}
