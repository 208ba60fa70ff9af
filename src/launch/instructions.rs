//! The project instructions of a new session: whether they are read (`--no-project-doc` turns
//! them off), the search from the settings' `[prompt]` section and the config directory, and
//! what the agent and the session header receive; a resumed session that has had no message
//! yet reads them as a new one does.
//!
//! Does not own: finding and joining the files (`crate::prompt::project_doc`), or putting the
//! block in the conversation (`crate::agent`).

use super::{LaunchError, SessionOptions};
use crate::agent::Instructions;
use crate::config::Settings;
use crate::prompt::project_doc::{self, DocSearch, ProjectDocs};
use crate::protocol::Message;
use crate::session::ProjectDocRecord;
use std::path::Path;

/// The instructions a new session working in `workdir` reads, if any.
pub(super) fn read(
    settings: &Settings,
    opts: &SessionOptions,
    workdir: &Path,
) -> Result<Option<ProjectDocs>, LaunchError> {
    if opts.no_project_doc {
        return Ok(None);
    }
    let user_dir = crate::config::config_dir();
    let search = DocSearch {
        user_dir: user_dir.as_deref(),
        workdir,
        fallbacks: &settings.prompt.project_doc_fallback_filenames,
        max_bytes: settings.prompt.project_doc_max_bytes,
    };
    let docs = project_doc::gather(&search)?;
    if let Some(d) = docs.as_ref().filter(|d| d.cut_bytes > 0) {
        tracing::warn!(
            cut = d.cut_bytes,
            cap = settings.prompt.project_doc_max_bytes,
            "the project instructions were cut at the cap"
        );
    }
    Ok(docs)
}

/// The instructions a resumed session passes on: none once its conversation has a message
/// from the person (they are in it already), else read now, as for a new session.
pub fn for_resumed(
    settings: &Settings,
    opts: &SessionOptions,
    workdir: &Path,
    history: &[Message],
) -> Result<Option<Instructions>, LaunchError> {
    if history.iter().any(|m| matches!(m, Message::User { .. })) {
        return Ok(None);
    }
    Ok(read(settings, opts, workdir)?.as_ref().map(for_agent))
}

/// What the agent passes on.
pub(super) fn for_agent(docs: &ProjectDocs) -> Instructions {
    Instructions {
        files: docs.files.iter().map(|f| f.label.clone()).collect(),
        block: docs.block.clone(),
    }
}

/// What the session header records.
pub(super) fn records(docs: &ProjectDocs) -> Vec<ProjectDocRecord> {
    docs.files
        .iter()
        .map(|f| ProjectDocRecord {
            path: f.path.clone(),
            sha256: f.sha256.clone(),
        })
        .collect()
}
