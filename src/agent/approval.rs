//! The approval policy: for each tool category (read-only, edits, commands) whether a call
//! runs without asking, waits for a person, or is refused. "Approve for the session" raises a
//! category to auto for the rest of the session.

use crate::protocol::ToolCategory;
use serde::{Deserialize, Serialize};

/// What happens to calls of one category.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// Wait for a person's decision.
    Ask,
    /// Run without asking.
    Auto,
    /// Refuse; the model is told so.
    Deny,
}

/// Policy per category. The default asks for edits and commands and lets reads run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApprovalPolicy {
    pub read_only: Policy,
    pub edits: Policy,
    pub commands: Policy,
}

impl Default for ApprovalPolicy {
    fn default() -> Self {
        Self {
            read_only: Policy::Auto,
            edits: Policy::Ask,
            commands: Policy::Ask,
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("invalid approval policy {text:?}: {why} (expected e.g. `edits=auto,commands=ask`, or `ask`, `auto`, `deny` for all)")]
pub struct PolicyParseError {
    text: String,
    why: String,
}

impl ApprovalPolicy {
    /// Every category the same.
    pub fn all(p: Policy) -> Self {
        Self {
            read_only: p,
            edits: p,
            commands: p,
        }
    }

    pub fn get(&self, c: ToolCategory) -> Policy {
        match c {
            ToolCategory::ReadOnly => self.read_only,
            ToolCategory::Edits => self.edits,
            ToolCategory::Commands => self.commands,
        }
    }

    pub fn set(&mut self, c: ToolCategory, p: Policy) {
        match c {
            ToolCategory::ReadOnly => self.read_only = p,
            ToolCategory::Edits => self.edits = p,
            ToolCategory::Commands => self.commands = p,
        }
    }

    /// The policy as [`ApprovalPolicy::parse_over`] reads it back, every category named.
    pub fn spec(&self) -> String {
        let word = |p: Policy| match p {
            Policy::Ask => "ask",
            Policy::Auto => "auto",
            Policy::Deny => "deny",
        };
        format!(
            "read_only={},edits={},commands={}",
            word(self.read_only),
            word(self.edits),
            word(self.commands)
        )
    }

    /// The same policy for a run where nobody can answer: every `ask` becomes `deny`, so
    /// nothing runs that the person would have been asked about.
    pub fn without_asking(mut self) -> Self {
        for c in [
            ToolCategory::ReadOnly,
            ToolCategory::Edits,
            ToolCategory::Commands,
        ] {
            if self.get(c) == Policy::Ask {
                self.set(c, Policy::Deny);
            }
        }
        self
    }

    /// Parse `ask|auto|deny` (all categories) or a list like `edits=auto,commands=deny`,
    /// applied over `self`.
    pub fn parse_over(mut self, text: &str) -> Result<Self, PolicyParseError> {
        let err = |why: &str| PolicyParseError {
            text: text.to_string(),
            why: why.to_string(),
        };
        let policy = |s: &str| match s.trim() {
            "ask" => Ok(Policy::Ask),
            "auto" => Ok(Policy::Auto),
            "deny" => Ok(Policy::Deny),
            other => Err(err(&format!("unknown policy {other:?}"))),
        };
        if !text.contains('=') {
            return Ok(Self::all(policy(text)?));
        }
        for part in text.split(',').filter(|p| !p.trim().is_empty()) {
            let (cat, p) = part.split_once('=').ok_or_else(|| err("missing `=`"))?;
            let cat = match cat.trim() {
                "read" | "read_only" | "reads" => ToolCategory::ReadOnly,
                "edit" | "edits" => ToolCategory::Edits,
                "command" | "commands" | "bash" => ToolCategory::Commands,
                other => return Err(err(&format!("unknown category {other:?}"))),
            };
            self.set(cat, policy(p)?);
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lists_and_single_words() {
        let p = ApprovalPolicy::default()
            .parse_over("edits=auto, commands=deny")
            .unwrap();
        assert_eq!(p.edits, Policy::Auto);
        assert_eq!(p.commands, Policy::Deny);
        assert_eq!(p.read_only, Policy::Auto);
        assert_eq!(
            ApprovalPolicy::default().parse_over("ask").unwrap(),
            ApprovalPolicy::all(Policy::Ask)
        );
        assert!(ApprovalPolicy::default().parse_over("edits=maybe").is_err());
        assert!(ApprovalPolicy::default().parse_over("files=auto").is_err());
    }

    #[test]
    fn the_spec_reads_back_and_unattended_runs_never_ask() {
        let p = ApprovalPolicy::default()
            .parse_over("commands=deny")
            .unwrap();
        let back = ApprovalPolicy::all(Policy::Auto)
            .parse_over(&p.spec())
            .unwrap();
        assert_eq!(back, p);
        let q = ApprovalPolicy::default().without_asking();
        assert_eq!(
            (q.read_only, q.edits, q.commands),
            (Policy::Auto, Policy::Deny, Policy::Deny)
        );
    }
}
