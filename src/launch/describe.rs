//! `tasks mine --describe` and `tasks mutate --describe`: the configured model writes each
//! task's problem statement as the issue a user would have filed before the fix, from the
//! fix's diff (a mined commit's code change, or a mutation undone), the commit's message when
//! there is one, and the tests' failing output, told not to reveal the fix (R2E-Gym writes its
//! issues from the change the same way). A mutant is shown nothing a mined task is not: no
//! message, and never its operator or place. One turn, no tools, the session's sampling; the reply's text after its
//! reasoning is the statement.
//!
//! Owns: the instructions, the request and reading the reply. Does not own: the model
//! (`super::build_model`), or when a statement is asked for (`crate::tasks`).

use crate::engine::{
    EngineError, EngineEvent, ParsedOutput, SamplingParams, SequenceId, TemplatedModel,
    TokenReport, TurnRequest,
};
use crate::protocol::Message;
use crate::tasks::statement::{Describer, Evidence};
use std::sync::Arc;

/// What the model is told (the system message).
const INSTRUCTIONS: &str = "You turn a bug fix back into the bug report that asked for it. \
You are given the diff of a fix, the message of its commit when there is one, and the \
output of the tests that failed before the fix. Write the issue a user of the project would have opened before anyone fixed it: \
what they ran, what happened, what they expected instead, with a short example when one \
helps. Write in plain Markdown, in the user's voice. Never describe or hint at the fix: do \
not quote the changed lines, do not name the test files or tests, do not say which function \
to change or how. Answer with the issue's text only.";

/// The most tokens a statement may take.
const MAX_TOKENS: u32 = 2048;
/// Bytes of the diff shown to the model (a long one is cut, saying so).
const DIFF_BYTES: usize = 24 * 1024;

/// A model that writes statements.
#[derive(Clone)]
pub struct ModelDescriber {
    model: Arc<TemplatedModel>,
    sampling: SamplingParams,
}

impl std::fmt::Debug for ModelDescriber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ModelDescriber({})", self.model.describe())
    }
}

impl ModelDescriber {
    pub fn new(model: Arc<TemplatedModel>, sampling: SamplingParams) -> Self {
        Self { model, sampling }
    }

    /// The model `engine` names (none: the configured one), with the session's sampling.
    pub fn from_settings(
        engine: Option<&super::EngineFlag>,
        settings: &crate::config::Settings,
    ) -> Result<Self, super::LaunchError> {
        let choice = super::EngineChoice::from_flag(engine, settings)?;
        let model = super::build_model(&choice, settings, &settings.prompt, |_| {})?;
        Ok(Self::new(
            model,
            SamplingParams::from_settings(&settings.engine.sampling),
        ))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DescribeError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("the model's reply held no statement")]
    Empty,
}

/// The user message: the commit's words (when there are any), the diff (cut at
/// [`DIFF_BYTES`]) and the failures.
fn message(e: &Evidence) -> String {
    let mut diff = e.patch.as_str();
    let mut cut = "";
    if diff.len() > DIFF_BYTES {
        let mut at = DIFF_BYTES;
        while !diff.is_char_boundary(at) {
            at -= 1;
        }
        diff = &diff[..at];
        cut = "\n[the rest of the diff is left out]";
    }
    let message = match &e.message {
        Some(m) => format!("Commit message:\n{m}\n\n"),
        None => String::new(),
    };
    format!(
        "{message}Diff of the fix (never reveal it):\n```diff\n{diff}{cut}\n```\n\nBefore the fix the tests failed like this:\n{}",
        e.failing
    )
}

/// The statement in a reply: the content (after the reasoning), trimmed.
fn statement_of(raw: &str, parsed: &str) -> Option<String> {
    let text = match parsed.trim() {
        "" => raw.rsplit("</think>").next().unwrap_or(raw),
        p => p,
    };
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

impl Describer for ModelDescriber {
    fn describe(
        &self,
        evidence: &Evidence,
    ) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
        let turn = TurnRequest {
            messages: vec![
                Message::system(INSTRUCTIONS),
                Message::user(message(evidence)),
            ],
            tools: Vec::new(),
            max_tokens: MAX_TOKENS,
            sampling: self.sampling.clone(),
            sequence: SequenceId::DEFAULT,
            pin_turn: false,
            report: TokenReport::default(),
        };
        let mut stream = self.model.start(&turn).map_err(DescribeError::from)?;
        let (mut raw, mut parsed) = (String::new(), String::new());
        while let Some(ev) = stream.events.blocking_recv() {
            match ev {
                EngineEvent::Piece(p) => raw.push_str(&p),
                EngineEvent::Parsed(ParsedOutput::Content(c)) => parsed.push_str(&c),
                EngineEvent::Parsed(_) | EngineEvent::Sampled(_) => {}
                EngineEvent::Done(_) => break,
                EngineEvent::Failed(e) => return Err(Box::new(DescribeError::Engine(e))),
            }
        }
        statement_of(&raw, &parsed).ok_or_else(|| Box::new(DescribeError::Empty) as _)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_holds_the_evidence_and_a_long_diff_is_cut() {
        let e = Evidence {
            message: Some("Fix sub".into()),
            patch: "-    return a + b\n+    return a - b\n".into(),
            failing: "- tests/test_calc.py::test_sub\n    E assert 8 == 2".into(),
        };
        let m = message(&e);
        assert!(m.contains("Fix sub") && m.contains("return a - b") && m.contains("8 == 2"));
        assert!(!m.contains("left out"));
        let long = Evidence {
            patch: "é".repeat(DIFF_BYTES),
            ..e
        };
        assert!(message(&long).contains("[the rest of the diff is left out]"));
        // A mutant's evidence has no message: no heading for one either.
        let mutant = Evidence {
            message: None,
            ..long
        };
        let m = message(&mutant);
        assert!(
            m.starts_with("Diff of the fix") && !m.contains("Commit message"),
            "{m}"
        );
    }

    #[test]
    fn the_statement_is_the_text_after_the_reasoning() {
        assert_eq!(
            statement_of("thinking</think>\n\nsub is wrong\n", ""),
            Some("sub is wrong".into())
        );
        assert_eq!(statement_of("", "parsed text"), Some("parsed text".into()));
        assert_eq!(statement_of("only thinking</think>  ", ""), None);
    }
}
