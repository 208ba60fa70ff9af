//! Several attempts at one task, side by side: the board that shows every attempt's state,
//! step, tokens, finish reason, check result and diffstat, its patch (or which earlier attempt
//! made the same one) and its check's last lines, and the pieces view where the
//! reviewer builds the patch from one attempt or from hunks taken from several.
//!
//! Owns: the board's state and (in `keys`, one handler per view) its keys (no I/O: the
//! runner performs what [`BoardEffect`]s say and feeds back patches and results). Each attempt's own transcript and reviews live in its
//! own [`super::App`]; the runner decides which is in front. Does not own: combining hunks
//! into a patch ([`crate::diff::combine`]) or drawing ([`view`], one column: [`card`]).

pub mod card;
mod keys;
pub mod view;

use crate::diff::combine::{self, CombineError, Piece};
use crate::diff::FileDiff;
use crate::protocol::{Event, FinishReason};
use crate::tui::actions::ActionError;
use crate::tui::diff_cursor::DiffCursor;

/// What one attempt has reported, beyond what its App shows.
#[derive(Debug, Clone, Default)]
pub struct Card {
    pub seed: u32,
    pub finish: Option<FinishReason>,
    /// Whether the check passed, and the tail of its output.
    pub check: Option<(bool, String)>,
    /// The attempt's patch as exported (raw, parsed), once its task has finished.
    pub patch: Option<(Vec<u8>, Vec<FileDiff>)>,
    /// Generated tokens, all turns.
    pub tokens: u64,
}

impl Card {
    /// Files, lines added, lines removed.
    pub fn diffstat(&self) -> Option<(usize, usize, usize)> {
        let (_, files) = self.patch.as_ref()?;
        Some((
            files.len(),
            files.iter().map(FileDiff::added).sum(),
            files.iter().map(FileDiff::removed).sum(),
        ))
    }
}

/// The pieces view: every piece of every attempt's patch, and which are taken.
#[derive(Debug, Clone, Default)]
pub struct Pieces {
    pub pieces: Vec<Piece>,
    pub taken: Vec<bool>,
    pub focus: usize,
    /// The focused piece's diff: its scroll and what its last drawing measured.
    pub diff: DiffCursor,
}

impl Pieces {
    /// Indices of taken pieces that conflict with piece `i`.
    pub fn conflicts_of(&self, i: usize) -> Vec<usize> {
        let Some(p) = self.pieces.get(i) else {
            return Vec::new();
        };
        (0..self.pieces.len())
            .filter(|&j| j != i && self.taken[j] && combine::conflict(p, &self.pieces[j]))
            .collect()
    }

    fn taken_pieces(&self) -> Vec<Piece> {
        self.pieces
            .iter()
            .zip(&self.taken)
            .filter(|(_, t)| **t)
            .map(|(p, _)| p.clone())
            .collect()
    }
}

/// What is in front on the board.
#[derive(Debug, Clone, Default)]
pub enum BoardView {
    #[default]
    Cards,
    Pieces(Pieces),
}

/// Work the runner does for the board.
#[derive(Debug, Clone, PartialEq)]
pub enum BoardEffect {
    /// Bring attempt `i`'s own view to the front.
    Open(usize),
    /// `git apply` this patch in the user's repository, then call [`Board::on_applied`].
    Apply(Vec<u8>),
    /// End every attempt and leave.
    Quit,
}

/// See the module docs.
#[derive(Debug, Clone, Default)]
pub struct Board {
    pub cards: Vec<Card>,
    pub selected: usize,
    pub view: BoardView,
    /// One line of news (applied, refused, why), shown above the hints.
    pub message: Option<String>,
    /// What was applied, for the summary (`None`: nothing yet).
    pub applied: Option<String>,
    /// `q` was pressed once while something was unapplied or running.
    pub(super) confirm_quit: bool,
}

impl Board {
    pub fn new(seeds: &[u32]) -> Self {
        Self {
            cards: seeds
                .iter()
                .map(|&seed| Card {
                    seed,
                    ..Card::default()
                })
                .collect(),
            ..Self::default()
        }
    }

