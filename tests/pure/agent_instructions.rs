//! Project instructions in the agent loop (scripted engine, host sandbox): they head the
//! conversation's first message only, are announced before it, read back from the events the
//! way a resume reads them, and head the first message of a fresh conversation again after the
//! context filled.

use super::agent::{call, start, turn};
use lilypad::agent::{ApprovalPolicy, Instructions, Policy};
use lilypad::protocol::{Event, FinishReason, Message, Op};

const BLOCK: &str =
    "<project_instructions>\nRULE-7: tabs, never spaces.\n</project_instructions>\n\n";

fn instructions() -> Option<Instructions> {
    Some(Instructions {
        files: vec!["AGENTS.md".into()],
        block: BLOCK.into(),
    })
}

#[tokio::test]
async fn they_head_the_first_message_only_and_a_rebuild_reads_them_back() {
    let mut s = start(
        vec![
            turn("ok\n</think>\n\nfirst answer"),
            turn("ok\n</think>\n\nsecond answer"),
        ],
        |c| c.instructions = instructions(),
    )
    .await;
    s.send(Op::UserMessage {
        text: "the task".into(),
    });
    let (_, _, first) = s.finish().await;
    s.send(Op::UserMessage {
        text: "a follow-up".into(),
    });
    let (reason, _, second) = s.finish().await;
    assert_eq!(reason, FinishReason::Answered);
    let prompts = s.engine.prompts();
    assert!(
        prompts[0].contains(&format!("{BLOCK}the task")),
        "{}",
        prompts[0]
    );
    assert_eq!(prompts[1].matches("RULE-7").count(), 1, "{}", prompts[1]);
    assert!(!prompts[1].contains(&format!("{BLOCK}a follow-up")));
    // Announced once, just before the task, which the event carries as typed.
    let at = first
        .iter()
        .position(|e| matches!(e, Event::ProjectInstructions { .. }))
        .expect("announced");
    assert!(matches!(
        &first[at + 1],
        Event::UserMessage { text } if text == "the task"
    ));
    assert!(!second
        .iter()
        .any(|e| matches!(e, Event::ProjectInstructions { .. })));
    let all: Vec<Event> = first.into_iter().chain(second).collect();
    let rebuilt = lilypad::session::rebuild_messages("sys", &all);
    assert!(
        matches!(&rebuilt[1], Message::User { content } if content == &format!("{BLOCK}the task"))
    );
    assert!(matches!(&rebuilt[3], Message::User { content } if content == "a follow-up"));
}

#[tokio::test]
async fn a_fresh_conversation_starts_with_them_once() {
    let write = call("Write", &[("file_path", "n.txt"), ("content", "halfway")]);
    let mut s = start(
        vec![
            turn(&format!("x\n</think>\n\n{write}")),
            turn("y\n</think>\n\nfinished"),
        ],
        |c| {
            c.context_limit = 1000;
            c.policy = ApprovalPolicy::all(Policy::Auto);
            c.instructions = instructions();
        },
    )
    .await;
    s.send(Op::UserMessage {
        text: "write the notes".into(),
    });
    assert_eq!(s.finish().await.0, FinishReason::ContextLimit);
    s.send(Op::ContinueFresh {
        text: "keep going".into(),
    });
    let (reason, _, _) = s.finish().await;
    assert_eq!(reason, FinishReason::Answered);
    let next = &s.engine.prompts()[1];
    assert_eq!(next.matches("RULE-7").count(), 1, "{next}");
    let head = next.find(BLOCK).expect("the block");
    assert!(head < next.find("write the notes").unwrap(), "{next}");
}
