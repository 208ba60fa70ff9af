//! The agent on the real engine (tiny random-weight model through llama.cpp): across turns of
//! a session the prompt prefix already in the model's memory is reused, not read again.

mod common;

use lilypad::agent::{self, AgentConfig, LocalModel};
use lilypad::engine::{Reuse, SamplingParams};
use lilypad::prompt::{builtin_tools, PromptSettings, Renderer};
use lilypad::protocol::{Event, Op};
use lilypad::sandbox::{self, SandboxKind, SandboxSpec};
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
    let sb = sandbox::open(&SandboxSpec {
        kind: SandboxKind::Host,
        repo: repo.path().to_path_buf(),
        docker: Default::default(),
        kube: Default::default(),
    })
    .await
    .unwrap();
    let settings = PromptSettings::default();
    let model = LocalModel {
        engine: common::load(&common::test_settings()),
        renderer: Renderer::builtin(&settings).unwrap(),
    };
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
