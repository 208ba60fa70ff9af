//! The agent loop against the scripted engine (a mock of the model that replays raw outputs
//! through the real parser) and a real host sandbox on a real git repository: every stop
//! reason, truncated turns, malformed calls, rejections with feedback, edited approvals,
//! interrupt, step mode, policies.

use crate::common::git_repo;
use lilypad::agent::{self, AgentConfig, AgentHandle, ApprovalPolicy, Policy, TemplatedModel};
use lilypad::engine::script::ScriptTurn;
use lilypad::engine::{SamplingParams, ScriptEngine, StopReason};
use lilypad::prompt::{builtin_tools, PromptSettings, Renderer};
use lilypad::protocol::{
    ApprovalKind, Event, FinishReason, Op, Resolution, ReviewDecision, ToolCategory,
};
use lilypad::sandbox::{self, SandboxSpec};
use lilypad::tools::{ToolLimits, Tools};
use std::sync::Arc;
use std::time::Duration;

pub fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    git_repo(
        dir.path(),
        &[
            ("src/app.py", "def f():\n    return 1\n"),
            ("README.md", "# demo\n"),
        ],
    );
    dir
}

pub fn turn(output: &str) -> ScriptTurn {
    ScriptTurn {
        output: output.to_string(),
        stop: StopReason::EndOfGeneration,
    }
}

pub fn call(name: &str, params: &[(&str, &str)]) -> String {
    let mut s = format!("<tool_call>\n<function={name}>\n");
    for (k, v) in params {
        s.push_str(&format!("<parameter={k}>\n{v}\n</parameter>\n"));
    }
    s.push_str("</function>\n</tool_call>");
    s
}

pub struct Session {
    handle: AgentHandle,
    pub engine: ScriptEngine,
    _repo: tempfile::TempDir,
    sandbox: Arc<dyn sandbox::Sandbox>,
}

pub async fn start(turns: Vec<ScriptTurn>, tweak: impl FnOnce(&mut AgentConfig)) -> Session {
    start_with(turns, Duration::ZERO, tweak).await
}

async fn start_with(
    turns: Vec<ScriptTurn>,
    piece_delay: Duration,
    tweak: impl FnOnce(&mut AgentConfig),
) -> Session {
    start_resumed(turns, piece_delay, Default::default(), tweak).await
}

async fn start_resumed(
    turns: Vec<ScriptTurn>,
    piece_delay: Duration,
    history: lilypad::session::Rebuilt,
    tweak: impl FnOnce(&mut AgentConfig),
) -> Session {
    let repo = repo();
    let sb = sandbox::open(&SandboxSpec::host(repo.path().to_path_buf()))
        .await
        .unwrap();
    let mut engine = ScriptEngine::new(turns);
    engine.piece_delay = piece_delay;
    let settings = PromptSettings::default();
    let model = TemplatedModel::new(
        Arc::new(engine.clone()),
        Renderer::builtin(&settings).unwrap(),
    );
    let mut config = AgentConfig::new(
        settings.system_prompt().unwrap(),
        builtin_tools(),
        SamplingParams::greedy(),
    );
    tweak(&mut config);
    let tools = Tools::new(sb.clone(), ToolLimits::default());
    let handle = agent::spawn_resumed(
        Arc::new(model),
        tools,
        config,
        history.messages,
        history.pending,
    );
    Session {
        handle,
        engine,
        _repo: repo,
        sandbox: sb,
    }
}

impl Session {
    pub fn send(&self, op: Op) {
        self.handle.ops.send(op).unwrap();
    }

    async fn next(&mut self) -> Event {
        tokio::time::timeout(Duration::from_secs(20), self.handle.events.recv())
            .await
            .expect("no event within 20 s")
            .expect("event stream closed")
    }

    /// Events up to and including the first that matches.
    pub async fn until(&mut self, pred: impl Fn(&Event) -> bool) -> Vec<Event> {
        let mut seen = Vec::new();
        loop {
            let e = self.next().await;
            let done = pred(&e);
            seen.push(e);
            if done {
                return seen;
            }
        }
    }

    pub async fn finish(&mut self) -> (FinishReason, Option<String>, Vec<Event>) {
        let seen = self
            .until(|e| matches!(e, Event::TaskFinished { .. }))
            .await;
        match seen.last() {
            Some(Event::TaskFinished {
                reason,
                final_answer,
            }) => (*reason, final_answer.clone(), seen),
            _ => unreachable!(),
        }
    }

