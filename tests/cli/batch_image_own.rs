//! An image task works on the image's own repository, as the image's build left it: the test
//! builds an image whose package imports a module git ignores (`pkg/_version.py`, as
//! setuptools_scm writes it), with build output (`build/`) and `*.egg-info` present and a
//! history of two commits. The scripted agent imports the package, reads `git log` and edits
//! one file; the import works, `HEAD` is the image's commit, and the patch holds the edit only.
//! Run on Docker here and on the Kubernetes cluster from `batch_kube`.

use std::path::Path;
use std::process::Command;

use super::batch::git;
use super::batch_image::{docker_missing, unique_name, Image};
use crate::common::git_repo;

const SCRIPT: &str = "=== turn ===
Look around.
</think>

<tool_call>
<function=Bash>
<parameter=command>
python3 -c 'import pkg; print(\"version\", pkg.VERSION)'; git log --format='head %H %s' -1; ls build/lib/pkg pkg.egg-info
</parameter>
</function>
</tool_call>
=== turn ===
Change it.
</think>

<tool_call>
<function=Edit>
<parameter=file_path>
pkg/core.py
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

/// Build the image (its repository at /testbed), run one task on it with `--sandbox kind`
/// (`config`: the settings file, for the cluster's kubeconfig) and check what the agent saw
/// and the patch.
pub fn run_on_own_repository(kind: &str, config: Option<&Path>) {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::env::var("LILYPAD_TEST_BASH_IMAGE")
        .unwrap_or_else(|_| "lilypad-sandbox:debian".into());
    let ctx = tmp.path().join("ctx");
    let repo = git_repo(
        &ctx.join("testbed"),
        &[
            ("pkg/__init__.py", "from ._version import VERSION\n"),
            ("pkg/core.py", "def f():\n    return 1\n"),
            (".gitignore", "pkg/_version.py\nbuild/\n*.egg-info/\n"),
        ],
    );
    std::fs::write(repo.join("README"), "the project\n").unwrap();
    git(&repo, &["add", "README"]);
    git(&repo, &["commit", "-qm", "Second commit of the image"]);
    let head = git(&repo, &["rev-parse", "HEAD"]);
    // What the image's build leaves, all of it ignored by git.
    for (path, text) in [
        ("pkg/_version.py", "VERSION = '1.2.3'\n"),
        ("build/lib/pkg/_speedups.so", "not really a library\n"),
        ("pkg.egg-info/PKG-INFO", "Name: pkg\n"),
    ] {
        let file = repo.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    std::fs::write(
        ctx.join("Dockerfile"),
        format!("FROM {base}\nCOPY testbed /testbed\n"),
    )
    .unwrap();
    let id = "acme__pkg-1";
    let unique = unique_name(tmp.path());
    let template = format!("lilypad-test-own-{unique}.{{instance}}:latest");
    let image = Image(lilypad::headless::sources::image_for(&template, id));
    let built = Command::new("docker")
        .args(["build", "-q", "-t", &image.0])
        .arg(&ctx)
        .output()
        .unwrap();
    assert!(built.status.success(), "docker build: {built:?}");
    std::fs::remove_dir_all(&ctx).unwrap();

    let tasks = tmp.path().join("swe.jsonl");
    let task = serde_json::json!({
        "instance_id": id,
        "repo": "acme/pkg",
        "base_commit": head,
        "problem_statement": "f should return 2",
    });
    std::fs::write(&tasks, format!("{task}\n")).unwrap();
    let script = tmp.path().join("fix.txt");
    std::fs::write(&script, SCRIPT).unwrap();
    let out = tmp.path().join("batch");
    let check = format!(
        "python3 -c 'import pkg' && test \"$(git rev-parse HEAD)\" = {head} \
         && grep -q 'return 2' pkg/core.py"
    );
    let no_config = tmp.path().join("no-config.toml");
    let run = Command::new(env!("CARGO_BIN_EXE_lilypad"))
        .env("LILYPAD_CONFIG", config.unwrap_or(&no_config))
        .env("LILYPAD_SESSION_DIR", tmp.path().join("sessions"))
        .env_remove("LILYPAD_MODEL")
        .env_remove("LILYPAD_SCRIPT_DELAY_MS")
        .args(["run", "--sandbox", kind, "--image-template", &template])
        .arg("--tasks")
        .arg(&tasks)
        .arg("--engine")
        .arg(format!("script:{}", script.display()))
        .args(["--check", &check])
        .arg("--out")
        .arg(&out)
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert_eq!(
        run.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let preds = std::fs::read_to_string(out.join("predictions.jsonl")).unwrap();
    let pred: serde_json::Value = serde_json::from_str(preds.lines().next().unwrap()).unwrap();
    assert_eq!(pred["check_passed"], true, "{pred}");
    let patch = pred["model_patch"].as_str().unwrap();
    assert!(patch.contains("+    return 2"), "{patch}");
    assert_eq!(
        patch.matches("diff --git").count(),
        1,
        "the edit only: {patch}"
    );
    assert!(patch.contains("a/pkg/core.py"), "{patch}");
    // What the agent saw: the generated module imported, the image's commit, the build output.
    let trajectory =
        std::fs::read_to_string(out.join("results").join(id).join("1/trajectory.json")).unwrap();
    assert!(trajectory.contains("version 1.2.3"), "{trajectory}");
    assert!(
        trajectory.contains(&format!("head {head} Second commit of the image")),
        "{trajectory}"
    );
    assert!(trajectory.contains("_speedups.so"), "{trajectory}");
    assert!(trajectory.contains("PKG-INFO"), "{trajectory}");
}

#[test]
fn an_image_task_works_on_the_images_own_repository_on_docker() {
    if let Some(why) = docker_missing() {
        let required = std::env::var("LILYPAD_REQUIRE_DOCKER").is_ok_and(|v| v == "1");
        assert!(!required, "LILYPAD_REQUIRE_DOCKER=1 but: {why}");
        eprintln!("!!!!! SKIPPED: the image's own repository test: {why}");
        return;
    }
    run_on_own_repository("docker", None);
}
