//! The agent's turns on the real engine, recorded for a rollout: the tiny model is made to call
//! a tool every turn (teacher forcing, `SamplingParams::force_tokens`), so a task runs several
//! turns; each turn's prompt then begins with the previous turn's prompt and sampled
//! completion, so the whole task flattens into one training sample whose masked-in tokens are
//! exactly the sampled ones.

use crate::common;
use lilypad::agent::{self, AgentConfig, TemplatedModel, TokenLog};
use lilypad::engine::SamplingParams;
use lilypad::headless::rollout::{self, RolloutFacts, TrajectoryId};
use lilypad::prompt::{builtin_tools, PromptSettings, Renderer};
use lilypad::protocol::{Event, Op};
use lilypad::sandbox::{self, SandboxSpec};
use lilypad::tools::{ToolLimits, Tools};
use std::sync::Arc;

const CALL: &str = "I will list the text files.\n</think>\n\n<tool_call>\n<function=Glob>\n<parameter=pattern>\n*.txt\n</parameter>\n</function>\n</tool_call><|im_end|>";

#[test]
fn a_forced_three_turn_task_flattens_into_one_sample() {
    let _g = common::serial();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(three_turns());
}

async fn three_turns() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(repo.path().join("a.txt"), "x\n").unwrap();
    let sb = sandbox::open(&SandboxSpec::host(repo.path().to_path_buf()))
        .await
        .unwrap();
    let engine = common::load(&common::test_settings());
    let forced = engine.tokenize(CALL).unwrap();
    let settings = PromptSettings::default();
    let model = TemplatedModel::new(Arc::new(engine), Renderer::builtin(&settings).unwrap());
    let mut sampling = SamplingParams::greedy();
    sampling.tool_grammar = false;
    sampling.force_tokens = forced.clone();
    let mut config = AgentConfig::new(settings.system_prompt().unwrap(), builtin_tools(), sampling);
    config.max_steps = 3;
    config.max_turn_tokens = 200;
    let log = TokenLog::new();
    config.tokens = Some(log.clone());
    let mut h = agent::spawn(
        Arc::new(model),
        Tools::new(sb, ToolLimits::default()),
        config,
        Vec::new(),
    );
    h.ops
        .send(Op::UserMessage {
            text: "which text files are there?".into(),
        })
        .unwrap();
    loop {
        match h.events.recv().await.unwrap() {
            Event::TaskFinished { .. } => break,
            Event::Error { message } => panic!("{message}"),
            _ => {}
        }
    }
    let turns = log.turns();
    assert_eq!(turns.len(), 3, "one recorded turn per model turn");
    for t in &turns {
        // The forced call, its end-of-turn token included, each token rated.
        let ids: Vec<u32> = t.sampled.iter().map(|s| s.id).collect();
        assert_eq!(ids, forced);
        assert!(t.sampled.iter().all(|s| s.logprob < 0.0));
    }
    for w in turns.windows(2) {
        let mut before = w[0].prompt.clone();
        before.extend(w[0].sampled.iter().map(|s| s.id));
        let same = before
            .iter()
            .zip(&w[1].prompt)
            .take_while(|(a, b)| a == b)
            .count();
        assert_eq!(
            same,
            before.len(),
            "turn {}'s prompt leaves the previous prompt and completion at token {same} of {}",
            w[1].turn,
            before.len()
        );
    }
    let r = rollout::build(
        &turns,
        RolloutFacts {
            id: TrajectoryId {
                instance_id: "t".into(),
                attempt: 1,
            },
            weight_version: None,
            reward: None,
            stop_reason: "step_limit".into(),
        },
    );
    assert_eq!(r.segments.len(), 1);
    let s = &r.segments[0];
    assert_eq!(s.prompt_ids, turns[0].prompt);
    let sampled: usize = s.loss_mask.iter().map(|&m| m as usize).sum();
    assert_eq!(sampled, 3 * forced.len());
    // The tool results and template text between turns are masked out.
    assert!(s.loss_mask.len() > sampled);
    assert_eq!(
        s.prompt_ids.len() + s.response_ids.len(),
        turns[2].prompt.len() + forced.len()
    );
}
