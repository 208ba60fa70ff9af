//! PatchEval Verified's dataset as a batch: two CVEs on images built here (the repository at
//! `/workspace/Proj`, the verifier's `fix-run.sh` and a proof of concept beside it). The agent
//! sees the repository only, and each patch is verified in a fresh sandbox from the image by
//! `bash fix-run.sh` in `/workspace`: one verifier accepts the fix (resolved), the other wants
//! another (unresolved).

use std::process::Command;

use super::batch_image::{docker_missing, unique_name, Image};
use crate::common::git_repo;

const SCRIPT: &str = "=== turn ===
Look around.
</think>

<tool_call>
<function=Bash>
<parameter=command>
pwd; ls -a /workspace; echo scratch > notes.log
</parameter>
</function>
</tool_call>
=== turn ===
Fix it.
</think>

<tool_call>
<function=Edit>
<parameter=file_path>
app.py
</parameter>
<parameter=old_string>
return eval(text)
</parameter>
<parameter=new_string>
return ast.literal_eval(text)
</parameter>
</function>
</tool_call>
=== turn ===
Done.
</think>

Fixed.
";

/// An image whose verifier passes when `app.py` holds `wanted`, and only in a sandbox the
/// agent never touched (its ignored `notes.log` absent).
fn build(dir: &std::path::Path, tag: &str, wanted: &str) -> Image {
    let base = std::env::var("LILYPAD_TEST_BASH_IMAGE")
        .unwrap_or_else(|_| "lilypad-sandbox:debian".into());
    let ws = dir.join("workspace");
    git_repo(
        &ws.join("Proj"),
        &[
            (
                "app.py",
                "import ast\n\ndef parse(text):\n    return eval(text)\n",
            ),
            (".gitignore", "*.log\n"),
        ],
    );
    std::fs::write(
        ws.join("fix-run.sh"),
        format!(
            "set -e\ncd /workspace/Proj\ntest ! -e notes.log\ngit apply /workspace/fix.patch\n\
             grep -q '{wanted}' app.py\n"
        ),
    )
    .unwrap();
    std::fs::write(ws.join("poc.py"), "print('exploit')\n").unwrap();
    std::fs::write(
        dir.join("Dockerfile"),
        format!("FROM {base}\nCOPY workspace /workspace\n"),
    )
    .unwrap();
    let image = Image(tag.to_string());
    let built = Command::new("docker")
        .args(["build", "-q", "-t", tag])
        .arg(dir)
        .output()
        .unwrap();
    assert!(built.status.success(), "docker build: {built:?}");
    image
}

#[test]
fn patcheval_tasks_are_verified_in_a_fresh_sandbox_with_the_payload_hidden() {
    if let Some(why) = docker_missing() {
        let required = std::env::var("LILYPAD_REQUIRE_DOCKER").is_ok_and(|v| v == "1");
        assert!(!required, "LILYPAD_REQUIRE_DOCKER=1 but: {why}");
        eprintln!("!!!!! SKIPPED: the PatchEval batch test: {why}");
        return;
    }
    run_patcheval("docker", None);
}

/// The batch of two CVEs on sandboxes of `kind` (`config`: the settings file, for the
/// cluster's kubeconfig), checked as the module docs say.
pub fn run_patcheval(kind: &str, config: Option<&std::path::Path>) {
    let tmp = tempfile::tempdir().unwrap();
    let unique = unique_name(tmp.path());
    let good_tag = format!("lilypad-test-patcheval-{unique}:good");
    let bad_tag = format!("lilypad-test-patcheval-{unique}:other");
    let _good = build(&tmp.path().join("good"), &good_tag, "ast.literal_eval");
    let _bad = build(&tmp.path().join("bad"), &bad_tag, "json.loads");
    let dataset = serde_json::json!([
        { "cve_id": "CVE-2099-0001", "image_url": good_tag, "repo": "https://github.com/acme/Proj",
          "cve_description": "parse() evaluates untrusted input", "programing_language": "Python" },
        { "cve_id": "CVE-2099-0002", "image_url": bad_tag, "repo": "https://github.com/acme/Proj",
          "cve_description": "parse() evaluates untrusted input", "programing_language": "Python" },
    ]);
    let file = tmp.path().join("patcheval_verified.json");
    std::fs::write(&file, serde_json::to_string_pretty(&dataset).unwrap()).unwrap();
    let script = tmp.path().join("fix.txt");
    std::fs::write(&script, SCRIPT).unwrap();
    let out = tmp.path().join("batch");
    let run = Command::new(env!("CARGO_BIN_EXE_lilypad"))
        .env(
            "LILYPAD_CONFIG",
            config
                .map(std::path::Path::to_path_buf)
                .unwrap_or_else(|| tmp.path().join("no-config.toml")),
        )
        .env("LILYPAD_SESSION_DIR", tmp.path().join("sessions"))
        .env_remove("LILYPAD_MODEL")
        .env_remove("LILYPAD_SCRIPT_DELAY_MS")
        .args(["run", "--sandbox", kind, "--tasks"])
        .arg(&file)
        .arg("--engine")
        .arg(format!("script:{}", script.display()))
        .arg("--out")
        .arg(&out)
        .current_dir(tmp.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("summary.json"))
            .unwrap_or_else(|e| panic!("{e}; stderr: {stderr}")),
    )
    .unwrap();
    assert_eq!(summary["resolved"], 1, "{summary}; stderr: {stderr}");
    assert_eq!(summary["unresolved"], 1, "{summary}");
    assert_eq!(summary["jobs_failed"], 0, "{summary}");
    let results = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    let reward = |id: &str| -> f64 {
        results
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .find(|r| r["instance_id"] == id)
            .unwrap()["reward"]
            .as_f64()
            .unwrap()
    };
    assert_eq!(reward("CVE-2099-0001"), 1.0, "{results}");
    assert_eq!(reward("CVE-2099-0002"), 0.0, "{results}");
    // The agent worked in the repository and saw none of the verifier's files.
    let trajectory =
        std::fs::read_to_string(out.join("results/CVE-2099-0001/1/trajectory.json")).unwrap();
    assert!(trajectory.contains("/workspace/Proj\\n"), "{trajectory}");
    assert!(!trajectory.contains("fix-run.sh"), "{trajectory}");
    assert!(!trajectory.contains("poc.py"), "{trajectory}");
    assert!(trajectory.contains("parse() evaluates untrusted input"));
    let preds = std::fs::read_to_string(out.join("predictions.jsonl")).unwrap();
    assert!(preds.contains("ast.literal_eval"), "{preds}");
    assert!(!preds.contains("notes.log"), "{preds}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(
        report["run"]["patcheval_instruction"], "lilypad",
        "{report}"
    );
}
