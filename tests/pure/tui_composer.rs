//! The message line as a composer, through the App alone (no terminal, no I/O): printable keys
//! type and Enter sends; Ctrl-J, Shift-Enter and Alt-Enter start a new line; a paste keeps
//! its lines, and a long one is shown folded and sent whole; word and line motions; Up and
//! Down walk the history of messages sent; the line grows to a few rows and scrolls within
//! them.

use super::tui_views::{app, draw, feed, session_start, text};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use lilypad::protocol::Op;
use lilypad::tui::app::{App, Effect};
use lilypad::tui::history::History;

fn press(a: &mut App, code: KeyCode, mods: KeyModifiers) -> Vec<Effect> {
    a.on_key(KeyEvent::new(code, mods))
}

fn key(a: &mut App, code: KeyCode) -> Vec<Effect> {
    press(a, code, KeyModifiers::NONE)
}

fn ctrl(a: &mut App, c: char) -> Vec<Effect> {
    press(a, KeyCode::Char(c), KeyModifiers::CONTROL)
}

fn alt(a: &mut App, c: char) -> Vec<Effect> {
    press(a, KeyCode::Char(c), KeyModifiers::ALT)
}

fn typed(a: &mut App, s: &str) {
    for c in s.chars() {
        assert!(key(a, KeyCode::Char(c)).is_empty());
    }
}

fn sent(fx: &[Effect]) -> &str {
    match fx {
        [Effect::Send(Op::UserMessage { text })] => text,
        other => panic!("expected one message sent, got {other:?}"),
    }
}

/// A session whose agent works (messages are sent, for the agent to queue), with the message
/// line open.
fn composing() -> App {
    let mut a = app();
    feed(&mut a, session_start());
    key(&mut a, KeyCode::Char('i'));
    assert!(a.input_focus);
    a
}

#[test]
fn printable_keys_type_and_enter_sends() {
    let mut a = composing();
    typed(&mut a, "fix q and ? and j");
    assert_eq!(
        a.composer.input.text(),
        "fix q and ? and j",
        "no letter is a command here"
    );
    let fx = key(&mut a, KeyCode::Enter);
    assert_eq!(sent(&fx), "fix q and ? and j");
    assert_eq!(a.composer.input.text(), "");
}

#[test]
fn ctrl_j_shift_enter_and_alt_enter_start_a_line() {
    let mut a = composing();
    typed(&mut a, "one");
    assert!(ctrl(&mut a, 'j').is_empty());
    typed(&mut a, "two");
    assert!(press(&mut a, KeyCode::Enter, KeyModifiers::SHIFT).is_empty());
    typed(&mut a, "three");
    assert!(press(&mut a, KeyCode::Enter, KeyModifiers::ALT).is_empty());
    typed(&mut a, "four");
    assert_eq!(a.composer.input.text(), "one\ntwo\nthree\nfour");
    let screen = text(&draw(&a));
    for row in ["› one", "  two", "  three", "  four"] {
        assert!(
            screen.lines().any(|l| l == row),
            "the line grows to show {row:?}:\n{screen}"
        );
    }
    let fx = key(&mut a, KeyCode::Enter);
    assert_eq!(sent(&fx), "one\ntwo\nthree\nfour");
}

#[test]
fn a_paste_keeps_its_lines() {
    let mut a = composing();
    a.on_paste("The test fails:\r  assert add(2, 3) == 5\rPlease fix calc.py");
    assert_eq!(
        a.composer.input.text(),
        "The test fails:\n  assert add(2, 3) == 5\nPlease fix calc.py"
    );
    let fx = key(&mut a, KeyCode::Enter);
    assert_eq!(
        sent(&fx),
        "The test fails:\n  assert add(2, 3) == 5\nPlease fix calc.py"
    );
}

#[test]
fn a_paste_in_the_transcript_opens_the_message_line() {
    let mut a = app();
    feed(&mut a, session_start());
    assert!(!a.input_focus);
    a.on_paste("look\nhere");
    assert!(a.input_focus);
    assert_eq!(a.composer.input.text(), "look\nhere");
}

