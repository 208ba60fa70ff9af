//! The streaming output parser: docs/prompt-format.md, "Parsing model output", case by case,
//! render-then-parse round trips over the golden conversations, and a property test (100,000
//! cases) over random splits of random and corrupted outputs.

use std::path::Path;

use lilypad::prompt::{
    builtin_tools, parse_all, parse_conversation, CallEnd, GenerationPrompt, ParseEvent,
    ParsedTurn, Parser, PromptSettings, Renderer, Start, ToolSchemas,
};
use lilypad::protocol::{Message, ToolCall};
use proptest::prelude::*;
use serde_json::{json, Value};

fn schemas() -> ToolSchemas {
    static SCHEMAS: std::sync::OnceLock<ToolSchemas> = std::sync::OnceLock::new();
    SCHEMAS
        .get_or_init(|| ToolSchemas::new(&builtin_tools()))
        .clone()
}

fn parse(text: &str) -> ParsedTurn {
    parse_all(text, &schemas(), Start::Reasoning)
}

/// Feeds `pieces` one by one and returns all events.
fn feed(pieces: &[&str], start: Start) -> Vec<ParseEvent> {
    let mut p = Parser::new(schemas(), start);
    let mut events = Vec::new();
    for piece in pieces {
        events.extend(p.push(piece));
    }
    events.extend(p.finish());
    events
}

/// Feeds `pieces` one by one and returns the settled events.
fn settle(pieces: &[&str], start: Start) -> Vec<ParseEvent> {
    let mut p = Parser::new(schemas(), start);
    for piece in pieces {
        let _ = p.push(piece);
    }
    let settled = p.settle();
    check_call_bookkeeping(&settled);
    settled
}

/// Joins adjacent reasoning and content deltas, and adjacent argument deltas of a parameter.
fn coalesce(events: Vec<ParseEvent>) -> Vec<ParseEvent> {
    let mut out: Vec<ParseEvent> = Vec::new();
    for e in events {
        match (out.last_mut(), e) {
            (Some(ParseEvent::Reasoning(a)), ParseEvent::Reasoning(b)) => a.push_str(&b),
            (Some(ParseEvent::Content(a)), ParseEvent::Content(b)) => a.push_str(&b),
            (
                Some(ParseEvent::ToolCallArgumentDelta {
                    index: i,
                    name: n,
                    text: a,
                }),
                ParseEvent::ToolCallArgumentDelta { index, name, text },
            ) if *i == index && *n == name => a.push_str(&text),
            (_, e) => out.push(e),
        }
    }
    out
}

fn args(v: Value) -> serde_json::Map<String, Value> {
    v.as_object().unwrap().clone()
}

const READ_CALL: &str = "<tool_call>\n<function=Read>\n<parameter=file_path>\nsrc/a.py\n</parameter>\n<parameter=offset>\n3\n</parameter>\n</function>\n</tool_call>";

#[test]
fn reasoning_then_a_call() {
    let turn = parse(&format!("Let me look.\n</think>\n\n{READ_CALL}"));
    assert_eq!(turn.reasoning, "Let me look.");
    assert_eq!(turn.content, "");
    assert_eq!(
        turn.tool_calls,
        [ToolCall {
            id: "call_0".into(),
            name: "Read".into(),
            arguments: args(json!({"file_path": "src/a.py", "offset": 3})),
        }]
    );
    assert!(turn.errors.is_empty() && turn.cut_off_call.is_none());
}

#[test]
fn the_name_is_announced_as_soon_as_it_is_complete() {
    let mut p = Parser::new(schemas(), Start::Reasoning);
    assert!(p
        .push("ok</think>\n<tool_call>\n<function=Ba")
        .iter()
        .all(|e| !matches!(e, ParseEvent::ToolCallStarted { .. })));
    let events = p.push("sh>\n<parameter=command>\nls");
    assert!(events.contains(&ParseEvent::ToolCallStarted {
        index: 0,
        name: "Bash".into()
    }));
    assert!(!events
        .iter()
        .any(|e| matches!(e, ParseEvent::ToolCallArgument { .. })));
    let events = p.push("\n</parameter>\n");
    assert!(events.contains(&ParseEvent::ToolCallArgument {
        index: 0,
        name: "command".into(),
        value: json!("ls")
    }));
    let events = p.push("</function>\n</tool_call>");
    assert!(matches!(
        events.last(),
        Some(ParseEvent::ToolCallComplete {
            end: CallEnd::Closed,
            ..
        })
    ));
}

