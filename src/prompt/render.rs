//! Rendering a conversation into prompt text with a Jinja chat template, the way Hugging Face
//! `apply_chat_template` does it in Python.
//!
//! Owns: the template environment (minijinja with `trim_blocks`/`lstrip_blocks` as in
//! `transformers`, Python string methods through `minijinja-contrib`'s pycompat, `tojson` as
//! `json.dumps`, `string` and `{{ value }}` printing as Python's `str()`, `raise_exception`) and
//! the template context (`messages`, `tools`, `add_generation_prompt`, `enable_thinking`).
//! Does not own: choosing the template (see [`super::PromptSettings::choose_template`]) or
//! tokenising the result.
//!
//! Invariant: rendering is a pure function of the template, the messages, the tools and the
//! settings; the same inputs give the same bytes.

use minijinja::value::{Kwargs, Value as JValue, ValueKind};
use minijinja::{Environment, Error as JError, ErrorKind, Output, State};
use serde_json::{json, Value};

use super::pyjson::{dumps, py_str, DumpOptions};
use super::tools::{ToolSpec, ToolsForm};
use super::{ChatTemplate, PromptError, PromptSettings, TemplateOrigin, Thinking};
use crate::protocol::{message_openai, ArgumentsAs, Message};

const TEMPLATE_NAME: &str = "chat";

/// Whether the prompt ends with the opening of a new assistant turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GenerationPrompt {
    /// End with `<|im_start|>assistant\n<think>\n` (or the template's equivalent).
    Add,
    /// Stop after the last message.
    Omit,
}

/// A compiled chat template plus the settings that shape its input.
pub struct Renderer {
    env: Environment<'static>,
    origin: TemplateOrigin,
    tools_form: ToolsForm,
    thinking: Thinking,
}

impl std::fmt::Debug for Renderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Renderer")
            .field("origin", &self.origin)
            .field("tools_form", &self.tools_form)
            .field("thinking", &self.thinking)
            .finish()
    }
}

impl Renderer {
    /// Compile `template`; fails with the template's syntax error.
    pub fn new(template: ChatTemplate, settings: &PromptSettings) -> Result<Self, PromptError> {
        let mut env = python_compatible_env();
        env.add_template_owned(TEMPLATE_NAME, template.source)
            .map_err(PromptError::TemplateSyntax)?;
        Ok(Self {
            env,
            origin: template.origin,
            tools_form: settings.tools_form,
            thinking: settings.thinking,
        })
    }

    /// The built-in template with the given settings.
    pub fn builtin(settings: &PromptSettings) -> Result<Self, PromptError> {
        Self::new(ChatTemplate::builtin(), settings)
    }

    pub fn origin(&self) -> &TemplateOrigin {
        &self.origin
    }

    /// The exact prompt text for `messages` with `tools` offered.
    pub fn render(
        &self,
        messages: &[Message],
        tools: &[ToolSpec],
        generation: GenerationPrompt,
    ) -> Result<String, PromptError> {
        let template = self
            .env
            .get_template(TEMPLATE_NAME)
            .map_err(PromptError::TemplateSyntax)?;
        let tools_value = if tools.is_empty() {
            Value::Null
        } else {
            Value::Array(
                tools
                    .iter()
                    .map(|t| t.to_prompt_value(self.tools_form))
                    .collect(),
            )
        };
        let ctx = json!({
            "messages": messages
                .iter()
                .map(|m| message_openai(m, ArgumentsAs::Object))
                .collect::<Vec<_>>(),
            "tools": tools_value,
            "add_generation_prompt": generation == GenerationPrompt::Add,
            "enable_thinking": self.thinking == Thinking::On,
            "bos_token": "",
            "eos_token": "<|im_end|>",
        });
        template
            .render(JValue::from_serialize(&ctx))
            .map_err(PromptError::Render)
    }
}

/// A minijinja error with its template location and cause chain, in one line.
pub(crate) fn describe(err: &JError) -> String {
    let mut text = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// An environment that renders templates written for Python's Jinja the way `transformers` does.
pub(crate) fn python_compatible_env() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    env.set_formatter(python_formatter);
    env.add_filter("tojson", tojson_filter);
    env.add_filter("string", string_filter);
    env.add_function("raise_exception", raise_exception);
    env
}

fn to_json(value: &JValue) -> Option<Value> {
    serde_json::to_value(value).ok()
}

/// `{{ value }}` prints like Python's `str()`: `True`, `None`, `1.0`, `['a']`.
fn python_formatter(
    out: &mut Output<'_>,
    state: &State<'_, '_>,
    value: &JValue,
) -> Result<(), JError> {
    match value.kind() {
        ValueKind::Bool | ValueKind::None | ValueKind::Number | ValueKind::Seq | ValueKind::Map => {
            if let Some(v) = to_json(value) {
                return out
                    .write_str(&py_str(&v))
                    .map_err(|e| JError::new(ErrorKind::WriteFailure, e.to_string()));
            }
            minijinja::escape_formatter(out, state, value)
        }
        _ => minijinja::escape_formatter(out, state, value),
    }
}

