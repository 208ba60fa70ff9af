//! The warm head: the engine state after a prompt's fixed head (its system message, which
//! holds the system prompt and the tool definitions) kept on disk, so that a new conversation
//! that begins with the same head loads it instead of reading it again.
//!
//! Owns: finding the head in a prompt ([`HeadStore::head`]), the key a head is saved under
//! (the model file's identity, the settings that shape the state, the head's token ids), the
//! file format (a header carrying the key and the SHA-256 of the state, then llama.cpp's
//! sequence state), writing atomically (a temporary file renamed into place, so that
//! concurrent sessions never read half a file), checking on load (a file that fails is removed
//! and the head is read again), and the bound (`[engine] prefix_cache_mb`, the least recently
//! used file out first; a load touches the file's time).
//!
//! [`start`] and [`finish`] are what a prompt read into a sequence does about its head: an
//! empty sequence loads the saved head, or takes its state as it is read and saves it after.
//!
//! Does not own: putting the state into a sequence or taking it out (`super::memory`), or which
//! sequence a prompt is read into (`super::worker`, `super::pool`). docs/models.md says what a
//! user sees.

use super::memory::{Memory, Reading};
use super::plan::Plan;
use super::target::Target;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use ring::digest::{Context, SHA256};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The first bytes of a head file.
const MAGIC: &[u8; 8] = b"LILYHEAD";
/// The file format; a change makes older files unreadable, and they are read again.
const VERSION: u32 = 1;
/// Magic, version, key, token count, state length, state SHA-256.
const HEADER_BYTES: usize = 8 + 4 + 32 + 8 + 8 + 32;
/// Heads shorter than this are read: loading a file costs more than reading them.
const MIN_HEAD_TOKENS: usize = 32;
/// A temporary file this old was left by a writer that died; the next save removes it.
const STALE_TEMPORARY: Duration = Duration::from_secs(3600);

