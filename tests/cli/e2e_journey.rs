//! A developer's whole journey on a real Python project, through the real binary in a real
//! terminal, with the Docker sandbox: the sdist of `six` 1.17.0 (fetched and cached by
//! scripts/fetch-test-data.sh) with a bug this test puts in, and a `.devcontainer/` whose
//! Dockerfile installs pytest when the image is built. A scripted FrogNano-style trajectory (a
//! mock of the model) runs `git status`, Glob, Read and an Edit; the process is killed with
//! SIGKILL while the Edit waits for approval; `lilypad resume --last` reopens the same review;
//! after approval the model runs `python -m pytest -q` in the sandbox (network off), which
//! passes, and the applied patch leaves exactly the fix in the user's repository.
//!
//! Needs tmux, a Docker engine with LILYPAD_TEST_BASH_IMAGE (`lilypad-sandbox:debian`) and
//! LILYPAD_TEST_JOURNEY_DIR; without them it skips loudly, unless LILYPAD_TEST_STRICT=1 (CI).

use super::e2e_demo::{have_tmux, session_log, Tmux};
use crate::common::{git, git_repo};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The first session: look around, read, propose the fix (killed at its approval).
const FIRST: &str = r#"=== turn ===
The user says a test fails. I'll look at the checkout first.
</think>

<tool_call>
<function=Bash>
<parameter=command>
git status
</parameter>
</function>
</tool_call>
=== turn ===
A clean tree. Which Python files are there?
</think>

<tool_call>
<function=Glob>
<parameter=pattern>
*.py
</parameter>
</function>
</tool_call>
=== turn ===
The byte-literal helper `b` is where `test_b` points.
</think>

<tool_call>
<function=Read>
<parameter=file_path>
six.py
</parameter>
<parameter=offset>
646
</parameter>
<parameter=limit>
6
</parameter>
</function>
</tool_call>
=== turn ===
`b` must map each code point below 256 to one byte: that is latin-1, not utf-8.
</think>

<tool_call>
<function=Edit>
<parameter=file_path>
six.py
</parameter>
<parameter=old_string>
        return s.encode("utf-8")
</parameter>
<parameter=new_string>
        return s.encode("latin-1")
</parameter>
</function>
</tool_call>
"#;

/// The resumed session's model (the scripted engine knows no turns, so its script starts
/// where the resume does): run the suite, then answer.
const AFTER: &str = r#"=== turn ===
Now the suite.
</think>

<tool_call>
<function=Bash>
<parameter=command>
python -m pytest -q
</parameter>
</function>
</tool_call>
=== turn ===
All green.
</think>

`six.b` encodes with latin-1 again, so `test_b` passes.
"#;

const BUG_FROM: &str = "        return s.encode(\"latin-1\")\n";
const BUG_TO: &str = "        return s.encode(\"utf-8\")\n";

/// What the test needs from the machine, or why it cannot run.
fn prerequisites() -> Result<(PathBuf, String), String> {
    if !have_tmux() {
        return Err("tmux is not installed (scripts/setup.sh installs it)".into());
    }
    let data = std::env::var("LILYPAD_TEST_JOURNEY_DIR")
        .map_err(|_| "LILYPAD_TEST_JOURNEY_DIR is not set (scripts/fetch-test-data.sh)")?;
    let image = std::env::var("LILYPAD_TEST_BASH_IMAGE")
        .map_err(|_| "LILYPAD_TEST_BASH_IMAGE is not set (scripts/docker-up.sh --debian)")?;
    let rt = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    rt.block_on(lilypad::sandbox::docker::connect())
        .map_err(|e| e.to_string())?;
    Ok((PathBuf::from(data), image))
}

