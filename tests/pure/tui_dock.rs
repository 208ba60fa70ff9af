//! The docked review: a change under review is a panel under the conversation (which keeps
//! the turn that proposed it on screen), split or unified, full screen on `f`; the keys that
//! scroll the conversation while the decision waits; and the decision's line in the
//! transcript. Snapshots in `tests/snapshots/tui/` (`UPDATE_SNAPSHOTS=1` rewrites them).

use super::tui_views::{app, call, change_request, feed, session_start, snapshot, text};
use crossterm::event::{KeyCode, KeyEvent};
use lilypad::protocol::{ApprovalKind, ApprovalRequest, Event, ToolCategory};
use lilypad::tui::app::{App, Mode, Pane, Review};
use lilypad::tui::{views, DiffLayout, Direction};
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::Terminal;

const WORDS: &str = "The docstring of `add` says it returns the sum, but the code subtracts: \
the fix is one character. I also pass a start value to `sum` so an empty list gives 0.";

fn draw_at(app: &App, w: u16, h: u16) -> Buffer {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| views::draw(f, app)).unwrap();
    term.backend().buffer().clone()
}

fn key(app: &mut App, code: KeyCode) {
    app.on_key(KeyEvent::from(code));
}

/// The session so far, then a turn that reasons, explains and proposes `request`.
fn proposing(request: Event) -> App {
    let mut app = app();
    let mut evs = session_start();
    evs.push(Event::ReasoningDelta {
        text: "The test expects 3 from add(1, 2).".into(),
    });
    evs.push(Event::ContentDelta { text: WORDS.into() });
    evs.push(Event::ToolCallStarted {
        name: "Write".into(),
    });
    evs.push(Event::ToolCallReady {
        call: call(
            "call_2",
            "Write",
            serde_json::json!({"file_path": "calc.py"}),
        ),
    });
    evs.push(request);
    feed(&mut app, evs);
    app
}

/// A change of `n` lines, each one rewritten: a diff far taller than any panel.
fn big_change(n: usize) -> Event {
    let before: String = (0..n).map(|i| format!("value_{i} = {i}\n")).collect();
    let after: String = (0..n).map(|i| format!("value_{i} = {}\n", i * 2)).collect();
    Event::ApprovalRequested(ApprovalRequest {
        id: 7,
        call: call(
            "call_2",
            "Write",
            serde_json::json!({"file_path": "values.py"}),
        ),
        category: ToolCategory::Edits,
        kind: ApprovalKind::Change {
            path: "values.py".into(),
            before: Some(before),
            after,
            binary_before: false,
        },
    })
}

/// The row of the panel's top border.
fn panel_top(screen: &str) -> usize {
    screen
        .lines()
        .position(|l| l.contains("Approve this"))
        .unwrap_or_else(|| panic!("no panel:\n{screen}"))
}

#[test]
fn docked_at_80x24_the_conversation_keeps_eight_rows_and_the_turns_words() {
    let app = proposing(change_request());
    let buf = draw_at(&app, 80, 24);
    snapshot("dock_80x24", &buf);
    let screen = text(&buf);
    assert!(panel_top(&screen) >= 8, "{screen}");
    assert!(
        screen.contains("is one character"),
        "the turn's words:\n{screen}"
    );
    assert!(
        screen.contains("Write(calc.py)"),
        "its tool call:\n{screen}"
    );
    assert!(screen.contains("+    return a + b"), "the diff:\n{screen}");
}

#[test]
fn docked_at_120x40_the_panel_is_as_tall_as_the_change() {
    let app = proposing(change_request());
    let buf = draw_at(&app, 120, 40);
    snapshot("dock_120x40", &buf);
    let screen = text(&buf);
    let top = panel_top(&screen);
    let rows: Vec<&str> = screen.lines().collect();
    let bottom = (top + 1..rows.len())
        .find(|&r| rows[r].starts_with('└'))
        .unwrap();
    // Header, two hunk headers, the unchanged lines between them folded to one row, 11 diff
    // lines, two borders: no empty rows in the panel.
    assert_eq!(bottom - top + 1, 17, "{screen}");
    assert!(screen.contains("but the code subtracts"), "{screen}");
}