#[derive(Debug, thiserror::Error)]
pub(super) enum HeadError {
    #[error("{doing} {}: {source}", path.display())]
    Io {
        doing: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a saved head of this model and settings ({why}); it was removed", path.display())]
    Refused { path: PathBuf, why: &'static str },
}

/// A prompt's head: its first `end` tokens, saved under `key`.
#[derive(Debug, Clone)]
pub(super) struct Head {
    pub(super) end: usize,
    key: [u8; 32],
}

impl Head {
    fn name(&self) -> String {
        let hex: String = self.key.iter().map(|b| format!("{b:02x}")).collect();
        format!("{hex}.head")
    }
}

/// What a prompt being read does about its head ([`start`]).
pub(super) enum Warm {
    /// Nothing: no store, no head, or memory was not empty.
    Cold,
    /// The head's first this many tokens were loaded from its saved state.
    Loaded(usize),
    /// The head is read, its state taken at its end, and saved by [`finish`].
    Save(Head),
}

impl Warm {
    /// Tell the reading just begun (`Memory::begin_prefill`) what happened to the head.
    pub(super) fn apply(&self, reading: &mut Reading) {
        match self {
            Self::Cold => {}
            Self::Loaded(tokens) => reading.loaded_head(*tokens),
            Self::Save(head) => reading.save_head_at(head.end),
        }
    }
}

/// Before `tokens` is matched against `memory`: when the sequence is empty and the prompt has
/// a head, load the head's saved state if there is one (a file that fails its checks, or
/// that llama.cpp refuses, is logged and the head read again), else have it saved.
pub(super) fn start(
    store: Option<&HeadStore>,
    model: &LlamaModel,
    memory: &mut Memory,
    ctx: &mut Target<'_>,
    tokens: &[LlamaToken],
) -> Warm {
    let Some(store) = store.filter(|_| memory.len() == 0) else {
        return Warm::Cold;
    };
    let Some(head) = store.head(model, tokens) else {
        return Warm::Cold;
    };
    match store.load(&head) {
        Ok(None) => Warm::Save(head),
        Ok(Some(state)) => match memory.load_head(ctx, &tokens[..head.end], &state) {
            Ok(()) => Warm::Loaded(head.end),
            Err(e) => {
                tracing::warn!("the saved prompt head could not be loaded, reading it: {e}");
                Warm::Save(head)
            }
        },
        Err(e) => {
            tracing::warn!("reading the prompt head again: {e}");
            Warm::Save(head)
        }
    }
}

/// After (some of) a prompt was read: save the head's state if it was taken. A failure to
/// save is logged; the prompt goes on.
pub(super) fn finish(store: Option<&HeadStore>, warm: &Warm, reading: &mut Reading) {
    let (Some(store), Warm::Save(head)) = (store, warm) else {
        return;
    };
    if let Some(state) = reading.take_head_state() {
        if let Err(e) = store.save(head, &state) {
            tracing::warn!("the prompt head was not saved: {e}");
        }
    }
}

/// Saved heads in one directory, for one model file and one set of state-shaping settings.
pub(super) struct HeadStore {
    dir: PathBuf,
    max_bytes: u64,
    /// SHA-256 of the model file's identity and the settings the state depends on.
    identity: [u8; 32],
    /// `<|im_start|>`, when the vocabulary has it as one token.
    marker: Option<LlamaToken>,
}

impl HeadStore {
    /// The store `plan` asks for (`None` when the cache is off), for the model it loaded.
    /// The model file's identity is its canonical path, size, modification time and inode: a
    /// file replaced or rewritten in place gets other keys, so its old heads are never loaded.
    pub(super) fn new(
        plan: &Plan,
        model: &LlamaModel,
        gpu_layers: u32,
    ) -> Result<Option<Self>, HeadError> {
        let Some((dir, max_bytes)) = plan.prefix_cache.clone() else {
            return Ok(None);
        };
        let io = |source| HeadError::Io {
            doing: "reading the model file's identity",
            path: plan.path.clone(),
            source,
        };
        let path = std::fs::canonicalize(&plan.path).map_err(io)?;
        let meta = std::fs::metadata(&path).map_err(io)?;
        let modified = meta
            .modified()
            .map_err(io)?
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        let settings = format!(
            "lilypad {} head {VERSION}\n{}\n{} bytes, modified {modified}, inode {}\nctx {} batch {} ubatch {} unified {} streams {} k {:?} v {:?} flash {:?} gpu layers {gpu_layers} split {:?} devices {:?}",
            env!("CARGO_PKG_VERSION"),
            path.display(),
            meta.len(),
            inode(&meta),
            plan.ctx,
            plan.batch,
            plan.ubatch,
            plan.kv_unified,
            plan.streams(),
            plan.cache_type_k,
            plan.cache_type_v,
            plan.flash_attention,
            plan.split_mode,
            plan.devices,
        );
        let marker = model.vocab().tokenize(b"<|im_start|>", false, true);
        Ok(Some(Self {
            dir,
            max_bytes,
            identity: sha256(&[settings.as_bytes()]),
            marker: match marker.as_slice() {
                [m] => Some(*m),
                _ => None,
            },
        }))
    }

    /// The head of `tokens`: everything before the first user message, when the prompt begins
    /// with a system message of at least [`MIN_HEAD_TOKENS`] tokens and goes on past it.
    pub(super) fn head(&self, model: &LlamaModel, tokens: &[LlamaToken]) -> Option<Head> {
        let marker = self.marker?;
        if tokens.first() != Some(&marker) || !role_at(model, tokens, 0, b"system") {
            return None;
        }
        let end = 1 + tokens[1..].iter().position(|t| *t == marker)?;
        let keep = end >= MIN_HEAD_TOKENS && end + 1 < tokens.len();
        if !keep || !role_at(model, tokens, end, b"user") {
            return None;
        }
        let ids: Vec<u8> = tokens[..end]
            .iter()
            .flat_map(|t| t.0.to_le_bytes())
            .collect();
        Some(Head {
            end,
            key: sha256(&[&self.identity, &ids]),
        })
    }

    fn path(&self, head: &Head) -> PathBuf {
        self.dir.join(head.name())
    }

    /// The saved state of `head`, checked; `None` when none is saved. A file that fails the
    /// checks is removed (the caller reads the head again and saves it anew).
    pub(super) fn load(&self, head: &Head) -> Result<Option<Vec<u8>>, HeadError> {
        let path = self.path(head);
        let mut file = match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(io_err("opening", &path, source)),
        };
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|e| io_err("reading", &path, e))?;
        drop(file);
        match parse(&bytes, head) {
            Ok(state) => {
                touch(&path);
                Ok(Some(bytes[state..].to_vec()))
            }
            Err(why) => {
                let _ = std::fs::remove_file(&path);
                Err(HeadError::Refused { path, why })
            }
        }
    }

