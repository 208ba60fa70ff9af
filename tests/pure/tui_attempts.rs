//! The attempts board drawn into ratatui's `TestBackend`: three attempts at one task, two of
//! which made the same patch. Each column shows the figures, then its patch as the change
//! review draws it (highlighted, from the first hunk), or `same patch as attempt N` for the
//! later of two alike, and the last lines of its check's output at the bottom. Snapshot in
//! `tests/snapshots/tui/attempts_board.txt` (`UPDATE_SNAPSHOTS=1` rewrites it).

use crate::tui_views::{app, snapshot, text};
use lilypad::diff::{patch, FileDiff, Highlighter};
use lilypad::protocol::{Event, FinishReason};
use lilypad::tui::attempts::{view, Board};
use lilypad::tui::Theme;
use ratatui::backend::TestBackend;
use ratatui::Terminal;

const BEFORE: &str = "def add(a, b):\n    return a - b\n\n\ndef scale(x):\n    return x\n";

/// A parsed patch of `calc.py` from [`BEFORE`] to `after`, as an attempt exports it.
fn patch_of(after: &str) -> (Vec<u8>, Vec<FileDiff>) {
    let d = FileDiff::compute("calc.py", Some(BEFORE), after);
    let text = format!("diff --git a/calc.py b/calc.py\n{}", d.unified());
    let files = patch::parse(&text, &Highlighter::default());
    (text.into_bytes(), files)
}

fn check(i: usize, passed: bool, output: &str) -> (usize, Event) {
    (
        i,
        Event::CheckFinished {
            command: "pytest -q".into(),
            passed,
            exit_code: Some(if passed { 0 } else { 1 }),
            output: output.into(),
        },
    )
}

#[test]
fn the_board_shows_each_patch_its_twins_and_the_check_tail() {
    let mut board = Board::new(&[11, 22, 33]);
    let fixed = BEFORE.replace("a - b", "a + b");
    let other = BEFORE.replace("return x", "return 2 * x");
    for (i, after) in [(0, &fixed), (1, &other), (2, &fixed)] {
        let (raw, files) = patch_of(after);
        board.on_patch(i, raw, files);
    }
    let failing = "platform linux -- Python 3.11.2\nrootdir: /workspace\ncollected 2 items\n\n\
                   test_calc.py::test_add PASSED\ntest_calc.py::test_scale FAILED\n\
                   def test_scale():\n>       assert scale(2) == 2\nE   assert 4 == 2\n\
                   1 failed, 1 passed in 0.02s\n";
    for (i, ev) in [
        check(0, true, "collected 2 items\n2 passed in 0.01s\n"),
        check(1, false, failing),
        check(2, true, "collected 2 items\n2 passed in 0.01s\n"),
    ] {
        board.on_event(
            i,
            &Event::TaskFinished {
                reason: FinishReason::Answered,
                final_answer: None,
            },
        );
        board.on_event(i, &ev);
    }
    let apps = [app(), app(), app()];
    let refs: Vec<_> = apps.iter().collect();
    let theme = Theme::dark();
    let mut term = Terminal::new(TestBackend::new(120, 30)).unwrap();
    term.draw(|f| view::draw(f, &board, &refs, &theme)).unwrap();
    let buf = term.backend().buffer().clone();
    snapshot("attempts_board", &buf);

    let screen = text(&buf);
    let rows: Vec<&str> = screen.lines().collect();
    // Columns are 40 cells wide: attempt 1 at 0, attempt 2 at 40, attempt 3 at 80.
    let column = |c: usize| -> Vec<String> {
        rows.iter()
            .map(|r| r.chars().skip(c * 40).take(40).collect())
            .collect()
    };
    let has = |c: usize, what: &str| column(c).iter().any(|r| r.contains(what));
    assert!(has(0, "return a + b") && has(0, "return a - b"), "{screen}");
    assert!(has(1, "return 2 * x") && !has(1, "a + b"), "{screen}");
    assert!(has(2, "same patch as attempt 1"), "{screen}");
    assert!(
        !has(2, "return a + b"),
        "the twin's patch is not drawn again"
    );
    assert!(!has(0, "same patch") && !has(1, "same patch"), "{screen}");
    // The tail of the check: the failing attempt's last lines, not its first.
    assert!(
        has(1, "1 failed, 1 passed") && has(1, "E   assert 4 == 2"),
        "{screen}"
    );
    assert!(!has(1, "platform linux"), "{screen}");
    assert!(has(0, "2 passed in 0.01s"), "{screen}");
    // The tail comes below the patch.
    let row_of = |c: usize, what: &str| column(c).iter().position(|r| r.contains(what));
    assert!(
        row_of(1, "return 2 * x") < row_of(1, "1 failed"),
        "{screen}"
    );

    // Highlighted as in the change review: the added line has the added background.
    let y = row_of(0, "return a + b").unwrap();
    let x = column(0)[y].chars().position(|c| c == 'r').unwrap() as u16;
    assert_eq!(buf[(x, y as u16)].bg, theme.added_bg, "{screen}");
}