#[test]
fn a_call_without_closing_think_ends_reasoning() {
    let turn = parse(&format!("I will read it.\n{READ_CALL}"));
    assert_eq!(turn.reasoning, "I will read it.");
    assert_eq!(turn.tool_calls.len(), 1);
}

#[test]
fn output_that_stops_inside_reasoning_is_all_reasoning() {
    let turn = parse("Thinking about </thi");
    assert_eq!(turn.reasoning, "Thinking about </thi");
    assert_eq!(turn.content, "");
}

#[test]
fn content_before_calls_and_final_answers() {
    let turn = parse(&format!(
        "r</think>\n\nI will read the file.\n\n{READ_CALL}"
    ));
    assert_eq!(turn.content, "I will read the file.");
    let turn = parse("done\n</think>\n\nAll tests pass now.\n");
    assert_eq!(turn.reasoning, "done");
    assert_eq!(turn.content, "All tests pass now.");
    assert!(turn.tool_calls.is_empty());
}

#[test]
fn several_calls_in_one_turn() {
    let text = format!("r</think>\n{READ_CALL}\n{READ_CALL}\n{READ_CALL}");
    let turn = parse(&text);
    let ids: Vec<&str> = turn.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["call_0", "call_1", "call_2"]);
    assert_eq!(turn.content, "");
}

#[test]
fn values_lose_exactly_one_newline_on_each_side() {
    let turn = parse(
        "</think><tool_call>\n<function=Write>\n<parameter=file_path>\na.txt\n</parameter>\n<parameter=content>\n\n  indented\n\ttab\n\n</parameter>\n</function>\n</tool_call>",
    );
    assert_eq!(
        turn.tool_calls[0].arguments["content"],
        "\n  indented\n\ttab\n"
    );
    let turn = parse(
        "</think><tool_call>\n<function=Write>\n<parameter=file_path>a.txt</parameter>\n</function>\n</tool_call>",
    );
    assert_eq!(turn.tool_calls[0].arguments["file_path"], "a.txt");
}

#[test]
fn missing_closers_are_tolerated() {
    // No </parameter>: the value runs to the next <parameter=, or to </function>.
    let turn = parse(
        "</think><tool_call>\n<function=Edit>\n<parameter=file_path>\na.py\n<parameter=replace_all>\ntrue\n</function>\n</tool_call>",
    );
    assert_eq!(
        turn.tool_calls[0].arguments,
        args(json!({"file_path": "a.py", "replace_all": true}))
    );
    // No </function>, no </tool_call> before the next call: SGLang reads both as one call
    // (the second's arguments overwrite the first's); we run neither and tell the model.
    let turn = parse(
        "</think><tool_call>\n<function=Glob>\n<parameter=pattern>\n*.rs\n</parameter>\n<tool_call>\n<function=Glob>\n<parameter=pattern>\n*.md\n</parameter>\n</function>",
    );
    assert!(turn.tool_calls.is_empty());
    assert_eq!(turn.errors.len(), 1);
    assert!(turn.errors[0].message.contains("ambiguous"));
    // With </function>, the next <tool_call> starts a call of its own.
    let turn = parse(
        "</think><tool_call>\n<function=Glob>\n<parameter=pattern>\n*.rs\n</parameter>\n</function>\n<tool_call>\n<function=Glob>\n<parameter=pattern>\n*.md\n</parameter>\n</function>",
    );
    assert_eq!(turn.tool_calls.len(), 2);
    assert_eq!(turn.tool_calls[1].arguments["pattern"], "*.md");
    assert!(turn.cut_off_call.is_none());
    // A call whose </tool_call> is missing ends at the text after </function>; that text is
    // not content (only the text before the first call is, as in SGLang).
    let turn = parse("</think><tool_call>\n<function=Glob>\n</function>\nThat was all.");
    assert_eq!(turn.tool_calls.len(), 1);
    assert_eq!(turn.content, "");
}

