//! The attempts board's keys, looked up in the one key table (`Context::Board` for the
//! cards, `Context::Pieces` for the pieces) and handled per view: the cards (choose an
//! attempt, open it, apply its whole patch, open the pieces, quit) and the pieces (choose a
//! piece, take or drop it, take an attempt's all, scroll the piece's diff, apply what is
//! taken, back). Ctrl-C ends every attempt from either. Does not own what applying and
//! combining do (`Board`'s, `diff::combine`) nor the runner's `b` back from an attempt.

use super::{Board, BoardEffect, BoardView};
use crate::tui::keymap::{lookup, Action, Context};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

impl Board {
    /// The context the board's keys are looked up in now.
    pub fn context(&self) -> Context {
        match self.view {
            BoardView::Cards => Context::Board,
            BoardView::Pieces(_) => Context::Pieces,
        }
    }

    /// A key on the board; `busy`: whether any attempt is still working.
    pub fn on_key(&mut self, key: KeyEvent, busy: bool) -> Vec<BoardEffect> {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return vec![BoardEffect::Quit];
        }
        let quit_pending = std::mem::take(&mut self.confirm_quit);
        let Some(action) = lookup(&[self.context()], &key) else {
            return Vec::new();
        };
        match &mut self.view {
            BoardView::Cards => self.card_key(action, &key, busy, quit_pending),
            BoardView::Pieces(_) => self.pieces_key(action),
        }
    }

    fn card_key(
        &mut self,
        action: Action,
        key: &KeyEvent,
        busy: bool,
        quit_pending: bool,
    ) -> Vec<BoardEffect> {
        let n = self.cards.len().max(1);
        match action {
            Action::PrevEntry => self.selected = (self.selected + n - 1) % n,
            Action::NextEntry => self.selected = (self.selected + 1) % n,
            Action::ChooseAttempt => {
                let digit = match key.code {
                    KeyCode::Char(c) => c.to_digit(10),
                    _ => None,
                };
                if let Some(i) = digit.and_then(|d| (d as usize).checked_sub(1)) {
                    if i < self.cards.len() {
                        self.selected = i;
                    }
                }
            }
            Action::OpenAttempt => return vec![BoardEffect::Open(self.selected)],
            Action::ApplyPatch => return self.apply_whole(self.selected),
            Action::TakePieces => self.open_pieces(),
            Action::Quit => {
                if quit_pending || (!busy && self.applied.is_some()) {
                    return vec![BoardEffect::Quit];
                }
                self.confirm_quit = true;
                self.message = Some(if busy {
                    "attempts are still running: q again ends them all and quits".into()
                } else {
                    "nothing is applied yet: q again quits and leaves your tree as it is".into()
                });
            }
            _ => {}
        }
        Vec::new()
    }

    fn pieces_key(&mut self, action: Action) -> Vec<BoardEffect> {
        let BoardView::Pieces(p) = &mut self.view else {
            return Vec::new();
        };
        let n = p.pieces.len();
        let focus = p.focus;
        match action {
            Action::PrevEntry => p.focus = p.focus.saturating_sub(1),
            Action::NextEntry => p.focus = (p.focus + 1).min(n.saturating_sub(1)),
            Action::PageUp | Action::PageDown => {
                let page = p.diff.page() as isize;
                p.diff.scroll_by(if action == Action::PageUp {
                    -page
                } else {
                    page
                });
            }
            Action::ToggleHunk if n > 0 => {
                p.taken[p.focus] = !p.taken[p.focus];
                let clash = p.conflicts_of(p.focus);
                self.message = (p.taken[p.focus] && !clash.is_empty()).then(|| {
                    format!(
                        "this piece conflicts with {} taken piece{}: take one of them",
                        clash.len(),
                        if clash.len() == 1 { "" } else { "s" }
                    )
                });
            }
            Action::TakeAttempt if n > 0 => {
                // Take every piece of the focused piece's attempt, and none of the others'.
                let a = p.pieces[p.focus].attempt;
                for (i, piece) in p.pieces.iter().enumerate() {
                    p.taken[i] = piece.attempt == a;
                }
            }
            Action::ApplyPatch => return self.apply_taken(),
            Action::Cancel => self.view = BoardView::Cards,
            _ => {}
        }
        // Another piece: its diff from the top.
        if let BoardView::Pieces(p) = &mut self.view {
            if p.focus != focus {
                p.diff.reset(0);
            }
        }
        Vec::new()
    }
}
