//! The message line's pickers on the real App, in the default (chat) keys: `/` on an empty
//! line opens the command palette, typing filters it, Enter runs the chosen command and Esc
//! closes it keeping the text; a prompt file is sent expanded with the words typed after its
//! name; `@` opens the file picker, which asks for the repository's paths each time it opens,
//! filters them as the word after `@` is typed and puts the chosen path in place of that word.

use super::tui_views::{app, draw, feed, session_start, snapshot, text};
use crossterm::event::{KeyCode, KeyEvent};
use lilypad::protocol::Op;
use lilypad::tui::app::pickers::Entry;
use lilypad::tui::app::{App, Effect, Mode, Overlay};
use lilypad::tui::keymap::Context;
use lilypad::tui::prompts::PromptFile;
use lilypad::tui::KeyScheme;

fn chat_app() -> App {
    let mut a = app();
    a.keys = KeyScheme::Chat;
    a.options.repo = Some(std::path::PathBuf::from("/repo"));
    feed(&mut a, session_start());
    a
}

fn key(app: &mut App, c: KeyCode) -> Vec<Effect> {
    app.on_key(KeyEvent::from(c))
}

fn typed(app: &mut App, s: &str) -> Vec<Effect> {
    s.chars().flat_map(|c| key(app, KeyCode::Char(c))).collect()
}

fn names(app: &App) -> Vec<String> {
    app.palette_entries()
        .iter()
        .map(|e| e.name().to_string())
        .collect()
}

#[test]
fn slash_on_an_empty_line_opens_the_palette_and_typing_filters_it() {
    let mut a = chat_app();
    typed(&mut a, "/");
    assert!(a.palette.is_some());
    assert_eq!(a.contexts()[0], Context::Palette);
    let all = names(&a);
    assert!(
        ["patch", "step", "rewind", "quit", "help"]
            .iter()
            .all(|n| all.iter().any(|a| a == n)),
        "{all:?}"
    );
    typed(&mut a, "pa");
    assert_eq!(names(&a)[0], "patch");
    let screen = text(&draw(&a));
    assert!(screen.contains("/patch"), "{screen}");
    assert!(screen.contains("show the session patch"), "{screen}");
    // Backspacing the slash closes it.
    for _ in 0..3 {
        key(&mut a, KeyCode::Backspace);
    }
    assert!(a.palette.is_none());
    assert!(!text(&draw(&a)).contains("/patch"));
    // A slash later in a message is just a character.
    typed(&mut a, "see a/b");
    assert!(a.palette.is_none());
}

#[test]
fn enter_runs_the_chosen_command_and_esc_keeps_the_text() {
    let mut a = chat_app();
    typed(&mut a, "/patch");
    let fx = key(&mut a, KeyCode::Enter);
    assert_eq!(fx, vec![Effect::ExportPatch]);
    assert_eq!(
        a.composer.input.text(),
        "",
        "the command is not left on the line"
    );
    assert!(a.palette.is_none());

    // Down chooses the next entry; Enter runs that one.
    typed(&mut a, "/");
    let second = names(&a)[1].clone();
    key(&mut a, KeyCode::Down);
    assert_eq!(a.palette.as_ref().map(|p| p.selected), Some(1));
    key(&mut a, KeyCode::Up);
    key(&mut a, KeyCode::Up);
    assert_eq!(
        a.palette.as_ref().map(|p| p.selected),
        Some(names(&a).len() - 1),
        "Up from the first goes round to the last"
    );
    assert_ne!(second, "");
    for _ in 0..2 {
        key(&mut a, KeyCode::Backspace);
    }

    typed(&mut a, "/help");
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.overlay, Some(Overlay::Help));
    key(&mut a, KeyCode::Esc);
    assert_eq!(a.overlay, None);

    // Esc closes the palette; the text stays and Enter sends it as a message.
    typed(&mut a, "/usr/bin is missing");
    assert!(a.palette.is_some());
    assert!(a.palette_entries().is_empty());
    key(&mut a, KeyCode::Esc);
    assert!(a.palette.is_none());
    assert_eq!(a.composer.input.text(), "/usr/bin is missing");
    let fx = key(&mut a, KeyCode::Enter);
    assert_eq!(
        fx,
        vec![Effect::Send(Op::UserMessage {
            text: "/usr/bin is missing".into()
        })]
    );
}

#[test]
fn a_prompt_file_is_sent_expanded_with_its_arguments() {
    let mut a = chat_app();
    a.prompts = vec![PromptFile::parse(
        "fix",
        "---\ndescription: Fix a test\nargument-hint: FILE [WHY]\n---\nFix $1 because $2. All: $ARGUMENTS\n",
    )];
    typed(&mut a, "/fi");
    snapshot("palette_prompt", &draw(&a));
    let entries = a.palette_entries();
    assert!(matches!(entries[0], Entry::Prompt(_)), "{:?}", names(&a));
    let screen = text(&draw(&a));
    assert!(screen.contains("FILE [WHY]"), "{screen}");
    assert!(screen.contains("Fix a test"), "{screen}");
    // Tab completes the name and a space, for the arguments.
    key(&mut a, KeyCode::Tab);
    assert_eq!(a.composer.input.text(), "/fix ");
    typed(&mut a, "calc.py 'it adds wrong'");
    assert_eq!(
        names(&a),
        ["fix"],
        "only the name typed, once arguments follow"
    );
    let fx = key(&mut a, KeyCode::Enter);
    assert_eq!(
        fx,
        vec![Effect::Send(Op::UserMessage {
            text: "Fix calc.py because it adds wrong. All: calc.py it adds wrong".into()
        })]
    );
    assert_eq!(a.composer.input.text(), "");
}

#[test]
fn at_opens_the_file_picker_and_enter_puts_the_path_in_place() {
    let mut a = chat_app();
    typed(&mut a, "look at ");
    let fx = typed(&mut a, "@");
    assert_eq!(fx, vec![Effect::ListPaths]);
    assert_eq!(a.contexts()[0], Context::PathPicker);
    assert!(text(&draw(&a)).contains("reading the repository"));
    a.on_paths(Ok(vec![
        "README.md".into(),
        "src/calc.py".into(),
        "tests/test_calc.py".into(),
    ]));
    typed(&mut a, "tcal");
    assert_eq!(a.path_matches(), ["tests/test_calc.py"]);
    assert!(text(&draw(&a)).contains("tests/test_calc.py"));
    key(&mut a, KeyCode::Enter);
    assert!(a.picker.is_none());
    assert_eq!(a.composer.input.text(), "look at tests/test_calc.py ");
    // A second picker reads the repository again, and meanwhile ranks the last listing; Esc
    // closes it, keeping what was typed.
    let fx = typed(&mut a, "and @cal");
    assert_eq!(fx, vec![Effect::ListPaths]);
    assert_eq!(a.path_matches()[0], "src/calc.py");
    key(&mut a, KeyCode::Esc);
    assert!(a.picker.is_none());
    assert_eq!(
        a.composer.input.text(),
        "look at tests/test_calc.py and @cal"
    );
    assert!(matches!(a.mode, Mode::Transcript));
    // An @ inside a word (an e-mail address) opens nothing.
    typed(&mut a, " me@host");
    assert!(a.picker.is_none());
}
