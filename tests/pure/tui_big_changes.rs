//! Big changes in a review: a lock or generated file folds to one line, which Enter opens
//! (in the change review and the session review), and while it is folded j/k, `m` and Space
//! act on that row, never on hidden lines; a file over `[interface] highlight_limit`
//! lines is drawn without syntax colours, and its header says so. Snapshot in
//! `tests/snapshots/tui/` (`UPDATE_SNAPSHOTS=1` rewrites it).

use super::tui_views::{app, call, feed, session_start, snapshot, text};
use crossterm::event::{KeyCode, KeyEvent};
use lilypad::diff::patch;
use lilypad::protocol::{
    ApprovalKind, ApprovalRequest, Event, FinishReason, Op, ReviewDecision, ToolCategory,
};
use lilypad::tui::app::{App, Effect, Mode, Review};
use lilypad::tui::keymap::Context;
use lilypad::tui::views;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::Terminal;

pub(crate) fn draw_at(app: &App, w: u16, h: u16) -> Buffer {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| views::draw(f, app)).unwrap();
    term.backend().buffer().clone()
}

fn key(app: &mut App, code: KeyCode) -> Vec<Effect> {
    app.on_key(KeyEvent::from(code))
}

/// A rewrite of `path` from `before` to `after`, waiting for review.
fn reviewing(path: &str, before: &str, after: &str) -> App {
    let mut a = app();
    let mut evs = session_start();
    evs.push(Event::ToolCallReady {
        call: call("call_2", "Write", serde_json::json!({ "file_path": path })),
    });
    evs.push(Event::ApprovalRequested(ApprovalRequest {
        id: 7,
        call: call("call_2", "Write", serde_json::json!({ "file_path": path })),
        category: ToolCategory::Edits,
        kind: ApprovalKind::Change {
            path: path.into(),
            before: Some(before.into()),
            after: after.into(),
            binary_before: false,
        },
    }));
    feed(&mut a, evs);
    a
}

fn lock_texts() -> (String, String) {
    let before: String = (0..40)
        .map(|i| format!("[[package]]\nname = \"crate{i}\"\nversion = \"1.0.{i}\"\n"))
        .collect();
    let after = before.replace("version = \"1.0.", "version = \"1.1.");
    (before, after)
}

#[test]
fn a_lock_file_folds_to_one_line_and_enter_opens_it_before_approving() {
    let (before, after) = lock_texts();
    let mut a = reviewing("Cargo.lock", &before, &after);
    assert_eq!(a.contexts()[0], Context::Folded);
    let buf = draw_at(&a, 80, 24);
    snapshot("review_lock_folded", &buf);
    let screen = text(&buf);
    assert!(
        screen.contains("Cargo.lock: 80 lines changed (lock file) Enter opens"),
        "{screen}"
    );
    assert!(!screen.contains("version = \"1.1.0\""), "{screen}");
    // Enter opens the file: nothing is decided, and the diff's lines are shown.
    assert!(key(&mut a, KeyCode::Enter).is_empty());
    assert!(matches!(a.mode, Mode::Review(Review::Change(_))));
    assert_eq!(a.contexts()[0], Context::Diff);
    let screen = text(&draw_at(&a, 80, 24));
    assert!(!screen.contains("Enter opens"), "{screen}");
    assert!(screen.contains("version = \"1.1.0\""), "{screen}");
    // Enter now approves, as in any review.
    let fx = key(&mut a, KeyCode::Enter);
    assert!(
        fx.iter().any(|e| matches!(
            e,
            Effect::Send(Op::Review {
                decision: ReviewDecision::Approve,
                ..
            })
        )),
        "{fx:?}"
    );
}

