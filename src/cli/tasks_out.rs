//! What `tasks mine` and `tasks mutate` share on the command line: their two output files (the
//! tasks, and the rejects beside them), a line on stderr per task or reject as it ends, and
//! counts by reason in words; the runs' test runner; the model that writes statements under
//! `--describe`.

use crate::config::Settings;
use crate::launch::EngineFlag;
use crate::tasks::statement::Describer;
use crate::tasks::{self, Mined};
use anyhow::Context;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

/// The tasks file `out` and the rejects file beside it, created, and the rejects file's path.
pub(super) fn create(out: &Path) -> anyhow::Result<(BufWriter<File>, BufWriter<File>, PathBuf)> {
    let rejects = tasks::rejects_path(out);
    let create = |p: &Path| {
        File::create(p)
            .map(BufWriter::new)
            .with_context(|| format!("creating {}", p.display()))
    };
    Ok((create(out)?, create(&rejects)?, rejects))
}

/// The runs' runner: the `[sandbox]` settings, `--sandbox`, the test command and its limit.
pub(super) fn runner(
    settings: &Settings,
    sandbox: &super::options::SandboxArgs,
    test_cmd: &str,
    timeout_secs: u64,
) -> tasks::TestRunner {
    tasks::TestRunner {
        settings: settings.sandbox.clone(),
        kind: sandbox.kind.map(crate::sandbox::SandboxKind::from),
        test_cmd: test_cmd.to_string(),
        timeout: std::time::Duration::from_secs(timeout_secs),
        pool: None,
        closing: Default::default(),
    }
}

/// The model that writes the statements with `--describe` (`engine`, else the configured
/// one); `None` without it.
pub(super) fn describer(
    describe: bool,
    engine: Option<&EngineFlag>,
    settings: &Settings,
) -> anyhow::Result<Option<std::sync::Arc<dyn Describer>>> {
    if !describe {
        return Ok(None);
    }
    let model = crate::launch::describe::ModelDescriber::from_settings(engine, settings)?;
    Ok(Some(std::sync::Arc::new(model)))
}

/// The stderr line of `m`; a reject says `why` of it (its detail, or its subject).
pub(super) fn progress(m: &Mined, why: impl Fn(&tasks::output::RejectLine) -> &str) {
    match m {
        Mined::Task(t) => eprintln!(
            "task    {}  fail-to-pass {}  pass-to-pass {}",
            t.instance_id,
            t.fail_to_pass().map(|v| v.len()).unwrap_or(0),
            t.pass_to_pass().map(|v| v.len()).unwrap_or(0)
        ),
        Mined::Rejected(r) => eprintln!("reject  {}  {}: {}", r.instance_id, r.reason, why(r)),
    }
}

/// `reason N, reason N`, or `none`.
pub(super) fn counts(by: &BTreeMap<&'static str, usize>) -> String {
    if by.is_empty() {
        return "none".into();
    }
    let words: Vec<String> = by.iter().map(|(k, n)| format!("{k} {n}")).collect();
    words.join(", ")
}
