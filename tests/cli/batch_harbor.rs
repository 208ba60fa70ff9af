//! A batch over a folder of Harbor tasks the test writes (each task's image built from its
//! `environment/Dockerfile` over the local base image, `WORKDIR /app`): the scripted agent
//! makes the same change in both, which one task's verifier rewards and the other's does not;
//! the rewards are in the results, the predictions and the report (pass@1 over reward > 0),
//! and the tests were never visible to the agent.
//!
//! Without a Docker engine the test skips loudly, unless LILYPAD_REQUIRE_DOCKER=1 (CI), where
//! it fails.

use std::path::Path;
use std::process::Command;

use super::batch_image::docker_missing;

pub const SCRIPT: &str = "=== turn ===
Where are the tests?
</think>

<tool_call>
<function=Bash>
<parameter=command>
pwd; ls tests /tests; ls -A /tests /logs | wc -l; cat answer.txt
</parameter>
</function>
</tool_call>
=== turn ===
Write the answer.
</think>

<tool_call>
<function=Edit>
<parameter=file_path>
answer.txt
</parameter>
<parameter=old_string>
0
</parameter>
<parameter=new_string>
42
</parameter>
</function>
</tool_call>
=== turn ===
Done.
</think>

The answer is 42.
";

/// A task whose verifier rewards an answer of `wanted`.
pub fn task(root: &Path, name: &str, wanted: u32, base: &str) {
    let t = root.join(name);
    std::fs::create_dir_all(t.join("environment")).unwrap();
    std::fs::create_dir_all(t.join("tests")).unwrap();
    std::fs::write(t.join("instruction.md"), "Put the answer in answer.txt.\n").unwrap();
    std::fs::write(
        t.join("task.toml"),
        "version = \"1.0\"\n[metadata]\ndifficulty = \"easy\"\n[verifier]\ntimeout_sec = 60.0\n\
         [agent]\ntimeout_sec = 600.0\n[environment]\ncpus = 1\nmemory_mb = 512\n",
    )
    .unwrap();
    std::fs::write(
        t.join("environment/Dockerfile"),
        format!("# task {name}\nFROM {base}\nWORKDIR /app\nCOPY answer.txt /app/answer.txt\n"),
    )
    .unwrap();
    std::fs::write(t.join("environment/answer.txt"), "0\n").unwrap();
    std::fs::write(
        t.join("tests/test.sh"),
        format!(
            "#!/bin/bash\nif grep -qx {wanted} /app/answer.txt; then r=1; else r=0; fi\n\
             echo $r > /logs/verifier/reward.txt\n"
        ),
    )
    .unwrap();
    std::fs::write(t.join("tests/expected.txt"), format!("{wanted}\n")).unwrap();
}

