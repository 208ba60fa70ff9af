//! The parser against SGLang's reading of the same output (the server FrogNano was trained and
//! evaluated behind), item by item of the fidelity issue, and the public test cases of the
//! peers' qwen3_coder parsers (SGLang's `test_qwen3_coder_detector`, vLLM's
//! `test_qwen3coder_tool_parser.py`, llama.cpp's Qwen3-Coder cases) restated in our own words.
//! Where a peer expects something else, the case says why and points at the difference listed in
//! docs/prompt-format.md.

use lilypad::prompt::{
    builtin_tools, parse_all, ParseEvent, ParsedTurn, Parser, Start, ToolSchemas, ToolSpec,
};
use serde_json::{json, Value};

fn leaf() -> ToolSchemas {
    ToolSchemas::new(&builtin_tools())
}

fn tool(name: &str, parameters: Value) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: String::new(),
        parameters,
    }
}

fn parse(text: &str) -> ParsedTurn {
    parse_all(text, &leaf(), Start::Reasoning)
}

/// The peers' cases start in content (no reasoning parser in front).
fn parse_content(tools: &[ToolSpec], text: &str) -> ParsedTurn {
    parse_all(text, &ToolSchemas::new(tools), Start::Content)
}

fn call(name: &str, params: &[(&str, &str)]) -> String {
    let mut s = format!("<tool_call>\n<function={name}>\n");
    for (k, v) in params {
        s.push_str(&format!("<parameter={k}>\n{v}\n</parameter>\n"));
    }
    s.push_str("</function>\n</tool_call>");
    s
}

fn args(turn: &ParsedTurn, i: usize) -> Value {
    Value::Object(turn.tool_calls[i].arguments.clone())
}

// ---- Item 1: reasoning is decided when the turn ends -------------------------------------

#[test]
fn a_call_before_a_later_think_close_is_reasoning_and_never_runs() {
    let rm = call("Bash", &[("command", "rm -rf build")]);
    let ls = call("Bash", &[("command", "ls")]);
    let text = format!("I could run {rm} but no.</think> I'll list instead.{ls}");
    let turn = parse(&text);
    assert_eq!(turn.tool_calls.len(), 1, "{turn:?}");
    assert_eq!(args(&turn, 0), json!({"command": "ls"}));
    assert_eq!(turn.tool_calls[0].id, "call_0");
    assert_eq!(turn.reasoning, format!("I could run {rm} but no."));
    assert_eq!(turn.content, "I'll list instead.");
    assert!(turn.errors.is_empty());
}

#[test]
fn the_live_view_shows_the_call_but_only_the_settled_view_counts() {
    let rm = call("Bash", &[("command", "rm -rf build")]);
    let mut p = Parser::new(leaf(), Start::Reasoning).with_first_call_number(4);
    let mut live = p.push(&format!("thinking {rm}"));
    live.extend(p.push(" no.</think>Done."));
    live.extend(p.finish());
    // Live, the call looked real (it is shown as tentative)...
    assert!(live
        .iter()
        .any(|e| matches!(e, ParseEvent::ToolCallStarted { name, .. } if name == "Bash")));
    // ...settled, it is reasoning and the turn is a final answer.
    let settled = ParsedTurn::from_events(p.settle());
    assert!(settled.tool_calls.is_empty());
    assert_eq!(settled.content, "Done.");
    assert!(settled.reasoning.ends_with("no."));
    assert_eq!(p.next_call_number(), 4);
}

#[test]
fn without_any_think_close_a_call_ends_reasoning() {
    let turn = parse(&format!("plan {}", call("Glob", &[("pattern", "*.rs")])));
    assert_eq!(turn.reasoning, "plan");
    assert_eq!(turn.tool_calls.len(), 1);
}

#[test]
fn thinking_off_output_that_writes_think_is_split_as_sglang_does() {
    let turn = parse_content(&builtin_tools(), "<think>hm</think>answer");
    assert_eq!(
        (turn.reasoning.as_str(), turn.content.as_str()),
        ("hm", "answer")
    );
    let turn = parse_content(&builtin_tools(), "plain </think> text");
    assert_eq!(turn.content, "plain </think> text");
}

