//! `/export` in the interface: the palette command (and Alt-E) asks the runner to write the
//! session as Markdown, and the App says where it went, or why it did not.

use super::tui_views::{app, draw, feed, session_start, text};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use lilypad::tui::actions::ActionError;
use lilypad::tui::app::Effect;
use lilypad::tui::KeyScheme;
use std::path::PathBuf;

#[test]
fn the_palette_command_and_alt_e_export_and_the_path_is_shown() {
    let mut a = app();
    a.keys = KeyScheme::Chat;
    feed(&mut a, session_start());
    for c in "/export".chars() {
        a.on_key(KeyEvent::from(KeyCode::Char(c)));
    }
    assert_eq!(
        a.on_key(KeyEvent::from(KeyCode::Enter)),
        vec![Effect::ExportSession]
    );
    assert_eq!(
        a.on_key(KeyEvent::new(KeyCode::Char('e'), KeyModifiers::ALT)),
        vec![Effect::ExportSession]
    );
    a.on_exported(Ok(PathBuf::from("/sessions/s1.md")));
    assert!(text(&draw(&a)).contains("session written as Markdown to /sessions/s1.md"));
    a.on_exported(Err(ActionError::NoLog));
    assert!(text(&draw(&a)).contains("the session was not exported: this session has no log"));
}
