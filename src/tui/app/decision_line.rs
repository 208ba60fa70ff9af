//! The line a decision leaves in the transcript, under the call it decided: what was applied
//! or run, what was rejected, and the person's own words as the model receives them
//! (`✓ inventory.py: hunks 1, 2 applied; 3 rejected: "keep the old API"`). Pure: from the
//! review and the decision to a string; `App::decide` puts it in the transcript. Also the
//! note after the session patch is decided, naming the keys of the scheme in force.

use super::{App, Review};
use crate::protocol::{HunkNote, ReviewDecision};

/// The words a rejection without any sends (the model reads them; the line says nothing).
const NO_COMMENT: &str = "The user rejected this without comment.";

/// The transcript's record of `decision` on `review`.
pub(super) fn describe(review: &Review, decision: &ReviewDecision) -> String {
    use ReviewDecision as D;
    let (subject, ran) = match review {
        Review::Change(c) => (c.path.clone(), "applied"),
        Review::Command(c) => (format!("`{}`", first_line(&c.command)), "run"),
    };
    let said = |words: &str| match words.trim() {
        "" => String::new(),
        w => format!(": \"{}\"", one_line(w)),
    };
    match decision {
        D::Approve => format!("✓ {subject}: {ran}"),
        D::ApproveForSession => {
            let rest = match review {
                Review::Change(_) => "edits",
                Review::Command(_) => "commands",
            };
            format!("✓ {subject}: {ran}; further {rest} approved for this session")
        }
        D::ApprovePrefix { prefix } => {
            format!("✓ {subject}: {ran}; commands starting with `{prefix}` too")
        }
        D::ApproveEdited { .. } => format!("✓ {subject}: {ran} with your edits"),
        D::ApproveWithFeedback { feedback, .. } => {
            format!("✓ {subject}: {ran}{}", said(feedback))
        }
        D::ApproveHunks {
            kept,
            dropped,
            feedback,
            ..
        } => format!(
            "✓ {subject}: {} {ran}; {} rejected{}",
            hunks(kept),
            numbers(dropped),
            said(feedback.as_deref().unwrap_or_default())
        ),
        D::Reject { feedback } if feedback == NO_COMMENT => format!("✗ {subject}: rejected"),
        D::Reject { feedback } => format!("✗ {subject}: rejected{}", said(feedback)),
    }
}

impl App {
    /// What to do next once the session patch is decided, in the keys of the scheme in force.
    pub(super) fn follow_up_hint(&self) -> String {
        use crate::tui::keymap::{keys_of, Action as A, Context as C};
        match self.keys {
            crate::tui::KeyScheme::Chat => format!(
                "Type a follow-up, or {} to quit.",
                keys_of(C::Chat, A::Quit)
            ),
            crate::tui::KeyScheme::Modal => format!(
                "Type a follow-up ({}), or {} to quit.",
                keys_of(C::Transcript, A::FocusInput),
                keys_of(C::Browse, A::Quit)
            ),
        }
    }
}

/// `hunk 1` or `hunks 1, 2`.
fn hunks(notes: &[HunkNote]) -> String {
    let word = if notes.len() == 1 { "hunk" } else { "hunks" };
    format!("{word} {}", numbers(notes))
}

fn numbers(notes: &[HunkNote]) -> String {
    notes
        .iter()
        .map(|n| n.number.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default()
}

/// Several lines (the person's words, their line comments) as one, the breaks marked.
fn one_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ⏎ ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ApprovalKind, ApprovalRequest, ToolCall, ToolCategory};

    fn change() -> Review {
        Review::new(ApprovalRequest {
            id: 1,
            call: ToolCall {
                id: "c".into(),
                name: "Edit".into(),
                arguments: Default::default(),
            },
            category: ToolCategory::Edits,
            kind: ApprovalKind::Change {
                path: "inventory.py".into(),
                before: Some("a\n".into()),
                after: "b\n".into(),
                binary_before: false,
            },
        })
    }

    fn note(number: usize) -> HunkNote {
        HunkNote {
            number,
            header: String::new(),
            first_change: String::new(),
        }
    }

    #[test]
    fn a_partial_approval_names_the_hunks_and_quotes_the_reason() {
        let d = ReviewDecision::ApproveHunks {
            text: String::new(),
            kept: vec![note(1), note(2)],
            dropped: vec![note(3)],
            feedback: Some("keep the old API".into()),
        };
        assert_eq!(
            describe(&change(), &d),
            "✓ inventory.py: hunks 1, 2 applied; 3 rejected: \"keep the old API\""
        );
    }

    #[test]
    fn rejections_and_approvals_say_what_the_model_reads() {
        let c = change();
        let reject = |f: &str| ReviewDecision::Reject { feedback: f.into() };
        assert_eq!(
            describe(&c, &reject(NO_COMMENT)),
            "✗ inventory.py: rejected"
        );
        assert_eq!(
            describe(&c, &reject("use sum\n\ninventory.py:3: x\nwhy?")),
            "✗ inventory.py: rejected: \"use sum ⏎ inventory.py:3: x ⏎ why?\""
        );
        assert_eq!(
            describe(&c, &ReviewDecision::Approve),
            "✓ inventory.py: applied"
        );
    }

    #[test]
    fn the_note_after_the_patch_names_the_keys_in_force() {
        let mut app = App::new(super::super::AppOptions {
            theme: crate::tui::Theme::dark(),
            repo: None,
            has_patch: true,
            replay: false,
        });
        app.keys = crate::tui::KeyScheme::Chat;
        assert_eq!(app.follow_up_hint(), "Type a follow-up, or Alt-Q to quit.");
        app.keys = crate::tui::KeyScheme::Modal;
        assert_eq!(app.follow_up_hint(), "Type a follow-up (i), or q to quit.");
    }
}