/// The user's repository: the sdist unpacked, the bug put in, the devcontainer, one commit.
fn project(tmp: &Path, data: &Path, base_image: &str) -> PathBuf {
    let ok = Command::new("tar")
        .args([
            "--no-same-owner",
            "-xzf",
            &data.join("six-1.17.0.tar.gz").to_string_lossy(),
        ])
        .current_dir(tmp)
        .status()
        .unwrap()
        .success();
    assert!(ok, "unpacking the sdist");
    let repo = tmp.join("six-1.17.0");
    let code = std::fs::read_to_string(repo.join("six.py")).unwrap();
    assert_eq!(code.matches(BUG_FROM).count(), 1, "the sdist changed");
    std::fs::write(repo.join("six.py"), code.replacen(BUG_FROM, BUG_TO, 1)).unwrap();

    let dc = repo.join(".devcontainer");
    std::fs::create_dir_all(dc.join("wheels")).unwrap();
    for w in std::fs::read_dir(data.join("wheels")).unwrap() {
        let w = w.unwrap().path();
        std::fs::copy(&w, dc.join("wheels").join(w.file_name().unwrap())).unwrap();
    }
    // A devcontainer as a Python project has one; the engine has no way out, so pytest comes
    // from wheels in the build context instead of the index.
    std::fs::write(
        dc.join("devcontainer.json"),
        "// The test project's dev container\n{\n  \"name\": \"six\",\n  \"build\": { \"dockerfile\": \"Dockerfile\", \"context\": \".\" }\n}\n",
    )
    .unwrap();
    std::fs::write(
        dc.join("Dockerfile"),
        format!(
            "FROM {base_image}\n\
             COPY wheels /tmp/wheels\n\
             RUN python3 /tmp/wheels/pip-24.3.1-py3-none-any.whl/pip install --no-index \
             --find-links /tmp/wheels --break-system-packages pytest \
             && ln -s /usr/bin/python3 /usr/local/bin/python && rm -rf /tmp/wheels\n"
        ),
    )
    .unwrap();
    git_repo(&repo, &[])
}

/// Containers left by the Lilypad process `pid`.
fn containers_of(pid: u32) -> usize {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        // bollard's own client: the library's `docker::connect` hands out no bollard type.
        let d = bollard::Docker::connect_with_local_defaults()
            .unwrap()
            .negotiate_version()
            .await
            .unwrap();
        let filters =
            HashMap::from([("label".to_string(), vec![format!("dev.lilypad.pid={pid}")])]);
        let opts = bollard::query_parameters::ListContainersOptionsBuilder::default()
            .all(true)
            .filters(&filters)
            .build();
        d.list_containers(Some(opts)).await.unwrap().len()
    })
}

