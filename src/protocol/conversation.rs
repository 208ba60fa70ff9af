//! Which conversation a chat request belongs to, told from its messages alone: the key
//! `lilypad serve` keeps each conversation's memory under, and the `X-Session-ID` Lilypad's
//! endpoint client sends so that a router in front of several servers keeps a conversation on
//! one of them.
//!
//! Does not own: what is done with the key (`crate::serve`, `crate::engine::remote`).

use super::Message;
use std::hash::{Hash, Hasher};

/// Which conversation a request belongs to: its system prompt and first user message, which
/// stay the same for the life of an agent's task while everything after them grows (and the
/// reasoning of earlier turns is dropped when a new user message comes). Two different tasks
/// differ in their first user message. Never 0, the engine's default slot.
pub fn conversation_key(messages: &[Message]) -> u64 {
    // SipHash with fixed keys: stable across runs and machines.
    #[expect(
        deprecated,
        reason = "SipHasher is the one std hasher with fixed keys: stable across runs and machines"
    )]
    let mut h = std::hash::SipHasher::new();
    for m in messages {
        match m {
            Message::System { content } => ("system", content).hash(&mut h),
            Message::User { content } => {
                ("user", content).hash(&mut h);
                break;
            }
            _ => {}
        }
    }
    h.finish().max(1)
}

/// [`conversation_key`] as 16 hex digits: the `X-Session-ID` header's value.
pub fn session_id(messages: &[Message]) -> String {
    format!("{:016x}", conversation_key(messages))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_follows_system_and_first_user_message() {
        let a = vec![Message::system("s"), Message::user("task A")];
        let mut a2 = a.clone();
        a2.push(Message::assistant(None, "x", vec![]));
        a2.push(Message::user("more"));
        let b = vec![Message::system("s"), Message::user("task B")];
        assert_eq!(conversation_key(&a), conversation_key(&a2));
        assert_ne!(conversation_key(&a), conversation_key(&b));
        assert_ne!(conversation_key(&[]), 0);
        assert_eq!(session_id(&a), session_id(&a2));
        assert_eq!(session_id(&a).len(), 16);
    }
}
