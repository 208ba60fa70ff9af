//! Snapshots of the edit path's views, drawn by the real App: a change edited in `$EDITOR`
//! and reviewed again, a command edited before it runs, and the choice of a command rule's
//! prefix; and the light theme on a change under review.

use super::tui_views::{app, change_request, draw, feed, snapshot, text};
use crossterm::event::{KeyCode, KeyEvent};
use lilypad::diff::FileDiff;
use lilypad::protocol::{
    ApprovalKind, ApprovalRequest, Event, Op, ReviewDecision, ToolCall, ToolCategory,
};
use lilypad::tui::app::{App, Effect};
use lilypad::tui::Theme;

fn key(app: &mut App, c: KeyCode) -> Vec<Effect> {
    app.on_key(KeyEvent::from(c))
}

/// Perform diff effects at once, as the runner does off the draw path.
fn perform(app: &mut App, fx: Vec<Effect>) {
    for f in fx {
        if let Effect::ComputeDiff {
            id,
            path,
            before,
            after,
            revision,
        } = f
        {
            let d = FileDiff::compute_with(&path, before.as_deref(), &after, &app.hl);
            app.on_diff_of(id, revision, d);
        }
    }
}

#[test]
fn an_edited_change_is_reviewed_again() {
    let mut a = app();
    feed(&mut a, vec![change_request()]);
    let fx = key(&mut a, KeyCode::Char('e'));
    let Some(Effect::OpenEditor {
        id, text: opened, ..
    }) = fx.first().cloned()
    else {
        panic!("{fx:?}")
    };
    let edited = opened.replace("a + b", "b + a");
    let fx = a.on_edited(id, Ok(edited.clone()));
    perform(&mut a, fx);
    let buf = draw(&a);
    snapshot("edited_review", &buf);
    assert!(text(&buf).contains("Approve your version of this rewrite?"));
    // Unchanged the second time: the same review, and a note says so.
    key(&mut a, KeyCode::Char('e'));
    a.on_edited(id, Ok(edited.clone()));
    assert!(text(&draw(&a)).contains("unchanged in the editor"));
    let fx = key(&mut a, KeyCode::Char('y'));
    assert_eq!(
        fx,
        vec![Effect::Send(Op::Review {
            id,
            decision: ReviewDecision::ApproveEdited { text: edited }
        })]
    );
}

fn command_request() -> Event {
    let c = ToolCall {
        id: "call_3".into(),
        name: "Bash".into(),
        arguments: serde_json::json!({"command": "python3 -m pytest -q tests/"})
            .as_object()
            .cloned()
            .unwrap(),
    };
    Event::ApprovalRequested(ApprovalRequest {
        id: 8,
        call: c,
        category: ToolCategory::Commands,
        kind: ApprovalKind::Command {
            command: "python3 -m pytest -q tests/".into(),
            description: None,
            timeout_seconds: 120.0,
        },
    })
}

#[test]
fn an_edited_command_and_the_prefix_choice() {
    let mut a = app();
    feed(&mut a, vec![command_request()]);
    let fx = key(&mut a, KeyCode::Char('e'));
    assert!(matches!(&fx[..], [Effect::OpenEditor { path, .. }] if path == "command.sh"));
    a.on_edited(8, Ok("python3 -m pytest -x tests/\n".into()));
    let buf = draw(&a);
    snapshot("edited_command", &buf);
    assert!(text(&buf).contains("Run your edited command?"));
    // An emptied file changes nothing.
    key(&mut a, KeyCode::Char('e'));
    a.on_edited(8, Ok("\n".into()));
    assert!(text(&draw(&a)).contains("python3 -m pytest -x tests/"));

    key(&mut a, KeyCode::Char('p'));
    let buf = draw(&a);
    snapshot("prefix_choice", &buf);
    assert!(text(&buf).contains("starting with “python3 -m pytest”"));
    key(&mut a, KeyCode::Left);
    assert!(text(&draw(&a)).contains("starting with “python3 -m”"));
    let fx = key(&mut a, KeyCode::Char('s'));
    assert_eq!(
        fx,
        vec![
            Effect::SaveRule {
                prefix: "python3 -m".into()
            },
            Effect::Send(Op::Review {
                id: 8,
                decision: ReviewDecision::ApprovePrefix {
                    prefix: "python3 -m".into()
                }
            })
        ]
    );
}

#[test]
fn the_light_theme_colours_a_review_by_its_roles() {
    let mut a = App::new(lilypad::tui::app::AppOptions {
        theme: Theme::light(),
        repo: None,
        has_patch: true,
        replay: false,
    });
    feed(&mut a, vec![change_request()]);
    let buf = draw(&a);
    let t = Theme::light();
    assert_ne!(t.added_bg, Theme::dark().added_bg);
    let screen = text(&buf);
    let row = screen
        .lines()
        .position(|l| l.contains("+    return a + b"))
        .unwrap();
    let line = screen.lines().nth(row).unwrap();
    let col = line[..line.find("return a + b").unwrap()].chars().count() as u16;
    assert_eq!(buf[(col, row as u16)].bg, t.added_bg);
    assert_eq!(buf[(col, row as u16 - 1)].bg, t.removed_bg);
}