// ---- Item 2: values typed as written ----------------------------------------------------

#[test]
fn values_are_typed_as_written_after_one_newline_each_side() {
    let text = format!(
        "</think>{}\n{}",
        call("Write", &[("file_path", "a"), ("content", " null")]),
        call(
            "Edit",
            &[
                ("file_path", "a"),
                ("old_string", "x"),
                ("new_string", "y"),
                ("replace_all", "true ")
            ]
        )
    );
    let turn = parse(&text);
    assert_eq!(turn.tool_calls[0].arguments["content"], " null");
    assert_eq!(turn.tool_calls[1].arguments["replace_all"], false);
    let turn = parse(&format!(
        "</think>{}",
        call("Write", &[("file_path", "a"), ("content", "null")])
    ));
    assert_eq!(turn.tool_calls[0].arguments["content"], Value::Null);
}

#[test]
fn a_value_without_closer_at_the_end_of_its_function_loses_a_second_newline() {
    // SGLang ends such a value at `$`, which sits before a final newline.
    let turn = parse(
        "</think><tool_call>\n<function=Write>\n<parameter=file_path>\na\n</parameter>\n<parameter=content>\nbody\n\n</function>\n</tool_call>",
    );
    assert_eq!(turn.tool_calls[0].arguments["content"], "body");
    // Ended by the next <parameter=, only one goes.
    let turn = parse(
        "</think><tool_call>\n<function=Write>\n<parameter=content>\nbody\n\n<parameter=file_path>\na\n</parameter>\n</function>\n</tool_call>",
    );
    assert_eq!(turn.tool_calls[0].arguments["content"], "body\n");
}

// ---- Item 3: numbers --------------------------------------------------------------------

#[test]
fn number_parameters_keep_floats_and_integers_keep_their_digits() {
    for (raw, want_float) in [("30.0", 30.0), ("1e3", 1000.0), ("5.", 5.0)] {
        let turn = parse(&format!(
            "</think>{}",
            call("Bash", &[("command", "x"), ("timeout", raw)])
        ));
        let v = &turn.tool_calls[0].arguments["timeout"];
        assert!(v.is_f64(), "{raw}: {v}");
        assert_eq!(v.as_f64(), Some(want_float));
    }
    let turn = parse(&format!(
        "</think>{}",
        call("Bash", &[("command", "x"), ("timeout", "30")])
    ));
    assert!(turn.tool_calls[0].arguments["timeout"].is_i64());
    let turn = parse(&format!(
        "</think>{}",
        call(
            "Read",
            &[
                ("file_path", "a"),
                ("offset", "123456789012345678901234567890")
            ]
        )
    ));
    assert_eq!(
        turn.tool_calls[0].arguments["offset"],
        "123456789012345678901234567890"
    );
}

/// A float re-renders in the next prompt as Python prints it: `30.0` stays `30.0`.
#[test]
fn floats_re_render_as_python_writes_them() {
    use lilypad::prompt::{GenerationPrompt, PromptSettings, Renderer};
    use lilypad::protocol::Message;
    let text = format!(
        "</think>{}",
        call("Bash", &[("command", "sleep 1"), ("timeout", "30.0")])
    );
    let turn = parse(&text);
    let renderer = Renderer::builtin(&PromptSettings::default()).unwrap();
    let prompt = renderer
        .render(
            &[
                Message::user("go"),
                Message::assistant(None, String::new(), turn.tool_calls.clone()),
            ],
            &builtin_tools(),
            GenerationPrompt::Omit,
        )
        .unwrap();
    assert!(
        prompt.contains("<parameter=timeout>\n30.0\n</parameter>"),
        "{prompt}"
    );
}

// ---- Item 4: schema forms and Python literals ---------------------------------------------

