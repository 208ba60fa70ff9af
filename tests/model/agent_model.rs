//! The agent on the real engine (tiny random-weight model through llama.cpp): across turns of
//! a session the prompt prefix already in the model's memory is reused, not read again.

use crate::common;
use lilypad::agent::{self, AgentConfig, TemplatedModel};
use lilypad::engine::{Reuse, SamplingParams};
use lilypad::prompt::{builtin_tools, PromptSettings, Renderer};
use lilypad::protocol::{Event, Op};
use lilypad::sandbox::{self, SandboxSpec};
use lilypad::tools::{ToolLimits, Tools};
use std::sync::Arc;

#[test]
fn follow_up_turns_reuse_the_prompt_prefix() {
    let _g = common::serial();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(follow_up_turns());
}

async fn follow_up_turns() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(repo.path().join("a.txt"), "x\n").unwrap();
    let sb = sandbox::open(&SandboxSpec::host(repo.path().to_path_buf()))
        .await
        .unwrap();
    let settings = PromptSettings::default();
    let model = TemplatedModel::new(
        Arc::new(common::load(&common::test_settings())),
        Renderer::builtin(&settings).unwrap(),
    );
    let mut config = AgentConfig::new(
        settings.system_prompt().unwrap(),
        builtin_tools(),
        SamplingParams::greedy(),
    );
    config.max_turn_tokens = 8;
    let mut h = agent::spawn(
        Arc::new(model),
        Tools::new(sb, ToolLimits::default()),
        config,
        Vec::new(),
    );
    let mut figures = Vec::new();
    for text in ["first question", "second question", "third question"] {
        h.ops.send(Op::UserMessage { text: text.into() }).unwrap();
        loop {
            match h.events.recv().await.unwrap() {
                Event::TurnFinished { figures: f, .. } => figures.push(f),
                Event::TaskFinished { .. } => break,
                Event::Error { message } => panic!("{message}"),
                _ => {}
            }
        }
    }
    assert_eq!(figures[0].reuse, Reuse::Fresh);
    for pair in figures.windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        assert!(
            matches!(after.reuse, Reuse::Extended | Reuse::Rewound { .. }),
            "{after:?}"
        );
        // At least the system prompt, tools and earlier messages up to the previous turn's
        // reasoning (dropped once a new user message follows) are not read again.
        assert!(after.reused_tokens > before.prompt_tokens / 2, "{after:?}");
        assert!(
            after.evaluated_tokens < after.prompt_tokens / 2,
            "{after:?}"
        );
    }
}

#[test]
fn a_resumed_session_starts_from_the_saved_model_memory() {
    let _g = common::serial();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(resumed_session());
}

/// Run one task on a fresh agent; returns the events and the first turn's figures.
async fn one_task(
    model: Arc<TemplatedModel>,
    history: Vec<lilypad::protocol::Message>,
    text: &str,
) -> (Vec<Event>, lilypad::engine::Figures) {
    let repo = tempfile::tempdir().unwrap();
    let sb = sandbox::open(&SandboxSpec::host(repo.path().to_path_buf()))
        .await
        .unwrap();
    let settings = PromptSettings::default();
    let mut config = AgentConfig::new(
        settings.system_prompt().unwrap(),
        builtin_tools(),
        SamplingParams::greedy(),
    );
    config.max_turn_tokens = 8;
    let mut h = agent::spawn(
        model,
        Tools::new(sb, ToolLimits::default()),
        config,
        history,
    );
    h.ops.send(Op::UserMessage { text: text.into() }).unwrap();
    let mut events = Vec::new();
    let mut first = None;
    loop {
        let e = h.events.recv().await.unwrap();
        if let Event::TurnFinished { figures, .. } = &e {
            first.get_or_insert(figures.clone());
        }
        let done = matches!(e, Event::TaskFinished { .. });
        events.push(e);
        if done {
            return (events, first.unwrap());
        }
    }
}

async fn resumed_session() {
    let settings = PromptSettings::default();
    let system = settings.system_prompt().unwrap();
    let local = || {
        Arc::new(TemplatedModel::new(
            Arc::new(common::load(&common::test_settings())),
            Renderer::builtin(&settings).unwrap(),
        ))
    };
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("s.state");

    let first = local();
    let (events, _) = one_task(first.clone(), Vec::new(), "first question").await;
    let saved = first.save_state(&state).unwrap().unwrap();
    assert!(saved > 50, "{saved} tokens saved");
    drop(first);

    let history = lilypad::session::rebuild_messages(&system, &events);

    let resumed = local();
    assert_eq!(resumed.load_state(&state).unwrap(), Some(saved));
    let (_, f) = one_task(resumed, history.clone(), "second question").await;
    assert_eq!(f.reuse, Reuse::Extended, "{f:?}");
    assert_eq!(f.reused_tokens, saved);

    let cold = local();
    let (_, g) = one_task(cold, history, "second question").await;
    assert_eq!(g.reuse, Reuse::Fresh);
    assert_eq!(
        g.prompt_tokens, f.prompt_tokens,
        "the same prompt either way"
    );
    assert!(
        f.evaluated_tokens * 4 < g.evaluated_tokens,
        "{f:?} vs {g:?}"
    );
}