    pub async fn file(&self, rel: &str) -> String {
        let path = format!("{}/{rel}", self.sandbox.root());
        String::from_utf8(self.sandbox.read(&path).await.unwrap()).unwrap()
    }
}

pub fn results(events: &[Event]) -> Vec<(String, bool, Resolution)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolResult {
                content,
                is_error,
                resolution,
                ..
            } => Some((content.clone(), *is_error, *resolution)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_reply_without_calls_answers_and_results_reach_the_model() {
    let mut s = start(
        vec![
            turn(&format!(
                "Let me look.\n</think>\n\n{}",
                call("Read", &[("file_path", "src/app.py")])
            )),
            turn("It returns 1.\n</think>\n\nThe function returns 1."),
        ],
        |_| {},
    )
    .await;
    s.send(Op::UserMessage {
        text: "what does f return?".into(),
    });
    let (reason, answer, events) = s.finish().await;
    assert_eq!(reason, FinishReason::Answered);
    assert_eq!(answer.as_deref(), Some("The function returns 1."));
    let r = results(&events);
    assert_eq!(r.len(), 1);
    assert!(r[0].0.contains("1. def f():"), "{}", r[0].0);
    assert_eq!(r[0].2, Resolution::Auto);
    let prompts = s.engine.prompts();
    assert_eq!(prompts.len(), 2);
    assert!(prompts[0].ends_with("<|im_start|>assistant\n<think>\n"));
    assert!(prompts[1].starts_with(&prompts[0][..prompts[0].len() - "<think>\n".len()]));
    assert!(prompts[1].contains("<tool_response>\nsrc/app.py\n1. def f():"));
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::ReasoningDelta { .. })));
}

#[tokio::test]
async fn a_turn_cut_by_the_token_cap_runs_none_of_its_calls() {
    let mut s = start(
        vec![ScriptTurn {
            output: format!(
                "ok\n</think>\n\n{}",
                call("Bash", &[("command", "touch cut")])
            ),
            stop: StopReason::TokenCap,
        }],
        |c| c.policy = ApprovalPolicy::all(Policy::Auto),
    )
    .await;
    s.send(Op::UserMessage { text: "go".into() });
    let (reason, _, events) = s.finish().await;
    assert_eq!(reason, FinishReason::TokenCap);
    assert!(results(&events).is_empty());
    assert!(s
        .sandbox
        .read(&format!("{}/cut", s.sandbox.root()))
        .await
        .is_err());
}

/// A call written before a later `</think>` is reasoning: shown as tentative while it streams,
/// never run, and the interface and session log get the settled text.
#[tokio::test]
async fn a_call_inside_the_reasoning_never_runs() {
    let mut s = start(
        vec![
            turn(&format!(
                "I could run {} but no.</think> I'll list instead.{}",
                call("Bash", &[("command", "touch danger")]),
                call("Bash", &[("command", "touch listed")])
            )),
            turn("ok</think>done"),
        ],
        |c| c.policy = ApprovalPolicy::all(Policy::Auto),
    )
    .await;
    s.send(Op::UserMessage { text: "go".into() });
    let (reason, _, events) = s.finish().await;
    assert_eq!(reason, FinishReason::Answered);
    let root = s.sandbox.root().to_string();
    assert!(s.sandbox.read(&format!("{root}/danger")).await.is_err());
    assert!(s.sandbox.read(&format!("{root}/listed")).await.is_ok());
    let ready: Vec<&Event> = events
        .iter()
        .filter(|e| matches!(e, Event::ToolCallReady { .. }))
        .collect();
    assert_eq!(ready.len(), 1);
    let started = events
        .iter()
        .filter(|e| matches!(e, Event::ToolCallStarted { .. }))
        .count();
    assert_eq!(started, 2, "both were shown as tentative while streaming");
    let revised = events.iter().find_map(|e| match e {
        Event::TurnRevised { reasoning, content } => Some((reasoning.clone(), content.clone())),
        _ => None,
    });
    let (reasoning, content) = revised.expect("the turn was revised");
    assert!(reasoning.contains("touch danger") && reasoning.ends_with("but no."));
    assert_eq!(content, "I'll list instead.");
    // The session log rebuilds the settled turn.
    let messages = lilypad::session::rebuild_messages("sys", &events);
    let assistant = messages
        .iter()
        .find_map(|m| match m {
            lilypad::protocol::Message::Assistant {
                reasoning_content,
                content,
                tool_calls,
            } => Some((reasoning_content.clone(), content.clone(), tool_calls.len())),
            _ => None,
        })
        .unwrap();
    assert_eq!(assistant.1, "I'll list instead.");
    assert_eq!(assistant.2, 1);
    assert!(assistant.0.unwrap().contains("touch danger"));
}

