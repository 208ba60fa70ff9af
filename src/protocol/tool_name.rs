//! The five tools the model was trained to call, by the names it writes: the one place a tool
//! name is spelled. A call's name stays the model's text ([`super::ToolCall::name`], since a
//! model may name a tool that does not exist); code that acts on it asks [`ToolName::parse`]
//! and matches the enum, so a new tool cannot be missed by a `match`.

use super::ToolCategory;

/// One of the five tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolName {
    Read,
    Write,
    Edit,
    Glob,
    Bash,
}

impl ToolName {
    /// Every tool, in the order the model's schema lists them.
    pub const ALL: [ToolName; 5] = [
        ToolName::Read,
        ToolName::Write,
        ToolName::Edit,
        ToolName::Glob,
        ToolName::Bash,
    ];

    /// The name as the model writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolName::Read => "Read",
            ToolName::Write => "Write",
            ToolName::Edit => "Edit",
            ToolName::Glob => "Glob",
            ToolName::Bash => "Bash",
        }
    }

    /// The tool a call names, exactly as written (`None` for any other name).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// The approval category: read-only calls may run without asking; edits and commands are
    /// asked for separately.
    pub fn category(self) -> ToolCategory {
        match self {
            ToolName::Read | ToolName::Glob => ToolCategory::ReadOnly,
            ToolName::Write | ToolName::Edit => ToolCategory::Edits,
            ToolName::Bash => ToolCategory::Commands,
        }
    }

    /// Whether a call of this tool can change the workspace's files.
    pub fn changes_files(self) -> bool {
        self.category() != ToolCategory::ReadOnly
    }
}

impl std::fmt::Display for ToolName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_others_are_none() {
        for t in ToolName::ALL {
            assert_eq!(ToolName::parse(t.as_str()), Some(t));
        }
        assert_eq!(ToolName::parse("bash"), None, "names are case-sensitive");
        assert_eq!(ToolName::parse("Search"), None);
        let changing: Vec<_> = ToolName::ALL
            .into_iter()
            .filter(|t| t.changes_files())
            .collect();
        assert_eq!(changing, [ToolName::Write, ToolName::Edit, ToolName::Bash]);
    }
}
