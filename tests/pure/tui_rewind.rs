//! Rewinding from the interface: `R` asks which turn to go back to (saying that the files and
//! the conversation go back), the arrows choose, Enter sends `Op::Rewind`; the agent's
//! `Rewound` cuts the transcript back to the end of that turn, and the person can type the
//! next message.

use super::tui_views::{app, draw, feed, figures, session_start, snapshot, text};
use crossterm::event::{KeyCode, KeyEvent};
use lilypad::protocol::{Event, FinishReason, Op, StopReason};
use lilypad::tui::app::{App, Effect, Overlay};

fn key(app: &mut App, c: KeyCode) -> Vec<Effect> {
    app.on_key(KeyEvent::from(c))
}

/// A turn that says `said` and ends.
fn turn(step: u32, said: &str) -> Vec<Event> {
    vec![
        Event::TurnStarted { turn: step },
        Event::ContentDelta { text: said.into() },
        Event::TurnFinished {
            turn: step,
            stop: StopReason::EndOfGeneration,
            figures: figures(),
            context_tokens: 100 * step as usize,
        },
    ]
}

#[test]
fn r_chooses_a_turn_and_the_rewind_cuts_the_transcript() {
    let mut a = app();
    let mut evs = session_start();
    for (step, said) in [(1, "first edit"), (2, "second edit"), (3, "third edit")] {
        evs.extend(turn(step, said));
    }
    evs.push(Event::TaskFinished {
        reason: FinishReason::Answered,
        final_answer: Some("third edit".into()),
    });
    feed(&mut a, evs);
    a.input_focus = false;
    assert!(key(&mut a, KeyCode::Char('R')).is_empty());
    assert!(
        matches!(&a.overlay, Some(Overlay::Rewind { turn: 2, turns }) if *turns == vec![0, 1, 2, 3]),
        "{:?}",
        a.overlay
    );
    key(&mut a, KeyCode::Left);
    let shown = text(&draw(&a));
    assert!(
        shown.contains("Rewind to turn 1 of 3? Files and conversation go back to"),
        "{shown}"
    );
    snapshot("rewind_question", &draw(&a));
    let fx = key(&mut a, KeyCode::Enter);
    assert_eq!(fx, vec![Effect::Send(Op::Rewind { turn: 1 })]);
    assert!(a.overlay.is_none());
    // Nothing changes until the agent says it went back.
    assert!(text(&draw(&a)).contains("third edit"));
    feed(
        &mut a,
        vec![Event::Rewound {
            turn: 1,
            messages: 3,
            context_tokens: 100,
            from_turn: 3,
        }],
    );
    let shown = text(&draw(&a));
    assert!(shown.contains("first edit"), "{shown}");
    assert!(!shown.contains("second edit"), "{shown}");
    assert!(!shown.contains("third edit"), "{shown}");
    assert!(
        shown.contains("rewound to the end of turn 1 (from turn 3)"),
        "{shown}"
    );
    assert_eq!(a.status.step, 1);
    assert!(a.input_focus, "the next message can be typed at once");
    // Esc leaves the question without sending anything.
    a.input_focus = false;
    feed(&mut a, turn(2, "another second"));
    key(&mut a, KeyCode::Char('R'));
    assert!(key(&mut a, KeyCode::Esc).is_empty());
    assert!(a.overlay.is_none());
}

#[test]
fn with_no_earlier_turn_there_is_nothing_to_choose() {
    let mut a = app();
    feed(&mut a, session_start().into_iter().take(2).collect());
    a.input_focus = false;
    key(&mut a, KeyCode::Char('R'));
    assert!(a.overlay.is_none());
    assert!(text(&draw(&a)).contains("no earlier turn to rewind to yet"));
}
