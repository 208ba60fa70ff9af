//! The choices of one request (`"n": N` on chat and completions, 1 to `[serve] max_n`, as
//! OpenAI's API, vLLM and SGLang take it: RL trainers sample a group of answers per prompt):
//! starting them on the engine, and their events, tagged with each choice's index, for the
//! endpoint to answer from (`reply.rs` for chat, `completions.rs`).
//!
//! How: the first choice waits for a place to generate (`server.gate`, by the key's
//! priority), then with `n` > 1 the prompt is read once into the request's own sequence (its
//! conversation, or its session) and forked into the sequences the other choices generate in
//! ([`Engine::share_prompt`]), so that each choice reads only the prompt's last token. The
//! first choice starts in the caller (so that an engine's refusal is still the request's
//! answer, with its status); the others start after it, in order, each when it has a place and
//! a sequence.
//!
//! Invariants:
//! - the request passed the door once (one request in flight, one count, one audit line, the
//!   key's limits once); each choice holds its own place to generate, its replica's count and
//!   a share of the weights in force from its start until its generation has ended;
//! - choice `i` samples with the request's seed + `i` (the seed given, or the server's fresh
//!   one), so that choices differ unless sampling is greedy;
//! - choices start in index order, so a scripted engine answers choice `i` with its turn `i`;
//! - with a shared prompt, at most `[engine] sequences` sequences serve the choices (more
//!   could not decode together): a choice that finds them all busy waits for one to end and
//!   generates in it, coming back to the prompt through the snapshot before its last token;
//!   without one (an engine that keeps no memory, or a share that failed), each choice has a
//!   sequence of its own;
//! - the sequences made for the choices (all but the request's own) are forgotten once every
//!   choice has ended, so that a request of 16 choices leaves the engine's memory as one of
//!   one choice does;
//! - cancelling ([`Cancel`]) stops every choice, running or not started yet.
//!
//! Does not own: letting the request in (`door.rs`), its accounting (`track.rs`), answering
//! (`reply.rs`, `completions.rs`), the engine's memory (`crate::engine`).

use super::api::ApiError;
use super::metrics::Rejection;
use super::replicas::Assigned;
use super::server::Server;
use super::track::Tracking;
use super::weights::Share;
use crate::engine::{
    DraftFigures, Engine, EngineError, EngineEvent, Figures, GenerateRequest, GenerationStream,
    SequenceId, StopReason,
};
use axum::response::{IntoResponse, Response};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::sync::watch;

/// Requests with several choices so far: makes each one's choice sequences its own.
static NEXT_GROUP: AtomicU64 = AtomicU64::new(1);

/// What a request asks to generate.
pub(super) struct Ask {
    /// The request as its first choice makes it, in the request's own sequence.
    pub request: GenerateRequest,
    /// Choices asked for (1 or more).
    pub n: usize,
    /// The request's key among the replicas (its conversation's or session's home).
    pub route: String,
    /// The key's priority, for the places to generate.
    pub priority: i32,
}

/// Stops every choice of a request: the running ones within a token, the others before they
/// start.
#[derive(Clone)]
pub(super) struct Cancel(Arc<watch::Sender<bool>>);

impl Cancel {
    fn new() -> Self {
        Self(Arc::new(watch::Sender::new(false)))
    }

    pub(super) fn cancel(&self) {
        self.0.send_replace(true);
    }

