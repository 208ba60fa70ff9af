//! Line comments in a change review, driven through the real App with keys: `j`/`k` move the
//! line cursor, `m` comments on its line, and the comments reach the model inside the
//! decision's feedback as `path:LINE: quoted line` blocks (LINE in the new file for an added
//! line, in the old file for a removed one), whether the change is approved, rejected or
//! approved in part; the diff shows each comment under its line. On the session patch the
//! comments go out as the next message when the patch is left.

use super::tui_views::{app, draw, feed, text};
use crossterm::event::{KeyCode, KeyEvent};
use lilypad::protocol::{
    ApprovalKind, ApprovalRequest, Event, Op, ReviewDecision, ToolCall, ToolCategory,
};
use lilypad::tui::app::{App, Effect};

fn before() -> String {
    (1..=30).map(|i| format!("line {i}\n")).collect()
}

/// Two hunks: line 3 becomes "three", line 25 "twenty-five".
fn after() -> String {
    before()
        .replace("line 3\n", "three\n")
        .replace("line 25\n", "twenty-five\n")
}

fn request() -> Event {
    Event::ApprovalRequested(ApprovalRequest {
        id: 9,
        call: ToolCall {
            id: "call_9".into(),
            name: "Write".into(),
            arguments: Default::default(),
        },
        category: ToolCategory::Edits,
        kind: ApprovalKind::Change {
            path: "notes.txt".into(),
            before: Some(before()),
            after: after(),
            binary_before: false,
        },
    })
}

fn press(app: &mut App, keys: &str) -> Vec<Effect> {
    let mut fx = Vec::new();
    for c in keys.chars() {
        fx.extend(app.on_key(KeyEvent::from(KeyCode::Char(c))));
    }
    fx
}

fn enter(app: &mut App) -> Vec<Effect> {
    app.on_key(KeyEvent::from(KeyCode::Enter))
}

/// A review with a comment on the removed `line 3` (where the cursor starts: the hunk's first
/// change) and one on the added `three` below it.
fn commented() -> App {
    let mut a = app();
    feed(&mut a, vec![request()]);
    draw(&a);
    press(&mut a, "m");
    press(&mut a, "why drop it?");
    assert!(enter(&mut a).is_empty());
    press(&mut a, "jm");
    press(&mut a, "say 3");
    assert!(enter(&mut a).is_empty());
    a
}

const BLOCKS: &str = "notes.txt:3: line 3\nwhy drop it?\n\nnotes.txt:3: three\nsay 3";

fn decision(fx: &[Effect]) -> &ReviewDecision {
    match fx {
        [Effect::Send(Op::Review { id: 9, decision })] => decision,
        other => panic!("{other:?}"),
    }
}

#[test]
fn approving_sends_the_comments() {
    let mut a = commented();
    let fx = press(&mut a, "y");
    assert_eq!(
        decision(&fx),
        &ReviewDecision::ApproveWithFeedback {
            text: after(),
            feedback: BLOCKS.into()
        }
    );
}

#[test]
fn rejecting_sends_the_comments_after_the_reason() {
    let mut a = commented();
    assert!(a.on_key(KeyEvent::from(KeyCode::Esc)).is_empty());
    press(&mut a, "not now");
    let fx = enter(&mut a);
    assert_eq!(
        decision(&fx),
        &ReviewDecision::Reject {
            feedback: format!("not now\n\n{BLOCKS}")
        }
    );
}

#[test]
fn approving_some_hunks_sends_the_comments() {
    // Removed lines are numbered in the old file: a comment on `line 25` after the change of
    // line 3 (one line for one) is still line 25.
    let mut a = commented();
    press(&mut a, "]");
    press(&mut a, "m");
    press(&mut a, "keep 25");
    enter(&mut a);
    press(&mut a, " p");
    press(&mut a, "later");
    let fx = enter(&mut a);
    match decision(&fx) {
        ReviewDecision::ApproveHunks {
            kept,
            dropped,
            feedback,
            ..
        } => {
            assert_eq!((kept.len(), dropped.len()), (1, 1));
            assert_eq!(
                feedback.as_deref(),
                Some(format!("later\n\n{BLOCKS}\n\nnotes.txt:25: line 25\nkeep 25").as_str())
            );
        }
        other => panic!("{other:?}"),
    }
    // `y` with a hunk deselected: the comments alone.
    let mut a = commented();
    press(&mut a, "] ");
    match decision(&press(&mut a, "y")) {
        ReviewDecision::ApproveHunks { feedback, .. } => {
            assert_eq!(feedback.as_deref(), Some(BLOCKS))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_diff_shows_each_comment_under_its_line() {
    let a = commented();
    let screen = text(&draw(&a));
    assert!(screen.contains("2 comments"), "{screen}");
    let rows: Vec<&str> = screen.lines().collect();
    let removed = rows.iter().position(|r| r.contains("-line 3")).unwrap();
    assert!(rows[removed + 1].contains("└ why drop it?"), "{screen}");
    assert!(rows[removed + 2].contains("+three"), "{screen}");
    assert!(rows[removed + 3].contains("└ say 3"), "{screen}");
    // `m` on a commented line opens its comment; emptied, it is removed.
    let mut a = a;
    press(&mut a, "m");
    assert!(text(&draw(&a)).contains("comment on this line › say 3"));
    for _ in 0.."say 3".len() {
        a.on_key(KeyEvent::from(KeyCode::Backspace));
    }
    enter(&mut a);
    let screen = text(&draw(&a));
    assert!(
        !screen.contains("say 3") && screen.contains("1 comment "),
        "{screen}"
    );
}

#[test]
fn comments_on_the_session_patch_are_the_next_message() {
    use super::tui_views::session_start;
    use lilypad::diff::patch;
    use lilypad::protocol::{FinishReason, Op};
    let mut a = app();
    feed(&mut a, session_start());
    feed(
        &mut a,
        vec![Event::TaskFinished {
            reason: FinishReason::Answered,
            final_answer: None,
        }],
    );
    let raw = "diff --git a/calc.py b/calc.py\nindex 1111111..2222222 100644\n--- a/calc.py\n+++ b/calc.py\n@@ -1,3 +1,3 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n \ndiff --git a/NEWS.md b/NEWS.md\nnew file mode 100644\n--- /dev/null\n+++ b/NEWS.md\n@@ -0,0 +1 @@\n+- add adds\n";
    let files = patch::parse(raw, &a.hl);
    a.on_patch(Ok((raw.as_bytes().to_vec(), files)));
    draw(&a);
    // The cursor starts on the first change: the removed line of calc.py.
    press(&mut a, "m");
    press(&mut a, "minus was wrong");
    assert!(enter(&mut a).is_empty());
    let screen = text(&draw(&a));
    let rows: Vec<&str> = screen.lines().collect();
    let removed = rows
        .iter()
        .position(|r| r.contains("-    return a - b"))
        .unwrap();
    assert!(
        rows[removed + 1].contains("└ minus was wrong (pending)"),
        "{screen}"
    );
    press(&mut a, "]m");
    press(&mut a, "news ok");
    assert!(enter(&mut a).is_empty());
    assert!(text(&draw(&a)).contains("└ news ok (pending)"));
    // Approving (here: discarding) says the pending comments to the model, numbered.
    let fx = press(&mut a, "d");
    let want = "My comments on the session patch:\n\n1. NEWS.md:1 (new) \"- add adds\": news ok\n2. calc.py:2 (old) \"return a - b\": minus was wrong";
    assert!(
        fx.contains(&Effect::Send(Op::UserMessage { text: want.into() })),
        "{fx:?}"
    );
}
