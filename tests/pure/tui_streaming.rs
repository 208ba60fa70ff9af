//! A tool call's arguments streaming into the transcript, on the real App and views: the file
//! path in the header first, then the content growing under it (the newest lines), coloured
//! once the path is complete; the review opens when the call is decided.

use super::tui_views::{app, call, draw, feed, session_start, snapshot, text, BEFORE};
use lilypad::protocol::{ApprovalKind, ApprovalRequest, Event, ToolCategory};
use lilypad::tui::app::{Mode, Review};

fn delta(parameter: &str, text: &str) -> Event {
    Event::ToolCallArgumentDelta {
        parameter: parameter.into(),
        text: text.into(),
    }
}

const CONTENT: &str = "def add(a, b):\n    return a + b\n\n\ndef one():\n    return 1\n";

#[test]
fn a_write_streams_its_path_then_its_content() {
    let mut a = app();
    feed(&mut a, session_start());
    feed(
        &mut a,
        vec![Event::ToolCallStarted {
            name: "Write".into(),
        }],
    );
    assert!(text(&draw(&a)).contains("○ Write(Write…)"));
    // Half the path: shown as it is, not coloured yet.
    feed(&mut a, vec![delta("file_path", "calc")]);
    assert!(
        text(&draw(&a)).contains("○ Write(calc)"),
        "{}",
        text(&draw(&a))
    );
    feed(&mut a, vec![delta("file_path", ".py")]);
    let (first, rest) = CONTENT.split_at(32);
    feed(&mut a, vec![delta("content", first)]);
    let screen = text(&draw(&a));
    assert!(screen.contains("○ Write(calc.py)"), "{screen}");
    assert!(screen.contains("    return a + b"), "{screen}");
    assert!(!screen.contains("def one"), "{screen}");
    snapshot("write_streaming", &draw(&a));
    // The path is complete once the content began: the code is coloured by its type.
    let buf = draw(&a);
    let row_text = |y: u16| {
        (0..buf.area.width)
            .map(|x| buf[(x, y)].symbol())
            .collect::<String>()
    };
    let header = (0..buf.area.height)
        .find(|&y| row_text(y).contains("Write(calc.py)"))
        .unwrap();
    let row = header + 1;
    assert!(row_text(row).starts_with("    def add(a, b):"));
    let colours: std::collections::HashSet<_> = (4..20).map(|x| buf[(x, row)].fg).collect();
    assert!(
        colours.len() > 1,
        "one colour on a Python line: {colours:?}"
    );
    feed(&mut a, vec![delta("content", rest)]);
    assert!(text(&draw(&a)).contains("def one():"));
    // The call is decided: its review opens with the diff.
    let whole = call(
        "call_2",
        "Write",
        serde_json::json!({"file_path": "calc.py", "content": CONTENT}),
    );
    feed(
        &mut a,
        vec![
            Event::ToolCallReady {
                call: whole.clone(),
            },
            Event::ApprovalRequested(ApprovalRequest {
                id: 3,
                call: whole,
                category: ToolCategory::Edits,
                kind: ApprovalKind::Change {
                    path: "calc.py".into(),
                    before: Some(BEFORE.into()),
                    after: CONTENT.into(),
                    binary_before: false,
                },
            }),
        ],
    );
    assert!(matches!(&a.mode, Mode::Review(Review::Change(c)) if c.path == "calc.py"));
    let tools: Vec<_> = a
        .transcript
        .cells()
        .iter()
        .filter(|c| matches!(c.kind, lilypad::tui::transcript::CellKind::Tool(_)))
        .collect();
    // One item for the call: the streamed one took the settled call.
    assert_eq!(tools.len(), 2, "the Read and the Write");
}

#[test]
fn a_long_write_shows_its_newest_lines() {
    let mut a = app();
    feed(&mut a, session_start());
    let body: String = (1..=40).map(|i| format!("line {i}\n")).collect();
    feed(
        &mut a,
        vec![
            Event::ToolCallStarted {
                name: "Write".into(),
            },
            delta("file_path", "notes.txt"),
            delta("content", &body),
        ],
    );
    let screen = text(&draw(&a));
    assert!(screen.contains("… 28 lines above"), "{screen}");
    assert!(screen.contains("line 40"), "{screen}");
    assert!(!screen.contains("line 28\n"), "{screen}");
}