#[test]
fn a_call_cut_off_by_the_end_keeps_what_arrived() {
    let turn = parse("</think>\n<tool_call>\n<function=Bash>\n<parameter=command>\nmake te");
    assert_eq!(turn.tool_calls[0].arguments["command"], "make te");
    assert_eq!(turn.cut_off_call.as_deref(), Some("call_0"));
    let turn = parse("</think>\n<tool_call>\n<function=Bash>\n<parameter=comm");
    assert!(turn.tool_calls[0].arguments.is_empty());
    assert_eq!(turn.cut_off_call.as_deref(), Some("call_0"));
}

#[test]
fn values_are_typed_by_the_schema() {
    let turn = parse(
        "</think><tool_call>\n<function=Read>\n<parameter=file_path>\n42\n</parameter>\n<parameter=offset>\nten\n</parameter>\n<parameter=limit>\nNULL\n</parameter>\n<parameter=extra>\n7\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=Bash>\n<parameter=command>\ntrue\n</parameter>\n<parameter=timeout>\n2.5\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=Mystery>\n<parameter=n>\n1\n</parameter>\n</function>\n</tool_call>",
    );
    assert_eq!(
        turn.tool_calls[0].arguments,
        args(json!({"file_path": "42", "offset": "ten", "limit": null, "extra": "7"}))
    );
    assert_eq!(
        turn.tool_calls[1].arguments,
        args(json!({"command": "true", "timeout": 2.5}))
    );
    assert_eq!(turn.tool_calls[2].name, "Mystery");
    assert_eq!(turn.tool_calls[2].arguments, args(json!({"n": "1"})));
}

#[test]
fn malformed_calls_become_plain_errors_and_parsing_goes_on() {
    let turn = parse(&format!(
        "</think><tool_call>\n{{\"name\": \"Read\", \"arguments\": {{}}}}\n</tool_call>\n{READ_CALL}"
    ));
    assert_eq!(turn.errors.len(), 1);
    assert_eq!(turn.errors[0].index, 0);
    assert!(turn.errors[0].message.contains("<function=NAME>"));
    assert!(turn.errors[0].message.contains("JSON"));
    assert_eq!(turn.tool_calls.len(), 1);
    assert_eq!(turn.content, "");

    let turn = parse("</think><tool_call>\n</tool_call>");
    assert!(turn.errors[0]
        .message
        .contains("closed before any <function=NAME>"));

    let turn = parse("</think><tool_call>\n<function=Read\n<parameter=file_path>\nx\n</parameter>\n</function>\n</tool_call>after");
    assert!(
        turn.errors[0].message.contains("same line"),
        "{:?}",
        turn.errors
    );
    assert!(turn.tool_calls.is_empty());
    assert_eq!(turn.content, "", "text after a call is never content");

    let turn = parse("</think><tool_call>\n<function=Read>\n<parameter=>\nx\n</parameter>\n</function>\n</tool_call>");
    assert_eq!(turn.errors[0].name.as_deref(), Some("Read"));
    assert!(turn.errors[0]
        .message
        .starts_with("The call to Read could not be read"));

    let turn = parse("</think><tool_call>\n");
    assert!(turn.errors[0]
        .message
        .contains("ended right after <tool_call>"));
    let turn = parse("</think><tool_call>\n<function=Re");
    assert!(turn.errors[0].message.contains("function name"));
}

#[test]
fn partial_tags_are_held_only_until_decided() {
    let mut p = Parser::new(schemas(), Start::Reasoning);
    assert_eq!(p.push("a <"), [ParseEvent::Reasoning("a".into())]);
    assert_eq!(p.push("b"), [ParseEvent::Reasoning(" <b".into())]);
    assert_eq!(p.push("</thi"), []);
    assert_eq!(p.push("nk>x"), [ParseEvent::Content("x".into())]);
    assert_eq!(p.push(" <tool"), []);
    assert_eq!(p.push("box>"), [ParseEvent::Content(" <toolbox>".into())]);
}