#[test]
fn split_at_200x50_puts_the_old_and_the_new_line_on_one_row() {
    let mut app = proposing(change_request());
    let buf = draw_at(&app, 200, 50);
    snapshot("dock_split_200x50", &buf);
    let screen = text(&buf);
    let row = screen
        .lines()
        .find(|l| l.contains("-    return a - b"))
        .unwrap();
    assert!(row.contains("+    return a + b"), "{screen}");
    // The changed word is emphasised on both sides.
    let t = lilypad::tui::Theme::dark();
    let y = screen.lines().position(|l| l == row).unwrap() as u16;
    let col = |needle: &str| row[..row.find(needle).unwrap()].chars().count() as u16;
    assert_eq!(buf[(col("a - b") + 2, y)].bg, t.removed_emph_bg);
    assert_eq!(buf[(col("a + b") + 2, y)].bg, t.added_emph_bg);
    // `t` goes back to unified: the old and the new line on rows of their own.
    key(&mut app, KeyCode::Char('t'));
    assert_eq!(app.diff_layout, DiffLayout::Unified);
    let screen = text(&draw_at(&app, 200, 50));
    let row = screen
        .lines()
        .find(|l| l.contains("-    return a - b"))
        .unwrap();
    assert!(!row.contains("a + b"), "{screen}");
    key(&mut app, KeyCode::Char('t'));
    assert_eq!(app.diff_layout, DiffLayout::Split);
}

#[test]
fn an_overflowing_change_says_how_much_more_and_fills_the_screen_on_f() {
    let mut app = proposing(big_change(40));
    let buf = draw_at(&app, 80, 24);
    snapshot("dock_overflow", &buf);
    let screen = text(&buf);
    assert!(screen.contains("more lines] f full screen"), "{screen}");
    key(&mut app, KeyCode::Char('f'));
    let buf = draw_at(&app, 80, 24);
    snapshot("dock_full_screen", &buf);
    let screen = text(&buf);
    let rows: Vec<&str> = screen.lines().collect();
    assert!(
        rows[..4].iter().any(|r| r.contains("gives 0.")),
        "the turn's last words on top:\n{screen}"
    );
    assert!(panel_top(&screen) <= 5, "{screen}");
    // PgDn pages the diff full screen; `f` docks it again.
    let before = match &app.mode {
        Mode::Review(Review::Change(c)) => c.cursor.line,
        _ => unreachable!(),
    };
    key(&mut app, KeyCode::PageDown);
    match &app.mode {
        Mode::Review(Review::Change(c)) => assert!(c.cursor.line > before),
        _ => panic!("left the review"),
    }
    key(&mut app, KeyCode::Char('f'));
    assert!(text(&draw_at(&app, 80, 24)).contains("full screen"));
}

#[test]
fn page_keys_and_the_wheel_scroll_the_conversation_while_the_decision_waits() {
    let mut app = proposing(big_change(40));
    draw_at(&app, 120, 40);
    let (_, _, following) = app.transcript.position();
    assert!(following);
    key(&mut app, KeyCode::PageUp);
    draw_at(&app, 120, 40);
    let (_, _, following) = app.transcript.position();
    assert!(!following, "PgUp scrolled the conversation");
    assert!(matches!(app.mode, Mode::Review(Review::Change(_))));
    key(&mut app, KeyCode::PageDown);
    assert!(app.transcript.position().2, "back at the end");
    // The wheel over the conversation scrolls it; over the panel, the diff.
    let panel = match &app.mode {
        Mode::Review(Review::Change(c)) => c.dock.panel.get(),
        _ => unreachable!(),
    };
    app.on_wheel_at(Direction::Back, 0);
    assert!(!app.transcript.position().2);
    app.on_wheel_at(Direction::Forward, panel.y + 2);
    match &app.mode {
        Mode::Review(Review::Change(c)) => assert_eq!(c.cursor.scroll, 3),
        _ => unreachable!(),
    }
    // Tab gives the arrows to the conversation, and back.
    app.transcript.to_bottom();
    draw_at(&app, 120, 40);
    key(&mut app, KeyCode::Tab);
    key(&mut app, KeyCode::Up);
    assert!(!app.transcript.position().2, "Up scrolled the conversation");
    match &app.mode {
        Mode::Review(Review::Change(c)) => assert_eq!(c.dock.pane, Pane::Conversation),
        _ => unreachable!(),
    }
    key(&mut app, KeyCode::Tab);
    match &app.mode {
        Mode::Review(Review::Change(c)) => assert_eq!(c.dock.pane, Pane::Diff),
        _ => unreachable!(),
    }
}