    pub(super) fn is_cancelled(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once cancelled (at once if it was already).
    async fn cancelled(&self) {
        let mut rx = self.0.subscribe();
        // The sender lives in `self`: the wait ends only by a cancel.
        let _ = rx.wait_for(|c| *c).await;
    }

    /// A guard that cancels when dropped (a whole answer whose client went away).
    pub(super) fn on_drop(&self) -> CancelOnDrop {
        CancelOnDrop(self.clone())
    }
}

/// Cancels its request's choices when dropped.
pub(super) struct CancelOnDrop(Cancel);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// The choices of a request, started: their events, each with its choice's index. Every choice
/// that started ends with one `Done` or `Failed`; a choice the engine refused sends its
/// `Failed`; after a cancel, choices not started yet send nothing, and the channel closes once
/// every started one has ended.
pub(super) struct Generating {
    pub events: UnboundedReceiver<(usize, EngineEvent)>,
    pub cancel: Cancel,
    /// The figures of the prompt's one read for all the choices, when the engine shared it.
    pub shared: Option<Figures>,
}

/// What a choice holds until its generation has ended, dropped in this order: the share of
/// the weights last, so that new weights never wait on an engine that a forget still holds.
struct Held {
    _copies: Arc<Copies>,
    _sequence: Lent,
    _permit: super::queue::Permit,
    _assigned: Assigned,
    _weights: Arc<Share>,
}

/// A sequence lent to one choice, back to the request's pool when dropped.
struct Lent {
    sequence: SequenceId,
    pool: UnboundedSender<SequenceId>,
}

impl Drop for Lent {
    fn drop(&mut self) {
        // The pool is gone once every choice has started: nothing waits for it then.
        let _ = self.pool.send(self.sequence);
    }
}

/// The sequences made for a request's choices, forgotten by their engine once the last
/// holder (the choices and their starter) is gone.
struct Copies {
    engine: Arc<dyn Engine>,
    sequences: Vec<SequenceId>,
}

impl Drop for Copies {
    fn drop(&mut self) {
        if !self.sequences.is_empty() {
            self.engine.forget(&self.sequences);
        }
    }
}

/// The sequence of choice `i` (from 1) of the request whose own sequence is `own`, in request
/// group `group`: one of its own, never the default sequence 0.
fn choice_sequence(own: SequenceId, group: u64, i: usize) -> SequenceId {
    #[expect(
        deprecated,
        reason = "SipHasher is the one std hasher with fixed keys: stable across runs and machines"
    )]
    let mut h = std::hash::SipHasher::new();
    ("choice", own.0, group, i).hash(&mut h);
    SequenceId(h.finish().max(1))
}

/// Choice `i`'s request: `base` in `sequence`, with the seed + `i`.
fn choice_request(base: &GenerateRequest, i: usize, sequence: SequenceId) -> GenerateRequest {
    let mut r = base.clone();
    r.sequence = sequence;
    r.sampling.seed = r.sampling.seed.wrapping_add(i as u32);
    r
}

/// Start the choices of `ask` on `assigned` (the first choice's replica), the request being
/// tracked by `tracking` and holding `weights`. The first choice is started here: when the
/// engine refuses it, the request is counted as refused and answered with the engine's error
/// (`Err`).
pub(super) async fn start(
    server: &Arc<Server>,
    ask: Ask,
    assigned: Assigned,
    tracking: Tracking,
    weights: Share,
) -> Result<(Generating, Tracking), Response> {
    let Ask {
        request,
        n,
        route,
        priority,
    } = ask;
    let n = n.max(1);
    let own = request.sequence;
    // Wait for a place to generate, higher priorities first. A client that leaves meanwhile
    // drops this future: its tracking ends as an abort.
    let permit = server.gate.enter(priority).await;
    let engine = assigned.model().engine().clone();
    let group = NEXT_GROUP.fetch_add(1, Ordering::Relaxed);
    let sequences: Vec<SequenceId> = std::iter::once(own)
        .chain((1..n).map(|i| choice_sequence(own, group, i)))
        .collect();
    let (shared, pool) = if n > 1 {
        // No more sequences than can decode together: a later choice waits for one of them.
        let held = n.min(server.sequences.max(1));
        let copies = sequences[1..held].to_vec();
        match share(engine.clone(), &request, copies).await {
            Some(f) => (Some(f), sequences[..held].to_vec()),
            None => (None, sequences.clone()),
        }
    } else {
        (None, sequences.clone())
    };
    let copies = Arc::new(Copies {
        engine,
        sequences: pool[1..].to_vec(),
    });
    let (pool_tx, mut pool_rx) = unbounded_channel();
    for s in pool {
        let _ = pool_tx.send(s);
    }
    let first = pool_rx.recv().await.unwrap_or(own);
    let (generated, tracking) = generate_off(
        server,
        &route,
        assigned,
        choice_request(&request, 0, first),
        tracking,
    )
    .await
    .map_err(IntoResponse::into_response)?;
    let (stream, assigned) = match generated {
        Ok(s) => s,
        Err(e) => {
            let a = ApiError::from_engine(&e);
            tracking.refused(rejection(&e), a.status.as_u16());
            return Err(a.into_response());
        }
    };
    let (tx, rx) = unbounded_channel();
    let cancel = Cancel::new();
    let weights = Arc::new(weights);
    let held = Held {
        _copies: copies.clone(),
        _sequence: Lent {
            sequence: first,
            pool: pool_tx.clone(),
        },
        _permit: permit,
        _assigned: assigned,
        _weights: weights.clone(),
    };
    tokio::spawn(forward(0, stream, tx.clone(), cancel.clone(), held));
    if n > 1 {
        let rest = Rest {
            copies,
            server: server.clone(),
            request,
            n,
            route,
            priority,
            weights,
            pool: (pool_tx, pool_rx),
            events: tx,
            cancel: cancel.clone(),
        };
        tokio::spawn(rest.start());
    }
    Ok((
        Generating {
            events: rx,
            cancel,
            shared,
        },
        tracking,
    ))
}