#[test]
fn a_long_paste_is_folded_and_sent_whole() {
    let mut a = composing();
    let trace: String = (1..=42).map(|i| format!("frame {i}\n")).collect();
    typed(&mut a, "why? ");
    a.on_paste(&trace);
    typed(&mut a, " thanks");
    assert_eq!(a.composer.input.text(), "why? [pasted 42 lines] thanks");
    let screen = text(&draw(&a));
    assert!(
        screen.contains("› why? [pasted 42 lines] thanks"),
        "{screen}"
    );
    assert!(!screen.contains("frame 7"), "{screen}");
    let fx = key(&mut a, KeyCode::Enter);
    assert_eq!(sent(&fx), format!("why? {trace} thanks"));
    assert!(a.composer.pastes.is_empty());

    // Backspace after the label takes the whole paste away.
    a.input_focus = true;
    a.on_paste(&trace);
    assert_eq!(a.composer.input.text(), "[pasted 42 lines]");
    key(&mut a, KeyCode::Backspace);
    assert_eq!(a.composer.input.text(), "");
    assert!(a.composer.pastes.is_empty());
}

#[test]
fn word_and_line_keys() {
    let mut a = composing();
    typed(&mut a, "run the slow tests");
    ctrl(&mut a, 'w');
    assert_eq!(a.composer.input.text(), "run the slow ");
    alt(&mut a, 'b');
    alt(&mut a, 'b');
    typed(&mut a, "all ");
    assert_eq!(a.composer.input.text(), "run all the slow ");
    alt(&mut a, 'f');
    ctrl(&mut a, 'k');
    assert_eq!(a.composer.input.text(), "run all the");
    key(&mut a, KeyCode::Home);
    typed(&mut a, "> ");
    key(&mut a, KeyCode::End);
    typed(&mut a, "!");
    assert_eq!(a.composer.input.text(), "> run all the!");
    ctrl(&mut a, 'a');
    ctrl(&mut a, 'k');
    assert_eq!(a.composer.input.text(), "");
}

#[test]
fn up_and_down_recall_the_messages_sent() {
    let mut a = composing();
    a.composer.sent = History::new(vec!["first".into(), "second\nof two lines".into()]);
    typed(&mut a, "draft");
    key(&mut a, KeyCode::Up);
    assert_eq!(a.composer.input.text(), "second\nof two lines");
    // The cursor is on the recalled message's first line: Up goes on to the older one.
    key(&mut a, KeyCode::Up);
    assert_eq!(a.composer.input.text(), "first");
    key(&mut a, KeyCode::Up);
    assert_eq!(a.composer.input.text(), "first", "nothing older");
    key(&mut a, KeyCode::Down);
    assert_eq!(a.composer.input.text(), "second\nof two lines");
    key(&mut a, KeyCode::Down);
    assert_eq!(
        a.composer.input.text(),
        "draft",
        "after the newest: what was being typed"
    );
    // Inside a message of several lines, Up and Down move between its lines first.
    ctrl(&mut a, 'j');
    typed(&mut a, "more");
    key(&mut a, KeyCode::Up);
    assert_eq!(a.composer.input.text(), "draft\nmore");
    assert!(a.composer.input.on_first_line());
    let fx = key(&mut a, KeyCode::Enter);
    assert_eq!(sent(&fx), "draft\nmore");
    assert_eq!(
        a.composer.sent.entries().last().map(String::as_str),
        Some("draft\nmore")
    );
    a.input_focus = true;
    key(&mut a, KeyCode::Up);
    assert_eq!(a.composer.input.text(), "draft\nmore");
}

