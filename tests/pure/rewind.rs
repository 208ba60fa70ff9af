//! Rewinding a session (`Op::Rewind`) started the way the interface starts one (`launch::start`
//! with its log and recorder) on the scripted engine and the host sandbox: after three turns
//! that edit a file, going back to turn 1 brings back turn 1's files and conversation, the next
//! prompt extends turn 1's, the log records the rewind and the turn patches, and rebuilding
//! the log gives the conversation the agent holds.

use lilypad::agent::{AgentConfig, ApprovalPolicy, Policy, TemplatedModel};
use lilypad::engine::script::ScriptTurn;
use lilypad::engine::{SamplingParams, ScriptEngine, StopReason};
use lilypad::launch::{self, EngineChoice};
use lilypad::prompt::{builtin_tools, GenerationPrompt, PromptSettings, Renderer};
use lilypad::protocol::{Event, Message, Op};
use lilypad::sandbox::{self, SandboxSpec};
use lilypad::session::{self, SessionLog};
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedReceiver;

fn turn(output: String) -> ScriptTurn {
    ScriptTurn {
        output,
        stop: StopReason::EndOfGeneration,
    }
}

fn write(path: &str, content: &str) -> ScriptTurn {
    turn(format!(
        "Writing.\n</think>\n\n<tool_call>\n<function=Write>\n<parameter=file_path>\n{path}\n</parameter>\n<parameter=content>\n{content}\n</parameter>\n</function>\n</tool_call>"
    ))
}

