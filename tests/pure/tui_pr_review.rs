//! The session review through the real App with keys: Esc puts it aside with its pending
//! comments, `/request` on the message line brings it back with the summary field open, and
//! Enter sends ONE message; `C` records the comments without sending anything; keys the
//! review does not bind never reach the message line.

use super::tui_views::{app, draw, feed, session_start, text};
use crossterm::event::{KeyCode, KeyEvent};
use lilypad::diff::patch;
use lilypad::protocol::{Event, FinishReason, Op, RecordedComment};
use lilypad::tui::app::{App, Effect, Mode};

const RAW: &str = "diff --git a/calc.py b/calc.py\nindex 1111111..2222222 100644\n--- a/calc.py\n+++ b/calc.py\n@@ -1,3 +1,3 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n \ndiff --git a/NEWS.md b/NEWS.md\nnew file mode 100644\n--- /dev/null\n+++ b/NEWS.md\n@@ -0,0 +1 @@\n+- add adds\n";

fn reviewing() -> App {
    let mut a = app();
    feed(&mut a, session_start());
    feed(
        &mut a,
        vec![Event::TaskFinished {
            reason: FinishReason::Answered,
            final_answer: None,
        }],
    );
    let files = patch::parse(RAW, &a.hl);
    a.on_patch(Ok((RAW.as_bytes().to_vec(), files)));
    a
}

fn press(a: &mut App, keys: &str) -> Vec<Effect> {
    let mut fx = Vec::new();
    for c in keys.chars() {
        let code = match c {
            '\n' => KeyCode::Enter,
            '\x1b' => KeyCode::Esc,
            c => KeyCode::Char(c),
        };
        fx.extend(a.on_key(KeyEvent::from(code)));
    }
    fx
}

#[test]
fn esc_keeps_pending_comments_and_slash_request_sends_them_as_one_message() {
    let mut a = reviewing();
    draw(&a);
    press(&mut a, "jmplus is right\n");
    // A key the review does not bind does nothing, and types nowhere.
    press(&mut a, "yz");
    assert!(a.input.text().is_empty());
    press(&mut a, "\x1b");
    assert!(matches!(a.mode, Mode::Transcript));
    let screen = text(&draw(&a));
    assert!(
        screen.contains("1 pending review comment kept: p then r takes the review up again"),
        "{screen}"
    );
    // `/request` on the message line (in front again): the review, its summary field open.
    assert!(a.input_focus);
    press(&mut a, "/request");
    assert!(press(&mut a, "\n").is_empty());
    assert!(matches!(a.mode, Mode::Patch(_)));
    let screen = text(&draw(&a));
    assert!(
        screen.contains("request changes: a summary (optional) ›"),
        "{screen}"
    );
    assert!(screen.contains("└ plus is right (pending)"), "{screen}");
    press(&mut a, "and add a test");
    let fx = press(&mut a, "\n");
    let want = "I reviewed your changes and request changes:\n\n1. calc.py:2 (new) \"return a + b\": plus is right\n\nand add a test";
    assert_eq!(
        fx,
        vec![Effect::Send(Op::UserMessage { text: want.into() })]
    );
    assert!(matches!(a.mode, Mode::Transcript));
}

#[test]
fn c_records_the_comments_without_sending_them() {
    let mut a = reviewing();
    draw(&a);
    press(&mut a, "Mlooks fine\n");
    // Nothing goes to the model: the agent is asked to keep them in the session log.
    assert_eq!(
        press(&mut a, "Cfor the record\n"),
        vec![Effect::Send(Op::RecordComments {
            comments: vec![
                RecordedComment {
                    place: "the whole change".into(),
                    text: "for the record".into(),
                },
                RecordedComment {
                    place: "calc.py (the file)".into(),
                    text: "looks fine".into(),
                },
            ],
        })]
    );
    let Mode::Patch(p) = &a.mode else {
        panic!("the review stays in front")
    };
    assert!(p.comments.is_empty());
    assert_eq!(p.comments.recorded().len(), 2);
    let screen = text(&draw(&a));
    assert!(
        screen.contains("└ on the file: looks fine (recorded)"),
        "{screen}"
    );
    // Nothing pending: request changes without a summary has nothing to send.
    assert!(press(&mut a, "r\n").is_empty());
    assert!(text(&draw(&a)).contains("nothing to send"));
}