/// Read `request`'s prompt once into its sequence and copy it into `copies`, on a blocking
/// thread (the engine's call waits for the read); `None` when the engine keeps no memory to
/// share, or the share failed (then each choice reads the prompt itself; a prompt the engine
/// refuses is refused again with the first choice, with its status).
async fn share(
    engine: Arc<dyn Engine>,
    request: &GenerateRequest,
    copies: Vec<SequenceId>,
) -> Option<Figures> {
    let (from, prompt) = (request.sequence, request.prompt.clone());
    let shared =
        tokio::task::spawn_blocking(move || engine.share_prompt(from, &prompt, &copies)).await;
    match shared {
        Ok(Ok(f)) => f,
        Ok(Err(e)) => {
            tracing::info!("the choices read their prompt each: {e}");
            None
        }
        Err(e) => {
            tracing::warn!("the choices read their prompt each: {e}");
            None
        }
    }
}

/// The choices after the first, and what they share with it (the copies dropped before the
/// weights, as in [`Held`]).
struct Rest {
    copies: Arc<Copies>,
    server: Arc<Server>,
    request: GenerateRequest,
    n: usize,
    route: String,
    priority: i32,
    weights: Arc<Share>,
    /// The request's sequences not in use: a choice takes one to start, and gives it back
    /// when it ends.
    pool: (UnboundedSender<SequenceId>, UnboundedReceiver<SequenceId>),
    events: UnboundedSender<(usize, EngineEvent)>,
    cancel: Cancel,
}

impl Rest {
    /// Start choices 1 to n - 1 in order, each once a sequence of the request and a place to
    /// generate are free; stops at a cancel.
    async fn start(mut self) {
        for i in 1..self.n {
            let sequence = tokio::select! {
                s = self.pool.1.recv() => s,
                () = self.cancel.cancelled() => return,
            };
            // The pool's sender is held here: it never ends first.
            let Some(sequence) = sequence else { return };
            let sequence = Lent {
                sequence,
                pool: self.pool.0.clone(),
            };
            let permit = tokio::select! {
                p = self.server.gate.enter(self.priority) => p,
                () = self.cancel.cancelled() => return,
            };
            let Some(assigned) = self.server.replicas.route(&self.route) else {
                let _ = self
                    .events
                    .send((i, EngineEvent::Failed(EngineError::Stopped)));
                return;
            };
            let request = choice_request(&self.request, i, sequence.sequence);
            let (server, route) = (self.server.clone(), self.route.clone());
            let started = tokio::task::spawn_blocking(move || {
                generate(&server, &route, assigned, request, &mut |to| {
                    tracing::info!(replica = to, "choice {i} moved to replica {to}");
                })
            })
            .await;
            let (stream, assigned) = match started {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => {
                    let _ = self.events.send((i, EngineEvent::Failed(e)));
                    return;
                }
                Err(_) => {
                    let _ = self
                        .events
                        .send((i, EngineEvent::Failed(EngineError::Stopped)));
                    return;
                }
            };
            let held = Held {
                _copies: self.copies.clone(),
                _sequence: sequence,
                _permit: permit,
                _assigned: assigned,
                _weights: self.weights.clone(),
            };
            tokio::spawn(forward(
                i,
                stream,
                self.events.clone(),
                self.cancel.clone(),
                held,
            ));
        }
    }
}