#[test]
fn schema_forms_and_python_literal_values() {
    let t = tool(
        "T",
        json!({"type": "object", "properties": {
            "opt_int": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "one_arr": {"oneOf": [{"type": "null"}, {"type": "array"}]},
            "listed": {"type": ["number", "null"]},
            "choice": {"enum": [1, 2, 3]},
            "both": {"allOf": [{"type": "string"}, {"type": "boolean"}]},
            "obj": {"type": "object"},
            "other": {"type": "tuple"}
        }}),
    );
    let text = call(
        "T",
        &[
            ("opt_int", "7"),
            ("one_arr", "['a', 'b']"),
            ("listed", "2.5"),
            ("choice", "2"),
            ("both", "TRUE"),
            ("obj", "{'k': 'v', 'flag': True, 'none': None}"),
            ("other", "(1, 'x')"),
        ],
    );
    let turn = parse_content(&[t], &text);
    assert_eq!(
        args(&turn, 0),
        json!({
            "opt_int": 7, "one_arr": ["a", "b"], "listed": 2.5, "choice": 2, "both": true,
            "obj": {"k": "v", "flag": true, "none": null}, "other": [1, "x"]
        })
    );
}

// ---- Item 5: content ---------------------------------------------------------------------

#[test]
fn content_is_only_the_text_before_the_first_call() {
    let text = format!(
        "r</think>Before.{}\nBetween.\n{}\nAfter.",
        call("Glob", &[("pattern", "a")]),
        call("Glob", &[("pattern", "b")])
    );
    let turn = parse(&text);
    assert_eq!(turn.content, "Before.");
    assert_eq!(turn.tool_calls.len(), 2);
}

// ---- Item 6: unclosed last calls, names as written ----------------------------------------

#[test]
fn a_last_call_without_its_closer_after_a_closed_call_is_dropped() {
    let text = format!(
        "</think>{}\n<tool_call>\n<function=Bash>\n<parameter=command>\nrm -rf /\n</parameter>\n</function>\n",
        call("Glob", &[("pattern", "a")])
    );
    let turn = parse(&text);
    assert_eq!(turn.tool_calls.len(), 1);
    assert_eq!(turn.tool_calls[0].name, "Glob");
    assert!(turn.cut_off_call.is_none());
    // Cut off by the end, same.
    let turn = parse(&format!(
        "</think>{}\n<tool_call>\n<function=Bash>\n<parameter=command>\nrm",
        call("Glob", &[("pattern", "a")])
    ));
    assert_eq!(turn.tool_calls.len(), 1);
    // A lone call without </tool_call> is read.
    let turn = parse(
        "</think><tool_call>\n<function=Glob>\n<parameter=pattern>\n*\n</parameter>\n</function>\n",
    );
    assert_eq!(turn.tool_calls.len(), 1);
}

#[test]
fn names_are_kept_as_written() {
    let turn = parse("</think><tool_call>\n<function= Glob>\n<parameter= pattern >\n*\n</parameter>\n</function>\n</tool_call>");
    assert_eq!(turn.tool_calls[0].name, " Glob");
    assert_eq!(args(&turn, 0), json!({" pattern ": "*"}));
}

#[test]
fn a_duplicated_parameter_keeps_the_last_value_in_the_first_place() {
    let turn = parse(&format!(
        "</think>{}",
        call(
            "Read",
            &[("file_path", "a"), ("offset", "1"), ("file_path", "b")]
        )
    ));
    assert_eq!(args(&turn, 0), json!({"file_path": "b", "offset": 1}));
    let keys: Vec<&String> = turn.tool_calls[0].arguments.keys().collect();
    assert_eq!(keys, ["file_path", "offset"]);
}

#[test]
fn several_functions_in_one_block_are_several_calls() {
    let turn = parse("</think><tool_call>\n<function=Glob>\n<parameter=pattern>\na\n</parameter>\n</function>\n<function=Glob>\n<parameter=pattern>\nb\n</parameter>\n</function>\n</tool_call>");
    assert_eq!(turn.tool_calls.len(), 2);
    assert_eq!(turn.tool_calls[1].arguments["pattern"], "b");
}

// ---- Item 7: protocol tags inside values --------------------------------------------------