#[test]
fn a_leading_think_tag_is_skipped_and_content_mode_works() {
    let turn = parse("  <think>\nhmm\n</think>\nok");
    assert_eq!(
        (turn.reasoning.as_str(), turn.content.as_str()),
        ("hmm", "ok")
    );
    let events = feed(
        &[
            "Hello ",
            "<tool_call>\n<function=Glob>\n</function>\n</tool_call>",
        ],
        Start::Content,
    );
    assert_eq!(events[0], ParseEvent::Content("Hello".into()));
    assert!(matches!(
        events.last(),
        Some(ParseEvent::ToolCallComplete { .. })
    ));
}

#[test]
fn call_ids_continue_across_turns() {
    let mut p = Parser::new(schemas(), Start::Reasoning).with_first_call_number(7);
    let mut events = p.push(&format!("</think>{READ_CALL}"));
    events.extend(p.finish());
    let turn = ParsedTurn::from_events(events);
    assert_eq!(turn.tool_calls[0].id, "call_7");
    assert_eq!(p.next_call_number(), 8);
    assert!(p.push("more").is_empty(), "pieces after finish are ignored");
}

/// Render each assistant turn of the golden conversations, parse it back, and compare.
#[test]
fn render_then_parse_gives_back_the_same_turn() {
    let renderer = Renderer::builtin(&PromptSettings::default()).unwrap();
    let tools = builtin_tools();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/prompt");
    let mut checked = 0;
    for name in [
        "tool_rounds",
        "second_user",
        "unicode_and_types",
        "no_tools",
    ] {
        let text = std::fs::read_to_string(dir.join(format!("{name}.json"))).unwrap();
        for message in parse_conversation(&text).unwrap().messages {
            let Message::Assistant {
                reasoning_content,
                content,
                tool_calls,
            } = &message
            else {
                continue;
            };
            let prompt = renderer
                .render(
                    &[Message::user("go"), message.clone()],
                    &tools,
                    GenerationPrompt::Omit,
                )
                .unwrap();
            let generated = prompt
                .split("<|im_start|>assistant\n<think>\n")
                .nth(1)
                .unwrap()
                .strip_suffix("<|im_end|>\n")
                .unwrap();
            // Token by token is the harshest split; a few bytes at a time is the common one.
            for pieces in [split_every(generated, 1), split_every(generated, 7)] {
                let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
                let turn = ParsedTurn::from_events(feed(&pieces, Start::Reasoning));
                assert_eq!(
                    turn.reasoning,
                    reasoning_content.as_deref().unwrap_or("").trim()
                );
                assert_eq!(turn.content, content.trim());
                let got: Vec<_> = turn
                    .tool_calls
                    .iter()
                    .map(|c| (&c.name, &c.arguments))
                    .collect();
                let want: Vec<_> = tool_calls.iter().map(|c| (&c.name, &c.arguments)).collect();
                assert_eq!(got, want, "{name}");
                assert!(turn.errors.is_empty());
            }
            checked += 1;
        }
    }
    assert!(checked >= 8, "only {checked} turns checked");
}

/// Pieces of `n` characters.
fn split_every(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

/// Splits `text` at the given byte positions (moved back to character boundaries).
fn split_at(text: &str, cuts: &[usize]) -> Vec<String> {
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|&c| {
            let mut c = c % (text.len() + 1);
            while !text.is_char_boundary(c) {
                c -= 1;
            }
            c
        })
        .collect();
    points.sort_unstable();
    points.dedup();
    let mut pieces = Vec::new();
    let mut last = 0;
    for p in points.into_iter().chain([text.len()]) {
        pieces.push(text[last..p].to_string());
        last = p;
    }
    pieces
}

const FRAGMENTS: &[&str] = &[
    "<tool_call>",
    "</tool_call>",
    "<function=",
    "</function>",
    "<parameter=",
    "</parameter>",
    "<think>",
    "</think>",
    "<",
    ">",
    "</",
    "<tool",
    "_call>",
    "=",
    "\n",
    "\n",
    " ",
    "\t",
    "Read",
    "Edit",
    "Bash",
    "Nope",
    "file_path",
    "offset",
    "replace_all",
    "timeout",
    "12",
    "-3.5",
    "true",
    "NULL",
    "{\"a\": [1]}",
    "é",
    "你好",
    "🌍",
    "x",
    "words here",
    "\r\n",
];

