//! The interface's conventions, on the real App and views: Ctrl-C interrupts, and a second
//! Ctrl-C (or `q`) at the quit question quits; the mouse wheel scrolls the transcript and a
//! review; `/` finds text in the transcript and `n`/`N` move between matches; the help overlay
//! wraps its descriptions and scrolls; docs/interface.md lists every key of the key table.

use super::tui_views::{app, change_request, draw, feed, session_start, snapshot, text};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use lilypad::protocol::{Event, Op};
use lilypad::tui::app::{App, Effect, Overlay};
use lilypad::tui::{keymap, views, Direction};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

fn key(app: &mut App, c: KeyCode) -> Vec<Effect> {
    app.on_key(KeyEvent::from(c))
}

fn ctrl_c(app: &mut App) -> Vec<Effect> {
    app.on_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL))
}

fn typed(app: &mut App, s: &str) {
    for c in s.chars() {
        key(app, KeyCode::Char(c));
    }
}

fn quits(fx: &[Effect]) -> bool {
    fx.contains(&Effect::Quit) && fx.contains(&Effect::Send(Op::Shutdown))
}

#[test]
fn ctrl_c_interrupts_the_agent_and_a_second_ctrl_c_quits() {
    let mut a = app();
    feed(&mut a, session_start());
    assert!(a.status.state.is_busy());
    let fx = ctrl_c(&mut a);
    assert_eq!(
        fx,
        vec![Effect::Send(Op::Interrupt)],
        "the first interrupts"
    );
    assert!(matches!(a.overlay, Some(Overlay::ConfirmQuit(_))));
    snapshot("quit_question", &draw(&a));
    assert!(quits(&ctrl_c(&mut a)), "the second quits");

    // `q` at the question quits as well; `n` stays, interrupted.
    let mut b = app();
    feed(&mut b, session_start());
    ctrl_c(&mut b);
    assert!(quits(&key(&mut b, KeyCode::Char('q'))));
    let mut c = app();
    feed(&mut c, session_start());
    ctrl_c(&mut c);
    assert!(key(&mut c, KeyCode::Char('n')).is_empty());
    assert!(c.overlay.is_none());
}

#[test]
fn ctrl_c_with_nothing_to_lose_quits_at_once() {
    let mut a = app();
    feed(&mut a, session_start());
    feed(
        &mut a,
        vec![Event::TaskFinished {
            reason: lilypad::protocol::FinishReason::Answered,
            final_answer: None,
        }],
    );
    assert!(quits(&ctrl_c(&mut a)));
}

/// A transcript longer than the screen, with one line that says `needle` near its start.
fn long_transcript() -> App {
    let mut a = app();
    let mut evs = session_start();
    evs.push(Event::ContentDelta {
        text: "the needle is here\n\n".into(),
    });
    for i in 0..80 {
        evs.push(Event::ContentDelta {
            text: format!("line {i} of hay\n\n"),
        });
    }
    evs.push(Event::ContentDelta {
        text: "a second needle at the end\n".into(),
    });
    feed(&mut a, evs);
    draw(&a);
    a
}

#[test]
fn search_jumps_to_a_match_and_moves_between_matches() {
    let mut a = long_transcript();
    assert!(!text(&draw(&a)).contains("the needle is here"));
    key(&mut a, KeyCode::Char('/'));
    typed(&mut a, "needle");
    snapshot("search_typing", &draw(&a));
    key(&mut a, KeyCode::Enter);
    // From the top of the view down: the one at the end first.
    let screen = text(&draw(&a));
    assert!(screen.contains("a second needle"), "{screen}");
    assert!(screen.contains("match 2 of 2"), "{screen}");
    // `n` wraps to the top.
    key(&mut a, KeyCode::Char('n'));
    let buf = draw(&a);
    snapshot("search_found", &buf);
    let screen = text(&buf);
    assert!(screen.contains("the needle is here"), "{screen}");
    assert!(screen.contains("match 1 of 2"), "{screen}");
    // The match is marked: reversed cells over the word.
    let row = screen
        .lines()
        .position(|l| l.contains("the needle"))
        .unwrap() as u16;
    let col = screen
        .lines()
        .nth(row as usize)
        .unwrap()
        .find("needle")
        .unwrap() as u16;
    let col = screen.lines().nth(row as usize).unwrap()[..col as usize]
        .chars()
        .count() as u16;
    assert!(buf[(col, row)]
        .modifier
        .contains(ratatui::style::Modifier::REVERSED));
    // `N` goes back up (wrapping to the end); Esc ends the search and `n` is step mode's again.
    key(&mut a, KeyCode::Char('N'));
    assert!(text(&draw(&a)).contains("match 2 of 2"));
    key(&mut a, KeyCode::Esc);
    assert!(a.search.is_none());
    assert!(!text(&draw(&a)).contains("match 2 of 2"));
    // A query with no match says so.
    key(&mut a, KeyCode::Char('/'));
    typed(&mut a, "Needle");
    key(&mut a, KeyCode::Enter);
    assert!(
        text(&draw(&a)).contains("no match"),
        "smart case: capitals match exactly"
    );
}