/// Events until (and including) the first that `stop` accepts.
async fn until(events: &mut UnboundedReceiver<Event>, stop: impl Fn(&Event) -> bool) -> Vec<Event> {
    let mut seen = Vec::new();
    while let Some(e) = events.recv().await {
        let done = stop(&e);
        seen.push(e);
        if done {
            return seen;
        }
    }
    panic!("the session ended early: {seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewinding_to_turn_one_restores_its_files_conversation_and_prompt() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(repo.path().join("calc.py"), "v = 0\n").unwrap();
    let spec = SandboxSpec::host(repo.path().to_path_buf());
    let sb = sandbox::open(&spec).await.unwrap();
    let root = std::path::PathBuf::from(sb.root());
    let engine = Arc::new(ScriptEngine::new(vec![
        write("calc.py", "v = 1"),
        write("calc.py", "v = 2"),
        write("calc.py", "v = 3"),
        turn("Done.\n</think>\n\nThree edits.".into()),
        turn("Again.\n</think>\n\nBack at one.".into()),
    ]));
    let settings = PromptSettings::default();
    let renderer = Renderer::builtin(&settings).unwrap();
    let model = Arc::new(TemplatedModel::new(
        engine.clone(),
        Renderer::builtin(&settings).unwrap(),
    ));
    let mut config = AgentConfig::new(
        settings.system_prompt().unwrap(),
        builtin_tools(),
        SamplingParams::greedy(),
    );
    config.policy = ApprovalPolicy::all(Policy::Auto);
    config.session_id = "rewind-test".into();
    let system = config.system_prompt.clone();
    let logs = tempfile::tempdir().unwrap();
    let header = launch::header(&config, &spec, &EngineChoice::Script("s".into()), "edit");
    let log = SessionLog::create(logs.path(), &header).unwrap();
    let log_path = log.path().to_path_buf();
    let mut running = launch::start(model, sb.clone(), config, Default::default(), log);
    let send = |op| running.ops.send(op).unwrap();
    send(Op::UserMessage {
        text: "edit calc.py three times".into(),
    });
    let first = until(&mut running.events, |e| {
        matches!(e, Event::TaskFinished { .. })
    })
    .await;
    assert!(
        !first.iter().any(|e| matches!(e, Event::Error { .. })),
        "{first:?}"
    );
    let recorded: Vec<u32> = first
        .iter()
        .filter_map(|e| match e {
            Event::TurnRecorded { turn } => Some(*turn),
            _ => None,
        })
        .collect();
    assert_eq!(recorded, vec![1, 2, 3]);
    let read = || std::fs::read_to_string(root.join("calc.py")).unwrap();
    assert_eq!(read(), "v = 3");

    send(Op::Rewind { turn: 1 });
    let rewound = until(&mut running.events, |e| {
        matches!(e, Event::Rewound { .. } | Event::Error { .. })
    })
    .await;
    let Some(Event::Rewound {
        turn,
        messages,
        from_turn,
        ..
    }) = rewound.last()
    else {
        panic!("{rewound:?}");
    };
    assert_eq!((*turn, *from_turn), (1, 4));
    // System, task, turn 1's call and its result.
    assert_eq!(*messages, 4);
    assert_eq!(read(), "v = 1", "the files are turn 1's again");
    assert_eq!(
        lilypad::sandbox::workspace::Checkout::of(sb.as_ref())
            .export_patch()
            .await
            .unwrap(),
        {
            let p = lilypad::sandbox::workspace::Checkout::of(sb.as_ref())
                .turn_patch(1)
                .unwrap();
            assert!(!p.is_empty());
            p
        }
    );

    send(Op::UserMessage {
        text: "now say where you are".into(),
    });
    let second = until(&mut running.events, |e| {
        matches!(e, Event::TaskFinished { .. })
    })
    .await;
    // The turn after the rewind is turn 2 again.
    assert!(
        second
            .iter()
            .any(|e| matches!(e, Event::TurnStarted { turn: 2 })),
        "{second:?}"
    );
    send(Op::Shutdown);
    while running.events.recv().await.is_some() {}

    // The prompt after the rewind is turn 1's conversation plus the new message.
    let prompts = engine.prompts();
    assert_eq!(prompts.len(), 5);
    let (_, events) = session::read_log(&log_path).unwrap();
    let events: Vec<Event> = events.into_iter().map(|(_, e)| e).collect();
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::Rewound { turn: 1, .. })));
    let rebuilt = session::rebuild(&system, &events);
    let expected_prompt = renderer
        .render(
            &rebuilt.messages[..rebuilt.messages.len() - 1],
            &builtin_tools(),
            GenerationPrompt::Add,
        )
        .unwrap();
    assert_eq!(prompts[4], expected_prompt);
    let at_one = session::rebuild_at(&system, &events, 1).unwrap();
    assert_eq!(at_one.messages.len(), 4);
    assert!(
        prompts[4].starts_with(
            &renderer
                .render(
                    &at_one.messages[..2],
                    &builtin_tools(),
                    GenerationPrompt::Omit
                )
                .unwrap()
        ),
        "the prompt after the rewind extends turn 1's"
    );
    // Rebuilt: turn 1, the new message, the answer; turns 2 and 3 are gone.
    let users: Vec<&str> = rebuilt
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::User { content } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        users,
        vec!["edit calc.py three times", "now say where you are"]
    );
    assert_eq!(rebuilt.messages.len(), 6);
    assert!(matches!(
        rebuilt.messages.last(),
        Some(Message::Assistant { content, .. }) if content == "Back at one."
    ));
    assert_eq!(
        rebuilt.turns.iter().map(|t| t.turn).collect::<Vec<_>>(),
        vec![0, 1, 2]
    );
    // The log keeps turn 1's patch only: the rewind dropped those of turns 2 and 3.
    let kept = session::read_turn_patches(&log_path).unwrap();
    assert_eq!(kept.iter().map(|(t, _)| *t).collect::<Vec<_>>(), vec![1]);
    assert!(String::from_utf8_lossy(&kept[0].1).contains("+v = 1"));
    sb.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewind_to_an_unknown_turn_changes_nothing() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(repo.path().join("a.txt"), "a\n").unwrap();
    let spec = SandboxSpec::host(repo.path().to_path_buf());
    let sb = sandbox::open(&spec).await.unwrap();
    let settings = PromptSettings::default();
    let model = Arc::new(TemplatedModel::new(
        Arc::new(ScriptEngine::new(vec![write("a.txt", "b")])),
        Renderer::builtin(&settings).unwrap(),
    ));
    let mut config = AgentConfig::new(
        settings.system_prompt().unwrap(),
        builtin_tools(),
        SamplingParams::greedy(),
    );
    config.policy = ApprovalPolicy::all(Policy::Auto);
    config.max_steps = 1;
    let handle = lilypad::agent::spawn(
        model,
        lilypad::tools::Tools::new(sb.clone(), Default::default()),
        config,
        Vec::new(),
    );
    let mut events = handle.events;
    handle
        .ops
        .send(Op::UserMessage { text: "go".into() })
        .unwrap();
    until(&mut events, |e| matches!(e, Event::TaskFinished { .. })).await;
    handle.ops.send(Op::Rewind { turn: 5 }).unwrap();
    let seen = until(&mut events, |e| {
        matches!(e, Event::Error { .. } | Event::Rewound { .. })
    })
    .await;
    assert!(
        matches!(seen.last(), Some(Event::Error { message }) if message.contains("turn 5")),
        "{seen:?}"
    );
    let read = std::fs::read_to_string(std::path::Path::new(sb.root()).join("a.txt")).unwrap();
    assert_eq!(read, "b");
    // Turn 0 is the start: the baseline's files.
    handle.ops.send(Op::Rewind { turn: 0 }).unwrap();
    let seen = until(&mut events, |e| matches!(e, Event::Rewound { .. })).await;
    assert!(
        matches!(
            seen.last(),
            Some(Event::Rewound {
                turn: 0,
                messages: 1,
                ..
            })
        ),
        "{seen:?}"
    );
    let read = std::fs::read_to_string(std::path::Path::new(sb.root()).join("a.txt")).unwrap();
    assert_eq!(read, "a\n");
    handle.ops.send(Op::Shutdown).unwrap();
    sb.close().await.unwrap();
}
