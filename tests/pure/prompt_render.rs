//! Prompt rendering: golden prompts for representative conversations, byte for byte, from the
//! built-in template and from an independent Qwen3.5-style Jinja template; the wire format
//! (docs/prompt-format.md, "The wire format") checked directly; settings (tools form, thinking)
//! and error cases.
//!
//! Goldens live in `tests/golden/prompt/`. After a deliberate format change, regenerate them
//! with `UPDATE_SNAPSHOTS=1 cargo test --test pure prompt_render` and review the diff.

use std::path::{Path, PathBuf};

use lilypad::prompt::{
    parse_conversation, ChatTemplate, GenerationPrompt, PromptSettings, Renderer, TemplateOrigin,
    Thinking, ToolSpec, ToolsForm,
};
use lilypad::protocol::Message;

const CASES: &[&str] = &[
    "first_turn",
    "tool_rounds",
    "second_user",
    "unicode_and_types",
    "no_tools",
];

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/prompt")
        .join(name)
}

fn golden_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/prompt")
        .join(format!("{name}.txt"))
}

fn qwen_style(settings: &PromptSettings) -> Renderer {
    let source = std::fs::read_to_string(data("qwen35_style.jinja")).unwrap();
    Renderer::new(
        ChatTemplate {
            source,
            origin: TemplateOrigin::Model,
        },
        settings,
    )
    .unwrap()
}

fn load(name: &str) -> (Vec<Message>, Vec<ToolSpec>) {
    let text = std::fs::read_to_string(data(&format!("{name}.json"))).unwrap();
    let conv = parse_conversation(&text).unwrap();
    let tools = conv
        .tools
        .unwrap_or_else(|| PromptSettings::default().tools().unwrap());
    (conv.messages, tools)
}

fn render_both(name: &str, settings: &PromptSettings) -> String {
    let (messages, tools) = load(name);
    let builtin = Renderer::builtin(settings)
        .unwrap()
        .render(&messages, &tools, GenerationPrompt::Add)
        .unwrap();
    let other = qwen_style(settings)
        .render(&messages, &tools, GenerationPrompt::Add)
        .unwrap();
    assert_eq!(
        builtin, other,
        "{name}: built-in and Qwen3.5-style templates disagree"
    );
    builtin
}

#[test]
fn goldens_match_byte_for_byte_from_both_templates() {
    let bless = std::env::var_os("UPDATE_SNAPSHOTS").is_some();
    for name in CASES {
        let text = render_both(name, &PromptSettings::default());
        let path = golden_path(name);
        if bless {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &text).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (run with UPDATE_SNAPSHOTS=1)", path.display()));
        assert!(
            text == want,
            "{name}: prompt differs from {}\n--- got ---\n{text}\n--- want ---\n{want}",
            path.display()
        );
    }
}

#[test]
fn first_turn_has_the_wire_format_layout() {
    let text = render_both("first_turn", &PromptSettings::default());
    let head = "<|im_start|>system\n# Tools\n\nYou have access to the following functions:\n\n<tools>\n{\"description\": \"Show the contents of a text file";
    assert!(text.starts_with(head), "{text}");
    // One JSON object per tool, each on its own line, in the flat form with `strict: false`.
    let tools_block = text.split("<tools>\n").nth(1).unwrap();
    let tools_block = tools_block.split("\n</tools>").next().unwrap();
    let lines: Vec<&str> = tools_block.lines().collect();
    assert_eq!(lines.len(), 5);
    for (line, name) in lines.iter().zip(["Read", "Write", "Edit", "Glob", "Bash"]) {
        assert!(line.contains(&format!("\"name\": \"{name}\"")), "{line}");
        assert!(line.ends_with(", \"strict\": false}"), "{line}");
        assert!(line.contains("\"parameters\": {\"type\": \"object\", \"properties\": {"));
    }
    // Instruction block, then a blank line, then the system prompt, then the end of the turn.
    assert!(text.contains("</IMPORTANT>\n\nYou are an autonomous software engineering agent"));
    assert!(text.contains("summary of the outcome.<|im_end|>\n<|im_start|>user\nThe test"));
    assert!(text.ends_with("Fix it.<|im_end|>\n<|im_start|>assistant\n<think>\n"));
}