#[test]
fn a_folded_files_row_takes_j_k_m_and_space_not_its_hidden_lines() {
    let (before, after) = lock_texts();
    let mut a = reviewing("Cargo.lock", &before, &after);
    draw_at(&a, 80, 24);
    let change = |a: &App| match &a.mode {
        Mode::Review(Review::Change(c)) => (c.cursor.line, c.selected.clone(), c.comments.len()),
        _ => panic!("not reviewing"),
    };
    let (line, selected, _) = change(&a);
    assert!(selected.iter().all(|s| *s));
    // j and k stay on the row.
    key(&mut a, KeyCode::Char('j'));
    key(&mut a, KeyCode::Char('j'));
    key(&mut a, KeyCode::Char('k'));
    assert_eq!(change(&a).0, line);
    // `m` comments on no hidden line: the note says to open the file first.
    key(&mut a, KeyCode::Char('m'));
    assert_eq!(a.contexts()[0], Context::Folded);
    let screen = text(&draw_at(&a, 80, 24));
    assert!(
        screen.contains("this file is folded (lock file): Enter opens it to comment on a line"),
        "{screen}"
    );
    // Space takes or drops the whole file, every hunk of it.
    key(&mut a, KeyCode::Char(' '));
    assert!(change(&a).1.iter().all(|s| !s));
    key(&mut a, KeyCode::Char(' '));
    assert!(change(&a).1.iter().all(|s| *s));
    // Opened, the keys act on lines again.
    key(&mut a, KeyCode::Enter);
    draw_at(&a, 80, 24);
    key(&mut a, KeyCode::Char('j'));
    assert_eq!(change(&a).0, line + 1);
    key(&mut a, KeyCode::Char('m'));
    assert_eq!(a.contexts()[0], Context::Comment);
}

#[test]
fn a_generated_marker_folds_too_in_the_split_view_and_full_screen_still_works() {
    let before = "// Code generated by protoc. DO NOT EDIT.\npackage api\nconst A = 1\n";
    let after = "// Code generated by protoc. DO NOT EDIT.\npackage api\nconst A = 2\n";
    let mut a = reviewing("api/types.go", before, after);
    a.diff_layout = lilypad::tui::DiffLayout::Split;
    let screen = text(&draw_at(&a, 160, 40));
    assert!(
        screen.contains("api/types.go: 2 lines changed (generated) Enter opens"),
        "{screen}"
    );
    // The docked panel's keys still work on a folded file.
    key(&mut a, KeyCode::Char('f'));
    let Mode::Review(Review::Change(c)) = &a.mode else {
        panic!("not reviewing")
    };
    assert!(c.dock.full_screen);
    // An ordinary file is not folded.
    let b = reviewing("api/types.rs", "a\n", "b\n");
    assert_eq!(b.contexts()[0], Context::Diff);
}

#[test]
fn a_file_over_the_highlight_limit_has_no_colours_and_says_so() {
    let before: String = (0..30).map(|i| format!("let v{i} = {i};\n")).collect();
    let after = before.replace("let v3 = 3;", "let v3 = 33;");
    let mut a = app();
    a.hl = a.hl.clone().with_limit(10);
    let mut evs = session_start();
    evs.push(Event::ApprovalRequested(ApprovalRequest {
        id: 7,
        call: call(
            "call_2",
            "Write",
            serde_json::json!({ "file_path": "v.rs" }),
        ),
        category: ToolCategory::Edits,
        kind: ApprovalKind::Change {
            path: "v.rs".into(),
            before: Some(before.clone()),
            after: after.clone(),
            binary_before: false,
        },
    }));
    feed(&mut a, evs);
    let Mode::Review(Review::Change(c)) = &a.mode else {
        panic!("not reviewing")
    };
    let diff = c.diff.as_ref().expect("diff");
    assert!(!diff.styled);
    assert!(diff
        .hunks
        .iter()
        .flat_map(|h| &h.lines)
        .all(|l| l.segments.iter().all(|s| s.fg.is_none())));
    let screen = text(&draw_at(&a, 120, 40));
    assert!(
        screen.contains("over [interface] highlight_limit lines: no syntax colours"),
        "{screen}"
    );
    // Under the default limit the same file is coloured.
    let mut b = app();
    let mut evs = session_start();
    evs.push(Event::ApprovalRequested(ApprovalRequest {
        id: 7,
        call: call(
            "call_2",
            "Write",
            serde_json::json!({ "file_path": "v.rs" }),
        ),
        category: ToolCategory::Edits,
        kind: ApprovalKind::Change {
            path: "v.rs".into(),
            before: Some(before),
            after,
            binary_before: false,
        },
    }));
    feed(&mut b, evs);
    let Mode::Review(Review::Change(c)) = &b.mode else {
        panic!("not reviewing")
    };
    assert!(c.diff.as_ref().expect("diff").styled);
}