/// `tojson` as in `transformers`: `json.dumps(value, ensure_ascii=False, indent=...,
/// separators=..., sort_keys=...)`, not HTML-escaped.
fn tojson_filter(value: &JValue, indent: Option<usize>, kwargs: Kwargs) -> Result<JValue, JError> {
    let indent = match kwargs.get::<Option<usize>>("indent")? {
        Some(n) => Some(n),
        None => indent,
    };
    let sort_keys = kwargs.get::<Option<bool>>("sort_keys")?.unwrap_or(false);
    let separators = match kwargs.get::<Option<Vec<String>>>("separators")? {
        Some(pair) if pair.len() == 2 => Some((pair[0].clone(), pair[1].clone())),
        Some(_) => {
            return Err(JError::new(
                ErrorKind::InvalidOperation,
                "tojson separators must be a pair of strings",
            ))
        }
        None => None,
    };
    // Python's Jinja has no use for this argument; accepted so templates that pass it work.
    let _ = kwargs.get::<Option<bool>>("ensure_ascii")?;
    kwargs.assert_all_used()?;
    let json = to_json(value).ok_or_else(|| {
        JError::new(
            ErrorKind::InvalidOperation,
            "tojson: value cannot be written as JSON",
        )
    })?;
    let opts = DumpOptions {
        indent,
        sort_keys,
        separators,
    };
    Ok(JValue::from_safe_string(dumps(&json, &opts)))
}

/// `string` as Python's `str()`; strings pass through unchanged.
fn string_filter(value: &JValue) -> JValue {
    match value.kind() {
        ValueKind::String => value.clone(),
        ValueKind::Undefined => JValue::from(""),
        _ => match to_json(value) {
            Some(v) => JValue::from(py_str(&v)),
            None => JValue::from(value.to_string()),
        },
    }
}

fn raise_exception(message: String) -> Result<JValue, JError> {
    Err(JError::new(ErrorKind::InvalidOperation, message))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render_str(src: &str, ctx: Value) -> String {
        let env = python_compatible_env();
        env.render_str(src, JValue::from_serialize(&ctx)).unwrap()
    }

    #[test]
    fn tojson_is_python_json_dumps() {
        let out = render_str(
            "{{ x | tojson }}|{{ x | tojson(indent=1) }}",
            json!({"x": {"z": "é<&>'", "a": [1, 2.0, true, null]}}),
        );
        assert_eq!(
            out,
            "{\"z\": \"é<&>'\", \"a\": [1, 2.0, true, null]}|{\n \"z\": \"é<&>'\",\n \"a\": [\n  1,\n  2.0,\n  true,\n  null\n ]\n}"
        );
    }

    #[test]
    fn printing_and_string_follow_python() {
        let out = render_str(
            "{{ t }} {{ f }} {{ n }} {{ x }} {{ t | string }} {{ l }} {{ u }}|",
            json!({"t": true, "f": false, "n": null, "x": 1.0, "l": ["a", 1]}),
        );
        assert_eq!(out, "True False None 1.0 True ['a', 1] |");
    }

    #[test]
    fn python_string_methods_work() {
        let out = render_str(
            "{{ s.startswith('<a') }} {{ s.endswith('b>') }} {{ s.split('|')[-1].lstrip(' ') }} {{ ' x '.strip() }}",
            json!({"s": "<a| b>"}),
        );
        assert_eq!(out, "True True b> x");
    }

    /// Constructs that real chat templates (Qwen3.5 and its derivatives) rely on.
    #[test]
    fn constructs_of_real_templates_work() {
        let out = render_str(
            "{%- set e = effort|default('xhigh') %}{{ e not in ('low', 'medium') }} \
             {{- ' ' ~ (flag is true) ~ (flag is false) }} \
             {%- for m in items[::-1] %}{{ m.role }}{% if loop.previtem %}<{{ loop.previtem.role }}{% endif %};{% endfor %} \
             {%- for m in items %}{% if 'image' in m %}img{% break %}{% endif %}{% endfor %} \
             {%- for k, v in map|items %}{{ k }}={{ v }},{% endfor %}",
            json!({"flag": true, "items": [{"role": "a"}, {"role": "b", "image": 1}], "map": {"z": 1, "a": false}}),
        );
        // The same text as Python's Jinja2 gives.
        assert_eq!(out, "True TrueFalseb;a<b;imgz=1,a=False,");
    }

    #[test]
    fn raise_exception_is_a_render_error() {
        let r = Renderer::new(
            ChatTemplate {
                source: "{{ raise_exception('no way') }}".into(),
                origin: TemplateOrigin::Builtin,
            },
            &PromptSettings::default(),
        )
        .unwrap();
        let err = r.render(&[], &[], GenerationPrompt::Add).unwrap_err();
        assert!(err.to_string().contains("no way"), "{err}");
    }

    #[test]
    fn syntax_errors_are_reported() {
        let err = Renderer::new(
            ChatTemplate {
                source: "{% if %}".into(),
                origin: TemplateOrigin::Builtin,
            },
            &PromptSettings::default(),
        )
        .unwrap_err();
        assert!(matches!(err, PromptError::TemplateSyntax(_)), "{err}");
    }
}
