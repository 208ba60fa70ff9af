//! The tools, the git checkout and the attack cases on the host sandbox (no engine needed),
//! contained with bubblewrap and uncontained. Contained, it keeps the host read-only, the
//! network off, its own PID namespace and the user's secrets hidden, and these are attacked
//! here like the container sandboxes are; resource limits are the container sandboxes' job.
//! Uncontained, it contains only files, environment and time. Without a working `bwrap` the
//! contained tests skip loudly, unless LILYPAD_REQUIRE_BWRAP=1 (or LILYPAD_TEST_STRICT=1).

use crate::sandbox_suite::{attacks, engine_missing, exclusive, fixture, formats, git, Harness};
use lilypad::sandbox::host::{self, HostSettings};
use lilypad::sandbox::{self, KindSettings, SandboxExt, SandboxSpec};

fn spec(repo: &std::path::Path) -> SandboxSpec {
    spec_with(repo, false)
}

fn spec_with(repo: &std::path::Path, uncontained: bool) -> SandboxSpec {
    SandboxSpec {
        repo: repo.to_path_buf(),
        in_place: false,
        settings: KindSettings::Host(HostSettings { uncontained }),
    }
}

/// True when bubblewrap works here; otherwise skip (or fail when required).
fn contained() -> bool {
    match host::containment(&HostSettings::default()) {
        host::Containment::Bwrap { .. } => true,
        host::Containment::Uncontained { why } => {
            engine_missing("bubblewrap", "LILYPAD_REQUIRE_BWRAP", &why);
            false
        }
    }
}

