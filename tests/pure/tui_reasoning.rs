//! Reasoning as people want it, on the real App and views: collapsed (a thought folds to one
//! line once complete), in full, or hidden, cycled by `r` and chosen at start by
//! `[interface] reasoning`; and the first line of the thought in progress as the live status.

use super::tui_views::{app, draw, feed, session_start, snapshot, text, H};
use crossterm::event::{KeyCode, KeyEvent};
use lilypad::protocol::Event;
use lilypad::tui::app::App;
use lilypad::tui::ReasoningView;

const THOUGHT: &str = "Reading the test to see what it expects.\nIt calls add(2, 3) and wants 5.\nThe function subtracts instead.\nSo the fix is one character.\nI should check the callers too";

/// The first turn's thought is complete; the second turn's streams.
fn thinking_app(view: ReasoningView) -> App {
    let mut a = app();
    a.reasoning = view;
    feed(&mut a, session_start());
    feed(
        &mut a,
        vec![Event::ReasoningDelta {
            text: THOUGHT.into(),
        }],
    );
    a
}

fn status(a: &App) -> String {
    text(&draw(a))
        .lines()
        .nth(H as usize - 2)
        .unwrap()
        .to_string()
}

#[test]
fn collapsed_folds_complete_thoughts_and_streams_the_last_lines() {
    let a = thinking_app(ReasoningView::Collapsed);
    let screen = text(&draw(&a));
    assert!(screen.contains("▸ ✻ Thought (2 lines)"), "{screen}");
    assert!(!screen.contains("The test fails on add."), "{screen}");
    assert!(screen.contains("So the fix is one character."), "{screen}");
    assert!(!screen.contains("It calls add(2, 3)"), "{screen}");
    snapshot("reasoning_collapsed", &draw(&a));
}

#[test]
fn full_streams_every_line_and_keeps_thoughts_open() {
    let a = thinking_app(ReasoningView::Full);
    let screen = text(&draw(&a));
    assert!(screen.contains("▾ ✻ Thought (2 lines)"), "{screen}");
    assert!(screen.contains("The test fails on add."), "{screen}");
    assert!(
        screen.contains("It calls add(2, 3) and wants 5."),
        "{screen}"
    );
    snapshot("reasoning_full", &draw(&a));
}

#[test]
fn hidden_draws_no_reasoning_but_the_status_still_says_what_it_thinks() {
    let a = thinking_app(ReasoningView::Hidden);
    let screen = text(&draw(&a));
    assert!(!screen.contains("Thought"), "{screen}");
    assert!(!screen.contains("Thinking"), "{screen}");
    assert!(!screen.contains("The test fails on add."), "{screen}");
    assert!(screen.contains("[reasoning hidden]"), "{screen}");
    assert!(
        status(&a).contains("thinking: Reading the test to see what it expects."),
        "{}",
        status(&a)
    );
    snapshot("reasoning_hidden", &draw(&a));
}

#[test]
fn the_live_status_is_the_first_line_of_the_thought_in_progress() {
    let mut a = app();
    feed(&mut a, session_start());
    assert!(status(&a).contains("● generating"), "{}", status(&a));
    // The line grows as it streams.
    feed(
        &mut a,
        vec![Event::ReasoningDelta {
            text: "reading the test".into(),
        }],
    );
    assert!(
        status(&a).contains("● thinking: reading the test"),
        "{}",
        status(&a)
    );
    feed(
        &mut a,
        vec![Event::ReasoningDelta {
            text: " to see what it expects\nand then the source".into(),
        }],
    );
    let line = status(&a);
    assert!(
        line.contains("● thinking: reading the test to see what it expects"),
        "{line}"
    );
    assert!(!line.contains("and then the source"), "{line}");
    snapshot("reasoning_live_status", &draw(&a));
    // Once the model answers, the status is back to what the agent does.
    feed(
        &mut a,
        vec![Event::ContentDelta {
            text: "The fix:".into(),
        }],
    );
    assert!(status(&a).contains("● generating"), "{}", status(&a));
    assert!(!status(&a).contains("thinking"), "{}", status(&a));
}

#[test]
fn r_cycles_collapsed_full_hidden_and_unselects_hidden_reasoning() {
    let mut a = thinking_app(ReasoningView::Collapsed);
    let mut seen = vec![];
    for _ in 0..3 {
        a.on_key(KeyEvent::from(KeyCode::Char('r')));
        seen.push(a.reasoning);
    }
    assert_eq!(
        seen,
        [
            ReasoningView::Full,
            ReasoningView::Hidden,
            ReasoningView::Collapsed
        ]
    );
    // Select the first thought: Tab stops on the task, then on it.
    a.on_key(KeyEvent::from(KeyCode::Tab));
    a.on_key(KeyEvent::from(KeyCode::Tab));
    assert!(a.transcript.selected().is_some());
    let sel = a.transcript.selected().unwrap();
    let is_reasoning = matches!(
        a.transcript.cells()[sel].kind,
        lilypad::tui::transcript::CellKind::Reasoning { .. }
    );
    assert!(is_reasoning, "Tab should reach the first thought");
    a.on_key(KeyEvent::from(KeyCode::Char('r')));
    a.on_key(KeyEvent::from(KeyCode::Char('r')));
    assert_eq!(a.reasoning, ReasoningView::Hidden);
    assert_eq!(a.transcript.selected(), None);
    // Tab now skips reasoning.
    for _ in 0..8 {
        a.on_key(KeyEvent::from(KeyCode::Tab));
        if let Some(i) = a.transcript.selected() {
            assert!(!matches!(
                a.transcript.cells()[i].kind,
                lilypad::tui::transcript::CellKind::Reasoning { .. }
            ));
        }
    }
}
