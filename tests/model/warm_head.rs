//! The warm head on the tiny model (`[engine] prefix_cache_mb`, docs/models.md): the first
//! engine to read a prompt whose system message is long enough saves the state after it; a
//! new engine (a new session) loads it and reads only the rest, with exactly the logits and
//! greedy tokens of an engine that keeps no heads; another system message (another tool
//! list) is read again and saved beside it; a damaged file is refused, read again and
//! replaced; a model file written anew invalidates its heads.

use crate::common::{assert_same_logits, chat, serial, test_settings, tiny_model};
use lilypad::config::EngineSettings;
use lilypad::engine::{EngineHandle, GenerateRequest, Reuse, SamplingParams};
use std::path::{Path, PathBuf};

/// A system message long enough to be a head: a harness's instructions and tools.
fn system(tools: &str) -> String {
    let rules = "You are a coding agent. Read before you edit; run the tests after. ".repeat(6);
    format!("{rules}\n# Tools\n{tools}")
}

fn prompt(tools: &str, task: &str) -> String {
    chat(&system(tools), task)
}

fn cached(dir: &Path) -> EngineSettings {
    EngineSettings {
        prefix_cache_mb: 64,
        prefix_cache_dir: Some(dir.to_path_buf()),
        ..test_settings()
    }
}

fn uncached() -> EngineSettings {
    EngineSettings {
        prefix_cache_mb: 0,
        ..test_settings()
    }
}

fn load_model(model: &Path, settings: &EngineSettings) -> EngineHandle {
    EngineHandle::load(model, settings, |_| {}).expect("load the tiny model")
}

fn heads(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    v.retain(|p| p.extension().is_some_and(|x| x == "head"));
    v.sort();
    v
}

/// The tokens of the head of `prompt`: everything before the user message.
fn head_tokens(e: &EngineHandle, prompt: &str) -> usize {
    let at = prompt.find("<|im_start|>user").unwrap();
    e.tokenize(&prompt[..at]).unwrap().len()
}

fn greedy(prompt: &str) -> GenerateRequest {
    GenerateRequest::new(prompt.to_string(), 12, SamplingParams::greedy())
}

#[test]
fn a_new_session_loads_the_saved_head_and_reads_exactly_what_a_cold_one_does() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let p = prompt(
        "Read, Write, Edit, Glob, Bash",
        "fix the failing test in calc.py",
    );

    let cold = load_model(tiny_model(), &uncached());
    let (want_logits, f) = cold.logits(&p).unwrap();
    assert_eq!(f.reuse, Reuse::Fresh);
    let (want_text, want) = cold.generate(greedy(&p)).unwrap().wait().unwrap();

    // The first session reads the head and saves it.
    let first = load_model(tiny_model(), &cached(dir.path()));
    let (logits, f) = first.logits(&p).unwrap();
    assert_eq!(f.reuse, Reuse::Fresh, "nothing saved yet: {f:?}");
    assert_eq!(f.evaluated_tokens, f.prompt_tokens);
    assert_same_logits(&logits, &want_logits);
    assert_eq!(heads(dir.path()).len(), 1, "one head saved");
    let head = head_tokens(&first, &p);
    drop(first);

    // A new session loads it: the head is not read, the rest is, and nothing else changes.
    let second = load_model(tiny_model(), &cached(dir.path()));
    let (logits, f) = second.logits(&p).unwrap();
    assert_eq!(f.reuse, Reuse::SavedHead { tokens: head }, "{f:?}");
    assert_eq!(f.reused_tokens, head);
    assert_eq!(f.evaluated_tokens, f.prompt_tokens - head);
    assert_same_logits(&logits, &want_logits);

    // A generation (what a session's first turn is) in a fresh engine: the same tokens.
    let third = load_model(tiny_model(), &cached(dir.path()));
    let (text, g) = third.generate(greedy(&p)).unwrap().wait().unwrap();
    assert_eq!(g.figures.reuse, Reuse::SavedHead { tokens: head });
    assert_eq!(g.tokens, want.tokens, "the same greedy tokens");
    assert_eq!(text, want_text);

    // Another task after the same head: loaded too.
    third.reset().unwrap();
    let other_task = prompt("Read, Write, Edit, Glob, Bash", "rename calc to compute");
    let (_, g) = third.generate(greedy(&other_task)).unwrap().wait().unwrap();
    assert_eq!(g.figures.reuse, Reuse::SavedHead { tokens: head });
    assert_eq!(heads(dir.path()).len(), 1, "still one head");
}