#[test]
fn tool_results_form_one_user_turn_and_calls_use_the_coder_layout() {
    let text = render_both("tool_rounds", &PromptSettings::default());
    assert!(text.contains(
        "<|im_start|>assistant\n<think>\nI should look at the file first.\n</think>\n\n<tool_call>\n<function=Read>\n<parameter=file_path>\nsrc/net.py\n</parameter>\n<parameter=offset>\n10\n</parameter>\n<parameter=limit>\n20\n</parameter>\n</function>\n</tool_call><|im_end|>\n"
    ));
    assert!(text.contains("Adding the check.\n\n<tool_call>\n<function=Edit>\n"));
    // Two consecutive tool results share one user turn.
    assert!(text.contains(
        "<|im_start|>user\n<tool_response>\nsrc/net.py\nsrc/main.py\n</tool_response>\n<tool_response>\ntests/test_net.py\n1. from src.net import parse_port\n</tool_response><|im_end|>\n"
    ));
    // Two calls in one turn follow each other on separate lines.
    assert!(text.contains("</function>\n</tool_call>\n<tool_call>\n<function=Read>\n"));
    // Within one task every assistant turn keeps its reasoning (the prompt is append-only).
    assert_eq!(text.matches("<think>\n").count(), 5);
}

#[test]
fn a_new_user_message_drops_earlier_reasoning() {
    let text = render_both("second_user", &PromptSettings::default());
    assert!(!text.contains("Read main.py."));
    assert!(!text.contains("It prints hi."));
    assert!(text.contains("<|im_start|>assistant\n<tool_call>\n<function=Read>"));
    assert!(text.contains("<|im_start|>assistant\nIt prints `hi`.<|im_end|>"));
    assert!(text.contains("<think>\nEdit the literal.\n</think>\n\n<tool_call>"));
    assert!(text.contains("<parameter=replace_all>\nFalse\n</parameter>"));
}

#[test]
fn values_keep_non_ascii_and_python_spelling() {
    let text = render_both("unicode_and_types", &PromptSettings::default());
    assert!(text.contains(
        "<parameter=content>\nBonjour — ça va ?\n你好\n\tこんにちは 🌍\n\n\n</parameter>"
    ));
    assert!(text.contains("<parameter=replace_all>\nTrue\n</parameter>"));
    assert!(text.contains("<parameter=timeout>\n1.5\n</parameter>"));
    assert!(text.contains("<parameter=offset>\n2\n</parameter>"));
    assert!(text.contains("Écris un fichier de salutations — en plusieurs langues 🌍."));
}

#[test]
fn without_tools_the_system_turn_is_plain() {
    let text = render_both("no_tools", &PromptSettings::default());
    assert!(text.starts_with(
        "<|im_start|>system\nYou answer questions about Rust.<|im_end|>\n<|im_start|>user\n"
    ));
    assert!(!text.contains("<tools>"));
}

#[test]
fn openai_tools_form_is_a_setting() {
    let settings = PromptSettings {
        tools_form: ToolsForm::Openai,
        ..Default::default()
    };
    let text = render_both("first_turn", &settings);
    assert!(text.contains(
        "<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"Read\", \"description\": \"Show"
    ));
    assert!(!text.contains("\"strict\""));
}

#[test]
fn thinking_off_closes_an_empty_reasoning_block() {
    let settings = PromptSettings {
        thinking: Thinking::Off,
        ..Default::default()
    };
    let text = render_both("first_turn", &settings);
    assert!(text.ends_with("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
}

#[test]
fn without_generation_prompt_the_text_stops_after_the_last_message() {
    let (messages, tools) = load("first_turn");
    let text = Renderer::builtin(&PromptSettings::default())
        .unwrap()
        .render(&messages, &tools, GenerationPrompt::Omit)
        .unwrap();
    assert!(text.ends_with("Fix it.<|im_end|>\n"));
}

#[test]
fn a_late_system_message_is_a_render_error() {
    let messages = [Message::user("a"), Message::system("late")];
    for renderer in [
        Renderer::builtin(&PromptSettings::default()).unwrap(),
        qwen_style(&PromptSettings::default()),
    ] {
        let err = renderer
            .render(&messages, &[], GenerationPrompt::Add)
            .unwrap_err()
            .to_string();
        assert!(err.contains("system message"), "{err}");
    }
}

#[test]
fn rendering_is_append_only_within_a_task() {
    let (messages, tools) = load("tool_rounds");
    let renderer = Renderer::builtin(&PromptSettings::default()).unwrap();
    let mut previous = String::new();
    for n in 2..=messages.len() {
        // Turn boundaries only: a tool result closes its user turn when no other result follows.
        let next_is_tool = matches!(messages.get(n), Some(Message::Tool { .. }));
        if next_is_tool {
            continue;
        }
        let text = renderer
            .render(&messages[..n], &tools, GenerationPrompt::Omit)
            .unwrap();
        assert!(text.starts_with(&previous), "prefix broken at message {n}");
        previous = text;
        // The generation prompt is a prefix of the next assistant turn as it is re-rendered.
        if let Some(Message::Assistant { .. }) = messages.get(n) {
            let asked = renderer
                .render(&messages[..n], &tools, GenerationPrompt::Add)
                .unwrap();
            let answered = renderer
                .render(&messages[..=n], &tools, GenerationPrompt::Omit)
                .unwrap();
            assert!(answered.starts_with(&asked), "generation prompt at {n}");
        }
    }
}