/// A value cut at a tag it contained: the call does not run and the model reads why.
#[tokio::test]
async fn an_ambiguous_call_is_answered_not_run() {
    let mut s = start(
        vec![
            turn("w</think><tool_call>\n<function=Write>\n<parameter=file_path>\nnotes.md\n</parameter>\n<parameter=content>\nuse </parameter> here\n</parameter>\n</function>\n</tool_call>"),
            turn("ok</think>done"),
        ],
        |c| c.policy = ApprovalPolicy::all(Policy::Auto),
    )
    .await;
    s.send(Op::UserMessage { text: "go".into() });
    let (_, _, events) = s.finish().await;
    let r = results(&events);
    assert_eq!(r.len(), 1);
    assert!(r[0].0.contains("ambiguous"), "{}", r[0].0);
    assert_eq!(r[0].2, Resolution::Skipped);
    let root = s.sandbox.root().to_string();
    assert!(s.sandbox.read(&format!("{root}/notes.md")).await.is_err());
    assert!(s.engine.prompts()[1].contains("ambiguous"));
}

#[tokio::test]
async fn malformed_calls_are_answered_with_a_readable_error() {
    let mut s = start(
        vec![
            turn(
                "x\n</think>\n\n<tool_call>\n{\"name\": \"Read\", \"arguments\": {}}\n</tool_call>",
            ),
            turn("sorry\n</think>\n\ndone"),
        ],
        |_| {},
    )
    .await;
    s.send(Op::UserMessage { text: "go".into() });
    let (reason, _, events) = s.finish().await;
    assert_eq!(reason, FinishReason::Answered);
    let r = results(&events);
    assert_eq!(r.len(), 1);
    assert!(r[0].1);
    assert_eq!(r[0].2, Resolution::Skipped);
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::MalformedCall { .. })));
    let prompts = s.engine.prompts();
    assert!(prompts[1].contains(&r[0].0), "the model reads the error");
}

#[tokio::test]
async fn rejection_carries_feedback_and_edited_approval_applies_the_users_text() {
    let write = call(
        "Write",
        &[("file_path", "notes.txt"), ("content", "spaces")],
    );
    let edit = call(
        "Edit",
        &[
            ("file_path", "src/app.py"),
            ("old_string", "return 1"),
            ("new_string", "return 2"),
        ],
    );
    let mut s = start(
        vec![
            turn(&format!("a\n</think>\n\n{write}")),
            turn(&format!("b\n</think>\n\n{edit}")),
            turn("c\n</think>\n\nfinished"),
        ],
        |_| {},
    )
    .await;
    s.send(Op::UserMessage { text: "go".into() });
    let ev = s.until(|e| matches!(e, Event::ApprovalRequested(_))).await;
    let Some(Event::ApprovalRequested(req)) = ev.last() else {
        unreachable!()
    };
    assert_eq!(req.category, ToolCategory::Edits);
    assert!(
        matches!(&req.kind, ApprovalKind::Change { path, before: None, after, .. } if path == "notes.txt" && after == "spaces")
    );
    s.send(Op::Review {
        id: req.id,
        decision: ReviewDecision::Reject {
            feedback: "use tabs".into(),
        },
    });
    let ev = s.until(|e| matches!(e, Event::ApprovalRequested(_))).await;
    let r = results(&ev);
    assert_eq!(r[0].2, Resolution::Rejected);
    assert!(r[0].0.contains("use tabs"));
    let Some(Event::ApprovalRequested(req)) = ev.last() else {
        unreachable!()
    };
    match &req.kind {
        ApprovalKind::Change { before, after, .. } => {
            assert_eq!(before.as_deref(), Some("def f():\n    return 1\n"));
            assert_eq!(after, "def f():\n    return 2\n");
        }
        other => panic!("{other:?}"),
    }
    s.send(Op::Review {
        id: req.id,
        decision: ReviewDecision::ApproveEdited {
            text: "def f():\n    return 3\n".into(),
        },
    });
    let (reason, _, events) = s.finish().await;
    assert_eq!(reason, FinishReason::Answered);
    let r = results(&events);
    assert_eq!(r[0].2, Resolution::Edited);
    assert!(r[0].0.contains("user edited"), "{}", r[0].0);
    assert_eq!(s.file("src/app.py").await, "def f():\n    return 3\n");
    assert!(s
        .sandbox
        .read(&format!("{}/notes.txt", s.sandbox.root()))
        .await
        .is_err());
    assert!(s.engine.prompts()[1].contains("use tabs"));
    let patch = String::from_utf8(
        lilypad::sandbox::workspace::Checkout::of(s.sandbox.as_ref())
            .export_patch()
            .await
            .unwrap(),
    )
    .unwrap();
    assert!(patch.contains("+    return 3"), "{patch}");
}