/// The modes to run the mode-independent checks in: uncontained always, contained where it
/// works.
fn modes() -> Vec<bool> {
    let mut m = vec![true];
    if contained() {
        m.push(false);
    }
    m
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_tool_formats_paths_and_patch() {
    for uncontained in modes() {
        let repo = fixture();
        let sb = sandbox::open(&spec_with(repo.path(), uncontained))
            .await
            .unwrap();
        let ws = sb.root().to_string();
        let h = Harness::new(sb);
        formats::reads_and_paths(&h).await;
        formats::writes_and_edits(&h, repo.path()).await;
        formats::commands(&h).await;
        // The user's repository is untouched until the patch is applied.
        assert_eq!(
            std::fs::read_to_string(repo.path().join("src/app.py")).unwrap(),
            "def f():\n    return 1\n"
        );
        assert!(!repo.path().join("new").exists());
        h.sb().close().await.unwrap();
        drop(h);
        assert!(
            !std::path::Path::new(&ws).exists(),
            "workspace copy left behind"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_workspace_is_a_git_checkout() {
    for uncontained in modes() {
        let repo = git::git_fixture();
        let sb = sandbox::open(&spec_with(repo.path(), uncontained))
            .await
            .unwrap();
        let h = Harness::new(sb);
        git::checkout(&h, repo.path(), uncontained).await;
        h.sb().close().await.unwrap();
    }
}

/// The attack cases against the contained host sandbox (those it claims to contain).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_contained_attacks() {
    if !contained() {
        return;
    }
    let _machine = exclusive().await;
    attacks::plant_secret();
    let home = attacks::plant_home();
    let repo = fixture();
    let sb = sandbox::open(&spec(repo.path())).await.unwrap();
    assert!(
        sb.describe().contains("contained with bubblewrap"),
        "{}",
        sb.describe()
    );
    let h = Harness::new(sb);
    attacks::secrets_and_privileges(&h, false).await;
    attacks::host_secrets_hidden(&h, home).await;
    attacks::no_privileges(&h).await;
    attacks::writes_outside(&h).await;
    attacks::egress(&h, true).await;
    attacks::own_pid_namespace(&h).await;
    attacks::big_output(&h).await;
    attacks::hung_and_escapee(&h, false).await;
    h.sb().close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_uncontained_attacks() {
    let _machine = exclusive().await;
    attacks::plant_secret();
    let repo = fixture();
    let h = Harness::new(sandbox::open(&spec_with(repo.path(), true)).await.unwrap());
    assert!(
        h.sb().describe().contains("uncontained"),
        "{}",
        h.sb().describe()
    );
    attacks::secrets_and_privileges(&h, false).await;
    attacks::big_output(&h).await;
    attacks::hung_and_escapee(&h, false).await;
    // Background processes end with the session.
    h.out("setsid sleep 1007 > /dev/null 2>&1 < /dev/null &")
        .await;
    // The background process may take a moment to exec on a busy machine.
    let t0 = std::time::Instant::now();
    while !attacks::host_cmdlines().contains("sleep 1007") {
        assert!(
            t0.elapsed().as_secs() < 10,
            "the background process never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    h.sb().close().await.unwrap();
    let t0 = std::time::Instant::now();
    while attacks::host_cmdlines().contains("sleep 1007") {
        assert!(
            t0.elapsed().as_secs() < 10,
            "a background process outlived the session"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_streams_command_output() {
    let repo = fixture();
    let h = Harness::new(sandbox::open(&spec(repo.path())).await.unwrap());
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let call = h.call(
        "Bash",
        serde_json::json!({"command": "echo a; sleep 0.3; echo b >&2"}),
    );
    let r = h.tools.run_streaming(&call, Some(tx)).await;
    assert_eq!(r.content, "Exit code: 0\nSTDOUT:\na\n\nSTDERR:\nb\n");
    let mut chunks = Vec::new();
    while let Ok(c) = rx.try_recv() {
        chunks.push((c.stream, String::from_utf8(c.data).unwrap()));
    }
    use lilypad::sandbox::StreamKind;
    assert_eq!(
        chunks,
        vec![
            (StreamKind::Stdout, "a\n".to_string()),
            (StreamKind::Stderr, "b\n".to_string())
        ]
    );
    assert_eq!(
        lilypad::tools::category("Bash"),
        Some(lilypad::protocol::ToolCategory::Commands)
    );
    h.sb().close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn glob_lists_in_order_caps_and_counts_the_rest() {
    use lilypad::protocol::ToolCall;
    use lilypad::tools::{ToolLimits, Tools};
    let repo = tempfile::tempdir().unwrap();
    // Names whose order differs between "sorted as relative paths" and careless orders
    // ('.' < '/' < letters; walk order is arbitrary with a parallel walk).
    for f in [
        "b.c",
        "a.c",
        "a/z.c",
        "a.b/c.c",
        "a/b/c.c",
        "z/a.c",
        "m.h",
        "ignored/x.c",
    ] {
        let p = repo.path().join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "x\n").unwrap();
    }
    std::fs::write(repo.path().join(".gitignore"), "ignored/\n").unwrap();
    let sb = sandbox::open(&spec(repo.path())).await.unwrap();
    let root = sb.root().to_string();
    let limits = ToolLimits {
        glob_files: 3,
        ..Default::default()
    };
    let tools = Tools::new(sb.clone(), limits);
    let glob = |args: serde_json::Value| {
        let tools = tools.clone();
        async move {
            let call = ToolCall {
                id: "c".into(),
                name: "Glob".into(),
                arguments: args.as_object().cloned().unwrap(),
            };
            tools.run(&call).await.content
        }
    };
    // Six .c files are visible; three are listed in order, the rest counted.
    assert_eq!(
        glob(serde_json::json!({"pattern": "**/*.c"})).await,
        "a.b/c.c\na.c\na/b/c.c\n... 3 more files"
    );
    assert_eq!(
        glob(serde_json::json!({"pattern": "*.c", "path": "a"})).await,
        "a/z.c"
    );
    assert_eq!(
        glob(serde_json::json!({"pattern": format!("{root}/z/*.c")})).await,
        "z/a.c"
    );
    sb.close().await.unwrap();
}