/// Pass choice `i`'s events on, tagged with `i`, until its end; stop its generation at a
/// cancel or when nobody listens any more (then read on to its end, so that what it holds is
/// given back only once the engine has really stopped).
async fn forward(
    i: usize,
    stream: GenerationStream,
    tx: UnboundedSender<(usize, EngineEvent)>,
    cancel: Cancel,
    held: Held,
) {
    let canceller = stream.canceller();
    let mut events = stream.events;
    let mut stopping = false;
    loop {
        let ev = tokio::select! {
            ev = events.recv() => ev,
            () = cancel.cancelled(), if !stopping => {
                canceller.store(true, Ordering::Relaxed);
                stopping = true;
                continue;
            }
        };
        let Some(ev) = ev else {
            let _ = tx.send((i, EngineEvent::Failed(EngineError::Ended)));
            break;
        };
        let last = matches!(ev, EngineEvent::Done(_) | EngineEvent::Failed(_));
        if tx.send((i, ev)).is_err() && !stopping {
            canceller.store(true, Ordering::Relaxed);
            stopping = true;
        }
        if last {
            break;
        }
    }
    drop(held);
}

/// The figures of a request from its choices' (in index order, those that ended) and those of
/// the prompt's one read for them all (`shared`): the prompt and what memory held of it are
/// counted once (the shared read's, else the first choice's), the tokens generated and read
/// of every choice are added up. One choice without a shared read: its own figures.
pub(super) fn figures(shared: Option<&Figures>, choices: &[&Figures]) -> Option<Figures> {
    let first = *choices.first()?;
    let read = shared.unwrap_or(first);
    let draft = choices
        .iter()
        .filter_map(|f| f.draft)
        .reduce(|a, b| DraftFigures {
            drafted: a.drafted + b.drafted,
            accepted: a.accepted + b.accepted,
        });
    Some(Figures {
        prompt_tokens: read.prompt_tokens,
        reused_tokens: read.reused_tokens,
        evaluated_tokens: shared.map_or(0, |s| s.evaluated_tokens)
            + choices.iter().map(|f| f.evaluated_tokens).sum::<usize>(),
        reuse: read.reuse,
        generated_tokens: choices.iter().map(|f| f.generated_tokens).sum(),
        prefill_seconds: shared.map_or(0.0, |s| s.prefill_seconds) + first.prefill_seconds,
        decode_seconds: choices.iter().map(|f| f.decode_seconds).fold(0.0, f64::max),
        dropped_pin: read.dropped_pin,
        draft,
    })
}

/// The finish reason the metrics and the audit count for a request, from its choices' stops
/// (in index order, each with whether it called tools): the first choice's, or `abort` when
/// any choice was cancelled (its client went away).
pub(super) fn finish_reason(ends: &[(StopReason, bool)]) -> &'static str {
    match ends.first() {
        _ if ends.iter().any(|(s, _)| *s == StopReason::Cancelled) => "abort",
        Some(&(stop, calls)) => super::api::finish_reason(stop, calls),
        None => "abort",
    }
}

/// Start `request` on its replica; when that replica's engine has stopped, mark it failed and
/// start it on the replica the conversation moves to (read in full there), telling `moved`,
/// until one takes it or none lives.
pub(super) fn generate(
    server: &Server,
    route: &str,
    mut assigned: Assigned,
    request: GenerateRequest,
    moved: &mut dyn FnMut(usize),
) -> Result<(GenerationStream, Assigned), EngineError> {
    loop {
        match assigned.model().generate(request.clone()) {
            Ok(stream) => return Ok((stream, assigned)),
            Err(EngineError::Stopped) => {
                server.replicas.failed(assigned.index());
                assigned = server.replicas.route(route).ok_or(EngineError::Stopped)?;
                moved(assigned.index());
            }
            Err(e) => return Err(e),
        }
    }
}

/// What [`generate_off`] gives back: the generation (or the engine's refusal) and the tracking.
type Started = (Result<(GenerationStream, Assigned), EngineError>, Tracking);

/// [`generate`] on a blocking thread, the request's tracking told of a move: the in-process
/// engine tokenises a long text prompt on the caller's thread (so that it never holds up the
/// engine's), and that must not be one of the runtime's few, which answer every other
/// request. Fails only if that thread panicked (the tracking then ended as an abort).
async fn generate_off(
    server: &Arc<Server>,
    route: &str,
    assigned: Assigned,
    request: GenerateRequest,
    mut tracking: Tracking,
) -> Result<Started, ApiError> {
    let (s, r) = (server.clone(), route.to_string());
    tokio::task::spawn_blocking(move || {
        let generated = generate(&s, &r, assigned, request, &mut |to| tracking.moved(to));
        (generated, tracking)
    })
    .await
    .map_err(|_| ApiError::from_engine(&EngineError::Stopped))
}

