//! The attempts board's keys, one handler per view: the cards (choose an attempt, open it,
//! apply its whole patch, open the pieces, quit) and the pieces (choose a piece, take or drop
//! it, take an attempt's all, scroll the piece's diff, apply what is taken, back). Ctrl-C
//! ends every attempt from either.

use super::{Board, BoardEffect, BoardView};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

impl Board {
    /// `busy`: whether any attempt is still working.
    pub fn on_key(&mut self, key: KeyEvent, busy: bool) -> Vec<BoardEffect> {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return vec![BoardEffect::Quit];
        }
        let quit_pending = std::mem::take(&mut self.confirm_quit);
        match &mut self.view {
            BoardView::Cards => self.card_key(key, busy, quit_pending),
            BoardView::Pieces(_) => self.pieces_key(key),
        }
    }

    fn card_key(&mut self, key: KeyEvent, busy: bool, quit_pending: bool) -> Vec<BoardEffect> {
        let n = self.cards.len().max(1);
        match key.code {
            KeyCode::Left | KeyCode::Char('h') => self.selected = (self.selected + n - 1) % n,
            KeyCode::Right | KeyCode::Char('l') | KeyCode::Tab => {
                self.selected = (self.selected + 1) % n
            }
            KeyCode::Char(c @ '1'..='9') => {
                let i = c as usize - '1' as usize;
                if i < self.cards.len() {
                    self.selected = i;
                }
            }
            KeyCode::Enter | KeyCode::Char('o') => return vec![BoardEffect::Open(self.selected)],
            KeyCode::Char('a') => return self.apply_whole(self.selected),
            KeyCode::Char('p') => self.open_pieces(),
            KeyCode::Char('q') => {
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

    fn pieces_key(&mut self, key: KeyEvent) -> Vec<BoardEffect> {
        let BoardView::Pieces(p) = &mut self.view else {
            return Vec::new();
        };
        let n = p.pieces.len();
        let focus = p.focus;
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => p.focus = p.focus.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => p.focus = (p.focus + 1).min(n.saturating_sub(1)),
            KeyCode::PageUp | KeyCode::PageDown => {
                let page = p.diff.page() as isize;
                p.diff.scroll_by(if key.code == KeyCode::PageUp {
                    -page
                } else {
                    page
                });
            }
            KeyCode::Char(' ') if n > 0 => {
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
            KeyCode::Char('t') if n > 0 => {
                // Take every piece of the focused piece's attempt, and none of the others'.
                let a = p.pieces[p.focus].attempt;
                for (i, piece) in p.pieces.iter().enumerate() {
                    p.taken[i] = piece.attempt == a;
                }
            }
            KeyCode::Char('a') => return self.apply_taken(),
            KeyCode::Esc | KeyCode::Char('q') => self.view = BoardView::Cards,
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