const VALID: &[&str] = &[
    "Plan: read then edit.\n</think>\n\nReading first.\n\n<tool_call>\n<function=Read>\n<parameter=file_path>\nsrc/a.py\n</parameter>\n<parameter=offset>\n3\n</parameter>\n</function>\n</tool_call>",
    "x\n</think>\n\n<tool_call>\n<function=Edit>\n<parameter=file_path>\na\n</parameter>\n<parameter=old_string>\n  é\n</parameter>\n<parameter=new_string>\n你好\n</parameter>\n<parameter=replace_all>\nTrue\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=Bash>\n<parameter=command>\nls\n</parameter>\n<parameter=timeout>\n30\n</parameter>\n</function>\n</tool_call>",
    "All done.\n</think>\n\nThe fix is in place; tests pass.",
];

/// A random output: a soup of tags and text, or a valid turn with random damage.
fn output() -> impl Strategy<Value = String> {
    let soup = prop::collection::vec(prop::sample::select(FRAGMENTS), 0..40)
        .prop_map(|parts| parts.concat());
    let damaged = (
        prop::sample::select(VALID),
        prop::collection::vec(
            (any::<usize>(), 0u8..4, prop::sample::select(FRAGMENTS)),
            0..4,
        ),
    )
        .prop_map(|(base, edits)| {
            let mut text = base.to_string();
            for (at, op, frag) in edits {
                let mut at = at % (text.len() + 1);
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                match op {
                    0 => text.insert_str(at, frag),
                    1 => text.truncate(at),
                    2 => {
                        let mut end = (at + frag.len()).min(text.len());
                        while !text.is_char_boundary(end) {
                            end -= 1;
                        }
                        text.replace_range(at..end, "");
                    }
                    _ => {
                        let copy = text[at..].to_string();
                        text.push_str(&copy);
                    }
                }
            }
            text
        });
    prop_oneof![soup, damaged]
}

/// Checks that hold for any output: calls are announced and closed in order, exactly once.
fn check_call_bookkeeping(events: &[ParseEvent]) {
    let mut next_index = 0;
    let mut open: Option<usize> = None;
    for e in events {
        match e {
            ParseEvent::ToolCallStarted { index, .. } => {
                assert_eq!(open, None, "two calls open at once");
                assert!(*index >= next_index);
                open = Some(*index);
            }
            ParseEvent::ToolCallArgument { index, .. }
            | ParseEvent::ToolCallArgumentDelta { index, .. } => assert_eq!(open, Some(*index)),
            ParseEvent::ToolCallComplete { index, .. } => {
                assert_eq!(open.take(), Some(*index), "completed a call never started");
                next_index = index + 1;
            }
            ParseEvent::ToolCallError(err) => {
                if let Some(i) = open.take() {
                    assert_eq!(i, err.index);
                }
                next_index = err.index + 1;
            }
            ParseEvent::Reasoning(_) | ParseEvent::Content(_) => {}
        }
    }
    assert_eq!(open, None, "a started call was never completed or reported");
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 100_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_split_of_any_output_gives_the_same_events(
        text in output(),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
        content_first in any::<bool>(),
    ) {
        let start = if content_first { Start::Content } else { Start::Reasoning };
        let whole = coalesce(feed(&[text.as_str()], start));
        let pieces = split_at(&text, &cuts);
        let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
        let split = coalesce(feed(&pieces, start));
        prop_assert_eq!(&whole, &split);
        // The settled reading does not depend on the split either.
        prop_assert_eq!(settle(&[text.as_str()], start), settle(&pieces, start));
        check_call_bookkeeping(&whole);
        if !text.contains('<') {
            let turn = ParsedTurn::from_events(whole);
            let (own, other) = match start {
                Start::Reasoning => (turn.reasoning, turn.content),
                Start::Content => (turn.content, turn.reasoning),
            };
            prop_assert_eq!(own, text.trim());
            prop_assert_eq!(other, "");
        }
    }
}