#[test]
fn a_value_cut_at_a_tag_it_contained_does_not_run() {
    // A Write whose content holds </parameter>: SGLang writes the truncated file; we refuse.
    let text = "</think><tool_call>\n<function=Write>\n<parameter=file_path>\nnotes.md\n</parameter>\n<parameter=content>\nUse </parameter> to close.\nMore.\n</parameter>\n</function>\n</tool_call>";
    let turn = parse(text);
    assert!(turn.tool_calls.is_empty(), "{turn:?}");
    assert_eq!(turn.errors.len(), 1);
    assert_eq!(turn.errors[0].name.as_deref(), Some("Write"));
    assert!(turn.errors[0].message.contains("ambiguous"));
    assert!(turn.errors[0].message.contains("to close."));
}

#[test]
fn a_quoted_call_inside_a_value_does_not_run_either_call() {
    let inner = call("Bash", &[("command", "rm -rf ~")]);
    let text = format!(
        "</think><tool_call>\n<function=Write>\n<parameter=file_path>\ndoc.md\n</parameter>\n<parameter=content>\nExample:\n{inner}\nEnd of doc.\n</parameter>\n</function>\n</tool_call>"
    );
    let turn = parse(&text);
    assert!(turn.tool_calls.is_empty(), "{turn:?}");
    assert_eq!(turn.errors.len(), 1);
}

#[test]
fn text_between_parameters_makes_the_call_ambiguous() {
    let text = "</think><tool_call>\n<function=Bash>\n<parameter=command>\nls\n</parameter>\nstray words\n</function>\n</tool_call>";
    let turn = parse(text);
    assert!(turn.tool_calls.is_empty());
    assert!(turn.errors[0].message.contains("stray words"));
    // Whitespace is fine.
    let turn = parse("</think><tool_call>\n<function=Bash>\n<parameter=command>\nls\n</parameter>\n  \n</function>\n</tool_call>");
    assert_eq!(turn.tool_calls.len(), 1);
}

#[test]
fn a_later_good_call_still_runs_after_an_ambiguous_one() {
    let text = format!(
        "</think><tool_call>\n<function=Bash>\n<parameter=command>\nx\n</parameter>\njunk\n</function>\n</tool_call>\n{}",
        call("Glob", &[("pattern", "*")])
    );
    let turn = parse(&text);
    assert_eq!(turn.errors.len(), 1);
    assert_eq!(turn.tool_calls.len(), 1);
    assert_eq!(turn.tool_calls[0].id, "call_0");
}

// ---- SGLang's detector cases, restated ------------------------------------------------------

fn sglang_tools() -> Vec<ToolSpec> {
    vec![
        tool(
            "get_current_weather",
            json!({"type": "object", "properties": {
                "location": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer"}
            }, "required": ["location"]}),
        ),
        tool(
            "sql_interpreter",
            json!({"type": "object", "properties": {
                "query": {"type": "string"}, "dry_run": {"type": "boolean"}
            }}),
        ),
        tool(
            "TodoWrite",
            json!({"type": "object", "properties": {"todos": {"type": "array", "items": {
                "type": "object",
                "properties": {"content": {"type": "string"}, "status": {"type": "string"}}
            }}}}),
        ),
        tool(
            "get_current_time",
            json!({"type": "object", "properties": {"cities": {
                "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
                "default": null
            }}}),
        ),
    ]
}

#[test]
fn sglang_plain_text_has_no_calls() {
    let turn = parse_content(&sglang_tools(), "Just words, no calls here.");
    assert_eq!(turn.content, "Just words, no calls here.");
    assert!(turn.tool_calls.is_empty());
}

#[test]
fn sglang_text_then_a_call_and_two_calls_in_a_row() {
    let turn = parse_content(
        &sglang_tools(),
        "Checking the weather.\n\n<tool_call>\n<function=get_current_weather>\n<parameter=location>Oslo</parameter>\n</function>\n</tool_call>",
    );
    assert_eq!(turn.content, "Checking the weather.");
    assert_eq!(args(&turn, 0), json!({"location": "Oslo"}));
    let turn = parse_content(
        &sglang_tools(),
        "<tool_call>\n<function=get_current_weather>\n<parameter=location>Oslo</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=sql_interpreter>\n<parameter=query>SELECT 2</parameter>\n<parameter=dry_run>True</parameter>\n</function>\n</tool_call>",
    );
    assert_eq!(turn.tool_calls.len(), 2);
    assert_eq!(
        args(&turn, 1),
        json!({"query": "SELECT 2", "dry_run": true})
    );
}