/// The rejection reason of an engine's refusal.
pub(super) fn rejection(e: &EngineError) -> Rejection {
    match e {
        EngineError::PromptTooLong { .. } | EngineError::PromptTooLarge { .. } => {
            Rejection::ContextLengthExceeded
        }
        _ => Rejection::InvalidRequest,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Reuse, SamplingParams};

    fn f(prompt: usize, reused: usize, evaluated: usize, generated: usize) -> Figures {
        Figures {
            prompt_tokens: prompt,
            reused_tokens: reused,
            evaluated_tokens: evaluated,
            reuse: Reuse::Extended,
            generated_tokens: generated,
            prefill_seconds: 0.5,
            decode_seconds: generated as f64,
            dropped_pin: None,
            draft: None,
        }
    }

    #[test]
    fn one_choice_keeps_its_own_figures() {
        let one = f(100, 40, 60, 7);
        assert_eq!(figures(None, &[&one]), Some(one));
        assert_eq!(figures(None, &[]), None);
    }

    #[test]
    fn the_prompt_counts_once_and_every_choice_generated_tokens() {
        let read = Figures {
            reuse: Reuse::Fresh,
            generated_tokens: 0,
            ..f(100, 0, 100, 0)
        };
        let choices = [f(100, 99, 1, 5), f(100, 99, 1, 9), f(100, 99, 1, 2)];
        let refs: Vec<&Figures> = choices.iter().collect();
        let all = figures(Some(&read), &refs).unwrap();
        assert_eq!(
            (all.prompt_tokens, all.reused_tokens, all.reuse),
            (100, 0, Reuse::Fresh),
            "the prompt and what memory held of it, as the shared read found them"
        );
        assert_eq!(all.generated_tokens, 16);
        assert_eq!(
            all.evaluated_tokens, 103,
            "the read, then one token per choice"
        );
        assert_eq!(all.decode_seconds, 9.0);
        // Without a shared read (an engine that keeps no memory): the first choice's prompt.
        let all = figures(None, &refs).unwrap();
        assert_eq!((all.prompt_tokens, all.reused_tokens), (100, 99));
        assert_eq!(all.generated_tokens, 16);
    }

    #[test]
    fn a_request_finishes_as_its_first_choice_unless_one_was_cancelled() {
        use StopReason::*;
        assert_eq!(
            finish_reason(&[(EndOfGeneration, true), (TokenCap, false)]),
            "tool_calls"
        );
        assert_eq!(
            finish_reason(&[(TokenCap, false), (EndOfGeneration, false)]),
            "length"
        );
        assert_eq!(
            finish_reason(&[(EndOfGeneration, false), (Cancelled, false)]),
            "abort"
        );
        assert_eq!(finish_reason(&[]), "abort");
    }

    #[test]
    fn each_choice_has_its_own_sequence_and_seed() {
        let own = SequenceId(77);
        let seqs: std::collections::HashSet<_> =
            (1..16).map(|i| choice_sequence(own, 5, i)).collect();
        assert_eq!(seqs.len(), 15);
        assert!(!seqs.contains(&own) && !seqs.contains(&SequenceId::DEFAULT));
        assert_ne!(choice_sequence(own, 5, 1), choice_sequence(own, 6, 1));
        let mut base = GenerateRequest::new("p", 4, SamplingParams::greedy());
        base.sampling.seed = u32::MAX;
        let r = choice_request(&base, 2, SequenceId(9));
        assert_eq!((r.sequence, r.sampling.seed), (SequenceId(9), 1));
        assert_eq!(choice_request(&base, 0, own).sampling.seed, u32::MAX);
    }

    #[tokio::test]
    async fn a_cancel_reaches_waiters_before_and_after_it() {
        let c = Cancel::new();
        let waiting = tokio::spawn({
            let c = c.clone();
            async move { c.cancelled().await }
        });
        tokio::task::yield_now().await;
        assert!(!c.is_cancelled());
        drop(c.on_drop());
        waiting.await.unwrap();
        c.cancelled().await;
        assert!(c.is_cancelled());
    }
}