#[tokio::test]
async fn approve_for_session_and_deny_policies() {
    let w1 = call("Write", &[("file_path", "a.txt"), ("content", "1")]);
    let w2 = call("Write", &[("file_path", "b.txt"), ("content", "2")]);
    let bash = call("Bash", &[("command", "echo hi > c.txt")]);
    let mut s = start(
        vec![
            turn(&format!("a\n</think>\n\n{w1}")),
            turn(&format!("b\n</think>\n\n{w2}\n{bash}")),
            turn("c\n</think>\n\nok"),
        ],
        |c| c.policy.commands = Policy::Deny,
    )
    .await;
    s.send(Op::UserMessage { text: "go".into() });
    let ev = s.until(|e| matches!(e, Event::ApprovalRequested(_))).await;
    let Some(Event::ApprovalRequested(req)) = ev.last() else {
        unreachable!()
    };
    s.send(Op::Review {
        id: req.id,
        decision: ReviewDecision::ApproveForSession,
    });
    let (reason, _, events) = s.finish().await;
    assert_eq!(reason, FinishReason::Answered);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::ApprovalRequested(_))),
        "the second write ran without asking"
    );
    // Approving for the session is a change of policy, reported like any other.
    let raised = ApprovalPolicy {
        edits: Policy::Auto,
        commands: Policy::Deny,
        ..ApprovalPolicy::default()
    };
    assert!(
        events
            .iter()
            .any(|e| *e == Event::ApprovalPolicyChanged { policy: raised }),
        "{events:?}"
    );
    let r = results(&events);
    assert_eq!(r[0].2, Resolution::Approved);
    assert_eq!(r[1].2, Resolution::Auto);
    assert_eq!(r[2].2, Resolution::Denied);
    assert!(r[2].0.starts_with("PermissionError"));
    assert_eq!(s.file("b.txt").await, "2");
    assert!(s
        .sandbox
        .read(&format!("{}/c.txt", s.sandbox.root()))
        .await
        .is_err());
}

#[tokio::test]
async fn a_policy_set_between_tasks_or_during_a_review_settles_the_next_calls() {
    let w = call("Write", &[("file_path", "a.txt"), ("content", "1")]);
    let b1 = call("Bash", &[("command", "echo one > one.txt")]);
    let b2 = call("Bash", &[("command", "echo two > two.txt")]);
    let mut s = start(
        vec![
            turn(&format!("a\n</think>\n\n{w}")),
            turn(&format!("b\n</think>\n\n{b1}\n{b2}")),
            turn("c\n</think>\n\nok"),
        ],
        |_| {},
    )
    .await;
    let started = s.until(|e| matches!(e, Event::SessionStarted { .. })).await;
    assert!(matches!(
        started.last(),
        Some(Event::SessionStarted {
            approval_policy: Some(p),
            ..
        }) if *p == ApprovalPolicy::default()
    ));
    // Between tasks: edits run without asking from now on.
    let edits_auto = ApprovalPolicy::PRESETS[1];
    s.send(Op::SetApprovalPolicy { policy: edits_auto });
    s.send(Op::UserMessage { text: "go".into() });
    let ev = s.until(|e| matches!(e, Event::ApprovalRequested(_))).await;
    assert!(ev.contains(&Event::ApprovalPolicyChanged { policy: edits_auto }));
    let Some(Event::ApprovalRequested(req)) = ev.last() else {
        unreachable!()
    };
    assert_eq!(
        req.category,
        ToolCategory::Commands,
        "the write did not ask"
    );
    // While a command waits for its answer: that one is still answered, the next is refused.
    let mut no_commands = edits_auto;
    no_commands.commands = Policy::Deny;
    s.send(Op::SetApprovalPolicy {
        policy: no_commands,
    });
    s.send(Op::Review {
        id: req.id,
        decision: ReviewDecision::Approve,
    });
    let (reason, _, events) = s.finish().await;
    assert_eq!(reason, FinishReason::Answered);
    let all: Vec<Event> = ev.into_iter().chain(events).collect();
    assert!(all.contains(&Event::ApprovalPolicyChanged {
        policy: no_commands
    }));
    let r = results(&all);
    assert_eq!(
        r.iter().map(|r| r.2).collect::<Vec<_>>(),
        [Resolution::Auto, Resolution::Approved, Resolution::Denied]
    );
    assert_eq!(s.file("one.txt").await, "one\n");
    assert!(s
        .sandbox
        .read(&format!("{}/two.txt", s.sandbox.root()))
        .await
        .is_err());
}