#[test]
fn another_tool_list_is_read_again_and_saved_beside_the_first() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let e = load_model(tiny_model(), &cached(dir.path()));
    let a = prompt("Read, Write, Edit, Glob, Bash", "fix the test");
    let b = prompt("Read, Write, Edit", "fix the test");
    assert_eq!(e.logits(&a).unwrap().1.reuse, Reuse::Fresh);
    e.reset().unwrap();
    let (_, f) = e.logits(&b).unwrap();
    assert_eq!(f.reuse, Reuse::Fresh, "another head is read: {f:?}");
    assert_eq!(heads(dir.path()).len(), 2);
    e.reset().unwrap();
    let (_, f) = e.logits(&b).unwrap();
    assert!(matches!(f.reuse, Reuse::SavedHead { .. }), "{f:?}");

    // A prompt without a system message has no head: nothing is saved for it.
    e.reset().unwrap();
    let bare = "<|im_start|>user\nfix the test<|im_end|>\n<|im_start|>assistant\n";
    assert_eq!(e.logits(bare).unwrap().1.reuse, Reuse::Fresh);
    assert_eq!(heads(dir.path()).len(), 2);
}

#[test]
fn a_damaged_head_is_refused_read_again_and_replaced() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let p = prompt("Read, Write, Edit, Glob, Bash", "fix the test");
    let e = load_model(tiny_model(), &cached(dir.path()));
    let (want, _) = e.logits(&p).unwrap();
    let [file] = heads(dir.path()).try_into().unwrap();
    let mut bytes = std::fs::read(&file).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x5a;
    std::fs::write(&file, &bytes).unwrap();

    e.reset().unwrap();
    let (logits, f) = e.logits(&p).unwrap();
    assert_eq!(
        f.reuse,
        Reuse::Fresh,
        "the damaged file is not loaded: {f:?}"
    );
    assert_same_logits(&logits, &want);
    let rewritten = std::fs::read(&file).unwrap();
    assert_ne!(rewritten, bytes, "the head was saved again");

    e.reset().unwrap();
    let (logits, f) = e.logits(&p).unwrap();
    assert!(matches!(f.reuse, Reuse::SavedHead { .. }), "{f:?}");
    assert_same_logits(&logits, &want);

    // Cut short: refused the same way.
    std::fs::write(&file, &rewritten[..rewritten.len() / 2]).unwrap();
    e.reset().unwrap();
    assert_eq!(e.logits(&p).unwrap().1.reuse, Reuse::Fresh);
}

#[test]
fn a_model_file_written_anew_does_not_load_the_old_files_heads() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let models = tempfile::tempdir().unwrap();
    let model = models.path().join("m.gguf");
    std::fs::copy(tiny_model(), &model).unwrap();
    let p = prompt("Read, Write, Edit, Glob, Bash", "fix the test");
    let e = load_model(&model, &cached(dir.path()));
    assert_eq!(e.logits(&p).unwrap().1.reuse, Reuse::Fresh);
    drop(e);
    let e = load_model(&model, &cached(dir.path()));
    assert!(matches!(
        e.logits(&p).unwrap().1.reuse,
        Reuse::SavedHead { .. }
    ));
    drop(e);

    // The same bytes, but another file (a new inode and modification time).
    std::fs::remove_file(&model).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::copy(tiny_model(), &model).unwrap();
    let e = load_model(&model, &cached(dir.path()));
    assert_eq!(e.logits(&p).unwrap().1.reuse, Reuse::Fresh);
    assert_eq!(
        heads(dir.path()).len(),
        2,
        "saved again under the new identity"
    );
}

#[test]
fn sessions_starting_together_save_one_good_head() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let p = prompt("Read, Write, Edit, Glob, Bash", "fix the test");
    let engines: Vec<EngineHandle> = (0..3)
        .map(|_| load_model(tiny_model(), &cached(dir.path())))
        .collect();
    let logits: Vec<Vec<f32>> = std::thread::scope(|s| {
        let runs: Vec<_> = engines
            .iter()
            .map(|e| s.spawn(|| e.logits(&p).unwrap().0))
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    assert_same_logits(&logits[1], &logits[0]);
    assert_same_logits(&logits[2], &logits[0]);
    assert_eq!(
        heads(dir.path()).len(),
        1,
        "one head, no temporary files left"
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let e = load_model(tiny_model(), &cached(dir.path()));
    let (warm, f) = e.logits(&p).unwrap();
    assert!(matches!(f.reuse, Reuse::SavedHead { .. }), "{f:?}");
    assert_same_logits(&warm, &logits[0]);
}