/// The deltas of one parameter, joined, in the order they came.
fn deltas(events: &[ParseEvent]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for e in events {
        if let ParseEvent::ToolCallArgumentDelta { name, text, .. } = e {
            match out.last_mut() {
                Some((n, t)) if n == name => t.push_str(text),
                _ => out.push((name.clone(), text.clone())),
            }
        }
    }
    out
}

const WRITE: &str = "</think>\n<tool_call>\n<function=Write>\n<parameter=file_path>\nsrc/app.py\n</parameter>\n<parameter=content>\nimport os\n\n\ndef main():\n    print(os.getcwd())\n\n</parameter>\n</function>\n</tool_call>";

#[test]
fn a_value_streams_as_deltas_before_its_closer() {
    let mut p = Parser::new(schemas(), Start::Reasoning);
    let mut seen = Vec::new();
    let mut content_before_close = String::new();
    // One character at a time, as a slow model would give them.
    for (i, c) in WRITE.char_indices() {
        let events = p.push(&c.to_string());
        if WRITE[..i].contains("<parameter=content>")
            && !WRITE[..=i].contains("</parameter>\n</function>")
        {
            for e in &events {
                if let ParseEvent::ToolCallArgumentDelta { name, text, .. } = e {
                    if name == "content" {
                        content_before_close.push_str(text);
                    }
                }
            }
        }
        seen.extend(events);
    }
    seen.extend(p.finish());
    // The path first, then the content growing, before the content's closer was read.
    assert_eq!(
        deltas(&seen),
        vec![
            ("file_path".to_string(), "src/app.py".to_string()),
            (
                "content".to_string(),
                "import os\n\n\ndef main():\n    print(os.getcwd())\n".to_string()
            ),
        ]
    );
    assert!(
        content_before_close.starts_with("import os\n\n\ndef main():\n    print(os.getcwd())"),
        "{content_before_close:?}"
    );
    // Every delta comes before its parameter's whole value, which is unchanged.
    let first_arg = seen
        .iter()
        .position(|e| matches!(e, ParseEvent::ToolCallArgument { name, .. } if name == "content"))
        .unwrap();
    let last_delta = seen
        .iter()
        .rposition(
            |e| matches!(e, ParseEvent::ToolCallArgumentDelta { name, .. } if name == "content"),
        )
        .unwrap();
    assert!(last_delta < first_arg);
    assert!(seen.contains(&ParseEvent::ToolCallArgument {
        index: 0,
        name: "content".into(),
        value: json!("import os\n\n\ndef main():\n    print(os.getcwd())\n"),
    }));
    check_call_bookkeeping(&seen);
    // The settled turn has whole values only.
    let settled = p.settle();
    assert!(!settled
        .iter()
        .any(|e| matches!(e, ParseEvent::ToolCallArgumentDelta { .. })));
}

#[test]
fn trailing_newlines_wait_for_text_and_a_tag_prefix_is_not_streamed() {
    let mut p = Parser::new(schemas(), Start::Content);
    let mut events = Vec::new();
    for piece in [
        "<tool_call>\n<function=Bash>\n<parameter=command>\n",
        "echo a\n\n",
        "</param",
    ] {
        events.extend(p.push(piece));
    }
    // The value may end at the newlines, and `</param` may be its closer: neither is out.
    assert_eq!(deltas(&events), vec![("command".into(), "echo a".into())]);
    events.extend(p.push("eter>\n</function>\n</tool_call>"));
    events.extend(p.finish());
    // The closer took one newline; the other is part of the value, and goes out at its end.
    assert_eq!(deltas(&events), vec![("command".into(), "echo a\n".into())]);
}

#[test]
fn a_cut_off_value_streams_what_arrived() {
    let events = feed(
        &["<tool_call>\n<function=Write>\n<parameter=file_path>\na.txt\n</parameter>\n<parameter=content>\nhalf a li"],
        Start::Content,
    );
    assert_eq!(
        deltas(&events),
        vec![
            ("file_path".into(), "a.txt".into()),
            ("content".into(), "half a li".into())
        ]
    );
}
