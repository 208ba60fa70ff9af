//! `/check` in the interface: the palette command (and Alt-K) runs the repository's check
//! command in the sandbox as `!cmd` runs a command; without one, a notice says where to set it.

use super::tui_views::{app, draw, feed, session_start, text};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use lilypad::protocol::Op;
use lilypad::tui::app::Effect;
use lilypad::tui::KeyScheme;

#[test]
fn the_check_command_runs_in_the_sandbox_or_says_where_to_set_it() {
    let mut a = app();
    a.keys = KeyScheme::Chat;
    a.check = Some("python -m pytest -q".into());
    feed(&mut a, session_start());
    for c in "/check".chars() {
        a.on_key(KeyEvent::from(KeyCode::Char(c)));
    }
    assert_eq!(
        a.on_key(KeyEvent::from(KeyCode::Enter)),
        vec![Effect::Send(Op::Shell {
            command: "python -m pytest -q".into()
        })]
    );
    assert!(text(&draw(&a)).contains("$ python -m pytest -q"));

    let mut b = app();
    b.keys = KeyScheme::Chat;
    feed(&mut b, session_start());
    assert!(b
        .on_key(KeyEvent::new(KeyCode::Char('k'), KeyModifiers::ALT))
        .is_empty());
    assert!(text(&draw(&b)).contains("no check command"));
}