#[test]
fn a_python_project_from_task_to_applied_fix_across_a_crash() {
    let (data, base_image) = match prerequisites() {
        Ok(p) => p,
        Err(why) => {
            let strict = std::env::var("LILYPAD_TEST_STRICT").is_ok_and(|v| v == "1");
            assert!(!strict, "the journey test cannot run: {why}");
            eprintln!("\n!!!!! SKIPPED the journey test: {why}\n");
            return;
        }
    };
    let tmp = tempfile::tempdir().unwrap();
    let repo = project(tmp.path(), &data, &base_image);
    let original = std::fs::read_to_string(repo.join("six.py")).unwrap();
    let (first, after) = (tmp.path().join("first.txt"), tmp.path().join("after.txt"));
    std::fs::write(&first, FIRST).unwrap();
    std::fs::write(&after, AFTER).unwrap();
    let sessions = tmp.path().join("sessions");
    // The tmux server may be older than this test: its environment is given explicitly.
    let env = format!(
        "XDG_STATE_HOME='{}' XDG_DATA_HOME='{}' XDG_CACHE_HOME='{}' DOCKER_HOST='{}'",
        tmp.path().join("state").display(),
        tmp.path().join("data").display(),
        tmp.path().join("cache").display(),
        std::env::var("DOCKER_HOST").unwrap_or_else(|_| "unix:///var/run/docker.sock".into()),
    );
    let bin = env!("CARGO_BIN_EXE_lilypad");
    // Building the image and starting the container take a while on a loaded machine.
    let slow = Duration::from_secs(300);

    let t = Tmux::start(&format!(
        "cd '{repo}' && {env} exec '{bin}' --engine 'script:{first}' --sandbox docker --session-dir '{sessions}' 'test_b fails, fix it'",
        repo = repo.display(),
        first = first.display(),
        sessions = sessions.display(),
    ));
    t.wait_for_within(&["Run this command?", "git status"], slow);
    t.keys(&["y"]);
    // Glob and Read run without asking; the Edit waits.
    t.wait_for(&["Approve this edit?", "latin-1"]);
    let first_pid = t.pane_pid();
    assert_eq!(containers_of(first_pid), 1, "the session's container");
    let work = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(&format!("lilypad-ws-{first_pid}-")))
        .count();
    assert_eq!(
        work, 1,
        "the session's working copy, named after its process"
    );
    assert!(Command::new("kill")
        .args(["-9", &first_pid.to_string()])
        .status()
        .unwrap()
        .success());
    drop(t);
    assert_eq!(
        std::fs::read_to_string(repo.join("six.py")).unwrap(),
        original,
        "nothing applied before the review"
    );

    let done = tmp.path().join("done");
    let t = Tmux::start(&format!(
        "cd '{repo}' && {env} '{bin}' resume --last --engine 'script:{after}' --session-dir '{sessions}' 2>/dev/null; echo $? > '{done}'; sleep 60",
        repo = repo.display(),
        after = after.display(),
        sessions = sessions.display(),
        done = done.display(),
    ));
    // The transcript is back, and so is the review.
    t.wait_for_within(&["Approve this edit?", "latin-1"], slow);
    t.keys(&["y"]);
    t.wait_for(&["Run this command?", "python -m pytest -q"]);
    t.keys(&["y"]);
    t.wait_for_within(&["Session patch", "six.py"], slow);
    t.keys(&["a"]);
    let screen = t.wait_for(&["patch applied"]);
    // The recorded transcript above the resumed session's steps.
    assert!(
        screen.contains("resumed: the transcript above was recorded earlier")
            && screen.contains("Edit(six.py)")
            && screen.contains("Bash($ python -m pytest -q)"),
        "{screen}"
    );
    t.keys(&["q"]);
    let start = Instant::now();
    while !done.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "lilypad did not exit:\n{}",
            t.screen()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(std::fs::read_to_string(&done).unwrap().trim(), "0");

    // Exactly the fix: the file as the sdist has it, nothing else touched (pytest's caches
    // stay in the sandbox).
    assert_eq!(
        std::fs::read_to_string(repo.join("six.py")).unwrap(),
        original.replacen(BUG_TO, BUG_FROM, 1)
    );
    assert_eq!(git(&repo, &["status", "--porcelain"]), " M six.py\n");
    // The killed session's container and working copy went with the resumed session's sweeps.
    assert_eq!(
        containers_of(first_pid),
        0,
        "the crashed session's container"
    );
    let leftovers: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| {
            n.starts_with(&format!("lilypad-ws-{first_pid}-"))
                || n.starts_with(&format!("lilypad-git-{first_pid}-"))
        })
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // What the model saw: a clean checkout, then the suite passing in the sandbox.
    let events = session_log(&sessions);
    let output = |needle: &str| {
        events.iter().any(|e| {
            e["event"] == "tool_result"
                && e["name"] == "Bash"
                && e["content"].as_str().is_some_and(|c| c.contains(needle))
        })
    };
    assert!(
        output("nothing to commit, working tree clean"),
        "{events:#?}"
    );
    assert!(output(" passed"), "{events:#?}");
    assert!(!output("failed"), "{events:#?}");
    assert!(events.iter().any(|e| e["event"] == "tool_result"
        && e["name"] == "Edit"
        && e["resolution"] == "approved"));
    assert!(events
        .iter()
        .any(|e| e["event"] == "task_finished" && e["reason"] == "answered"));
}
