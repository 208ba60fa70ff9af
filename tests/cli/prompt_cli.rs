//! `lilypad prompt` and `lilypad parse` as a user runs them.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/prompt")
        .join(name)
}

fn golden(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/prompt")
        .join(format!("{name}.txt"));
    std::fs::read_to_string(path).unwrap()
}

/// The binary with no model and no config file from the environment.
fn lilypad(args: &[&str], stdin: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lilypad"));
    cmd.args(args)
        .args(["--config", "/nonexistent/lilypad-test-config.toml"])
        .env_remove("LILYPAD_MODEL")
        .env_remove("LILYPAD_CONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut pipe = child.stdin.take().unwrap();
    pipe.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
    drop(pipe);
    child.wait_with_output().unwrap()
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[test]
fn prompt_prints_the_golden_text_exactly() {
    for name in ["first_turn", "tool_rounds", "unicode_and_types"] {
        let path = data(&format!("{name}.json"));
        let out = lilypad(&["prompt", path.to_str().unwrap()], None);
        assert_eq!(stdout(&out), golden(name), "{name}");
    }
}

#[test]
fn prompt_uses_the_template_of_the_model_file() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("m.gguf");
    let mut w = lilypad::gguf::GgufWriter::new();
    w.set(
        "general.architecture",
        lilypad::gguf::Value::String("qwen35".into()),
    );
    w.set(
        "tokenizer.chat_template",
        lilypad::gguf::Value::String(
            "{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}{{ tools | length }}"
                .into(),
        ),
    );
    w.begin(std::fs::File::create(&model).unwrap())
        .unwrap()
        .finish()
        .unwrap();
    let conv = data("first_turn.json");
    let args = [
        "prompt",
        conv.to_str().unwrap(),
        "--model",
        model.to_str().unwrap(),
    ];
    let text = stdout(&lilypad(&args, None));
    assert!(text.starts_with("[system:You are"), "{text}");
    assert!(text.ends_with("Fix it.]5"), "{text}");
    // --builtin-template wins over the model's template.
    let mut with_builtin = args.to_vec();
    with_builtin.push("--builtin-template");
    assert_eq!(stdout(&lilypad(&with_builtin, None)), golden("first_turn"));
}

#[test]
fn prompt_options() {
    let conv = data("first_turn.json");
    let conv = conv.to_str().unwrap();
    let text = stdout(&lilypad(
        &["prompt", conv, "--no-thinking", "--tools-form", "openai"],
        None,
    ));
    assert!(text.ends_with("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
    assert!(text.contains("<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"Read\""));
    let text = stdout(&lilypad(&["prompt", conv, "--no-generation-prompt"], None));
    assert!(text.ends_with("Fix it.<|im_end|>\n"));

    let dir = tempfile::tempdir().unwrap();
    let bare = dir.path().join("bare.json");
    std::fs::write(
        &bare,
        r#"{"messages": [{"role": "user", "content": "hi"}], "tools": []}"#,
    )
    .unwrap();
    let bare = bare.to_str().unwrap();
    let text = stdout(&lilypad(&["prompt", bare], None));
    assert_eq!(
        text,
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n"
    );
    let text = stdout(&lilypad(&["prompt", bare, "--default-system"], None));
    assert!(text.starts_with("<|im_start|>system\nYou are an autonomous"));
}

#[test]
fn prompt_errors_name_the_file_and_the_problem() {
    let out = lilypad(&["prompt", "/nonexistent/conv.json"], None);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/conv.json"));

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"{"messages": [{"role": "wizard", "content": "x"}]}"#,
    )
    .unwrap();
    let out = lilypad(&["prompt", bad.to_str().unwrap()], None);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("message 0") && err.contains("wizard"), "{err}");
}

#[test]
fn parse_prints_typed_calls_as_json() {
    let raw = "I need the file.\n</think>\n\nReading.\n\n<tool_call>\n<function=Read>\n<parameter=file_path>\nsrc/é.py\n</parameter>\n<parameter=offset>\n5\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=Edit>\n<parameter=file_path>\na\n</parameter>\n<parameter=replace_all>\nTrue\n</parameter>\n</function>\n</tool_call><|im_end|>";
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out.txt");
    std::fs::write(&file, raw).unwrap();
    for out in [
        lilypad(&["parse", file.to_str().unwrap()], None),
        lilypad(&["parse"], Some(raw)),
    ] {
        let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(v["reasoning"], "I need the file.");
        assert_eq!(v["content"], "Reading.");
        assert_eq!(
            v["tool_calls"],
            json!([
                {"id": "call_0", "name": "Read", "arguments": {"file_path": "src/é.py", "offset": 5}},
                {"id": "call_1", "name": "Edit", "arguments": {"file_path": "a", "replace_all": true}}
            ])
        );
        assert_eq!(v["errors"], json!([]));
    }
}

#[test]
fn parse_reports_malformed_and_cut_off_calls() {
    let raw =
        "r</think><tool_call>\n<function=\n<tool_call>\n<function=Bash>\n<parameter=command>\nls -";
    let v: Value = serde_json::from_str(&stdout(&lilypad(&["parse"], Some(raw)))).unwrap();
    assert_eq!(v["errors"][0]["index"], 0);
    assert!(v["errors"][0]["message"]
        .as_str()
        .unwrap()
        .contains("<function="));
    assert_eq!(v["tool_calls"][0]["arguments"]["command"], "ls -");
    assert_eq!(v["cut_off_call"], "call_0");
    // After a </tool_call>, a call without one is dropped, as SGLang drops it.
    let raw = "r</think><tool_call>\n<function=\n</tool_call>\n<tool_call>\n<function=Bash>\n<parameter=command>\nls -";
    let v: Value = serde_json::from_str(&stdout(&lilypad(&["parse"], Some(raw)))).unwrap();
    assert_eq!(v["errors"][0]["index"], 0);
    assert_eq!(v["tool_calls"], json!([]));
}

/// `lilypad harness import` on a stand-in of Leaf's tools.py (same shape, not Leaf's text), then
/// the profile in use by `lilypad prompt --harness` and named by `lilypad doctor`.
#[test]
fn harness_import_then_use_the_profile() {
    let dir = tempfile::tempdir().unwrap();
    let leaf = dir.path().join("checkout/frognano/harness/leaf");
    std::fs::create_dir_all(&leaf).unwrap();
    std::fs::write(
        leaf.join("tools.py"),
        r#"SYSTEM_PROMPT = (
    "Stand-in prompt, first line.\n"
    "Stand-in prompt, second line."
)

OPENAI_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "Glob",
            "description": "Stand-in words.",
            "parameters": {
                "type": "object",
                "properties": {"pattern": {"type": "string", "description": "x"}},
                "required": ["pattern"],
            },
        },
    },
]
"#,
    )
    .unwrap();
    let profile = dir.path().join("leaf.toml");
    let out = lilypad(
        &[
            "harness",
            "import",
            dir.path().join("checkout").to_str().unwrap(),
            "--out",
            profile.to_str().unwrap(),
        ],
        None,
    );
    let text = stdout(&out);
    assert!(text.contains("1 tools"), "{text}");
    assert!(text.contains("profile leaf (sha1 "), "{text}");
    let bare = dir.path().join("bare.json");
    std::fs::write(
        &bare,
        r#"{"messages": [{"role": "user", "content": "hi"}]}"#,
    )
    .unwrap();
    let prompt = stdout(&lilypad(
        &[
            "--harness",
            profile.to_str().unwrap(),
            "prompt",
            bare.to_str().unwrap(),
            "--default-system",
        ],
        None,
    ));
    assert!(
        prompt.contains("Stand-in prompt, first line.\nStand-in prompt, second line.<|im_end|>"),
        "{prompt}"
    );
    assert!(prompt.contains("\"name\": \"Glob\""), "{prompt}");
    assert!(!prompt.contains("\"name\": \"Read\""), "{prompt}");
    let doctor = stdout(&lilypad(
        &["--harness", profile.to_str().unwrap(), "doctor"],
        None,
    ));
    assert!(doctor.contains("harness         leaf (sha1 "), "{doctor}");
    let doctor = stdout(&lilypad(&["doctor"], None));
    assert!(
        doctor.contains("harness         lilypad (sha1 "),
        "{doctor}"
    );
}
