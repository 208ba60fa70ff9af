//! The approval policy in the interface: Shift-Tab and `/approvals` ask the agent for the next
//! preset policy, the status line shows the one in force (the session's start, then each
//! change the agent reports), and nothing is sent before the session says which one it has.

use super::tui_views::{app, call, draw, feed, session_start, text};
use crossterm::event::{KeyCode, KeyEvent};
use lilypad::protocol::{
    ApprovalKind, ApprovalPolicy, ApprovalRequest, Event, FinishReason, Op, Policy, ToolCategory,
};
use lilypad::tui::app::{App, Effect, Mode};
use lilypad::tui::keymap::Context;
use lilypad::tui::KeyScheme;

fn chat_app() -> App {
    let mut a = app();
    a.keys = KeyScheme::Chat;
    a
}

fn key(app: &mut App, c: KeyCode) -> Vec<Effect> {
    app.on_key(KeyEvent::from(c))
}

/// The session's start as a live agent reports it: with the policy in force.
fn started(app: &mut App, policy: ApprovalPolicy) {
    let events = session_start()
        .into_iter()
        .map(|e| match e {
            Event::SessionStarted {
                session_id,
                model,
                sandbox,
                workdir,
                max_steps,
                context_limit,
                ..
            } => Event::SessionStarted {
                session_id,
                model,
                sandbox,
                workdir,
                max_steps,
                context_limit,
                approval_policy: Some(policy),
            },
            other => other,
        })
        .collect();
    feed(app, events);
}

fn status_line(app: &App) -> String {
    text(&draw(app))
        .lines()
        .find(|l| l.contains("step ") && l.contains("/150"))
        .unwrap_or_default()
        .to_string()
}

#[test]
fn shift_tab_steps_through_the_presets_and_the_status_line_follows() {
    for scheme in [KeyScheme::Chat, KeyScheme::Modal] {
        let mut a = app();
        a.keys = scheme;
        started(&mut a, ApprovalPolicy::default());
        assert!(
            status_line(&a).contains("approvals edits=ask,commands=ask"),
            "{scheme:?}: {}",
            status_line(&a)
        );
        let mut sent = Vec::new();
        for _ in 0..ApprovalPolicy::PRESETS.len() {
            match key(&mut a, KeyCode::BackTab).as_slice() {
                [Effect::Send(Op::SetApprovalPolicy { policy })] => sent.push(*policy),
                other => panic!("{scheme:?}: Shift-Tab gave {other:?}"),
            }
        }
        // Presses before the agent answers step on from the last one asked for.
        assert_eq!(
            sent,
            [
                ApprovalPolicy::PRESETS[1],
                ApprovalPolicy::PRESETS[2],
                ApprovalPolicy::PRESETS[3],
                ApprovalPolicy::PRESETS[0],
            ],
            "{scheme:?}"
        );
    }
}

#[test]
fn the_agents_report_sets_the_status_line_and_is_noted_in_the_transcript() {
    let mut a = chat_app();
    started(&mut a, ApprovalPolicy::default());
    let auto = ApprovalPolicy::all(Policy::Auto);
    feed(&mut a, vec![Event::ApprovalPolicyChanged { policy: auto }]);
    assert!(
        status_line(&a).contains("approvals auto"),
        "{}",
        status_line(&a)
    );
    assert!(text(&draw(&a)).contains("approvals: auto from now on"));
    // The next press goes on from the reported policy.
    assert_eq!(
        key(&mut a, KeyCode::BackTab),
        vec![Effect::Send(Op::SetApprovalPolicy {
            policy: ApprovalPolicy::PRESETS[3]
        })]
    );
}

#[test]
fn the_palette_command_does_what_shift_tab_does() {
    let mut a = chat_app();
    started(&mut a, ApprovalPolicy::default());
    for c in "/approvals".chars() {
        key(&mut a, KeyCode::Char(c));
    }
    assert_eq!(
        key(&mut a, KeyCode::Enter),
        vec![Effect::Send(Op::SetApprovalPolicy {
            policy: ApprovalPolicy::PRESETS[1]
        })]
    );
    assert!(
        status_line(&a).contains("approvals edits=auto,commands=ask"),
        "{}",
        status_line(&a)
    );
}

#[test]
fn shift_tab_works_in_a_review_and_on_the_modal_message_line() {
    // A command's review: Shift-Tab changes the policy, and the question stays open. (In a
    // change's review it goes to the previous hunk.)
    let mut a = chat_app();
    started(&mut a, ApprovalPolicy::default());
    feed(
        &mut a,
        vec![Event::ApprovalRequested(ApprovalRequest {
            id: 8,
            call: call("call_3", "Bash", serde_json::json!({"command": "ls"})),
            category: ToolCategory::Commands,
            kind: ApprovalKind::Command {
                command: "ls".into(),
                description: None,
                timeout_seconds: 120.0,
            },
        })],
    );
    assert!(matches!(a.mode, Mode::Review(_)));
    assert_eq!(
        key(&mut a, KeyCode::BackTab),
        vec![Effect::Send(Op::SetApprovalPolicy {
            policy: ApprovalPolicy::PRESETS[1]
        })]
    );
    assert!(matches!(a.mode, Mode::Review(_)));
    // The modal keys with the message line open (after `i`): Shift-Tab is not typed.
    let mut m = app();
    m.keys = KeyScheme::Modal;
    started(&mut m, ApprovalPolicy::default());
    feed(
        &mut m,
        vec![Event::TaskFinished {
            reason: FinishReason::Answered,
            final_answer: Some("done".into()),
        }],
    );
    key(&mut m, KeyCode::Char('i'));
    assert_eq!(m.contexts()[0], Context::Input);
    assert_eq!(
        key(&mut m, KeyCode::BackTab),
        vec![Effect::Send(Op::SetApprovalPolicy {
            policy: ApprovalPolicy::PRESETS[1]
        })]
    );
}

#[test]
fn before_the_session_says_its_policy_nothing_is_sent() {
    let mut a = chat_app();
    // A log from before the policy was recorded: no policy in the status line, and
    // Shift-Tab explains instead of guessing.
    feed(&mut a, session_start());
    assert!(
        !status_line(&a).contains("approvals"),
        "{}",
        status_line(&a)
    );
    assert!(key(&mut a, KeyCode::BackTab).is_empty());
}
