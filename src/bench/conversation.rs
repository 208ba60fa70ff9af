//! A scripted agent session for the engine benches: a task, then turns in which the model
//! reasons briefly and calls one tool, each answered by a realistic tool result (file reads with
//! line numbers, test-run logs, file lists, edit confirmations). Deterministic: the same turn
//! count always gives the same conversation.

use crate::prompt::{builtin_tools, GenerationPrompt, PromptError, Renderer, ToolSpec};
use crate::protocol::{Message, ToolCall};
use serde_json::{json, Map, Value};

/// The task every scripted session works on.
pub const TASK: &str = "The test `parser::tests::nested_lists` fails after the last refactor. \
Find the cause, fix it, and make sure the whole test suite passes.";

/// A growing conversation and the renderer that turns it into prompt text.
pub struct Session {
    pub renderer: Renderer,
    pub tools: Vec<ToolSpec>,
    pub messages: Vec<Message>,
    turns: usize,
}

impl Session {
    pub fn new() -> Result<Self, PromptError> {
        let settings = crate::prompt::PromptSettings::default();
        Ok(Self {
            renderer: Renderer::builtin(&settings)?,
            tools: builtin_tools(),
            messages: vec![
                Message::system(crate::prompt::default_system_prompt()),
                Message::user(TASK),
            ],
            turns: 0,
        })
    }

    /// The prompt for the next model turn.
    pub fn prompt(&self) -> Result<String, PromptError> {
        self.renderer
            .render(&self.messages, &self.tools, GenerationPrompt::Add)
    }

    /// Append the model's scripted turn `n` (reasoning and one tool call) and its tool result.
    pub fn push_turn(&mut self) {
        let n = self.turns;
        self.turns += 1;
        let id = format!("call_{}", n + 1);
        let (reasoning, call, result) = scripted_turn(n, &id);
        self.messages.push(Message::assistant(
            Some(reasoning),
            String::new(),
            vec![call],
        ));
        self.messages.push(Message::tool(Some(id), result));
    }
}

fn call(id: &str, name: &str, args: Value) -> ToolCall {
    let arguments: Map<String, Value> = match args {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    ToolCall {
        id: id.to_string(),
        name: name.to_string(),
        arguments,
    }
}

const MODULES: [&str; 8] = [
    "parser", "lexer", "render", "config", "cache", "walker", "report", "cli",
];

/// Turn `n`: reasoning, the call, and the tool's result as the model would read it.
fn scripted_turn(n: usize, id: &str) -> (String, ToolCall, String) {
    let module = MODULES[n % MODULES.len()];
    let path = format!("src/{module}/mod.rs");
    match n % 5 {
        0 | 3 => (
            format!(
                "I need to see how `{module}` handles nested items before changing anything. \
                 Reading {path}."
            ),
            call(id, "Read", json!({"file_path": path})),
            read_result(&path, module, n, 22),
        ),
        1 => (
            "Let me run the failing test to see the current error.".to_string(),
            call(
                id,
                "Bash",
                json!({"command": "cargo test parser::tests 2>&1 | tail -80", "timeout": 120}),
            ),
            test_log(module, n, 12),
        ),
        2 => (
            format!("Which files mention `{module}`? Listing the tree."),
            call(id, "Glob", json!({"pattern": format!("**/*{module}*.rs")})),
            file_list(module, n, 16),
        ),
        _ => (
            format!("The depth counter in `{module}` is reset too early; fixing it."),
            call(
                id,
                "Edit",
                json!({
                    "file_path": path,
                    "old_string": "        depth = 0;\n",
                    "new_string": "        depth = depth.saturating_sub(1);\n",
                }),
            ),
            format!(
                "The file {path} has been updated. Here's the result of running `cat -n` on a \
                 snippet of the edited file:\n{}",
                numbered(&source_lines(module, n, 8), 40)
            ),
        ),
    }
}

fn source_lines(module: &str, seed: usize, count: usize) -> Vec<String> {
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        let k = seed * 31 + i;
        let line = match i % 12 {
            0 => format!("/// Handles one {module} item at depth {k}."),
            1 => format!("pub fn {module}_item_{k}(input: &mut Input<'_>, depth: usize) -> Result<Node, Error> {{"),
            2 => "    let start = input.position();".to_string(),
            3 => format!("    if depth > MAX_DEPTH_{} {{", k % 7),
            4 => "        return Err(Error::TooDeep { at: start, depth });".to_string(),
            5 => "    }".to_string(),
            6 => format!("    let mut children = Vec::with_capacity({});", k % 16 + 1),
            7 => "    while let Some(token) = input.next_token()? {".to_string(),
            8 => format!("        children.push({module}_child(token, depth + 1)?);"),
            9 => "    }".to_string(),
            10 => format!("    Ok(Node::new(NodeKind::{}, start..input.position(), children))", capitalise(module)),
            _ => "}".to_string(),
        };
        out.push(line);
    }
    out
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

fn numbered(lines: &[String], first: usize) -> String {
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| format!("{:>6}\t{l}", first + i))
        .collect::<Vec<_>>()
        .join("\n")
}

fn read_result(path: &str, module: &str, seed: usize, count: usize) -> String {
    format!(
        "{path}\n{}",
        numbered(&source_lines(module, seed, count), 1)
    )
}

fn test_log(module: &str, seed: usize, count: usize) -> String {
    let mut out = vec![
        "   Compiling lilyparse v0.4.2 (/workspace)".to_string(),
        "    Finished `test` profile [unoptimized + debuginfo] target(s) in 6.21s".to_string(),
        "     Running unittests src/lib.rs (target/debug/deps/lilyparse-5f1c2b7e9a0d4c3e)"
            .to_string(),
        String::new(),
        format!("running {count} tests"),
    ];
    for i in 0..count {
        let m = MODULES[(seed + i) % MODULES.len()];
        let ok = !(i == count / 2 && m == module) && i != 3;
        out.push(format!(
            "test {m}::tests::case_{:03} ... {}",
            seed * 7 + i,
            if ok { "ok" } else { "FAILED" }
        ));
    }
    out.push(String::new());
    out.push("failures:".into());
    out.push(String::new());
    out.push("---- parser::tests::nested_lists stdout ----".into());
    out.push(format!(
        "thread 'parser::tests::nested_lists' panicked at src/parser/mod.rs:{}:9:",
        200 + seed
    ));
    out.push("assertion `left == right` failed".into());
    out.push("  left: [List([Item(\"a\"), List([Item(\"b\")])])]".into());
    out.push(" right: [List([Item(\"a\")]), List([Item(\"b\")])]".into());
    out.push(String::new());
    out.push(format!(
        "test result: FAILED. {} passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.{:02}s",
        count - 2,
        seed % 100
    ));
    out.join("\n")
}

fn file_list(module: &str, seed: usize, count: usize) -> String {
    (0..count)
        .map(|i| {
            let m = MODULES[(seed + i) % MODULES.len()];
            format!("src/{m}/{module}_{}_{i}.rs", seed % 13)
        })
        .collect::<Vec<_>>()
        .join("\n")
}
