//! A SWE-bench-format batch with `--image-template` over an image the test builds (from the
//! local base image, with a git repository COPYd to /testbed): the sandbox works in the
//! image's /testbed, the scripted agent edits a file there, and the prediction's model_patch
//! applies to a clone of that repository at its base commit.
//!
//! Without a Docker engine (and its CLI) the test skips loudly, unless
//! LILYPAD_REQUIRE_DOCKER=1 (CI), where it fails.

use std::process::Command;

use super::batch::git;
use crate::common::git_repo;

const SCRIPT: &str = "=== turn ===
Where am I?
</think>

<tool_call>
<function=Bash>
<parameter=command>
pwd
</parameter>
</function>
</tool_call>
=== turn ===
Change it.
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

/// Why Docker cannot be used here, if it cannot.
pub fn docker_missing() -> Option<String> {
    let rt = tokio::runtime::Runtime::new().unwrap();
    if let Err(e) = rt.block_on(lilypad::sandbox::docker::connect()) {
        return Some(e.to_string());
    }
    match Command::new("docker").arg("version").output() {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(String::from_utf8_lossy(&o.stderr).into_owned()),
        Err(e) => Some(format!("no docker CLI: {e}")),
    }
}

/// Removes the test's image at the end, whatever happens.
pub struct Image(pub String);

impl Drop for Image {
    fn drop(&mut self) {
        let _ = Command::new("docker").args(["rmi", "-f", &self.0]).output();
    }
}

/// A name part unique to the test's temporary folder `tmp`, usable in an image tag.
pub fn unique_name(tmp: &std::path::Path) -> String {
    tmp.file_name()
        .unwrap()
        .to_string_lossy()
        .to_lowercase()
        .replace(|c: char| !c.is_ascii_alphanumeric(), "")
}

#[test]
fn image_template_tasks_work_in_the_images_testbed_and_their_patch_applies() {
    if let Some(why) = docker_missing() {
        let required = std::env::var("LILYPAD_REQUIRE_DOCKER").is_ok_and(|v| v == "1");
        assert!(!required, "LILYPAD_REQUIRE_DOCKER=1 but: {why}");
        eprintln!("!!!!! SKIPPED: the --image-template batch test: {why}");
        return;
    }
    let base = std::env::var("LILYPAD_TEST_BASH_IMAGE")
        .unwrap_or_else(|_| "lilypad-sandbox:debian".into());
    let tmp = tempfile::tempdir().unwrap();
    // The repository, built into the image at /testbed.
    let ctx = tmp.path().join("ctx");
    let repo = git_repo(
        &ctx.join("testbed"),
        &[
            ("src/app.py", "def f():\n    return 1\n"),
            ("README", "the project\n"),
        ],
    );
    let base_commit = git(&repo, &["rev-parse", "HEAD"]);
    std::fs::write(
        ctx.join("Dockerfile"),
        format!("FROM {base}\nCOPY testbed /testbed\n"),
    )
    .unwrap();
    let id = "acme__proj-7";
    let unique = unique_name(tmp.path());
    let template = format!("lilypad-test-swe-{unique}.{{instance}}:latest");
    let image = Image(lilypad::headless::sources::image_for(&template, id));
    let built = Command::new("docker")
        .args(["build", "-q", "-t", &image.0])
        .arg(&ctx)
        .output()
        .unwrap();
    assert!(built.status.success(), "docker build: {built:?}");
    // The local repository is gone from the host's view: only the image holds it.
    let clone = tmp.path().join("clone");
    git(
        tmp.path(),
        &[
            "clone",
            "-q",
            &repo.to_string_lossy(),
            &clone.to_string_lossy(),
        ],
    );
    std::fs::remove_dir_all(&ctx).unwrap();

    let tasks = tmp.path().join("swe.jsonl");
    std::fs::write(
        &tasks,
        format!(
            "{}\n",
            serde_json::json!({
                "instance_id": id,
                "repo": "acme/proj",
                "base_commit": base_commit,
                "problem_statement": "f should return 2",
                "FAIL_TO_PASS": "[]",
            })
        ),
    )
    .unwrap();
    let script = tmp.path().join("fix.txt");
    std::fs::write(&script, SCRIPT).unwrap();
    let out = tmp.path().join("batch");
    let run = Command::new(env!("CARGO_BIN_EXE_lilypad"))
        .env("LILYPAD_CONFIG", tmp.path().join("no-config.toml"))
        .env("LILYPAD_SESSION_DIR", tmp.path().join("sessions"))
        .env_remove("LILYPAD_MODEL")
        .env_remove("LILYPAD_SCRIPT_DELAY_MS")
        .args(["run", "--sandbox", "docker", "--image-template", &template])
        .arg("--tasks")
        .arg(&tasks)
        .arg("--engine")
        .arg(format!("script:{}", script.display()))
        .args([
            "--check",
            "test \"$(pwd)\" = /testbed && grep -q 'return 2' /testbed/src/app.py",
        ])
        .arg("--out")
        .arg(&out)
        // No --repo: the batch must not need one.
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert_eq!(
        run.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let preds: Vec<serde_json::Value> = std::fs::read_to_string(out.join("predictions.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(preds.len(), 1);
    assert_eq!(preds[0]["instance_id"], id);
    assert_eq!(preds[0]["check_passed"], true, "{}", preds[0]);
    let patch = preds[0]["model_patch"].as_str().unwrap().to_string();
    assert!(patch.contains("+    return 2"), "{patch}");
    assert!(!patch.contains("README"), "only the edit: {patch}");
    // The agent's command ran in /testbed, with the image's checkout there.
    let trajectory =
        std::fs::read_to_string(out.join("results").join(id).join("1/trajectory.json")).unwrap();
    assert!(trajectory.contains("/testbed"), "{trajectory}");
    // The patch applies to a clone of the repository at the base commit.
    git(&clone, &["checkout", "-q", &base_commit]);
    std::fs::write(tmp.path().join("p.diff"), &patch).unwrap();
    git(&clone, &["apply", "--check", "../p.diff"]);
    git(&clone, &["apply", "../p.diff"]);
    assert_eq!(
        std::fs::read_to_string(clone.join("src/app.py")).unwrap(),
        "def f():\n    return 2\n"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["run"]["image_workdir"], "/testbed", "{report}");
}