#[test]
fn each_decision_leaves_its_line_in_the_transcript() {
    let mut app = proposing(change_request());
    key(&mut app, KeyCode::Char(']'));
    key(&mut app, KeyCode::Char(' '));
    key(&mut app, KeyCode::Char('p'));
    for c in "keep sum as it was".chars() {
        key(&mut app, KeyCode::Char(c));
    }
    key(&mut app, KeyCode::Enter);
    assert!(matches!(app.mode, Mode::Transcript));
    let screen = text(&draw_at(&app, 120, 40));
    assert!(
        screen.contains("✓ calc.py: hunk 1 applied; 2 rejected: \"keep sum as it was\""),
        "{screen}"
    );
}

/// On the session patch's screen a key it does not bind reaches nothing, and the note after
/// the patch is put aside names the keys of the scheme in force, in both schemes.
#[test]
fn unbound_keys_on_the_patch_screen_never_reach_the_message_line() {
    use lilypad::diff::patch;
    use lilypad::protocol::FinishReason;
    use lilypad::tui::KeyScheme;
    for (scheme, note) in [
        (KeyScheme::Chat, "Type a follow-up, or Alt-Q to quit."),
        (KeyScheme::Modal, "Type a follow-up (i), or q to quit."),
    ] {
        let mut app = app();
        app.keys = scheme;
        let mut evs = session_start();
        evs.push(Event::TaskFinished {
            reason: FinishReason::Answered,
            final_answer: Some("Fixed.".into()),
        });
        feed(&mut app, evs);
        let raw = "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n";
        let files = patch::parse(raw, &app.hl);
        app.on_patch(Ok((raw.as_bytes().to_vec(), files)));
        assert!(matches!(app.mode, Mode::Patch(_)), "{scheme:?}");
        for c in ['y', 'z', 'Y'] {
            assert!(app.on_key(KeyEvent::from(KeyCode::Char(c))).is_empty());
        }
        key(&mut app, KeyCode::Char('d'));
        assert!(matches!(app.mode, Mode::Transcript));
        assert_eq!(app.composer.input.text(), "", "{scheme:?}");
        let screen = text(&draw_at(&app, 120, 40));
        assert!(
            screen.contains(&format!("patch discarded. {note}")),
            "{screen}"
        );
    }
}

/// Line comments in the split view: the removed line's comment is on the old side's line, the
/// added line's on the new side's, both shown under their shared row.
#[test]
fn comments_in_the_split_view_anchor_to_their_side() {
    let mut app = proposing(change_request());
    draw_at(&app, 200, 50);
    let typed = |app: &mut App, s: &str| {
        key(app, KeyCode::Char('m'));
        for c in s.chars() {
            key(app, KeyCode::Char(c));
        }
        key(app, KeyCode::Enter);
    };
    typed(&mut app, "old side");
    key(&mut app, KeyCode::Char('j'));
    typed(&mut app, "new side");
    let screen = text(&draw_at(&app, 200, 50));
    let rows: Vec<&str> = screen.lines().collect();
    let pair = rows
        .iter()
        .position(|l| l.contains("-    return a - b"))
        .unwrap();
    assert!(rows[pair + 1].contains("└ old side"), "{screen}");
    assert!(rows[pair + 2].contains("└ new side"), "{screen}");
    let fx = app.on_key(KeyEvent::from(KeyCode::Char('y')));
    match &fx[..] {
        [lilypad::tui::Effect::Send(lilypad::protocol::Op::Review {
            decision: lilypad::protocol::ReviewDecision::ApproveWithFeedback { feedback, .. },
            ..
        })] => {
            assert!(
                feedback.contains("calc.py:2:     return a - b\nold side"),
                "{feedback}"
            );
            assert!(
                feedback.contains("calc.py:2:     return a + b\nnew side"),
                "{feedback}"
            );
        }
        other => panic!("{other:?}"),
    }
}