    /// An event of attempt `i`.
    pub fn on_event(&mut self, i: usize, ev: &Event) {
        let Some(card) = self.cards.get_mut(i) else {
            return;
        };
        match ev {
            Event::TaskFinished { reason, .. } => card.finish = Some(*reason),
            Event::CheckFinished { passed, output, .. } => {
                card.check = Some((*passed, output.clone()))
            }
            Event::TurnFinished { figures, .. } => {
                card.tokens += figures.generated_tokens as u64;
            }
            Event::UserMessage { .. } => card.finish = None,
            _ => {}
        }
    }

    /// The first attempt before `i` whose patch is byte for byte `i`'s (neither empty).
    pub fn same_patch_as(&self, i: usize) -> Option<usize> {
        let raw = |c: &Card| c.patch.as_ref().map(|(r, _)| r.clone());
        let mine = self.cards.get(i).and_then(raw).filter(|r| !r.is_empty())?;
        self.cards[..i]
            .iter()
            .position(|c| c.patch.as_ref().is_some_and(|(r, _)| *r == mine))
    }

    /// Attempt `i`'s exported patch.
    pub fn on_patch(&mut self, i: usize, raw: Vec<u8>, files: Vec<FileDiff>) {
        if let Some(card) = self.cards.get_mut(i) {
            card.patch = Some((raw, files));
        }
        if matches!(self.view, BoardView::Pieces(_)) {
            self.open_pieces();
        }
    }

    /// The result of an [`BoardEffect::Apply`].
    pub fn on_applied(&mut self, what: String, result: Result<(), ActionError>) {
        match result {
            Ok(()) => {
                self.message = Some(format!("applied {what} to your working tree"));
                self.applied = Some(what);
            }
            Err(e) => self.message = Some(format!("not applied: {e}")),
        }
    }

    pub(super) fn apply_whole(&mut self, i: usize) -> Vec<BoardEffect> {
        match self.cards.get(i).and_then(|c| c.patch.as_ref()) {
            Some((raw, _)) if !raw.is_empty() => vec![BoardEffect::Apply(raw.clone())],
            Some(_) => {
                self.message = Some(format!("attempt {} changed nothing", i + 1));
                Vec::new()
            }
            None => {
                self.message = Some(format!("attempt {} has not finished yet", i + 1));
                Vec::new()
            }
        }
    }

    /// Open (or refresh) the pieces view, keeping what was taken.
    pub(super) fn open_pieces(&mut self) {
        let mut pieces = Vec::new();
        for (i, c) in self.cards.iter().enumerate() {
            if let Some((_, files)) = &c.patch {
                pieces.extend(combine::pieces(i, files));
            }
        }
        let old = match std::mem::take(&mut self.view) {
            BoardView::Pieces(p) => p,
            BoardView::Cards => Pieces::default(),
        };
        let taken = pieces
            .iter()
            .map(|p| old.pieces.iter().zip(&old.taken).any(|(q, t)| *t && q == p))
            .collect();
        if pieces.is_empty() {
            self.message = Some("no attempt has a finished patch yet".into());
        }
        self.view = BoardView::Pieces(Pieces {
            focus: old.focus.min(pieces.len().saturating_sub(1)),
            pieces,
            taken,
            diff: old.diff,
        });
    }

    /// Apply what is taken: the exact patch of an attempt when all of it and nothing else is
    /// taken, else the combination.
    pub(super) fn apply_taken(&mut self) -> Vec<BoardEffect> {
        let BoardView::Pieces(p) = &self.view else {
            return Vec::new();
        };
        let taken = p.taken_pieces();
        let attempts: Vec<usize> = {
            let mut a: Vec<usize> = taken.iter().map(|p| p.attempt).collect();
            a.dedup();
            a
        };
        if let [only] = attempts[..] {
            let all = p.pieces.iter().filter(|q| q.attempt == only).count();
            if all == taken.len() {
                return self.apply_whole(only);
            }
        }
        let files: Vec<Vec<FileDiff>> = self
            .cards
            .iter()
            .map(|c| c.patch.as_ref().map(|(_, f)| f.clone()).unwrap_or_default())
            .collect();
        match combine::combine(&files, &taken) {
            Ok(text) => vec![BoardEffect::Apply(text.into_bytes())],
            Err(e @ (CombineError::Conflict { .. } | CombineError::Binary { .. })) => {
                self.message = Some(e.to_string());
                Vec::new()
            }
            Err(CombineError::Nothing) => {
                self.message = Some("take pieces first (space), or an attempt's all (t)".into());
                Vec::new()
            }
        }
    }

