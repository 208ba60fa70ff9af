//! `lilypad run --rollout`: a two-attempt batch on the tiny model through real llama.cpp writes,
//! per attempt, `rollout.json` (per-turn ids and log-probabilities, the flattened sample) and
//! Harbor's ATIF `trajectory.atif.json` with the same ids; the lengths agree, every segment's
//! turns extend each other (or the break is recorded), and the ids decode to the turn's text.

use crate::common::git_repo;
use std::path::Path;
use std::process::Command;

fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn ids(v: &serde_json::Value) -> Vec<u32> {
    serde_json::from_value(v.clone()).unwrap()
}

#[test]
fn a_two_attempt_batch_writes_rollouts_and_atif_with_the_engines_ids() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = git_repo(
        &tmp.path().join("repo"),
        &[("src/app.py", "def f():\n    return 1\n")],
    );
    let model = tmp.path().join("tiny.gguf");
    lilypad::testmodel::write(&model, &lilypad::testmodel::TinySpec::synthetic()).unwrap();
    std::fs::write(
        tmp.path().join("no-config.toml"),
        "[engine]\nctx = 4096\nthreads = 1\nbatch = 128\nubatch = 64\nmax_turn_tokens = 12\n",
    )
    .unwrap();
    let tasks = tmp.path().join("tasks.jsonl");
    std::fs::write(
        &tasks,
        "{\"instance_id\": \"fix-f\", \"task\": \"make f return 2\"}\n",
    )
    .unwrap();
    let out = tmp.path().join("batch");
    let run = Command::new(env!("CARGO_BIN_EXE_lilypad"))
        .env("LILYPAD_CONFIG", tmp.path().join("no-config.toml"))
        .env("XDG_CACHE_HOME", tmp.path().join("cache"))
        .env("LILYPAD_SESSION_DIR", tmp.path().join("sessions"))
        .env_remove("LILYPAD_MODEL")
        .args([
            "run",
            "--sandbox",
            "host",
            "--allow-host",
            "--attempts",
            "2",
        ])
        .args(["--rollout", "--tasks"])
        .arg(&tasks)
        .arg("--repo")
        .arg(&repo)
        .arg("--model")
        .arg(&model)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let settings = lilypad::config::EngineSettings {
        ctx: 4096,
        threads: 1,
        ..Default::default()
    };
    let engine = lilypad::engine::EngineHandle::load(&model, &settings, |_| {}).unwrap();
    for attempt in 1..=2 {
        let dir = out.join("results").join("fix-f").join(attempt.to_string());
        let r = read_json(&dir.join("rollout.json"));
        assert_eq!(r["format"], "lilypad-rollout-1");
        assert_eq!(r["trajectory_id"]["instance_id"], "fix-f");
        assert_eq!(r["trajectory_id"]["attempt"], attempt);
        let version = r["weight_version"].as_str().unwrap();
        assert!(
            version.starts_with("sha256:") && version.len() == 7 + 64,
            "{version}"
        );
        assert!(r["logprobs_of"].as_str().unwrap().contains("raw logits"));
        assert!(r["stop_reason"].is_string(), "{r}");
        let turns = r["turns"].as_array().unwrap();
        assert!(!turns.is_empty());
        let traj = read_json(&dir.join("trajectory.json"));
        let assistant: Vec<&serde_json::Value> = traj["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "assistant")
            .collect();
        for (k, t) in turns.iter().enumerate() {
            let completion = ids(&t["completion_token_ids"]);
            let logprobs = t["logprobs"].as_array().unwrap();
            assert_eq!(completion.len(), logprobs.len());
            assert!(logprobs.iter().all(|l| l.as_f64().unwrap() <= 0.0));
            // The prompt ids are the engine's tokens of the turn's prompt: they decode to the
            // chat template's text and begin with the system turn.
            let prompt = ids(&t["prompt_token_ids"]);
            let text = engine.detokenize(&prompt).unwrap();
            assert!(text.contains("make f return 2"), "{text}");
            // The completion decodes to what the turn said.
            let said = engine.detokenize(&completion).unwrap();
            let m = assistant[k];
            for part in [&m["reasoning_content"], &m["content"]] {
                let part = part.as_str().unwrap_or_default().trim();
                assert!(said.contains(part), "{part:?} not in {said:?}");
            }
        }
        // The flattened samples: lengths agree, the first prompt is turn 1's.
        let segments = r["segments"].as_array().unwrap();
        assert_eq!(segments[0]["prompt_ids"], turns[0]["prompt_token_ids"]);
        for s in segments {
            let n = s["response_ids"].as_array().unwrap().len();
            assert_eq!(s["loss_mask"].as_array().unwrap().len(), n);
            assert_eq!(s["response_logprobs"].as_array().unwrap().len(), n);
        }
        for s in &segments[1..] {
            assert!(s["break_reason"].is_string(), "{s}");
        }
        // ATIF: one agent step per turn, carrying the same ids.
        let atif = read_json(&dir.join("trajectory.atif.json"));
        assert_eq!(atif["schema_version"], "ATIF-v1.4");
        let agent: Vec<&serde_json::Value> = atif["steps"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["source"] == "agent")
            .collect();
        assert_eq!(agent.len(), turns.len());
        for (a, t) in agent.iter().zip(turns) {
            assert_eq!(
                a["metrics"]["completion_token_ids"],
                t["completion_token_ids"]
            );
            assert_eq!(a["metrics"]["prompt_token_ids"], t["prompt_token_ids"]);
            assert_eq!(a["metrics"]["logprobs"], t["logprobs"]);
        }
    }
    // Two attempts sample with different seeds: different tokens.
    let first = read_json(&out.join("results/fix-f/1/rollout.json"));
    let second = read_json(&out.join("results/fix-f/2/rollout.json"));
    assert_ne!(
        first["turns"][0]["completion_token_ids"],
        second["turns"][0]["completion_token_ids"]
    );
}