#[test]
fn sglang_streamed_chunks_give_the_same_call() {
    let chunks = [
        "<tool_call>",
        "<function=get_current_weather>",
        "<parameter=location>",
        "Lima",
        "</parameter>",
        "<parameter=unit>celsius</parameter>",
        "</function>",
        "</tool_call>",
    ];
    let mut p = Parser::new(ToolSchemas::new(&sglang_tools()), Start::Content);
    for c in chunks {
        let _ = p.push(c);
    }
    let turn = ParsedTurn::from_events(p.settle());
    assert_eq!(
        args(&turn, 0),
        json!({"location": "Lima", "unit": "celsius"})
    );
}

#[test]
fn sglang_typed_parameters() {
    let tools = sglang_tools();
    let turn = parse_content(&tools, "<tool_call>\n<function=get_current_weather>\n<parameter=location>Rome</parameter>\n<parameter=days>4</parameter>\n</function>\n</tool_call>");
    assert_eq!(args(&turn, 0)["days"], json!(4));
    let turn = parse_content(&tools, "<tool_call>\n<function=TodoWrite>\n<parameter=todos>\n[\n  {\"content\": \"Buy milk\", \"status\": \"pending\"},\n  {\"content\": \"Ship it\", \"status\": \"completed\"}\n]\n</parameter>\n</function>\n</tool_call>");
    assert_eq!(args(&turn, 0)["todos"][1]["status"], "completed");
    let turn = parse_content(&tools, "<tool_call>\n<function=get_current_time>\n<parameter=cities>\n[\"Lagos\"]\n</parameter>\n</function>\n</tool_call>");
    assert_eq!(args(&turn, 0)["cities"], json!(["Lagos"]));
    let turn = parse_content(&tools, "<tool_call>\n<function=get_current_time>\n<parameter=cities>\nnull\n</parameter>\n</function>\n</tool_call>");
    assert_eq!(args(&turn, 0)["cities"], Value::Null);
}

#[test]
fn sglang_empty_values_special_characters_and_incomplete_calls() {
    let tools = sglang_tools();
    let turn = parse_content(&tools, "<tool_call>\n<function=get_current_weather>\n<parameter=location></parameter>\n</function>\n</tool_call>");
    assert_eq!(args(&turn, 0), json!({"location": ""}));
    let turn = parse_content(&tools, "<tool_call>\n<function=sql_interpreter>\n<parameter=query>SELECT * FROM t WHERE n = 'Ann \"A\"'</parameter>\n</function>\n</tool_call>");
    assert_eq!(
        args(&turn, 0)["query"],
        "SELECT * FROM t WHERE n = 'Ann \"A\"'"
    );
    // Incomplete at the end: no crash; we keep what arrived and mark it cut off (the agent
    // decides; SGLang reads it as a call too).
    let turn = parse_content(
        &tools,
        "<tool_call>\n<function=get_current_weather>\n<parameter=location>Paris",
    );
    assert_eq!(args(&turn, 0), json!({"location": "Paris"}));
    assert!(turn.cut_off_call.is_some());
}

#[test]
fn sglang_nested_optional_unions() {
    let t = tool(
        "process_optional_list",
        json!({"type": "object", "properties": {"items": {"anyOf": [
            {"anyOf": [{"type": "null"}, {"anyOf": [{"type": "array", "items": {}}, {"type": "null"}]}]},
            {"type": "null"}
        ]}}}),
    );
    let turn = parse_content(&[t], "<tool_call>\n<function=process_optional_list>\n<parameter=items>\n[true, null, {\"on\": false}]\n</parameter>\n</function>\n</tool_call>");
    assert_eq!(args(&turn, 0)["items"], json!([true, null, {"on": false}]));
}