#[tokio::test]
async fn interrupt_stops_generation_and_the_session_continues() {
    let repo_turns = vec![
        turn(&"thinking very slowly ".repeat(200)),
        turn("fine\n</think>\n\nanswer two"),
    ];
    let mut s = start_with(repo_turns, Duration::from_millis(5), |_| {}).await;
    s.send(Op::UserMessage { text: "go".into() });
    s.until(|e| matches!(e, Event::ReasoningDelta { .. })).await;
    s.send(Op::Interrupt);
    let (reason, _, events) = s.finish().await;
    assert_eq!(reason, FinishReason::Interrupted);
    assert!(events.iter().any(|e| matches!(
        e,
        Event::TurnFinished {
            stop: StopReason::Cancelled,
            ..
        }
    )));
    s.send(Op::UserMessage {
        text: "again".into(),
    });
    let (reason, answer, _) = s.finish().await;
    assert_eq!(reason, FinishReason::Answered);
    assert_eq!(answer.as_deref(), Some("answer two"));
}

#[tokio::test]
async fn step_mode_pauses_after_each_turn() {
    let read = call("Glob", &[("pattern", "**/*.py")]);
    let mut s = start(
        vec![
            turn(&format!("a\n</think>\n\n{read}")),
            turn(&format!("b\n</think>\n\n{read}")),
            turn("c\n</think>\n\ndone"),
        ],
        |c| c.step_mode = true,
    )
    .await;
    s.send(Op::UserMessage { text: "go".into() });
    let ev = s.until(|e| matches!(e, Event::Paused { .. })).await;
    assert!(matches!(ev.last(), Some(Event::Paused { turn: 1 })));
    assert_eq!(s.engine.prompts().len(), 1, "nothing runs while paused");
    s.send(Op::Step);
    let ev = s.until(|e| matches!(e, Event::Paused { .. })).await;
    assert!(matches!(ev.last(), Some(Event::Paused { turn: 2 })));
    s.send(Op::SetStepMode { on: false });
    let (reason, answer, _) = s.finish().await;
    assert_eq!(reason, FinishReason::Answered);
    assert_eq!(answer.as_deref(), Some("done"));
}

#[tokio::test]
async fn step_context_and_time_limits_stop_with_their_reason() {
    let glob = call("Glob", &[("pattern", "*")]);
    let looping = vec![turn(&format!("x\n</think>\n\n{glob}")); 5];
    let mut s = start(looping.clone(), |c| c.max_steps = 2).await;
    s.send(Op::UserMessage { text: "go".into() });
    assert_eq!(s.finish().await.0, FinishReason::StepLimit);

    // The scripted engine counts characters as tokens: a small limit is reached at once.
    let mut s = start(looping.clone(), |c| c.context_limit = 50).await;
    s.send(Op::UserMessage { text: "go".into() });
    assert_eq!(s.finish().await.0, FinishReason::ContextLimit);

    let mut s = start(looping, |c| c.wall_time = Some(Duration::ZERO)).await;
    s.send(Op::UserMessage { text: "go".into() });
    assert_eq!(s.finish().await.0, FinishReason::TimeLimit);
}