    /// Save `state`, the sequence state after exactly `head`'s tokens, then keep the directory
    /// within its bound. A state larger than the whole bound is not saved.
    pub(super) fn save(&self, head: &Head, state: &[u8]) -> Result<(), HeadError> {
        if (HEADER_BYTES + state.len()) as u64 > self.max_bytes {
            tracing::debug!(
                "a head state of {} bytes is larger than [engine] prefix_cache_mb: not saved",
                state.len()
            );
            return Ok(());
        }
        std::fs::create_dir_all(&self.dir).map_err(|e| io_err("creating", &self.dir, e))?;
        let path = self.path(head);
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let tmp = self.dir.join(format!(
            ".{}.{}.{nanos}.tmp",
            head.name(),
            std::process::id()
        ));
        let written = write_file(&tmp, head, state).and_then(|()| {
            std::fs::rename(&tmp, &path).map_err(|e| io_err("renaming into place", &path, e))
        });
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written?;
        self.evict(&path)
    }

    /// Remove the least recently used heads until the directory is within its bound (never
    /// `keep`, the one just saved), and temporary files left by writers that died.
    fn evict(&self, keep: &Path) -> Result<(), HeadError> {
        let entries = std::fs::read_dir(&self.dir).map_err(|e| io_err("listing", &self.dir, e))?;
        let now = SystemTime::now();
        let mut heads = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = entry.metadata() else { continue };
            let used = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.ends_with(".tmp") {
                if now.duration_since(used).unwrap_or_default() > STALE_TEMPORARY {
                    let _ = std::fs::remove_file(&path);
                }
            } else if name.ends_with(".head") {
                heads.push((used, meta.len(), path));
            }
        }
        let mut total: u64 = heads.iter().map(|h| h.1).sum();
        heads.sort();
        for (_, len, path) in heads {
            if total <= self.max_bytes {
                break;
            }
            if path == keep {
                continue;
            }
            match std::fs::remove_file(&path) {
                Ok(()) => total -= len,
                // Another session removed it first.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => total -= len,
                Err(e) => return Err(io_err("removing", &path, e)),
            }
        }
        Ok(())
    }
}

/// The heads saved in `dir`: how many and their bytes (none when the directory does not exist
/// yet), for `lilypad doctor`.
pub fn saved_heads(dir: &Path) -> std::io::Result<(usize, u64)> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((0, 0)),
        Err(e) => return Err(e),
    };
    let (mut count, mut bytes) = (0, 0);
    for entry in entries {
        let entry = entry?;
        if entry.file_name().to_string_lossy().ends_with(".head") {
            count += 1;
            bytes += entry.metadata()?.len();
        }
    }
    Ok((count, bytes))
}

fn io_err(doing: &'static str, path: &Path, source: std::io::Error) -> HeadError {
    HeadError::Io {
        doing,
        path: path.to_path_buf(),
        source,
    }
}

fn write_file(tmp: &Path, head: &Head, state: &[u8]) -> Result<(), HeadError> {
    let mut header = Vec::with_capacity(HEADER_BYTES);
    header.extend_from_slice(MAGIC);
    header.extend_from_slice(&VERSION.to_le_bytes());
    header.extend_from_slice(&head.key);
    header.extend_from_slice(&(head.end as u64).to_le_bytes());
    header.extend_from_slice(&(state.len() as u64).to_le_bytes());
    header.extend_from_slice(&sha256(&[state]));
    let write = |e| io_err("writing", tmp, e);
    let mut file = std::fs::File::create(tmp).map_err(write)?;
    file.write_all(&header).map_err(write)?;
    file.write_all(state).map_err(write)?;
    file.sync_all().map_err(write)
}

/// Where the state starts in `bytes`, a head file's contents, or why the file is refused.
fn parse(bytes: &[u8], head: &Head) -> Result<usize, &'static str> {
    let header = bytes.get(..HEADER_BYTES).ok_or("shorter than its header")?;
    let u64_at = |at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&header[at..at + 8]);
        u64::from_le_bytes(b)
    };
    if &header[..8] != MAGIC {
        return Err("not a head file");
    }
    if header[8..12] != VERSION.to_le_bytes() {
        return Err("another format version");
    }
    if header[12..44] != head.key {
        return Err("saved under another key");
    }
    if u64_at(44) != head.end as u64 {
        return Err("another token count");
    }
    let state = &bytes[HEADER_BYTES..];
    if u64_at(52) != state.len() as u64 {
        return Err("cut short or overlong");
    }
    if header[60..92] != sha256(&[state]) {
        return Err("its checksum does not match");
    }
    Ok(HEADER_BYTES)
}

