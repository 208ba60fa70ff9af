//! `/export` in the interface: the session, read back from its log, written as Markdown to a
//! file beside the log (`ID.md` in the session directory), so that it can be read or shared
//! while the session goes on. Owns: where the file goes and writing it. Does not own: the
//! Markdown (`crate::export` renders it), or showing the result (the App says where it went).

use super::actions::ActionError;
use std::path::{Path, PathBuf};

/// Where `/export` writes the session whose log is `log`.
pub fn markdown_path(log: &Path) -> PathBuf {
    log.with_extension("md")
}

/// Render the session of `log` as Markdown and write it to [`markdown_path`]; returns the
/// path. The log holds every event so far (each line is flushed as it is written); the final
/// patch is the one last saved beside it.
pub fn write_markdown(log: &Path) -> Result<PathBuf, ActionError> {
    let doc = crate::export::read(log)?;
    let text = crate::export::render(&doc, crate::export::Format::Markdown)?;
    let path = markdown_path(log);
    std::fs::write(&path, text).map_err(|source| ActionError::Io {
        doing: format!("writing {}", path.display()),
        source,
    })?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Event;
    use crate::session::{SessionHeader, SessionLog};

    #[test]
    fn the_markdown_lands_beside_the_log_and_holds_the_session() {
        let dir = tempfile::tempdir().unwrap();
        let header = SessionHeader {
            lilypad: "test".into(),
            session_id: "20260101-000000-abcd".into(),
            created: "2026-01-01T00:00:00Z".into(),
            repo: PathBuf::from("/repo"),
            sandbox: "host".into(),
            engine: "script:x".into(),
            task: "fix the adder".into(),
            system_prompt: "system".into(),
            policy: None,
            harness: String::new(),
            provenance: None,
            parent: None,
            parent_turn: None,
            project_docs: Vec::new(),
        };
        let mut log = SessionLog::create(dir.path(), &header).unwrap();
        log.append(&Event::UserMessage {
            text: "fix the adder".into(),
        })
        .unwrap();
        let path = write_markdown(log.path()).unwrap();
        assert_eq!(path, log.path().with_extension("md"));
        assert_eq!(path.parent(), Some(dir.path()));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("fix the adder"), "{text}");
        // A log that is not there: an error, and no file.
        let gone = dir.path().join("gone.jsonl");
        assert!(write_markdown(&gone).is_err());
        assert!(!markdown_path(&gone).exists());
    }
}