// ---- vLLM's cases, restated ---------------------------------------------------------------

fn vllm_tools() -> Vec<ToolSpec> {
    vec![
        tool(
            "get_current_weather",
            json!({"type": "object", "properties": {
                "city": {"type": "string"}, "state": {"type": "string"},
                "unit": {"type": "string", "enum": ["fahrenheit", "celsius"]}
            }, "required": ["city", "state"]}),
        ),
        tool(
            "calculate_area",
            json!({"type": "object", "properties": {
                "shape": {"type": "string"}, "dimensions": {"type": "object"},
                "precision": {"type": "integer"}
            }}),
        ),
    ]
}

fn weather(city: &str, state: &str, unit: &str) -> String {
    call(
        "get_current_weather",
        &[("city", city), ("state", state), ("unit", unit)],
    )
}

#[test]
fn vllm_single_parallel_and_with_content() {
    let tools = vllm_tools();
    let turn = parse_content(&tools, &weather("Austin", "TX", "fahrenheit"));
    assert_eq!(
        args(&turn, 0),
        json!({"city": "Austin", "state": "TX", "unit": "fahrenheit"})
    );
    assert_eq!(turn.content, "");
    let turn = parse_content(
        &tools,
        &format!(
            "Let me look that up.{}",
            weather("Austin", "TX", "fahrenheit")
        ),
    );
    assert_eq!(turn.content, "Let me look that up.");
    let turn = parse_content(
        &tools,
        &format!(
            "{}\n{}",
            weather("Austin", "TX", "fahrenheit"),
            weather("Miami", "FL", "celsius")
        ),
    );
    assert_eq!(turn.tool_calls.len(), 2);
    assert_eq!(args(&turn, 1)["city"], "Miami");
}

#[test]
fn vllm_multiline_json_and_typed_values() {
    let tools = vllm_tools();
    let turn = parse_content(
        &tools,
        &call(
            "calculate_area",
            &[
                ("shape", "rectangle"),
                ("dimensions", "{\"width\": 3, \n \"height\": 4}"),
                ("precision", "2"),
            ],
        ),
    );
    assert_eq!(
        args(&turn, 0),
        json!({"shape": "rectangle", "dimensions": {"width": 3, "height": 4}, "precision": 2})
    );
    let t = tool(
        "test_types",
        json!({"type": "object", "properties": {
            "int_param": {"type": "integer"}, "float_param": {"type": "float"},
            "bool_param": {"type": "boolean"}, "str_param": {"type": "string"},
            "obj_param": {"type": "object"}
        }}),
    );
    let turn = parse_content(
        &[t],
        &call(
            "test_types",
            &[
                ("int_param", "42"),
                ("float_param", "2.75"),
                ("bool_param", "true"),
                ("str_param", "hello there"),
                ("obj_param", "{\"k\": \"v\"}"),
            ],
        ),
    );
    assert_eq!(
        args(&turn, 0),
        json!({"int_param": 42, "float_param": 2.75, "bool_param": true,
               "str_param": "hello there", "obj_param": {"k": "v"}})
    );
}

#[test]
fn vllm_any_of_optional_types() {
    let t = tool(
        "test_anyof",
        json!({"type": "object", "properties": {
            "anyof_int": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": 5},
            "anyof_str": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "anyof_array": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]},
            "anyof_obj": {"anyOf": [{"type": "object"}, {"type": "null"}]},
            "type_as_array": {"type": ["integer", "null"]},
            "multi_non_null": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]}
        }}),
    );
    let turn = parse_content(
        &[t],
        &call(
            "test_anyof",
            &[
                ("anyof_int", "5"),
                ("anyof_str", "hi"),
                ("anyof_array", "[\"a\", \"b\"]"),
                ("anyof_obj", "{\"k\": 1}"),
                ("type_as_array", "42"),
                ("multi_non_null", "12"),
            ],
        ),
    );
    assert_eq!(
        args(&turn, 0),
        json!({"anyof_int": 5, "anyof_str": "hi", "anyof_array": ["a", "b"],
               "anyof_obj": {"k": 1}, "type_as_array": 42, "multi_non_null": "12"})
    );
}

