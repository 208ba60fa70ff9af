//! The approval policy: for each tool category (read-only, edits, commands) whether a call
//! runs without asking, waits for a person, or is refused. "Approve for the session" raises a
//! category to auto for the rest of the session; [`super::Op::SetApprovalPolicy`] replaces the
//! whole policy. It is plain data here so that operations and events can carry it: the agent
//! applies it, the interface shows it and steps through [`ApprovalPolicy::PRESETS`], a resume
//! bounds it ([`ApprovalPolicy::no_looser_than`]). Does not own: asking (the agent), or where
//! a policy comes from (flags, the session log).

use super::ToolCategory;
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

impl Policy {
    /// How much runs without a person: deny < ask < auto.
    fn looseness(self) -> u8 {
        match self {
            Policy::Deny => 0,
            Policy::Ask => 1,
            Policy::Auto => 2,
        }
    }

    fn word(self) -> &'static str {
        match self {
            Policy::Ask => "ask",
            Policy::Auto => "auto",
            Policy::Deny => "deny",
        }
    }
}

const CATEGORIES: [ToolCategory; 3] = [
    ToolCategory::ReadOnly,
    ToolCategory::Edits,
    ToolCategory::Commands,
];

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
    /// The policies Shift-Tab and `/approvals` step through, tightest first: the default
    /// (edits and commands ask), edits run without asking, everything runs without asking,
    /// and read-only (edits and commands refused).
    pub const PRESETS: [ApprovalPolicy; 4] = [
        ApprovalPolicy {
            read_only: Policy::Auto,
            edits: Policy::Ask,
            commands: Policy::Ask,
        },
        ApprovalPolicy {
            read_only: Policy::Auto,
            edits: Policy::Auto,
            commands: Policy::Ask,
        },
        ApprovalPolicy {
            read_only: Policy::Auto,
            edits: Policy::Auto,
            commands: Policy::Auto,
        },
        ApprovalPolicy {
            read_only: Policy::Auto,
            edits: Policy::Deny,
            commands: Policy::Deny,
        },
    ];

    /// The preset after this policy in [`Self::PRESETS`] (wrapping); a policy that is not a
    /// preset goes to the first.
    pub fn next_preset(&self) -> Self {
        match Self::PRESETS.iter().position(|p| p == self) {
            Some(i) => Self::PRESETS[(i + 1) % Self::PRESETS.len()],
            None => Self::PRESETS[0],
        }
    }

    /// Whether some category runs with less asking under `self` than under `other`.
    pub fn looser_than(&self, other: &Self) -> bool {
        CATEGORIES
            .iter()
            .any(|&c| self.get(c).looseness() > other.get(c).looseness())
    }

    /// This policy with every category that is looser than under `bound` brought down to
    /// `bound`'s.
    pub fn no_looser_than(mut self, bound: &Self) -> Self {
        for c in CATEGORIES {
            if self.get(c).looseness() > bound.get(c).looseness() {
                self.set(c, bound.get(c));
            }
        }
        self
    }

    /// A short form that `--approve` reads back: one word when every category agrees, else
    /// the categories that differ from the default's read-only `auto` (`edits=auto,commands=ask`).
    pub fn short_spec(&self) -> String {
        if self.edits == self.read_only && self.commands == self.read_only {
            return self.read_only.word().to_string();
        }
        let mut parts = Vec::new();
        if self.read_only != Policy::Auto {
            parts.push(format!("read_only={}", self.read_only.word()));
        }
        parts.push(format!("edits={}", self.edits.word()));
        parts.push(format!("commands={}", self.commands.word()));
        parts.join(",")
    }

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
        format!(
            "read_only={},edits={},commands={}",
            self.read_only.word(),
            self.edits.word(),
            self.commands.word()
        )
    }

    /// The same policy for a run where nobody can answer: every `ask` becomes `deny`, so
    /// nothing runs that the person would have been asked about.
    pub fn without_asking(mut self) -> Self {
        for c in CATEGORIES {
            if self.get(c) == Policy::Ask {
                self.set(c, Policy::Deny);
            }
        }
        self
    }

    /// Parse `ask|auto|deny` (all categories) or a list like `edits=auto,commands=deny`,
    /// applied over `self`.
    pub fn parse_over(self, text: &str) -> Result<Self, PolicyParseError> {
        Ok(text.parse::<PolicyOverride>()?.over(self))
    }
}