/// Whether the message starting at `at` (a `<|im_start|>` token) has `role`: the bytes of
/// the tokens after the marker begin with the role and a newline.
fn role_at(model: &LlamaModel, tokens: &[LlamaToken], at: usize, role: &[u8]) -> bool {
    let vocab = model.vocab();
    let mut bytes = Vec::new();
    for &t in tokens.iter().skip(at + 1).take(role.len() + 1) {
        vocab.token_to_piece_into(t, &mut bytes, true, None);
        if bytes.len() > role.len() {
            break;
        }
    }
    bytes.starts_with(role) && bytes.get(role.len()) == Some(&b'\n')
}

/// Mark `path` as just used (least recently used files are evicted first). A failure only
/// makes the file look older than it is.
fn touch(path: &Path) {
    let now = SystemTime::now();
    if let Err(e) = std::fs::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_modified(now))
    {
        tracing::debug!("cannot mark {} as used: {e}", path.display());
    }
}

fn sha256(parts: &[&[u8]]) -> [u8; 32] {
    let mut cx = Context::new(&SHA256);
    for p in parts {
        cx.update(p);
    }
    let mut out = [0u8; 32];
    out.copy_from_slice(cx.finish().as_ref());
    out
}

#[cfg(unix)]
fn inode(meta: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(meta)
}

#[cfg(not(unix))]
fn inode(_: &std::fs::Metadata) -> u64 {
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head() -> Head {
        Head {
            end: 40,
            key: [7; 32],
        }
    }

    fn file(state: &[u8]) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().join("x.tmp");
        write_file(&tmp, &head(), state).unwrap();
        std::fs::read(tmp).unwrap()
    }

    #[test]
    fn a_written_file_parses_and_every_damage_is_refused() {
        let state = b"recurrent and attention state".to_vec();
        let good = file(&state);
        assert_eq!(parse(&good, &head()), Ok(HEADER_BYTES));
        assert_eq!(&good[HEADER_BYTES..], &state[..]);

        let mut flipped = good.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert_eq!(parse(&flipped, &head()), Err("its checksum does not match"));
        assert_eq!(
            parse(&good[..good.len() - 1], &head()),
            Err("cut short or overlong")
        );
        assert_eq!(parse(&good[..10], &head()), Err("shorter than its header"));
        let other = Head {
            key: [8; 32],
            ..head()
        };
        assert_eq!(parse(&good, &other), Err("saved under another key"));
        let longer = Head { end: 41, ..head() };
        assert_eq!(parse(&good, &longer), Err("another token count"));
        let mut magic = good.clone();
        magic[0] = b'X';
        assert_eq!(parse(&magic, &head()), Err("not a head file"));
    }

    #[test]
    fn saving_past_the_bound_removes_the_least_recently_used_heads() {
        let dir = tempfile::tempdir().unwrap();
        let state = vec![1u8; 1000];
        let one = (HEADER_BYTES + state.len()) as u64;
        let store = HeadStore {
            dir: dir.path().to_path_buf(),
            max_bytes: 2 * one,
            identity: [0; 32],
            marker: None,
        };
        let head = |k: u8| Head {
            end: 40,
            key: [k; 32],
        };
        store.save(&head(1), &state).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        store.save(&head(2), &state).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        // Loading head 1 makes head 2 the least recently used.
        assert_eq!(store.load(&head(1)).unwrap(), Some(state.clone()));
        std::thread::sleep(Duration::from_millis(20));
        store.save(&head(3), &state).unwrap();
        assert!(
            store.load(&head(2)).unwrap().is_none(),
            "head 2 was evicted"
        );
        assert!(store.load(&head(1)).unwrap().is_some());
        assert!(store.load(&head(3)).unwrap().is_some());

        // A state larger than the whole bound is not kept, and evicts nothing.
        store.save(&head(4), &vec![0u8; 3000]).unwrap();
        assert!(store.load(&head(4)).unwrap().is_none());
        assert!(store.load(&head(1)).unwrap().is_some());

        // A file saved under another key, renamed into this one's place, is refused and removed.
        let theirs = store.path(&head(1));
        std::fs::rename(&theirs, store.path(&head(5))).unwrap();
        assert!(matches!(
            store.load(&head(5)),
            Err(HeadError::Refused { .. })
        ));
        assert!(!store.path(&head(5)).exists());
    }
}