#[test]
fn vllm_missing_parameter_closer() {
    let turn = parse_content(
        &vllm_tools(),
        "Checking:\n<tool_call>\n<function=get_current_weather>\n<parameter=city>\nAustin\n<parameter=state>\nTX\n</parameter>\n<parameter=unit>\nfahrenheit\n</parameter>\n</function>\n</tool_call>",
    );
    assert_eq!(
        args(&turn, 0),
        json!({"city": "Austin", "state": "TX", "unit": "fahrenheit"})
    );
    assert_eq!(turn.content, "Checking:");
}

#[test]
fn vllm_function_without_tool_call_tags_is_content_here() {
    // vLLM reads a bare <function=...> as a call; SGLang's non-streamed path (what Leaf used)
    // sees no <tool_call> and returns it all as content: we follow SGLang
    // (docs/prompt-format.md, "Parsing model output").
    let text =
        "<function=get_current_weather>\n<parameter=city>\nAustin\n</parameter>\n</function>";
    let turn = parse_content(&vllm_tools(), text);
    assert!(turn.tool_calls.is_empty());
    assert_eq!(turn.content, text);
}

#[test]
fn vllm_name_without_closing_angle_and_good_calls_after_it() {
    // vLLM only asks for no crash; we report the bad call to the model and read on.
    let turn = parse_content(
        &vllm_tools(),
        "<tool_call>\n<function=bad_name\n</function>\n</tool_call>\n<tool_call>\n<function=get_current_weather>\n<parameter=city>Austin</parameter>\n<parameter=state>TX</parameter>\n</function>\n</tool_call>",
    );
    assert_eq!(turn.errors.len(), 1);
    assert_eq!(turn.tool_calls.len(), 1);
    assert_eq!(args(&turn, 0), json!({"city": "Austin", "state": "TX"}));
}

#[test]
fn vllm_values_are_not_encoded_twice() {
    let t = tool(
        "update_record",
        json!({"type": "object", "properties": {"data": {"anyOf": [{"type": "object"}, {"type": "null"}]}, "message": {"type": "string"}}}),
    );
    let turn = parse_content(&[t], "<tool_call>\n<function=update_record>\n<parameter=data>{\"key\": \"value\", \"count\": 42}</parameter>\n<parameter=message>hello world</parameter>\n</function>\n</tool_call>");
    assert_eq!(
        args(&turn, 0),
        json!({"data": {"key": "value", "count": 42}, "message": "hello world"})
    );
}

#[test]
fn vllm_all_parameters_in_one_piece() {
    let mut p = Parser::new(ToolSchemas::new(&vllm_tools()), Start::Content);
    for piece in [
        "<tool_call>",
        "\n<function=get_current_weather>",
        "\n",
        "<parameter=city>\nAustin\n</parameter>\n<parameter=state>\nTX\n</parameter>\n<parameter=unit>\nfahrenheit\n</parameter>",
        "\n</function>",
        "\n</tool_call>",
    ] {
        let _ = p.push(piece);
    }
    let turn = ParsedTurn::from_events(p.settle());
    assert_eq!(
        args(&turn, 0),
        json!({"city": "Austin", "state": "TX", "unit": "fahrenheit"})
    );
}

// ---- llama.cpp's Qwen3-Coder cases, restated --------------------------------------------------

