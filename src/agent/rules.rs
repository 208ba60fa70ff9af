//! Command approval rules: "don't ask again for commands starting with `python -m pytest`".
//! A rule is a prefix of words; a command matches when its own words start with them and it
//! has no shell operator that could run something else after the prefix (`;`, `&`, `|`,
//! redirections, command substitution, a second line). Rules come from the person's review
//! (kept for the session) and from the config file (saved for one repository). Does not own
//! where rules are stored (`config` reads and appends them).

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Characters after which a command could do something its prefix does not say.
const SHELL_OPERATORS: &[char] = &[';', '&', '|', '<', '>', '`', '\n', '\r'];

/// Commands that run without asking because they start with `prefix`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandRule {
    pub prefix: String,
}

impl CommandRule {
    pub fn new(prefix: &str) -> Self {
        Self {
            prefix: prefix.split_whitespace().collect::<Vec<_>>().join(" "),
        }
    }

    /// Whether `command` starts with this rule's words and has no shell operator.
    pub fn matches(&self, command: &str) -> bool {
        let want: Vec<&str> = self.prefix.split_whitespace().collect();
        if want.is_empty() || command.contains(SHELL_OPERATORS) || command.contains("$(") {
            return false;
        }
        let words: Vec<&str> = command.split_whitespace().collect();
        words.len() >= want.len() && words[..want.len()] == want[..]
    }
}

/// A rule saved in the config file for one repository (`[[command_rules]]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedCommandRule {
    /// The repository the rule is for (as canonical a path as could be had when saved).
    pub repo: PathBuf,
    pub prefix: String,
}

/// The prefix to offer for `command`: its first word, and the next ones while they look like
/// a subcommand (`cargo test`, `python -m pytest`, `npm run build`), up to three words; not
/// flags, paths, file names or assignments.
pub fn suggested_prefix_words(command: &str) -> usize {
    let words: Vec<&str> = command.split_whitespace().collect();
    let mut n = usize::from(!words.is_empty());
    while n < words.len() && n < 3 {
        let w = words[n];
        let module_flag = w == "-m" && n + 1 < words.len();
        if module_flag {
            n += 2;
            continue;
        }
        if w.starts_with('-') || w.contains(['/', '.', '=', '$', '"', '\'']) {
            break;
        }
        n += 1;
    }
    n.min(words.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_whole_words_and_refuses_operators() {
        let r = CommandRule::new("python -m  pytest");
        assert_eq!(r.prefix, "python -m pytest");
        assert!(r.matches("python -m pytest -q tests/"));
        assert!(r.matches("python  -m pytest"));
        assert!(!r.matches("python -m pytestx"));
        assert!(!r.matches("python -m"));
        for bad in [
            "python -m pytest; rm -rf /",
            "python -m pytest && curl x",
            "python -m pytest | sh",
            "python -m pytest > out",
            "python -m pytest $(evil)",
            "python -m pytest `evil`",
            "python -m pytest\nrm x",
        ] {
            assert!(!r.matches(bad), "{bad}");
        }
        assert!(!CommandRule::new("  ").matches("ls"));
    }

    #[test]
    fn suggests_the_subcommand() {
        let n = |c: &str| {
            let k = suggested_prefix_words(c);
            c.split_whitespace().take(k).collect::<Vec<_>>().join(" ")
        };
        assert_eq!(n("python -m pytest -q tests/"), "python -m pytest");
        assert_eq!(
            n("python3 -m unittest discover -s tests"),
            "python3 -m unittest"
        );
        assert_eq!(n("cargo test --lib"), "cargo test");
        assert_eq!(n("ls -la"), "ls");
        assert_eq!(n("cat src/a.py"), "cat");
        assert_eq!(n("npm run build now please"), "npm run build");
        assert_eq!(n(""), "");
    }
}
