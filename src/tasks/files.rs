//! What a changed file is to the miner, by its path alone ([`role`]): a test file (its change
//! goes into the task's `test_patch`), documentation (a commit of nothing else is no task), or
//! code (its change goes into the gold `patch`); and which test files pytest can be pointed at
//! ([`is_test_module`]).
//!
//! Owns: the path rules. Does not own: reading commits (`super::history`).

/// What a changed path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileRole {
    /// Under a `test`, `tests` or `testing` folder, or a pytest module or `conftest.py`
    /// anywhere: the task's `test_patch`.
    Test,
    /// Prose: `.md`, `.rst`, `.adoc`, `.txt` (but not `requirements*.txt`), anything under
    /// `docs/` or `doc/`, and README, CHANGELOG, LICENSE and their kin.
    Docs,
    /// Everything else: the gold `patch`.
    Code,
}

const TEST_DIRS: [&str; 3] = ["test", "tests", "testing"];
const DOC_DIRS: [&str; 2] = ["doc", "docs"];
const DOC_EXTENSIONS: [&str; 4] = ["md", "rst", "adoc", "txt"];
const DOC_NAMES: [&str; 9] = [
    "readme",
    "changelog",
    "changes",
    "history",
    "news",
    "license",
    "copying",
    "authors",
    "contributing",
];

/// The role of `path` (relative to the repository, `/`-separated).
pub fn role(path: &str) -> FileRole {
    let parts: Vec<&str> = path.split('/').collect();
    let (dirs, name) = parts.split_at(parts.len() - 1);
    let name = name[0];
    if dirs.iter().any(|d| TEST_DIRS.contains(d)) || is_test_module(path) || name == "conftest.py" {
        return FileRole::Test;
    }
    let lower = name.to_ascii_lowercase();
    let stem = lower.split('.').next().unwrap_or("");
    let ext = lower.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    let prose_ext = DOC_EXTENSIONS.contains(&ext) && !lower.starts_with("requirements");
    if dirs.first().is_some_and(|d| DOC_DIRS.contains(d)) || prose_ext || DOC_NAMES.contains(&stem)
    {
        return FileRole::Docs;
    }
    FileRole::Code
}

/// Whether `path` is a module pytest collects by its default rules: `test_*.py` or
/// `*_test.py`.
pub fn is_test_module(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.strip_suffix(".py")
        .is_some_and(|stem| stem.starts_with("test_") || stem.ends_with("_test"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_told_apart() {
        for (path, want) in [
            ("tests/test_calc.py", FileRole::Test),
            ("tests/data/input.json", FileRole::Test),
            ("pkg/tests/helpers.py", FileRole::Test),
            ("test_top.py", FileRole::Test),
            ("pkg/calc_test.py", FileRole::Test),
            ("conftest.py", FileRole::Test),
            ("README.md", FileRole::Docs),
            ("docs/index.html", FileRole::Docs),
            ("doc/conf.py", FileRole::Docs),
            ("CHANGELOG", FileRole::Docs),
            ("LICENSE.txt", FileRole::Docs),
            ("notes.rst", FileRole::Docs),
            ("pkg/calc.py", FileRole::Code),
            ("requirements.txt", FileRole::Code),
            ("requirements-dev.txt", FileRole::Code),
            ("pyproject.toml", FileRole::Code),
            ("src/testing_utils.py", FileRole::Code),
            ("pkg/contest.py", FileRole::Code),
        ] {
            assert_eq!(role(path), want, "{path}");
        }
    }

    #[test]
    fn only_pytest_modules_are_run() {
        assert!(is_test_module("tests/test_calc.py"));
        assert!(is_test_module("calc_test.py"));
        assert!(!is_test_module("tests/conftest.py"));
        assert!(!is_test_module("tests/helpers.py"));
        assert!(!is_test_module("tests/test_data.json"));
    }
}
