//! The default (chat) keys on the real App: typing while the agent works lands on the message
//! line and Enter queues the message; Esc interrupts, and on an empty line Esc twice asks which
//! turn to rewind to; Ctrl-G hands the draft to the editor and takes back what was saved (or
//! keeps the draft when the editor failed); Ctrl-Z suspends; a review still answers to its
//! single letters.

use super::tui_views::{app, change_request, draw, feed, session_start, text};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use lilypad::protocol::{Event, FinishReason, Op, ReviewDecision};
use lilypad::tui::app::{App, Effect, Mode, Overlay};
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

fn ctrl(app: &mut App, c: char) -> Vec<Effect> {
    app.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL))
}

fn typed(app: &mut App, s: &str) {
    for c in s.chars() {
        key(app, KeyCode::Char(c));
    }
}

#[test]
fn typing_while_the_agent_works_queues_the_message() {
    let mut a = chat_app();
    feed(&mut a, session_start());
    assert!(a.status.state.is_busy());
    assert_eq!(a.contexts()[0], Context::Chat);
    // `p` and `q` are letters here, not the patch or quit.
    typed(&mut a, "please stop, quit that");
    assert_eq!(a.composer.input.text(), "please stop, quit that");
    assert!(text(&draw(&a)).contains("› please stop, quit that"));
    let fx = key(&mut a, KeyCode::Enter);
    assert_eq!(
        fx,
        vec![Effect::Send(Op::UserMessage {
            text: "please stop, quit that".into()
        })]
    );
    assert_eq!(a.composer.input.text(), "");
    // The modal keys are kept for who asks for them: there `p` shows the patch.
    let mut m = app();
    feed(&mut m, session_start());
    assert_eq!(key(&mut m, KeyCode::Char('p')), vec![Effect::ExportPatch]);
}

#[test]
fn esc_interrupts_and_twice_on_an_empty_line_asks_where_to_rewind() {
    let mut a = chat_app();
    feed(&mut a, session_start());
    assert_eq!(key(&mut a, KeyCode::Esc), vec![Effect::Send(Op::Interrupt)]);
    feed(
        &mut a,
        vec![Event::TaskFinished {
            reason: FinishReason::Answered,
            final_answer: None,
        }],
    );
    feed(&mut a, vec![Event::TurnStarted { turn: 2 }]);
    feed(
        &mut a,
        vec![Event::TaskFinished {
            reason: FinishReason::Answered,
            final_answer: None,
        }],
    );
    assert!(!a.status.state.is_busy());
    // With text on the line Esc does nothing.
    typed(&mut a, "x");
    key(&mut a, KeyCode::Esc);
    key(&mut a, KeyCode::Esc);
    assert!(a.overlay.is_none());
    key(&mut a, KeyCode::Backspace);
    // A key between the two Esc presses disarms the first.
    key(&mut a, KeyCode::Esc);
    key(&mut a, KeyCode::Left);
    key(&mut a, KeyCode::Esc);
    assert!(a.overlay.is_none());
    key(&mut a, KeyCode::Esc);
    assert!(
        matches!(a.overlay, Some(Overlay::Rewind { .. })),
        "{:?}",
        a.overlay
    );
}

#[test]
fn ctrl_g_edits_the_draft_and_a_failed_editor_keeps_it() {
    let mut a = chat_app();
    feed(&mut a, session_start());
    typed(&mut a, "draft");
    assert_eq!(ctrl(&mut a, 'g'), vec![Effect::EditDraft("draft".into())]);
    a.on_draft_edited(Ok("from the editor\nsecond line\n".into()));
    assert_eq!(a.composer.input.text(), "from the editor\nsecond line");
    let err = std::io::Error::other("no such editor");
    a.on_draft_edited(Err(lilypad::tui::actions::ActionError::Terminal(err)));
    assert_eq!(a.composer.input.text(), "from the editor\nsecond line");
    assert!(text(&draw(&a)).contains("the editor failed, the message is kept"));
}

#[test]
fn ctrl_z_suspends_anywhere_and_a_review_keeps_its_letters() {
    let mut a = chat_app();
    feed(&mut a, session_start());
    assert_eq!(ctrl(&mut a, 'z'), vec![Effect::Suspend]);
    feed(&mut a, vec![change_request()]);
    assert!(matches!(a.mode, Mode::Review(_)));
    assert_eq!(ctrl(&mut a, 'z'), vec![Effect::Suspend]);
    let fx = key(&mut a, KeyCode::Char('y'));
    assert!(
        fx.iter().any(|e| matches!(
            e,
            Effect::Send(Op::Review {
                decision: ReviewDecision::Approve | ReviewDecision::ApproveHunks { .. },
                ..
            })
        )),
        "{fx:?}"
    );
    assert_eq!(a.composer.input.text(), "", "y approved, it was not typed");
}