/// An approval policy as `--approve` gives it, checked but not yet applied: the categories it
/// names, each with its policy; [`PolicyOverride::over`] puts it over a starting policy. Read
/// with [`str::parse`] (`ask|auto|deny` for every category, or `edits=auto,commands=deny`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PolicyOverride {
    pub read_only: Option<Policy>,
    pub edits: Option<Policy>,
    pub commands: Option<Policy>,
}

impl PolicyOverride {
    /// `base` with the categories this names replaced.
    pub fn over(&self, mut base: ApprovalPolicy) -> ApprovalPolicy {
        for (c, p) in CATEGORIES
            .into_iter()
            .zip([self.read_only, self.edits, self.commands])
        {
            if let Some(p) = p {
                base.set(c, p);
            }
        }
        base
    }

    fn set(&mut self, c: ToolCategory, p: Policy) {
        match c {
            ToolCategory::ReadOnly => self.read_only = Some(p),
            ToolCategory::Edits => self.edits = Some(p),
            ToolCategory::Commands => self.commands = Some(p),
        }
    }
}

impl std::str::FromStr for PolicyOverride {
    type Err = PolicyParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
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
        let mut out = Self::default();
        if !text.contains('=') {
            let p = policy(text)?;
            for c in CATEGORIES {
                out.set(c, p);
            }
            return Ok(out);
        }
        for part in text.split(',').filter(|p| !p.trim().is_empty()) {
            let (cat, p) = part.split_once('=').ok_or_else(|| err("missing `=`"))?;
            let cat = match cat.trim() {
                "read" | "read_only" | "reads" => ToolCategory::ReadOnly,
                "edit" | "edits" => ToolCategory::Edits,
                "command" | "commands" | "bash" => ToolCategory::Commands,
                other => return Err(err(&format!("unknown category {other:?}"))),
            };
            out.set(cat, policy(p)?);
        }
        Ok(out)
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

    #[test]
    fn presets_cycle_and_short_specs_read_back() {
        let mut p = ApprovalPolicy::default();
        let mut seen = Vec::new();
        for _ in 0..ApprovalPolicy::PRESETS.len() {
            let back = ApprovalPolicy::default()
                .parse_over(&p.short_spec())
                .unwrap();
            assert_eq!(back, p, "{}", p.short_spec());
            seen.push(p.short_spec());
            p = p.next_preset();
        }
        assert_eq!(p, ApprovalPolicy::default(), "the cycle wraps");
        assert_eq!(
            seen,
            [
                "edits=ask,commands=ask",
                "edits=auto,commands=ask",
                "auto",
                "edits=deny,commands=deny"
            ]
        );
        let odd = ApprovalPolicy::all(Policy::Ask);
        assert_eq!(odd.short_spec(), "ask");
        assert_eq!(odd.next_preset(), ApprovalPolicy::PRESETS[0]);
    }

    #[test]
    fn looser_is_per_category_and_bounding_tightens_only_those() {
        let start = ApprovalPolicy::default();
        let auto = ApprovalPolicy::all(Policy::Auto);
        assert!(auto.looser_than(&start));
        assert!(!start.looser_than(&auto));
        assert!(!start.looser_than(&start));
        // Edits looser, commands tighter: still looser, and only edits come down.
        let mixed = start.parse_over("edits=auto,commands=deny").unwrap();
        assert!(mixed.looser_than(&start));
        let bounded = mixed.no_looser_than(&start);
        assert_eq!(bounded, start.parse_over("commands=deny").unwrap());
        assert!(!bounded.looser_than(&start));
    }
}
