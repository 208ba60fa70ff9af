//! The unsafe edge of quantisation: one call of `llama_model_quantize` from `llama-cpp-sys-2`,
//! with its parameter struct, the C strings and arrays it points into, and a temporary log hook
//! that turns llama.cpp's per-tensor log lines into progress.
//!
//! Safety rests on three things, each local to this file:
//! - every pointer in `llama_model_quantize_params` points into a value owned by
//!   [`quantize`]'s stack frame (`CString`s, `Vec`s) that outlives the call, and every array
//!   llama.cpp walks ends with the terminator it looks for (a NULL name, a NUL key, `-1`);
//! - the log hook's state is a `'static` mutex, not a pointer to a stack frame, so a log line
//!   another thread emits after the hook was removed cannot reach freed memory;
//! - one quantisation runs at a time (`RUNNING`), since the log hook is process-wide.

use super::imatrix::ImatrixEntry;
use super::QuantizeProgress;
use llama_cpp_sys_2 as sys;
use std::ffi::{c_char, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Mutex, Once};

/// One call's inputs, already checked by the caller.
pub(super) struct Call<'a> {
    pub input: &'a Path,
    pub output: &'a Path,
    pub file_type: u32,
    pub threads: u32,
    /// A block to leave out (the MTP block), with the key that must then say 0.
    pub prune: Option<i32>,
    pub nextn_key: Option<String>,
    pub imatrix: &'a [ImatrixEntry],
}

pub(super) enum FfiError {
    Nul(PathBuf),
    Failed(LlamaQuantizeError),
}

/// `llama_model_quantize` returned non-zero (the source of `QuantizeError::Llama`): its
/// status, and the error lines it logged (said instead of the status when there are any).
#[derive(Debug, thiserror::Error)]
#[error("{}", if errors.is_empty() { format!("status {status}") } else { errors.join(" ") })]
pub struct LlamaQuantizeError {
    pub status: u32,
    pub errors: Vec<String>,
}

/// What the log hook passes on.
enum LogEvent {
    Progress(QuantizeProgress),
    Error(String),
}

/// The hook's state: where events go while a quantisation runs, and the partial line being
/// assembled (llama.cpp writes one tensor's line in several calls).
struct Hook {
    events: mpsc::Sender<LogEvent>,
}

static HOOK: Mutex<Option<Hook>> = Mutex::new(None);
static RUNNING: Mutex<()> = Mutex::new(());
static BACKEND: Once = Once::new();

/// Parses `[  12/ 345] blk.0.attn_q.weight - [...]`, llama.cpp's line at the start of a tensor.
fn parse_progress(text: &str) -> Option<QuantizeProgress> {
    let rest = text.trim_start().strip_prefix('[')?;
    let (counts, rest) = rest.split_once(']')?;
    let (index, total) = counts.split_once('/')?;
    let name = rest.split_whitespace().next()?;
    Some(QuantizeProgress {
        index: index.trim().parse().ok()?,
        total: total.trim().parse().ok()?,
        name: name.to_string(),
    })
}

/// The log callback installed for the duration of one quantisation. Everything goes on to
/// `tracing` (target `llama.cpp`, hidden unless `LILYPAD_LOG` asks); tensor lines also become
/// progress, error lines are kept for the error message.
extern "C" fn hook(level: sys::ggml_log_level, text: *const c_char, _data: *mut c_void) {
    if text.is_null() {
        return;
    }
    // SAFETY: llama.cpp passes a NUL-terminated string valid for the duration of the call.
    let text = unsafe { CStr::from_ptr(text) }.to_string_lossy();
    tracing::debug!(target: "llama.cpp", "{}", text.trim_end());
    let Ok(guard) = HOOK.lock() else { return };
    let Some(h) = guard.as_ref() else { return };
    if level == sys::GGML_LOG_LEVEL_ERROR {
        let _ = h.events.send(LogEvent::Error(text.trim().to_string()));
    } else if let Some(p) = parse_progress(&text) {
        let _ = h.events.send(LogEvent::Progress(p));
    }
}

fn c_path(p: &Path) -> Result<CString, FfiError> {
    CString::new(p.as_os_str().as_encoded_bytes()).map_err(|_| FfiError::Nul(p.to_path_buf()))
}