#[tokio::test]
async fn a_message_typed_while_a_turn_runs_reaches_the_next_prompt() {
    let glob = call("Glob", &[("pattern", "**/*.py")]);
    let mut s = start_with(
        vec![
            turn(&format!("{}\n</think>\n\n{glob}", "slowly ".repeat(60))),
            turn("ok\n</think>\n\ndone"),
        ],
        Duration::from_millis(3),
        |_| {},
    )
    .await;
    s.send(Op::UserMessage { text: "go".into() });
    s.until(|e| matches!(e, Event::ReasoningDelta { .. })).await;
    s.send(Op::UserMessage {
        text: "also check README.md".into(),
    });
    let (reason, _, events) = s.finish().await;
    assert_eq!(reason, FinishReason::Answered);
    let queued = events
        .iter()
        .position(|e| matches!(e, Event::MessageQueued { text } if text == "also check README.md"))
        .expect("the message is reported as queued");
    let delivered = events
        .iter()
        .position(|e| matches!(e, Event::UserMessage { text } if text == "also check README.md"))
        .expect("the message is delivered");
    let second_turn = events
        .iter()
        .position(|e| matches!(e, Event::TurnStarted { turn: 2 }))
        .unwrap();
    let result = events
        .iter()
        .position(|e| matches!(e, Event::ToolResult { .. }))
        .unwrap();
    assert!(queued < result && result < delivered && delivered < second_turn);
    let prompts = s.engine.prompts();
    assert!(!prompts[0].contains("also check README.md"));
    let at = prompts[1]
        .find("also check README.md")
        .expect("in the next prompt");
    assert!(
        at > prompts[1].rfind("<tool_response>").unwrap(),
        "after the tool result"
    );
}

#[tokio::test]
async fn a_message_typed_while_paused_joins_the_next_turn() {
    let glob = call("Glob", &[("pattern", "*")]);
    let mut s = start(
        vec![
            turn(&format!("a\n</think>\n\n{glob}")),
            turn("b\n</think>\n\ndone"),
        ],
        |c| c.step_mode = true,
    )
    .await;
    s.send(Op::UserMessage { text: "go".into() });
    s.until(|e| matches!(e, Event::Paused { .. })).await;
    s.send(Op::UserMessage {
        text: "use tabs".into(),
    });
    let ev = s.until(|e| matches!(e, Event::MessageQueued { .. })).await;
    assert!(matches!(ev.last(), Some(Event::MessageQueued { text }) if text == "use tabs"));
    assert_eq!(s.engine.prompts().len(), 1, "still paused");
    s.send(Op::Step);
    let (reason, _, _) = s.finish().await;
    assert_eq!(reason, FinishReason::Answered);
    assert!(s.engine.prompts()[1].contains("use tabs"));
}

#[tokio::test]
async fn at_the_context_limit_a_fresh_conversation_carries_task_and_patch() {
    let write = call(
        "Write",
        &[("file_path", "notes.txt"), ("content", "halfway there")],
    );
    let mut s = start(
        vec![
            turn(&format!("x\n</think>\n\n{write}")),
            turn("y\n</think>\n\nfinished"),
        ],
        |c| {
            // Characters count as tokens here: the first prompt alone passes this limit.
            c.context_limit = 1000;
            c.policy = ApprovalPolicy::all(Policy::Auto);
        },
    )
    .await;
    s.send(Op::UserMessage {
        text: "write the notes".into(),
    });
    let (reason, _, _) = s.finish().await;
    assert_eq!(reason, FinishReason::ContextLimit);
    // A plain message now would stop at once: the count is of a full conversation.
    s.send(Op::ContinueFresh {
        text: "keep going".into(),
    });
    let (reason, answer, events) = s.finish().await;
    assert_eq!(reason, FinishReason::Answered, "{events:?}");
    assert_eq!(answer.as_deref(), Some("finished"));
    assert!(matches!(
        events.first(),
        Some(Event::ConversationRestarted { old_context_tokens }) if *old_context_tokens >= 1000
    ));
    let prompts = s.engine.prompts();
    let next = &prompts[1];
    assert!(next.contains("write the notes"), "the task");
    assert!(next.contains("+halfway there"), "the patch so far");
    assert!(next.contains("keep going"), "the new message");
    assert!(
        !next.contains("<tool_response>"),
        "nothing of the old conversation"
    );
    let rebuilt = lilypad::session::rebuild("sys", &events);
    assert_eq!(
        rebuilt.messages.len(),
        3,
        "system, the carried task, the answer"
    );
    assert!(
        matches!(&rebuilt.messages[1], lilypad::protocol::Message::User { content } if content.contains("write the notes"))
    );
}

