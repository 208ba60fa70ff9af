//! `lilypad export` of a session recorded by the real binary (scripted engine, host sandbox,
//! a real git repository): Markdown, HTML and JSON each hold the task, the edit as a diff, the
//! final patch and the provenance; reasoning folds; the HTML is one self-contained page.

use crate::common::git_repo;
use std::path::Path;
use std::process::{Command, Output};

const FIX: &str = "=== turn ===
Look first.
</think>

<tool_call>
<function=Read>
<parameter=file_path>
src/app.py
</parameter>
</function>
</tool_call>
=== turn ===
It returns 1 & the task wants <2>.
</think>

<tool_call>
<function=Edit>
<parameter=file_path>
src/app.py
</parameter>
<parameter=old_string>
return 1
</parameter>
<parameter=new_string>
return 2
</parameter>
</function>
</tool_call>
=== turn ===
Done.
</think>

f now returns 2.
";

fn lilypad(dir: &Path, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_lilypad"))
        .args(args)
        .env("LILYPAD_CONFIG", dir.join("no-config.toml"))
        .env("LILYPAD_SESSION_DIR", dir.join("sessions"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env_remove("LILYPAD_MODEL")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn a_recorded_session_exports_as_markdown_html_and_json() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = git_repo(
        &tmp.path().join("repo"),
        &[("src/app.py", "def f():\n    return 1\n")],
    );
    let script = tmp.path().join("fix.script");
    std::fs::write(&script, FIX).unwrap();
    let engine = format!("script:{}", script.display());
    lilypad(
        tmp.path(),
        &[
            "run",
            "--task",
            "make f return 2",
            "--sandbox",
            "host",
            "--allow-host",
            "--repo",
            repo.to_str().unwrap(),
            "--engine",
            &engine,
        ],
    );

    let md = String::from_utf8(lilypad(tmp.path(), &["export", "--last"]).stdout).unwrap();
    assert!(
        md.contains("## Task\n\n```text\nmake f return 2\n```"),
        "{md}"
    );
    assert!(md.contains("<details><summary>Reasoning</summary>"), "{md}");
    assert!(md.contains("Look first."), "{md}");
    // The edit as a diff block, then the final patch as one.
    assert!(
        md.contains("```diff\n--- a/src/app.py\n+++ b/src/app.py\n@@ -1,1 +1,1 @@\n-return 1\n+return 2\n```"),
        "{md}"
    );
    let patch_at = md.find("## Final patch").unwrap();
    let patch = &md[patch_at..];
    assert!(
        patch.contains("```diff\ndiff --git a/src/app.py b/src/app.py"),
        "{patch}"
    );
    assert!(patch.contains("-    return 1\n+    return 2"), "{patch}");
    assert!(
        md.contains("## Provenance") && md.contains("\"lilypad\""),
        "{md}"
    );
    assert!(md.contains("f now returns 2."));

    let html_path = tmp.path().join("s.html");
    lilypad(
        tmp.path(),
        &[
            "export",
            "--last",
            "--format",
            "html",
            "-o",
            html_path.to_str().unwrap(),
        ],
    );
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("<style>"));
    assert!(
        !html.contains("<script") && !html.contains("<link"),
        "self-contained"
    );
    assert!(html.contains("make f return 2"));
    assert!(
        html.contains("It returns 1 &amp; the task wants &lt;2&gt;."),
        "escaped reasoning"
    );
    assert!(html.contains("<details><summary>Reasoning</summary>"));
    // Diffs are drawn with syntax colours: the final patch's Python is highlighted.
    assert!(html.contains("class=\"line add\""), "{html}");
    assert!(html.contains("style=\"color:#"), "highlighted");
    assert!(html.contains("<h2>Final patch</h2>"));

    let id = std::fs::read_dir(tmp.path().join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .unwrap()
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let json = lilypad(tmp.path(), &["export", &id[..12], "--format", "json"]).stdout;
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(v["format_version"], 1);
    assert_eq!(v["session_id"], id);
    assert_eq!(v["task"], "make f return 2");
    assert_eq!(v["finish"], "answered");
    let turns = v["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 3);
    assert_eq!(turns[0]["reasoning"], "Look first.");
    let edit = &turns[1]["calls"][0];
    assert_eq!(edit["name"], "Edit");
    assert_eq!(edit["resolution"], "auto");
    assert!(edit["diff"]
        .as_str()
        .unwrap()
        .contains("-return 1\n+return 2\n"));
    assert!(!edit["result"].as_str().unwrap().is_empty());
    assert!(v["patch"].as_str().unwrap().contains("+    return 2"));
    assert!(v["provenance"]["lilypad"].is_string());
}