#[test]
fn the_message_line_grows_to_six_rows_and_scrolls() {
    let mut a = composing();
    for i in 1..=9 {
        if i > 1 {
            ctrl(&mut a, 'j');
        }
        typed(&mut a, &format!("line {i}"));
    }
    let screen = text(&draw(&a));
    assert!(screen.contains("  line 9"), "{screen}");
    assert!(screen.contains("  line 4"), "{screen}");
    assert!(
        !screen.contains("line 3"),
        "six rows, the cursor's the last:\n{screen}"
    );
    for _ in 0..8 {
        key(&mut a, KeyCode::Up);
    }
    let screen = text(&draw(&a));
    assert!(screen.contains("› line 1"), "{screen}");
    assert!(screen.contains("  line 6"), "{screen}");
    assert!(!screen.contains("line 7"), "{screen}");
}

#[test]
fn ctrl_r_searches_the_messages_sent() {
    let mut a = composing();
    a.composer.sent = History::new(vec![
        "run the tests".into(),
        "fix calc.py".into(),
        "run the linter".into(),
    ]);
    typed(&mut a, "draft");
    ctrl(&mut a, 'r');
    typed(&mut a, "run");
    assert_eq!(
        a.composer.input.text(),
        "run the linter",
        "the newest match"
    );
    let screen = text(&draw(&a));
    assert!(
        screen.contains("sent before: run › run the linter"),
        "{screen}"
    );
    ctrl(&mut a, 'r');
    assert_eq!(
        a.composer.input.text(),
        "run the tests",
        "Ctrl-R again: an older one"
    );
    ctrl(&mut a, 'r');
    assert_eq!(
        a.composer.input.text(),
        "run the tests",
        "nothing older: it stays"
    );
    // Esc: the line as it was.
    key(&mut a, KeyCode::Esc);
    assert!(a.composer.recall.is_none());
    assert_eq!(a.composer.input.text(), "draft");
    // Enter takes the message found, to edit; a second Enter sends it.
    ctrl(&mut a, 'r');
    typed(&mut a, "calc");
    assert!(key(&mut a, KeyCode::Enter).is_empty());
    assert!(a.composer.recall.is_none());
    assert_eq!(a.composer.input.text(), "fix calc.py");
    typed(&mut a, " again");
    let fx = key(&mut a, KeyCode::Enter);
    assert_eq!(sent(&fx), "fix calc.py again");
    // A query that matches nothing shows the draft and says so.
    a.input_focus = true;
    ctrl(&mut a, 'r');
    typed(&mut a, "zzz");
    let screen = text(&draw(&a));
    assert!(screen.contains("sent before: zzz (none) ›"), "{screen}");
}

#[test]
fn bang_runs_a_command_in_the_sandbox_and_shows_its_output() {
    let mut a = composing();
    a.on_event(lilypad::protocol::Event::TaskFinished {
        reason: lilypad::protocol::FinishReason::Answered,
        final_answer: None,
    });
    let before = a.status.state;
    assert!(!before.is_busy(), "{before:?}");
    typed(&mut a, "!ls -la");
    let fx = key(&mut a, KeyCode::Enter);
    assert_eq!(
        fx,
        vec![Effect::Send(Op::Shell {
            command: "ls -la".into()
        })]
    );
    assert_eq!(a.composer.input.text(), "");
    // While it runs the session is busy, and Esc (the transcript's interrupt once the
    // message is sent) stops it.
    assert!(a.status.state.is_busy());
    assert_eq!(key(&mut a, KeyCode::Esc), vec![Effect::Send(Op::Interrupt)]);
    a.on_event(lilypad::protocol::Event::ShellRan {
        command: "ls -la".into(),
        output: "Exit code: 0\nSTDOUT:\ncalc.py\n\nSTDERR:\n".into(),
        attached: true,
    });
    let screen = text(&draw(&a));
    assert!(
        screen.contains("$ ls -la  (goes with your next message)"),
        "{screen}"
    );
    assert!(screen.contains("calc.py"), "{screen}");
    assert_eq!(a.status.state, before);
    // A lone `!` is a message.
    key(&mut a, KeyCode::Char('i'));
    typed(&mut a, "!");
    assert_eq!(sent(&key(&mut a, KeyCode::Enter)), "!");
}