#[test]
fn the_session_review_folds_a_lock_file_until_enter() {
    let raw = "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\ndiff --git a/yarn.lock b/yarn.lock\n--- a/yarn.lock\n+++ b/yarn.lock\n@@ -1,3 +1,3 @@\n left-pad@1:\n-  version \"1.0.0\"\n+  version \"1.3.0\"\n   resolved x\n";
    let mut a = app();
    feed(&mut a, session_start());
    feed(
        &mut a,
        vec![Event::TaskFinished {
            reason: FinishReason::Answered,
            final_answer: None,
        }],
    );
    let files = patch::parse(raw, &a.hl);
    a.on_patch(Ok((raw.as_bytes().to_vec(), files)));
    draw_at(&a, 120, 40);
    // The first file is ordinary: Enter keeps its meaning there.
    assert_eq!(a.contexts()[0], Context::Patch);
    key(&mut a, KeyCode::Char(']'));
    assert_eq!(a.contexts()[0], Context::Folded);
    let screen = text(&draw_at(&a, 120, 40));
    assert!(
        screen.contains("yarn.lock: 2 lines changed (lock file) Enter opens"),
        "{screen}"
    );
    // Folded, `m` comments on the file (the row shown), and j leaves the cursor there.
    key(&mut a, KeyCode::Char('j'));
    key(&mut a, KeyCode::Char('m'));
    let screen = text(&draw_at(&a, 120, 40));
    assert!(screen.contains("comment on this file ›"), "{screen}");
    for c in "pin it".chars() {
        key(&mut a, KeyCode::Char(c));
    }
    key(&mut a, KeyCode::Enter);
    let screen = text(&draw_at(&a, 120, 40));
    assert!(
        screen.contains("└ on the file: pin it (pending)"),
        "{screen}"
    );
    assert!(key(&mut a, KeyCode::Enter).is_empty());
    assert_eq!(a.contexts()[0], Context::Patch);
    let screen = text(&draw_at(&a, 120, 40));
    assert!(screen.contains("version \"1.3.0\""), "{screen}");
    // Opened stays opened when the file is shown again.
    key(&mut a, KeyCode::Char('['));
    key(&mut a, KeyCode::Char(']'));
    assert_eq!(a.contexts()[0], Context::Patch);
}

#[test]
fn unchanged_lines_between_hunks_fold_and_enter_beside_them_opens_them() {
    let before: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    let after = before
        .replace("line 6\n", "six\n")
        .replace("line 25\n", "twenty-five\n");
    let mut a = reviewing("t.txt", &before, &after);
    let screen = text(&draw_at(&a, 100, 40));
    assert!(screen.contains("… 2 lines …"), "{screen}");
    assert!(screen.contains("… 12 lines …"), "{screen}");
    assert!(!screen.contains("line 15"), "{screen}");
    // The cursor starts on the first change, away from the gaps: Enter approves there, as
    // ever; on the hunk's last line, the gap after it opens instead.
    assert_eq!(a.contexts()[0], Context::Diff);
    // Lines 3 to 9, the change a removed and an added line: the last is the 8th.
    for _ in 0..4 {
        key(&mut a, KeyCode::Char('j'));
    }
    assert_eq!(a.contexts()[0], Context::Folded);
    let hints = text(&draw_at(&a, 100, 40));
    assert!(hints.contains("Enter open"), "{hints}");
    assert!(key(&mut a, KeyCode::Enter).is_empty());
    let screen = text(&draw_at(&a, 100, 40));
    assert!(!screen.contains("… 12 lines …"), "{screen}");
    assert!(screen.contains("line 15"), "{screen}");
    assert!(screen.contains("… 2 lines …"), "{screen}");
    // The same file in the split view: the gap folds to one row across both sides.
    let mut b = reviewing("t.txt", &before, &after);
    b.diff_layout = lilypad::tui::DiffLayout::Split;
    let screen = text(&draw_at(&b, 200, 50));
    assert!(screen.contains("… 12 lines …"), "{screen}");
    // Nothing folded is beside the cursor once it is open: Enter approves again.
    assert_eq!(a.contexts()[0], Context::Diff);
}
