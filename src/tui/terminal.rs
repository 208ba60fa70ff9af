//! The terminal's modes: raw mode, the alternate screen, bracketed paste, focus reports, mouse
//! reports (for the wheel), the saved window title and, where the terminal has them,
//! unambiguous key reports (the kitty keyboard protocol, so Shift-Enter is not Enter) on
//! entry, and restored on every way out: normal exit and errors (the [`TerminalGuard`]'s
//! drop) and panics (a hook installed before the screen is taken over, chained to the previous
//! hook so the panic message still prints, on the restored screen). Also suspends the program
//! (Ctrl-Z) with the terminal restored while it is stopped. Does not decide when to do any of
//! this (the runner does).

use crossterm::event::{
    DisableBracketedPaste, DisableFocusChange, DisableMouseCapture, EnableBracketedPaste,
    EnableFocusChange, EnableMouseCapture,
};
use crossterm::execute;
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;
use std::io::{stdout, Stdout};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

use super::settings::Screen;

/// Whether the alternate screen was entered (and so is to be left: leaving one that was never
/// entered would move the cursor).
static ALTERNATE: AtomicBool = AtomicBool::new(false);

pub type Term = Terminal<CrosstermBackend<Stdout>>;

/// Whether unambiguous key reports were asked for (and so are to be turned off again).
static ENHANCED_KEYS: AtomicBool = AtomicBool::new(false);
/// Whether the terminal said it has them (asked once, before keys are read on their thread).
static KEYS_SUPPORTED: AtomicBool = AtomicBool::new(false);

/// Ask for unambiguous key reports where the terminal has them; `query`: ask the terminal
/// first (only while nothing else reads its input).
fn enhance_keys(query: bool) {
    use crossterm::event::{KeyboardEnhancementFlags, PushKeyboardEnhancementFlags};
    if query {
        let yes = crossterm::terminal::supports_keyboard_enhancement().unwrap_or(false);
        KEYS_SUPPORTED.store(yes, Ordering::SeqCst);
    }
    if KEYS_SUPPORTED.load(Ordering::SeqCst)
        && execute!(
            stdout(),
            PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
        )
        .is_ok()
    {
        ENHANCED_KEYS.store(true, Ordering::SeqCst);
    }
}

/// Whether the window title was saved (xterm's title stack), to be put back.
static TITLE_SAVED: AtomicBool = AtomicBool::new(false);

/// Save the window title, so that the titles the runner sets can be undone.
fn save_title() {
    use std::io::Write;
    let mut out = stdout();
    if out
        .write_all(b"\x1b[22;0t")
        .and_then(|_| out.flush())
        .is_ok()
    {
        TITLE_SAVED.store(true, Ordering::SeqCst);
    }
}

/// Put the terminal back as it was. Safe to call more than once.
pub fn restore() {
    if ENHANCED_KEYS.swap(false, Ordering::SeqCst) {
        let _ = execute!(stdout(), crossterm::event::PopKeyboardEnhancementFlags);
    }
    if TITLE_SAVED.swap(false, Ordering::SeqCst) {
        use std::io::Write;
        let mut out = stdout();
        let _ = out.write_all(b"\x1b[23;0t").and_then(|_| out.flush());
    }
    let _ = disable_raw_mode();
    let _ = execute!(
        stdout(),
        DisableBracketedPaste,
        DisableFocusChange,
        DisableMouseCapture
    );
    if ALTERNATE.swap(false, Ordering::SeqCst) {
        let _ = execute!(stdout(), LeaveAlternateScreen);
    }
    let _ = execute!(stdout(), crossterm::cursor::Show);
}

fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}

/// Owns the terminal while the interface runs; restores it when dropped.
pub struct TerminalGuard {
    pub term: Term,
    screen: Screen,
}

/// The modes of `screen`, switched on.
fn take(out: &mut impl std::io::Write, screen: Screen) -> std::io::Result<()> {
    if screen.alternate {
        execute!(out, EnterAlternateScreen)?;
        ALTERNATE.store(true, Ordering::SeqCst);
    }
    execute!(out, EnableBracketedPaste, EnableFocusChange)?;
    if screen.mouse {
        execute!(out, EnableMouseCapture)?;
    }
    Ok(())
}

impl TerminalGuard {
    pub fn enter(screen: Screen) -> std::io::Result<Self> {
        install_panic_hook();
        enable_raw_mode()?;
        let mut out = stdout();
        if let Err(e) = take(&mut out, screen) {
            restore();
            return Err(e);
        }
        save_title();
        enhance_keys(true);
        let term = match Terminal::new(CrosstermBackend::new(out)) {
            Ok(t) => t,
            Err(e) => {
                restore();
                return Err(e);
            }
        };
        Ok(Self { term, screen })
    }

    /// Hand the terminal to another program (an editor) and take it back after `f`.
    pub fn suspended<T>(&mut self, f: impl FnOnce() -> T) -> std::io::Result<T> {
        restore();
        let out = f();
        enable_raw_mode()?;
        take(&mut stdout(), self.screen)?;
        save_title();
        enhance_keys(false);
        self.term.clear()?;
        Ok(out)
    }
}

/// Stop the program as a shell's Ctrl-Z would (SIGTSTP to its process group, which holds the
/// commands it runs), with the terminal restored meanwhile; returns once the shell's `fg`
/// continues it, the screen taken back. Where no shell can continue it (its process group is
/// orphaned), the kernel drops the signal and this returns at once.
pub fn suspend(guard: &mut TerminalGuard) -> std::io::Result<()> {
    guard.suspended(|| {
        // SAFETY: kill(2) with pid 0 and a valid signal number has no memory effects.
        unsafe {
            libc::kill(0, libc::SIGTSTP);
        }
    })
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}
