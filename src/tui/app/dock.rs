//! The docked review's own state and keys: which pane has the focus (the diff or the
//! conversation above it), whether the change fills the screen, and the layout of diffs (split
//! or unified, `t`). While a decision waits the conversation stays where the person leaves it:
//! PgUp/PgDn and the wheel over it scroll it, the diff keys move in the diff, Tab switches the
//! pane that the arrow keys move.
//!
//! Owns the dock's keys (`act_dock`) and the wheel's routing during a review; does not own the
//! decisions (`app::keys::review`, `App::act_review`) nor the drawing (`views::dock`).

use super::{App, Effect, Mode, Review};
use crate::tui::keymap::Action;
use crate::tui::Direction;
use ratatui::layout::Rect;
use std::cell::Cell;

/// Which part of the docked review the arrow keys move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pane {
    /// The line cursor of the diff (the default).
    #[default]
    Diff,
    /// The conversation above the panel.
    Conversation,
}

/// The docked review's view state, one per change under review.
#[derive(Debug, Default)]
pub struct DockView {
    pub pane: Pane,
    /// The change fills the area above the message line, the turn's last words pinned on top.
    pub full_screen: bool,
    /// Where the panel was drawn last (for the wheel), and the frame's width (for `t`).
    pub panel: Cell<Rect>,
    pub width: Cell<u16>,
}

impl DockView {
    /// Whether terminal row `row` was inside the panel in the last drawing.
    pub fn holds_row(&self, row: u16) -> bool {
        let p = self.panel.get();
        p.height > 0 && row >= p.y && row < p.y + p.height
    }
}

impl App {
    /// The dock's keys during a review (a change's or a command's); `false`: not one of
    /// them, the review's own keys decide.
    pub(super) fn act_dock(&mut self, action: Action) -> bool {
        use Action as A;
        let c = match &mut self.mode {
            Mode::Review(Review::Change(c)) => c,
            Mode::Review(Review::Command(_)) => {
                let to = match action {
                    A::PageUp => Direction::Back,
                    A::PageDown => Direction::Forward,
                    _ => return false,
                };
                self.transcript.page(to);
                return true;
            }
            _ => return false,
        };
        match action {
            A::SwitchPane => {
                c.dock.pane = match c.dock.pane {
                    Pane::Diff => Pane::Conversation,
                    Pane::Conversation => Pane::Diff,
                };
            }
            A::FullScreen => {
                c.dock.full_screen = !c.dock.full_screen;
                // The panel's height changes: keep the cursor's line in view at the new size.
                c.cursor.follow();
            }
            A::ToggleSplit => {
                let width = c.dock.width.get();
                let one_sided = c.diff.as_ref().is_some_and(|d| d.one_sided());
                self.diff_layout = self.diff_layout.toggled(width, one_sided);
            }
            // Full screen, there is no conversation on screen: a page of the diff.
            A::PageUp | A::PageDown if c.dock.full_screen => {
                c.move_page(if action == A::PageUp { -1 } else { 1 });
            }
            A::PageUp | A::PageDown => {
                let to = if action == A::PageUp {
                    Direction::Back
                } else {
                    Direction::Forward
                };
                self.transcript.page(to);
            }
            A::ScrollUp | A::ScrollDown if c.dock.pane == Pane::Conversation => {
                self.transcript
                    .scroll_by(if action == A::ScrollUp { -1 } else { 1 });
            }
            _ => return false,
        }
        true
    }

    /// The wheel at terminal row `row` during a change's review: over the panel (or full
    /// screen) it scrolls the diff, elsewhere the conversation. `false`: no change is under
    /// review, the caller scrolls as usual.
    pub(super) fn wheel_in_dock(&mut self, to: Direction, row: Option<u16>) -> bool {
        let Mode::Review(Review::Change(c)) = &mut self.mode else {
            return false;
        };
        let d = super::keys::WHEEL_LINES as isize;
        let d = if to == Direction::Back { -d } else { d };
        let over_panel = row.is_some_and(|r| c.dock.holds_row(r));
        if c.dock.full_screen || over_panel {
            c.scroll_by(d);
        } else {
            self.transcript.scroll_by(d);
        }
        true
    }
}

impl App {
    /// The mouse wheel at terminal row `row`: during a change's review it scrolls what is
    /// under the pointer, elsewhere as [`App::on_wheel`].
    pub fn on_wheel_at(&mut self, to: Direction, row: u16) -> Vec<Effect> {
        if self.overlay.is_none() && self.wheel_in_dock(to, Some(row)) {
            return Vec::new();
        }
        self.on_wheel(to)
    }
}