    /// What an apply of `bytes` is called in messages and the summary.
    pub fn describe_apply(&self) -> String {
        match &self.view {
            BoardView::Pieces(p) => {
                let mut attempts: Vec<usize> = p
                    .pieces
                    .iter()
                    .zip(&p.taken)
                    .filter(|(_, t)| **t)
                    .map(|(q, _)| q.attempt + 1)
                    .collect();
                attempts.dedup();
                let n = p.taken.iter().filter(|t| **t).count();
                let list: Vec<String> = attempts.iter().map(|a| a.to_string()).collect();
                format!(
                    "{n} piece{} from attempt{} {}",
                    if n == 1 { "" } else { "s" },
                    if attempts.len() == 1 { "" } else { "s" },
                    list.join(", ")
                )
            }
            BoardView::Cards => format!("attempt {}", self.selected + 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::{patch, Highlighter};
    use crossterm::event::{KeyCode, KeyEvent};

    fn key(c: char) -> KeyEvent {
        KeyEvent::from(KeyCode::Char(c))
    }

    const BASE: &str =
        "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\nn\no\np\nq\nr\ns\nt\nu\nv\nw\nx\ny\nz\n";

    fn patch_of(after: &str) -> (Vec<u8>, Vec<FileDiff>) {
        let base = BASE;
        let d = FileDiff::compute("f.txt", Some(base), after);
        let text = format!("diff --git a/f.txt b/f.txt\n{}", d.unified());
        let files = patch::parse(&text, &Highlighter::default());
        (text.into_bytes(), files)
    }

    fn board() -> Board {
        let mut b = Board::new(&[1, 2]);
        let (r0, f0) = patch_of(&BASE.replace("a\n", "A\n").replace("z\n", "Z\n"));
        let (r1, f1) = patch_of(&BASE.replace("m\n", "M\n"));
        b.on_patch(0, r0, f0);
        b.on_patch(1, r1, f1);
        b
    }

    #[test]
    fn a_whole_attempt_applies_its_exact_patch() {
        let mut b = board();
        b.on_key(KeyEvent::from(KeyCode::Right), false);
        let fx = b.on_key(key('a'), false);
        let want = b.cards[1].patch.clone().unwrap().0;
        assert_eq!(fx, vec![BoardEffect::Apply(want)]);
        assert_eq!(
            b.on_key(KeyEvent::from(KeyCode::Enter), false),
            vec![BoardEffect::Open(1)]
        );
    }

    #[test]
    fn page_keys_scroll_the_focused_pieces_diff_and_another_piece_starts_at_its_top() {
        let mut b = board();
        b.on_key(key('p'), false);
        let scroll = |b: &Board| match &b.view {
            BoardView::Pieces(p) => p.diff.scroll,
            BoardView::Cards => panic!("pieces view"),
        };
        if let BoardView::Pieces(p) = &b.view {
            // As a drawing of 30 rows, 8 in view, would leave it.
            p.diff.drawn(crate::tui::diff_cursor::Drawing {
                page: 8,
                view: 8,
                rows: 30,
                ..Default::default()
            });
        }
        b.on_key(KeyEvent::from(KeyCode::PageDown), false);
        assert_eq!(scroll(&b), 8);
        for _ in 0..5 {
            b.on_key(KeyEvent::from(KeyCode::PageDown), false);
        }
        assert_eq!(scroll(&b), 22, "no further than the last page");
        b.on_key(KeyEvent::from(KeyCode::PageUp), false);
        assert_eq!(scroll(&b), 14);
        b.on_key(key('j'), false);
        assert_eq!(scroll(&b), 0);
    }

    #[test]
    fn pieces_of_two_attempts_combine_and_conflicts_are_refused() {
        let mut b = board();
        b.on_key(key('p'), false);
        let BoardView::Pieces(p) = &b.view else {
            panic!("pieces view")
        };
        // Attempt 0: a hunk at the top and one at the bottom; attempt 1: one in the middle.
        assert_eq!(p.pieces.len(), 3);
        // Take the top of attempt 0 and the middle of attempt 1.
        b.on_key(key(' '), false);
        b.on_key(KeyEvent::from(KeyCode::Down), false);
        b.on_key(KeyEvent::from(KeyCode::Down), false);
        b.on_key(key(' '), false);
        let fx = b.on_key(key('a'), false);
        let [BoardEffect::Apply(bytes)] = &fx[..] else {
            panic!("{fx:?}")
        };
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(
            text.contains("+A\n") && text.contains("+M\n") && !text.contains("+Z\n"),
            "{text}"
        );
        assert_eq!(b.describe_apply(), "2 pieces from attempts 1, 2");
        // Taking everything of attempt 0 gives its exact patch.
        b.on_key(KeyEvent::from(KeyCode::Up), false);
        b.on_key(KeyEvent::from(KeyCode::Up), false);
        b.on_key(key('t'), false);
        let fx = b.on_key(key('a'), false);
        assert_eq!(
            fx,
            vec![BoardEffect::Apply(b.cards[0].patch.clone().unwrap().0)]
        );
    }

    #[test]
    fn overlapping_pieces_are_named_and_not_applied() {
        let mut b = Board::new(&[1, 2]);
        let (r0, f0) = patch_of(&BASE.replace("e\n", "E\n"));
        let (r1, f1) = patch_of(&BASE.replace("f\n", "F\n"));
        b.on_patch(0, r0, f0);
        b.on_patch(1, r1, f1);
        b.on_key(key('p'), false);
        b.on_key(key(' '), false);
        b.on_key(KeyEvent::from(KeyCode::Down), false);
        b.on_key(key(' '), false);
        assert!(b.message.as_deref().unwrap_or("").contains("conflicts"));
        assert!(b.on_key(key('a'), false).is_empty());
        assert!(b
            .message
            .as_deref()
            .unwrap_or("")
            .contains("touch the same lines"));
    }

    #[test]
    fn quitting_asks_once_while_attempts_run() {
        let mut b = board();
        assert!(b.on_key(key('q'), true).is_empty());
        assert!(b.message.as_deref().unwrap_or("").contains("still running"));
        assert_eq!(b.on_key(key('q'), true), vec![BoardEffect::Quit]);
        // Any other key in between cancels the question.
        let mut b = board();
        b.on_key(key('q'), false);
        b.on_key(key('l'), false);
        assert!(b.on_key(key('q'), false).is_empty());
    }

    #[test]
    fn the_same_patch_is_named_after_its_first_maker() {
        let mut b = Board::new(&[1, 2, 3, 4]);
        let (r0, f0) = patch_of(&BASE.replace("a\n", "A\n"));
        let (r1, f1) = patch_of(&BASE.replace("m\n", "M\n"));
        b.on_patch(0, r0.clone(), f0.clone());
        b.on_patch(1, r1, f1);
        b.on_patch(2, r0, f0);
        b.on_patch(3, Vec::new(), Vec::new());
        assert_eq!(b.same_patch_as(0), None);
        assert_eq!(b.same_patch_as(1), None);
        assert_eq!(b.same_patch_as(2), Some(0));
        assert_eq!(b.same_patch_as(3), None, "no patch is not the same patch");
    }

    #[test]
    fn events_fill_the_cards() {
        let mut b = Board::new(&[7]);
        b.on_event(
            0,
            &Event::TaskFinished {
                reason: FinishReason::Answered,
                final_answer: None,
            },
        );
        b.on_event(
            0,
            &Event::CheckFinished {
                command: "true".into(),
                passed: true,
                exit_code: Some(0),
                output: "ok".into(),
            },
        );
        assert_eq!(b.cards[0].finish, Some(FinishReason::Answered));
        assert_eq!(b.cards[0].check, Some((true, "ok".into())));
        assert_eq!(b.cards[0].diffstat(), None);
    }
}
