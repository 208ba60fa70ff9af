//! A session started the way the interface and the headless runner start one (`launch::start`:
//! the agent, the session log and its recorder) on the scripted engine and the host sandbox:
//! each turn that changed files is recorded, and the workspace can be brought back exactly to
//! any turn afterwards.

use lilypad::agent::{AgentConfig, ApprovalPolicy, Policy, TemplatedModel};
use lilypad::engine::script::ScriptTurn;
use lilypad::engine::{SamplingParams, ScriptEngine, StopReason};
use lilypad::launch::{self, EngineChoice};
use lilypad::prompt::{builtin_tools, PromptSettings, Renderer};
use lilypad::protocol::{Event, Op};
use lilypad::sandbox::{self, SandboxSpec};
use lilypad::session::SessionLog;
use std::sync::Arc;

fn turn(output: String) -> ScriptTurn {
    ScriptTurn {
        output,
        stop: StopReason::EndOfGeneration,
    }
}

fn call(name: &str, params: &[(&str, &str)]) -> String {
    let mut s = format!("Next.\n</think>\n\n<tool_call>\n<function={name}>\n");
    for (k, v) in params {
        s.push_str(&format!("<parameter={k}>\n{v}\n</parameter>\n"));
    }
    s.push_str("</function>\n</tool_call>");
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_turn_that_changed_files_can_be_restored() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(repo.path().join("app.py"), "x = 1\n").unwrap();
    let spec = SandboxSpec::host(repo.path().to_path_buf());
    let sb = sandbox::open(&spec).await.unwrap();
    let root = std::path::PathBuf::from(sb.root());
    let turns = vec![
        // 1: a new file. 2: only a read. 3: a command that changes and deletes. 4: the answer.
        turn(call(
            "Write",
            &[("file_path", "new.txt"), ("content", "one")],
        )),
        turn(call("Read", &[("file_path", "app.py")])),
        turn(call(
            "Bash",
            &[("command", "echo two > new.txt && rm app.py")],
        )),
        turn("Done.\n</think>\n\nAll set.".into()),
    ];
    let settings = PromptSettings::default();
    let model = Arc::new(TemplatedModel::new(
        Arc::new(ScriptEngine::new(turns)),
        Renderer::builtin(&settings).unwrap(),
    ));
    let mut config = AgentConfig::new(
        settings.system_prompt().unwrap(),
        builtin_tools(),
        SamplingParams::greedy(),
    );
    config.policy = ApprovalPolicy::all(Policy::Auto);
    config.session_id = "turns-test".into();
    let logs = tempfile::tempdir().unwrap();
    let header = launch::header(
        &config,
        &spec,
        &EngineChoice::Script("script.txt".into()),
        "task",
    );
    let log = SessionLog::create(logs.path(), &header).unwrap();
    let mut running = launch::start(model, sb.clone(), config, Default::default(), log);
    running
        .ops
        .send(Op::UserMessage {
            text: "task".into(),
        })
        .unwrap();
    while let Some(event) = running.events.recv().await {
        assert!(!matches!(event, Event::Error { .. }), "{event:?}");
        if matches!(event, Event::TaskFinished { .. }) {
            running.ops.send(Op::Shutdown).unwrap();
        }
    }
    let read = |p: &str| std::fs::read_to_string(root.join(p)).ok();
    assert_eq!(read("new.txt").as_deref(), Some("two\n"));
    assert_eq!(read("app.py"), None);
    // Turn 2 changed nothing: restoring it gives turn 1's files.
    lilypad::sandbox::workspace::Checkout::of(sb.as_ref())
        .restore_turn(2)
        .await
        .unwrap();
    assert_eq!(read("new.txt").as_deref(), Some("one"));
    assert_eq!(read("app.py").as_deref(), Some("x = 1\n"));
    lilypad::sandbox::workspace::Checkout::of(sb.as_ref())
        .restore_turn(3)
        .await
        .unwrap();
    assert_eq!(read("new.txt").as_deref(), Some("two\n"));
    assert_eq!(read("app.py"), None);
    lilypad::sandbox::workspace::Checkout::of(sb.as_ref())
        .restore_turn(0)
        .await
        .unwrap();
    assert_eq!(read("new.txt"), None);
    assert_eq!(read("app.py").as_deref(), Some("x = 1\n"));
    assert_eq!(
        lilypad::sandbox::workspace::Checkout::of(sb.as_ref())
            .export_patch()
            .await
            .unwrap(),
        b""
    );
    sb.close().await.unwrap();
}