#[tokio::test]
async fn dropping_old_results_makes_room_and_the_model_reads_the_note() {
    let big = "a line of the big file\n".repeat(1300);
    let read = call("Read", &[("file_path", "big.txt")]);
    let glob = call("Glob", &[("pattern", "*.txt")]);
    let mut s = start(
        vec![
            turn(&format!("a\n</think>\n\n{read}")),
            turn(&format!("b\n</think>\n\n{glob}")),
            turn("c\n</think>\n\ndone"),
        ],
        |c| {
            c.context_limit = 20_000;
            c.max_turn_tokens = 1000;
        },
    )
    .await;
    let path = format!("{}/big.txt", s.sandbox.root());
    s.sandbox.write(&path, big.as_bytes()).await.unwrap();
    s.send(Op::UserMessage { text: "go".into() });
    let (reason, _, mut log) = s.finish().await;
    assert_eq!(reason, FinishReason::ContextLimit);
    s.send(Op::DropOldResults {
        text: Some("carry on".into()),
    });
    let (reason, _, events) = s.finish().await;
    assert_eq!(reason, FinishReason::Answered, "{events:?}");
    let Some(Event::ToolResultsDropped {
        dropped,
        context_tokens,
    }) = events.first()
    else {
        panic!("{events:?}")
    };
    assert!(*context_tokens < 20_000 - 1000, "{context_tokens}");
    assert_eq!(dropped.len(), 1, "only the big result had to go");
    let prompts = s.engine.prompts();
    let last = prompts.last().unwrap();
    assert!(prompts[1].contains("a line of the big file"));
    assert!(
        !last.contains("a line of the big file"),
        "the big result is gone"
    );
    assert!(last.contains("was removed to fit the context window"));
    assert!(last.contains("carry on"));
    // The session log rebuilds the conversation the model read.
    log.extend(events.iter().cloned());
    let rebuilt = lilypad::session::rebuild("sys", &log);
    let tool_texts: Vec<&str> = rebuilt
        .messages
        .iter()
        .filter_map(|m| match m {
            lilypad::protocol::Message::Tool { content, .. } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    assert!(tool_texts[0].contains("was removed to fit the context window"));
    assert!(rebuilt.pending.is_empty());
}

#[tokio::test]
async fn a_resumed_session_asks_again_for_the_approval_that_was_pending() {
    let write = call("Write", &[("file_path", "fix.txt"), ("content", "fixed")]);
    let mut s = start(vec![turn(&format!("x\n</think>\n\n{write}"))], |_| {}).await;
    s.send(Op::UserMessage { text: "fix".into() });
    // The process is "killed" here: the log ends at the pending approval.
    let log = s.until(|e| matches!(e, Event::ApprovalRequested(_))).await;
    let system = PromptSettings::default().system_prompt().unwrap();
    let rebuilt = lilypad::session::rebuild(&system, &log);
    assert_eq!(rebuilt.pending.len(), 1, "the Write waits");
    assert_eq!(rebuilt.pending[0].name, "Write");
    assert!(
        lilypad::session::rebuild_messages(&system, &log)
            .last()
            .is_some_and(|m| matches!(m, lilypad::protocol::Message::Tool { .. })),
        "the closing form answers it with a note instead"
    );
    let pending_id = rebuilt.pending[0].id.clone();
    let mut r = start_resumed(
        vec![turn("y\n</think>\n\nall done")],
        Duration::ZERO,
        rebuilt,
        |_| {},
    )
    .await;
    r.send(Op::Continue);
    let ev = r.until(|e| matches!(e, Event::ApprovalRequested(_))).await;
    let Some(Event::ApprovalRequested(req)) = ev.last() else {
        unreachable!()
    };
    assert_eq!(req.call.id, pending_id, "the same call, asked again");
    assert!(
        r.engine.prompts().is_empty(),
        "no model turn before the answer"
    );
    r.send(Op::Review {
        id: req.id,
        decision: ReviewDecision::Approve,
    });
    let (reason, answer, _) = r.finish().await;
    assert_eq!(reason, FinishReason::Answered);
    assert_eq!(answer.as_deref(), Some("all done"));
    assert_eq!(r.file("fix.txt").await, "fixed");
    let prompt = &r.engine.prompts()[0];
    assert!(
        prompt.contains("fix.txt"),
        "the result of the resumed call is in the prompt"
    );
}