/// Run the quantisation on a helper thread while this one relays progress to `progress`.
pub(super) fn quantize(
    call: &Call<'_>,
    mut progress: impl FnMut(&QuantizeProgress),
) -> Result<(), FfiError> {
    let _one_at_a_time = RUNNING.lock().unwrap_or_else(|p| p.into_inner());
    let input = c_path(call.input)?;
    let output = c_path(call.output)?;
    // The imatrix as llama.cpp reads it: (name, data, size) records, ended by a NULL name.
    let names: Vec<CString> = call
        .imatrix
        .iter()
        .map(|e| CString::new(e.name.as_bytes()).map_err(|_| FfiError::Nul(e.name.clone().into())))
        .collect::<Result<_, _>>()?;
    let mut imatrix: Vec<sys::llama_model_imatrix_data> = call
        .imatrix
        .iter()
        .zip(&names)
        .map(|(e, n)| sys::llama_model_imatrix_data {
            name: n.as_ptr(),
            data: e.values.as_ptr(),
            size: e.values.len(),
        })
        .collect();
    imatrix.push(sys::llama_model_imatrix_data {
        name: std::ptr::null(),
        data: std::ptr::null(),
        size: 0,
    });
    // Key overrides end with an entry whose key is empty.
    let mut overrides = Vec::new();
    if let Some(key) = &call.nextn_key {
        let mut o = empty_override();
        o.tag = sys::LLAMA_KV_OVERRIDE_TYPE_INT;
        for (dst, &b) in o.key.iter_mut().zip(key.as_bytes().iter().take(127)) {
            *dst = b as c_char;
        }
        o.__bindgen_anon_1 = sys::llama_model_kv_override__bindgen_ty_1 { val_i64: 0 };
        overrides.push(o);
    }
    overrides.push(empty_override());
    // Layers to prune end with -1.
    let prune: Vec<i32> = call.prune.into_iter().chain([-1]).collect();

    BACKEND.call_once(|| {
        // SAFETY: initialises ggml's tables; idempotent, and llama-cpp-2's own init calls the
        // same function again harmlessly.
        unsafe { sys::llama_backend_init() };
    });
    // SAFETY: returns a plain struct by value.
    let mut params = unsafe { sys::llama_model_quantize_default_params() };
    params.nthread = call.threads.max(1) as i32;
    params.ftype = call.file_type as sys::llama_ftype;
    if !call.imatrix.is_empty() {
        params.imatrix = imatrix.as_ptr();
    }
    if call.nextn_key.is_some() {
        params.kv_overrides = overrides.as_ptr();
    }
    if call.prune.is_some() {
        params.prune_layers = prune.as_ptr();
    }

    let (tx, rx) = mpsc::channel();
    let mut previous: (sys::ggml_log_callback, *mut c_void) = (None, std::ptr::null_mut());
    let mut previous_ggml: (sys::ggml_log_callback, *mut c_void) = (None, std::ptr::null_mut());
    {
        let mut h = HOOK.lock().unwrap_or_else(|p| p.into_inner());
        *h = Some(Hook { events: tx });
        // SAFETY: reading and replacing llama.cpp's process-wide log callbacks; `hook` ignores
        // its user data and is valid for the whole program.
        unsafe {
            sys::llama_log_get(&mut previous.0, &mut previous.1);
            sys::ggml_log_get(&mut previous_ggml.0, &mut previous_ggml.1);
            sys::llama_log_set(Some(hook), std::ptr::null_mut());
        }
    }
    let args = Args {
        input: input.as_ptr(),
        output: output.as_ptr(),
        params: &params,
    };
    let status = std::thread::scope(|s| {
        let worker = s.spawn(move || {
            let a = args;
            // SAFETY: both paths are NUL-terminated C strings and every pointer in `params`
            // points into values of this frame that outlive the scope (see the module doc).
            unsafe { sys::llama_model_quantize(a.input, a.output, a.params) }
        });
        let mut errors = Vec::new();
        // The channel closes when the hook is removed below, after the worker is done; until
        // then relay events, checking every few milliseconds whether the worker finished.
        loop {
            match rx.recv_timeout(std::time::Duration::from_millis(50)) {
                Ok(LogEvent::Progress(p)) => progress(&p),
                Ok(LogEvent::Error(e)) => errors.push(e),
                Err(mpsc::RecvTimeoutError::Timeout) if worker.is_finished() => break,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        let status = worker.join().unwrap_or(u32::MAX);
        while let Ok(ev) = rx.try_recv() {
            match ev {
                LogEvent::Progress(p) => progress(&p),
                LogEvent::Error(e) => errors.push(e),
            }
        }
        (status, errors)
    });
    {
        let mut h = HOOK.lock().unwrap_or_else(|p| p.into_inner());
        *h = None;
        // SAFETY: puts back the callbacks read above (llama-cpp-2's point at its static state).
        unsafe {
            sys::llama_log_set(previous.0, previous.1);
            sys::ggml_log_set(previous_ggml.0, previous_ggml.1);
        }
    }
    match status {
        (0, _) => Ok(()),
        (status, errors) => Err(FfiError::Failed(LlamaQuantizeError { status, errors })),
    }
}

/// The call's pointers, handed to the worker thread.
struct Args {
    input: *const c_char,
    output: *const c_char,
    params: *const sys::llama_model_quantize_params,
}

// SAFETY: the pointers are only read, by llama.cpp on the worker thread, while the frame that
// owns what they point to waits for that thread inside `std::thread::scope`.
unsafe impl Send for Args {}

fn empty_override() -> sys::llama_model_kv_override {
    sys::llama_model_kv_override {
        tag: sys::LLAMA_KV_OVERRIDE_TYPE_INT,
        key: [0; 128],
        __bindgen_anon_1: sys::llama_model_kv_override__bindgen_ty_1 { val_i64: 0 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensor_lines_become_progress() {
        let p = parse_progress(
            "[  12/ 345]                 blk.0.attn_q.weight - [  256,   512], type =   bf16, ",
        )
        .unwrap();
        assert_eq!(
            (p.index, p.total, p.name.as_str()),
            (12, 345, "blk.0.attn_q.weight")
        );
        assert!(parse_progress("size =     0.50 MiB").is_none());
        assert!(parse_progress("llama_model_quantize_impl: model size  = 1.00 MiB").is_none());
    }

    #[test]
    fn a_failure_says_its_error_lines_or_else_its_status() {
        let failed = |errors: &[&str]| LlamaQuantizeError {
            status: 1,
            errors: errors.iter().map(|e| e.to_string()).collect(),
        };
        assert_eq!(failed(&[]).to_string(), "status 1");
        assert_eq!(failed(&["a", "b"]).to_string(), "a b");
    }
}