#[test]
fn the_mouse_wheel_scrolls_the_transcript_and_the_review() {
    let mut a = long_transcript();
    let (top, _, follow) = a.transcript.position();
    assert!(follow);
    a.on_wheel(Direction::Back);
    draw(&a);
    let (after, _, follow) = a.transcript.position();
    assert_eq!(after + 3, top);
    assert!(!follow);
    a.on_wheel(Direction::Forward);
    draw(&a);
    assert_eq!(a.transcript.position().0, top);

    // During a change's review the wheel scrolls what is under the pointer: the docked
    // panel's diff, or the conversation above it.
    let mut r = app();
    feed(&mut r, vec![change_request()]);
    draw(&r);
    let scroll = |r: &lilypad::tui::App| match &r.mode {
        lilypad::tui::app::Mode::Review(lilypad::tui::app::Review::Change(c)) => {
            (c.cursor.scroll, c.dock.panel.get().y)
        }
        other => panic!("{other:?}"),
    };
    r.on_wheel_at(Direction::Forward, 0);
    assert_eq!(scroll(&r).0, 0, "row 0 is the conversation's");
    let panel = scroll(&r).1;
    // Over the panel: the diff, which fits in it, so no further than its end.
    r.on_wheel_at(Direction::Forward, panel + 1);
    assert_eq!(scroll(&r).0, 0);
    assert!(r.transcript.position().2, "the conversation did not scroll");
}

/// The text of columns `xs` of every row, whitespace collapsed.
fn column_text(buf: &ratatui::buffer::Buffer, xs: std::ops::Range<u16>) -> String {
    let mut out = String::new();
    for y in 0..buf.area.height {
        for x in xs.clone() {
            out.push_str(buf[(x, y)].symbol());
        }
        out.push(' ');
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn the_help_wraps_its_descriptions_at_120_columns_and_scrolls_to_the_end() {
    let (w, h) = (120u16, 40u16);
    let mut a = app();
    feed(&mut a, session_start());
    key(&mut a, KeyCode::Char('?'));
    let mut seen = Vec::new();
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    // A row at a time, so that no description is cut by a page's edge; until the end.
    for step in 0..1000 {
        term.draw(|f| views::draw(f, &a)).unwrap();
        let buf = term.backend().buffer().clone();
        if step == 0 {
            snapshot("help_overlay_120", &buf);
        }
        // The popup's inner area starts at x 3 and is split in two columns.
        let half = (w - 6) / 2;
        let (left, right) = (
            column_text(&buf, 3..3 + half),
            column_text(&buf, 3 + half..w - 3),
        );
        if seen.len() >= 2 && seen[seen.len() - 2] == left && seen[seen.len() - 1] == right {
            break;
        }
        seen.push(left);
        seen.push(right);
        key(&mut a, KeyCode::Down);
    }
    for (_, entries) in keymap::help_sections() {
        for (_, help) in entries {
            let want = help.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(
                seen.iter().any(|s| s.contains(&want)),
                "{help:?} is not shown whole"
            );
        }
    }
}

#[test]
fn the_interface_page_lists_every_key_of_the_table() {
    let path = format!("{}/docs/interface.md", env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(&path).unwrap();
    let (begin, end) = ("<!-- keys:begin -->", "<!-- keys:end -->");
    let (Some(b), Some(e)) = (page.find(begin), page.find(end)) else {
        panic!("docs/interface.md has no {begin} … {end} section");
    };
    let want = format!("{begin}\n{}{end}", keymap::markdown());
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        let new = format!("{}{want}{}", &page[..b], &page[e + end.len()..]);
        std::fs::write(&path, new).unwrap();
        return;
    }
    assert_eq!(
        &page[b..e + end.len()],
        want,
        "docs/interface.md's key list is not the key table's (UPDATE_SNAPSHOTS=1 rewrites it)"
    );
}
