//! The review decisions the interface's edit path sends, through the real agent loop on the
//! scripted engine and a host sandbox: some hunks kept (the model reads which were kept and
//! dropped), an edited command (the model reads what ran), and a prefix rule that lets the
//! next matching command run without asking while others still ask, and line comments on an
//! approved change (the model reads them after the result).

use super::agent::{call, results, start, turn};
use lilypad::agent::CommandRule;
use lilypad::protocol::{ApprovalKind, Event, HunkNote, Op, Resolution, ReviewDecision};

fn request(ev: &[Event]) -> lilypad::protocol::ApprovalRequest {
    match ev.last() {
        Some(Event::ApprovalRequested(r)) => r.clone(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn kept_and_dropped_hunks_reach_the_model() {
    let write = call(
        "Write",
        &[
            ("file_path", "src/app.py"),
            ("content", "def f():\n    return 2\n"),
        ],
    );
    let mut s = start(
        vec![
            turn(&format!("a\n</think>\n\n{write}")),
            turn("b\n</think>\n\ndone"),
        ],
        |_| {},
    )
    .await;
    s.send(Op::UserMessage { text: "go".into() });
    let req = request(&s.until(|e| matches!(e, Event::ApprovalRequested(_))).await);
    let note = |n: usize, first: &str| HunkNote {
        number: n,
        header: format!("@@ -{n},1 +{n},1 @@"),
        first_change: first.into(),
    };
    s.send(Op::Review {
        id: req.id,
        decision: ReviewDecision::ApproveHunks {
            text: "def f():\n    return 1\n".into(),
            kept: vec![note(1, "def f():")],
            dropped: vec![note(2, "    return 2")],
            feedback: Some("keep returning 1".into()),
        },
    });
    let (_, _, events) = s.finish().await;
    let r = results(&events);
    assert_eq!(r[0].2, Resolution::Edited);
    let prompt = &s.engine.prompts()[1];
    for want in [
        "Kept 1 of 2: hunk 1 (@@ -1,1 +1,1 @@: `def f():`)",
        "Dropped: hunk 2 (@@ -2,1 +2,1 @@: `return 2`)",
        "The user says: keep returning 1",
    ] {
        assert!(prompt.contains(want), "{want:?} not in {prompt}");
    }
}

#[tokio::test]
async fn an_edited_command_runs_and_the_model_reads_what_ran() {
    let bash = call("Bash", &[("command", "echo proposed")]);
    let mut s = start(
        vec![
            turn(&format!("a\n</think>\n\n{bash}")),
            turn("b\n</think>\n\ndone"),
        ],
        |_| {},
    )
    .await;
    s.send(Op::UserMessage { text: "go".into() });
    let req = request(&s.until(|e| matches!(e, Event::ApprovalRequested(_))).await);
    s.send(Op::Review {
        id: req.id,
        decision: ReviewDecision::ApproveEdited {
            text: "echo edited".into(),
        },
    });
    let (_, _, events) = s.finish().await;
    let r = results(&events);
    assert_eq!(r[0].2, Resolution::Edited);
    assert!(r[0].0.contains("edited"), "{}", r[0].0);
    let prompt = &s.engine.prompts()[1];
    assert!(prompt.contains("You proposed: echo proposed"), "{prompt}");
    assert!(prompt.contains("What ran: echo edited"), "{prompt}");
}

#[tokio::test]
async fn a_prefix_rule_runs_the_next_matching_command_without_asking() {
    let first = call("Bash", &[("command", "echo one")]);
    let second = call("Bash", &[("command", "echo two")]);
    let other = call("Bash", &[("command", "printf three")]);
    let mut s = start(
        vec![
            turn(&format!("a\n</think>\n\n{first}")),
            turn(&format!("b\n</think>\n\n{second}")),
            turn(&format!("c\n</think>\n\n{other}")),
            turn("d\n</think>\n\ndone"),
        ],
        // A rule saved for the repository does not cover `echo`.
        |c| c.command_rules = vec![CommandRule::new("ls")],
    )
    .await;
    s.send(Op::UserMessage { text: "go".into() });
    let req = request(&s.until(|e| matches!(e, Event::ApprovalRequested(_))).await);
    s.send(Op::Review {
        id: req.id,
        decision: ReviewDecision::ApprovePrefix {
            prefix: "echo".into(),
        },
    });
    // `echo two` runs without asking; `printf three` asks.
    let ev = s.until(|e| matches!(e, Event::ApprovalRequested(_))).await;
    let req = request(&ev);
    assert!(
        matches!(&req.kind, ApprovalKind::Command { command, .. } if command == "printf three")
    );
    let r = results(&ev);
    assert_eq!((r[0].2, r[1].2), (Resolution::Approved, Resolution::Auto));
    assert!(r[1].0.contains("two"));
    s.send(Op::Review {
        id: req.id,
        decision: ReviewDecision::Approve,
    });
    s.finish().await;
}

#[tokio::test]
async fn line_comments_on_an_approved_change_reach_the_model() {
    let content = "def f():\n    return 2\n";
    let write = call(
        "Write",
        &[("file_path", "src/app.py"), ("content", content)],
    );
    let mut s = start(
        vec![
            turn(&format!("a\n</think>\n\n{write}")),
            turn("b\n</think>\n\ndone"),
        ],
        |_| {},
    )
    .await;
    s.send(Op::UserMessage { text: "go".into() });
    let req = request(&s.until(|e| matches!(e, Event::ApprovalRequested(_))).await);
    let comments = "src/app.py:2:     return 2\nwhy 2?";
    s.send(Op::Review {
        id: req.id,
        decision: ReviewDecision::ApproveWithFeedback {
            text: content.into(),
            feedback: comments.into(),
        },
    });
    let (_, _, events) = s.finish().await;
    assert_eq!(results(&events)[0].2, Resolution::Approved);
    let prompt = &s.engine.prompts()[1];
    let want = format!("The user approved it and says:\n{comments}");
    assert!(prompt.contains(&want), "{want:?} not in {prompt}");
    assert!(!prompt.contains("edited your proposed change"), "{prompt}");
}
