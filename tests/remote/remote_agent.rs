//! The agent loop over the endpoint engine: `lilypad serve` (replaying a script) parses the
//! model's output into reasoning, content and tool calls; the agent runs the calls in a host
//! sandbox and sends the results back over HTTP until the final answer. The same session as
//! the first test of tests/pure/agent.rs, with a server in between.

use crate::remote_common;
use lilypad::agent::{self, AgentConfig, TemplatedModel};
use lilypad::engine::remote::{RemoteEngine, RemoteSettings};
use lilypad::engine::SamplingParams;
use lilypad::prompt::{builtin_tools, PromptSettings};
use lilypad::protocol::{Event, FinishReason, Op};
use lilypad::sandbox::{self, SandboxSpec};
use lilypad::tools::{ToolLimits, Tools};
use std::sync::Arc;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_runs_a_task_over_the_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::write(repo.join("src/app.py"), "def f():\n    return 1\n").unwrap();
    let script = remote_common::script(
        dir.path(),
        &[
            "Let me look.\n</think>\n\n<tool_call>\n<function=Read>\n<parameter=file_path>\nsrc/app.py\n</parameter>\n</function>\n</tool_call>",
            "It returns 1.\n</think>\n\nThe function returns 1.",
        ],
    );
    let server = remote_common::serve(&["--engine", &format!("script:{}", script.display())], &[]);
    let model = TemplatedModel::chat(Arc::new(
        RemoteEngine::new(&RemoteSettings {
            endpoint: Some(server.base.clone()),
            ..Default::default()
        })
        .unwrap(),
    ));
    let sb = sandbox::open(&SandboxSpec::host(repo.clone()))
        .await
        .unwrap();
    let settings = PromptSettings::default();
    let config = AgentConfig::new(
        settings.system_prompt().unwrap(),
        builtin_tools(),
        SamplingParams::greedy(),
    );
    let tools = Tools::new(sb, ToolLimits::default());
    let mut handle = agent::spawn(Arc::new(model), tools, config, Vec::new());
    handle
        .ops
        .send(Op::UserMessage {
            text: "what does f return?".into(),
        })
        .unwrap();
    let mut seen = Vec::new();
    let (reason, answer) = loop {
        let e = tokio::time::timeout(Duration::from_secs(60), handle.events.recv())
            .await
            .expect("no event within 60 s")
            .expect("event stream closed");
        if let Event::TaskFinished {
            reason,
            final_answer,
        } = &e
        {
            break (*reason, final_answer.clone());
        }
        seen.push(e);
    };
    assert_eq!(
        reason,
        FinishReason::Answered,
        "{seen:#?}\n{}",
        server.log()
    );
    assert_eq!(answer.as_deref(), Some("The function returns 1."));
    let result = seen
        .iter()
        .find_map(|e| match e {
            Event::ToolResult { content, .. } => Some(content.clone()),
            _ => None,
        })
        .expect("a tool result");
    assert!(result.contains("1. def f():"), "{result}");
}