#[test]
fn harbor_tasks_are_verified_after_the_agent_and_rewarded_in_the_report() {
    if let Some(why) = docker_missing() {
        let required = std::env::var("LILYPAD_REQUIRE_DOCKER").is_ok_and(|v| v == "1");
        assert!(!required, "LILYPAD_REQUIRE_DOCKER=1 but: {why}");
        eprintln!("!!!!! SKIPPED: the Harbor batch test: {why}");
        return;
    }
    let base = std::env::var("LILYPAD_TEST_BASH_IMAGE")
        .unwrap_or_else(|_| "lilypad-sandbox:debian".into());
    let tmp = tempfile::tempdir().unwrap();
    let tasks = tmp.path().join("tasks");
    task(&tasks, "wants-42", 42, &base);
    task(&tasks, "wants-43", 43, &base);
    let script = tmp.path().join("answer.txt");
    std::fs::write(&script, SCRIPT).unwrap();
    let out = tmp.path().join("batch");
    let run = Command::new(env!("CARGO_BIN_EXE_lilypad"))
        .env("LILYPAD_CONFIG", tmp.path().join("no-config.toml"))
        .env("LILYPAD_SESSION_DIR", tmp.path().join("sessions"))
        .env_remove("LILYPAD_MODEL")
        .env_remove("LILYPAD_SCRIPT_DELAY_MS")
        .args(["run", "--sandbox", "docker", "--parallel", "2"])
        .arg("--tasks")
        .arg(&tasks)
        .arg("--engine")
        .arg(format!("script:{}", script.display()))
        .arg("--out")
        .arg(&out)
        .current_dir(tmp.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "stderr: {stderr}");
    let result = |id: &str| -> serde_json::Value {
        let p = out.join("results").join(id).join("1/result.json");
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    let good = result("wants-42");
    let bad = result("wants-43");
    assert_eq!(good["reward"], 1.0, "{good}");
    assert_eq!(good["check"]["passed"], true, "{good}");
    assert_eq!(bad["reward"], 0.0, "{bad}");
    assert_eq!(bad["check"]["passed"], false, "{bad}");
    // The verifier ran on the agent's change, in the same sandbox, after the agent.
    for id in ["wants-42", "wants-43"] {
        let patch =
            std::fs::read_to_string(out.join("results").join(id).join("1/patch.diff")).unwrap();
        assert!(patch.contains("+42"), "{patch}");
        assert!(!patch.contains("test.sh"), "{patch}");
        // What the agent saw: it worked in the image's /app and found no tests anywhere.
        let trajectory =
            std::fs::read_to_string(out.join("results").join(id).join("1/trajectory.json"))
                .unwrap();
        let t: serde_json::Value = serde_json::from_str(&trajectory).unwrap();
        let seen = t.to_string();
        assert!(seen.contains("/app"), "{seen}");
        assert!(
            !seen.contains("test.sh") && !seen.contains("expected"),
            "{seen}"
        );
        assert!(seen.contains("No such file or directory"), "{seen}");
    }
    let preds: Vec<serde_json::Value> = std::fs::read_to_string(out.join("predictions.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let reward = |id: &str| {
        preds
            .iter()
            .find(|p| p["instance_id"] == id)
            .map(|p| p["reward"].clone())
    };
    assert_eq!(reward("wants-42"), Some(serde_json::json!(1.0)));
    assert_eq!(reward("wants-43"), Some(serde_json::json!(0.0)));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["pass_at_k"]["1"], 0.5, "{report}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("| reward |"), "{md}");
}

/// A task whose verifier's script is `verifier` and whose `task.toml` ends with `extra`.
fn scored_task(root: &Path, name: &str, verifier: &str, extra: &str, base: &str) {
    let t = root.join(name);
    std::fs::create_dir_all(t.join("environment")).unwrap();
    std::fs::create_dir_all(t.join("tests")).unwrap();
    std::fs::write(t.join("instruction.md"), "Put the answer in answer.txt.\n").unwrap();
    std::fs::write(
        t.join("task.toml"),
        format!(
            "version = \"1.0\"\n[verifier]\ntimeout_sec = 60.0\n[agent]\ntimeout_sec = 600.0\n\
             [environment]\ncpus = 1\nmemory_mb = 512\n{extra}"
        ),
    )
    .unwrap();
    std::fs::write(
        t.join("environment/Dockerfile"),
        format!("# task {name}\nFROM {base}\nWORKDIR /app\nCOPY answer.txt /app/answer.txt\n"),
    )
    .unwrap();
    std::fs::write(t.join("environment/answer.txt"), "0\n").unwrap();
    std::fs::write(
        t.join("tests/test.sh"),
        format!("#!/bin/bash\n{verifier}\n"),
    )
    .unwrap();
}

/// Interfaces the sandbox has, `lo` included (1: no network).
const INTERFACES: &str = "n=$(grep -c : /proc/net/dev)";

#[test]
fn harbor_rewards_are_scored_as_leaf_scores_them_and_the_task_decides_the_network() {
    if let Some(why) = docker_missing() {
        let required = std::env::var("LILYPAD_REQUIRE_DOCKER").is_ok_and(|v| v == "1");
        assert!(!required, "LILYPAD_REQUIRE_DOCKER=1 but: {why}");
        eprintln!("!!!!! SKIPPED: the Harbor scoring test: {why}");
        return;
    }
    let base = std::env::var("LILYPAD_TEST_BASH_IMAGE")
        .unwrap_or_else(|_| "lilypad-sandbox:debian".into());
    let tmp = tempfile::tempdir().unwrap();
    let tasks = tmp.path().join("tasks");
    // Reward 1.0 only with the network the task allows; 0.5 only without a network, the
    // default; no reward at all.
    scored_task(
        &tasks,
        "online-full",
        &format!("{INTERFACES}; if [ \"$n\" -gt 1 ]; then r=1.0; else r=0; fi; echo $r > /logs/verifier/reward.txt"),
        "allow_internet = true\n",
        &base,
    );
    scored_task(
        &tasks,
        "offline-half",
        &format!("{INTERFACES}; if [ \"$n\" -eq 1 ]; then r=0.5; else r=0; fi; echo $r > /logs/verifier/reward.txt"),
        "",
        &base,
    );
    scored_task(&tasks, "silent", "echo no reward written", "", &base);
    let script = tmp.path().join("answer.txt");
    std::fs::write(&script, SCRIPT).unwrap();
    let out = tmp.path().join("batch");
    let run = Command::new(env!("CARGO_BIN_EXE_lilypad"))
        .env("LILYPAD_CONFIG", tmp.path().join("no-config.toml"))
        .env("LILYPAD_SESSION_DIR", tmp.path().join("sessions"))
        .env_remove("LILYPAD_MODEL")
        .env_remove("LILYPAD_SCRIPT_DELAY_MS")
        .args(["run", "--sandbox", "docker", "--parallel", "2"])
        .args(["--max-attempts", "2"])
        .arg("--tasks")
        .arg(&tasks)
        .arg("--engine")
        .arg(format!("script:{}", script.display()))
        .arg("--out")
        .arg(&out)
        .current_dir(tmp.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    // Every attempt ran (an error in Leaf's terms is not an attempt that could not run).
    assert_eq!(run.status.code(), Some(0), "stderr: {stderr}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["resolved"], 1, "{summary}");
    assert_eq!(summary["unresolved"], 1, "{summary}");
    assert_eq!(summary["jobs_failed"], 1, "{summary}");
    assert_eq!(summary["jobs_completed"], 2, "{summary}");
    let rows: Vec<serde_json::Value> = std::fs::read_to_string(out.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let row = |id: &str| {
        rows.iter()
            .find(|r| r["instance_id"] == id)
            .unwrap()
            .clone()
    };
    let full = row("online-full");
    assert_eq!(
        (&full["status"], &full["reward"]),
        (&"completed".into(), &1.0.into()),
        "{full}"
    );
    assert_eq!(full["attempt"], 1, "{full}");
    let half = row("offline-half");
    assert_eq!(
        (&half["status"], &half["reward"]),
        (&"completed".into(), &0.5.into()),
        "{half}"
    );
    assert_eq!(
        half["attempt"], 1,
        "an unresolved attempt is not retried: {half}"
    );
    let silent = row("silent");
    assert_eq!(silent["status"], "error", "{silent}");
    assert_eq!(silent["reward"], serde_json::Value::Null, "{silent}");
    assert_eq!(silent["attempt"], 2, "tried max_attempts times: {silent}");
    assert_eq!(silent["exit_reason"], "answered", "{silent}");
    assert!(
        silent["error"].as_str().unwrap().contains("no reward"),
        "{silent}"
    );
    // The unbiased pass@k counts a reward of 1 or more as passed.
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["leaf"]["jobs_failed"], 1, "{report}");
}