#[test]
fn llama_cpp_indented_values_keep_their_whitespace_here() {
    // llama.cpp trims the whitespace around each value (and so reads `1` as the integer 1);
    // SGLang strips one newline on each side only, so the indentation stays and an indented
    // integer is still an integer (Python's int() allows the spaces) while strings keep them.
    let tools = vec![
        tool(
            "special_function",
            json!({"type": "object", "properties": {"arg1": {"type": "integer"}}}),
        ),
        tool(
            "complex_function",
            json!({"type": "object", "properties": {
                "name": {"type": "string"}, "age": {"type": "integer"},
                "active": {"type": "boolean"}, "score": {"type": "number"}
            }}),
        ),
    ];
    let turn = parse_content(&tools, "<tool_call>\n  <function=special_function>\n    <parameter=arg1>\n      1\n    </parameter>\n  </function>\n</tool_call>");
    assert_eq!(args(&turn, 0), json!({"arg1": 1}));
    let turn = parse_content(&tools, "<tool_call>\n  <function=complex_function>\n    <parameter=name>\n      John Doe\n    </parameter>\n    <parameter=age>\n      30\n    </parameter>\n    <parameter=active>\n      true\n    </parameter>\n    <parameter=score>\n      95.5\n    </parameter>\n  </function>\n</tool_call>");
    // llama.cpp: name "John Doe", active true. SGLang (and we): the string keeps its indentation
    // and "      true\n    " is not `true`, so false (docs/prompt-format.md, value typing).
    assert_eq!(
        args(&turn, 0),
        json!({"name": "      John Doe\n    ", "age": 30, "active": false, "score": 95.5})
    );
}

#[test]
fn llama_cpp_unicode_code_json_arrays_null_and_numbers() {
    let tools = vec![
        tool(
            "u",
            json!({"type": "object", "properties": {"message": {"type": "string"}}}),
        ),
        tool(
            "c",
            json!({"type": "object", "properties": {"code": {"type": "string"}}}),
        ),
        tool(
            "j",
            json!({"type": "object", "properties": {"config": {"type": "object"}, "items": {"type": "array"}}}),
        ),
        tool(
            "n",
            json!({"type": "object", "properties": {"optional_param": {"type": "null"}}}),
        ),
        tool(
            "m",
            json!({"type": "object", "properties": {"negative": {"type": "integer"}, "decimal": {"type": "number"}, "scientific": {"type": "number"}}}),
        ),
        tool(
            "x",
            json!({"type": "object", "properties": {"xml_content": {"type": "string"}}}),
        ),
    ];
    let turn = parse_content(
        &tools,
        &call("u", &[("message", "Hello 世界! 🌍 @#$%^&*()")]),
    );
    assert_eq!(args(&turn, 0)["message"], "Hello 世界! 🌍 @#$%^&*()");
    let code = "def hello():\n    print(\"Hello, World!\")\n    return True";
    let turn = parse_content(&tools, &call("c", &[("code", code)]));
    assert_eq!(args(&turn, 0)["code"], code);
    let turn = parse_content(
        &tools,
        &call(
            "j",
            &[
                (
                    "config",
                    "{\"host\": \"localhost\", \"port\": 8080, \"ssl\": false}",
                ),
                ("items", "[\"apple\", \"banana\"]"),
            ],
        ),
    );
    assert_eq!(
        args(&turn, 0),
        json!({"config": {"host": "localhost", "port": 8080, "ssl": false}, "items": ["apple", "banana"]})
    );
    let turn = parse_content(&tools, &call("n", &[("optional_param", "null")]));
    assert_eq!(args(&turn, 0)["optional_param"], Value::Null);
    let turn = parse_content(
        &tools,
        &call(
            "m",
            &[
                ("negative", "-42"),
                ("decimal", "-2.5"),
                ("scientific", "1.23e-4"),
            ],
        ),
    );
    assert_eq!(
        args(&turn, 0),
        json!({"negative": -42, "decimal": -2.5, "scientific": 1.23e-4})
    );
    // Markup that is not the protocol's stays in the value.
    let turn = parse_content(
        &tools,
        &call("x", &[("xml_content", "<root><item>v</item></root>")]),
    );
    assert_eq!(args(&turn, 0)["xml_content"], "<root><item>v</item></root>");
}

#[test]
fn llama_cpp_spaces_between_tags() {
    // llama.cpp accepts spaces between the tags on one line; so do we (and SGLang).
    let t = tool(
        "special_function",
        json!({"type": "object", "properties": {"arg1": {"type": "integer"}}}),
    );
    let turn = parse_content(
        &[t],
        " <tool_call>\n<function=special_function> <parameter=arg1>1\n</parameter>\n</function> </tool_call>\n\n\n",
    );
    assert_eq!(args(&turn, 0), json!({"arg1": 1}));
}
