//! The session review through the real App with keys: Esc puts it aside with its pending
//! comments, `/request` on the message line brings it back with the summary field open, and
//! Enter sends ONE message; `C` records the comments without sending anything; keys the
//! review does not bind never reach the message line. Leaving or quitting with comments not
//! sent warns once (the second press goes ahead); `t` splits the diff as in a change's review.

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
    assert!(a.composer.input.text().is_empty());
    // With a comment not sent, the first Esc warns and the second leaves.
    press(&mut a, "\x1b");
    assert!(matches!(a.mode, Mode::Patch(_)));
    let screen = text(&draw(&a));
    assert!(
        screen.contains("1 comment not sent (r request changes · C record) · Esc again leaves, the comments kept pending"),
        "{screen}"
    );
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

#[test]
fn quitting_with_comments_not_sent_warns_once_and_the_second_press_quits() {
    let mut a = reviewing();
    draw(&a);
    press(&mut a, "jmplus is right\n");
    assert!(press(&mut a, "q").is_empty());
    let screen = text(&draw(&a));
    assert!(
        screen.contains(
            "1 comment not sent (r request changes · C record) · q again quits and loses them"
        ),
        "{screen}"
    );
    // Another key forgets the warning: `q` warns again.
    press(&mut a, "j");
    assert!(press(&mut a, "q").is_empty());
    assert!(!a.quitting);
    let fx = press(&mut a, "q");
    assert!(fx.contains(&Effect::Quit), "{fx:?}");
    assert!(
        !fx.iter()
            .any(|e| matches!(e, Effect::Send(Op::UserMessage { .. }))),
        "{fx:?}"
    );

    // Put aside, the comments still count: quitting from the transcript warns too.
    let mut a = reviewing();
    draw(&a);
    press(&mut a, "jmplus is right\n\x1b\x1b");
    assert!(matches!(a.mode, Mode::Transcript));
    a.input_focus = false;
    assert!(press(&mut a, "q").is_empty());
    let screen = text(&draw(&a));
    assert!(
        screen.contains(
            "1 review comment not sent (p then r sends them) · q again quits and loses them"
        ),
        "{screen}"
    );
    assert!(press(&mut a, "q").contains(&Effect::Quit));

    // Without comments, quitting asks about the undecided patch as before.
    let mut a = reviewing();
    draw(&a);
    assert!(press(&mut a, "q").is_empty());
    assert!(matches!(
        a.overlay,
        Some(lilypad::tui::app::Overlay::ConfirmQuit(_))
    ));
}

#[test]
fn t_splits_the_session_reviews_diff_and_back() {
    let mut a = reviewing();
    let both = |a: &App| {
        let screen = text(&super::tui_big_changes::draw_at(a, 200, 50));
        screen
            .lines()
            .any(|l| l.contains("return a - b") && l.contains("return a + b"))
    };
    // `auto` decides first by the diff's width beside the file list; `t` switches it.
    let first = both(&a);
    press(&mut a, "t");
    assert_ne!(both(&a), first, "t switched the layout");
    press(&mut a, "t");
    assert_eq!(both(&a), first, "and back");
    // At 120 columns the diff is unified, and `t` splits it.
    a.diff_layout = lilypad::tui::DiffLayout::Auto;
    let at_120 = |a: &App| {
        text(&super::tui_big_changes::draw_at(a, 120, 40))
            .lines()
            .any(|l| l.contains("return a - b") && l.contains("return a + b"))
    };
    assert!(!at_120(&a));
    press(&mut a, "t");
    assert!(at_120(&a), "split");
}
