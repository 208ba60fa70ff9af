//! The person's own commands (`Op::Shell`, `!cmd` in the interface) against the scripted
//! engine and a real host sandbox: the command runs without a turn or an approval, its output
//! in the Bash tool's format reaches the model at the head of the next message (once), an
//! interrupt stops it and nothing is attached, and one sent while a task runs waits for the
//! task to end.

use super::agent::{start, turn};
use lilypad::protocol::{Event, Op};

fn shell_ran(events: &[Event]) -> Vec<(String, String, bool)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ShellRan {
                command,
                output,
                attached,
            } => Some((command.clone(), output.clone(), *attached)),
            _ => None,
        })
        .collect()
}

fn user_messages(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::UserMessage { text } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_command_of_the_persons_goes_with_the_next_message_once() {
    let mut s = start(
        vec![
            turn("Seen.\n</think>\n\nIt exits 3."),
            turn("Ok.\n</think>\n\nNothing more."),
        ],
        |_| {},
    )
    .await;
    let command = "echo hi; echo oops >&2; exit 3";
    s.send(Op::Shell {
        command: command.into(),
    });
    let seen = s.until(|e| matches!(e, Event::ShellRan { .. })).await;
    assert!(
        !seen
            .iter()
            .any(|e| matches!(e, Event::TurnStarted { .. } | Event::ApprovalRequested(_))),
        "no turn and no question: {seen:?}"
    );
    let output = "Exit code: 3\nSTDOUT:\nhi\n\nSTDERR:\noops\n";
    assert_eq!(
        shell_ran(&seen),
        [(command.to_string(), output.to_string(), true)]
    );
    s.send(Op::UserMessage {
        text: "why does it fail?".into(),
    });
    let (_, _, events) = s.finish().await;
    let want = format!("$ {command}\n{output}\n\nwhy does it fail?");
    assert_eq!(user_messages(&events), std::slice::from_ref(&want));
    assert!(s.engine.prompts()[0].contains(&want));
    // The next message goes alone.
    s.send(Op::UserMessage {
        text: "and now?".into(),
    });
    let (_, _, events) = s.finish().await;
    assert_eq!(user_messages(&events), ["and now?"]);
}

#[tokio::test]
async fn an_interrupted_command_is_not_attached() {
    let mut s = start(vec![turn("Ok.\n</think>\n\nHello.")], |_| {}).await;
    s.send(Op::Shell {
        command: "sleep 60".into(),
    });
    s.send(Op::Interrupt);
    let seen = s.until(|e| matches!(e, Event::ShellRan { .. })).await;
    let ran = shell_ran(&seen);
    assert!(!ran[0].2, "{ran:?}");
    assert!(ran[0].1.starts_with("Interrupted"), "{ran:?}");
    s.send(Op::UserMessage { text: "hi".into() });
    let (_, _, events) = s.finish().await;
    assert_eq!(user_messages(&events), ["hi"]);
}

#[tokio::test]
async fn a_command_sent_during_a_task_runs_after_it() {
    let mut s = start(vec![turn("Ok.\n</think>\n\nDone.")], |_| {}).await;
    s.send(Op::UserMessage { text: "go".into() });
    s.send(Op::Shell {
        command: "echo after".into(),
    });
    let seen = s.until(|e| matches!(e, Event::ShellRan { .. })).await;
    let finished = seen
        .iter()
        .position(|e| matches!(e, Event::TaskFinished { .. }))
        .expect("the task finished first");
    assert_eq!(finished + 1, seen.len() - 1, "{seen:?}");
    assert_eq!(
        shell_ran(&seen)[0].1,
        "Exit code: 0\nSTDOUT:\nafter\n\nSTDERR:\n"
    );
}
