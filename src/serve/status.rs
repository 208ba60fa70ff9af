//! How an engine error becomes an HTTP answer: each [`EngineError`] kind has one status and
//! one OpenAI error `type`, so a client can tell its own mistake (400: the prompt cannot be
//! rendered or does not fit) from a server that is busy or gone (503), a server behind us that
//! failed (502), and a failure of the engine itself (500).
//!
//! Invariant: the match is exhaustive, so a new error kind must be given a status here.

use super::api::ApiError;
use crate::engine::EngineError;
use axum::http::StatusCode;

impl ApiError {
    /// The answer for an engine error.
    pub(crate) fn from_engine(e: &EngineError) -> Self {
        let (status, kind) = match e {
            EngineError::Prompt(_) | EngineError::EmptyPrompt | EngineError::NotAToken { .. } => {
                (StatusCode::BAD_REQUEST, "invalid_request_error")
            }
            EngineError::PromptTooLong { .. } | EngineError::PromptTooLarge { .. } => {
                (StatusCode::BAD_REQUEST, "context_length_exceeded")
            }
            EngineError::Stopped | EngineError::Ended => {
                (StatusCode::SERVICE_UNAVAILABLE, "engine_unavailable")
            }
            EngineError::Upstream(_) => (StatusCode::BAD_GATEWAY, "upstream_error"),
            EngineError::File(_)
            | EngineError::Load { .. }
            | EngineError::NoMtpLayer { .. }
            | EngineError::ContextMemory { .. }
            | EngineError::Llama { .. }
            | EngineError::Backend(_)
            | EngineError::Thread(_)
            | EngineError::NoSequence
            | EngineError::PromptForm { .. } => (StatusCode::INTERNAL_SERVER_ERROR, "engine_error"),
        };
        let message = match e {
            // The client's own mistake, in the renderer's words.
            EngineError::Prompt(p) => p.to_string(),
            other => other.to_string(),
        };
        ApiError {
            status,
            kind,
            message,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::remote::RemoteError;
    use crate::engine::PromptForm;
    use crate::prompt::PromptError;

    fn status(e: EngineError) -> (StatusCode, &'static str) {
        let a = ApiError::from_engine(&e);
        assert!(!a.message.is_empty());
        (a.status, a.kind)
    }

    #[test]
    fn a_prompt_that_cannot_be_rendered_is_the_clients_error() {
        let e = EngineError::Prompt(PromptError::Read {
            what: "the system prompt",
            path: "/nope".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        });
        let a = ApiError::from_engine(&e);
        assert_eq!(
            (a.status, a.kind),
            (StatusCode::BAD_REQUEST, "invalid_request_error")
        );
        assert!(
            !a.message.starts_with("the prompt could not"),
            "{}",
            a.message
        );
        assert_eq!(
            status(EngineError::EmptyPrompt),
            (StatusCode::BAD_REQUEST, "invalid_request_error")
        );
    }

    #[test]
    fn a_prompt_longer_than_the_context_is_the_clients_error() {
        assert_eq!(
            status(EngineError::PromptTooLong {
                prompt: 9000,
                ctx: 4096
            }),
            (StatusCode::BAD_REQUEST, "context_length_exceeded")
        );
        assert_eq!(
            status(EngineError::PromptTooLarge {
                bytes: 20 << 20,
                at_least: 400_000,
                ctx: 4096
            }),
            (StatusCode::BAD_REQUEST, "context_length_exceeded")
        );
    }

    #[test]
    fn a_stopped_engine_is_unavailable() {
        for e in [EngineError::Stopped, EngineError::Ended] {
            assert_eq!(
                status(e),
                (StatusCode::SERVICE_UNAVAILABLE, "engine_unavailable")
            );
        }
    }

    #[test]
    fn a_failing_server_behind_is_a_bad_gateway() {
        let e = EngineError::from(RemoteError::Status {
            url: "http://gpu:30000/v1/chat/completions".into(),
            status: 500,
            message: "boom".into(),
        });
        assert_eq!(status(e), (StatusCode::BAD_GATEWAY, "upstream_error"));
    }

    #[test]
    fn engine_failures_are_internal_errors() {
        let io = || std::io::Error::other("no threads");
        for e in [
            EngineError::Thread(io()),
            EngineError::ContextMemory {
                ctx: 131_072,
                kv_mib: 4096,
                sequences: 4,
                recurrent_mib: 200,
                suggest: 32_768,
            },
            EngineError::Llama {
                doing: "reading tokens",
                source: Box::new(io()),
            },
            EngineError::NoSequence,
            EngineError::PromptForm {
                engine: "llama.cpp",
                reads: PromptForm::Text,
                given: PromptForm::Chat,
            },
        ] {
            assert_eq!(
                status(e),
                (StatusCode::INTERNAL_SERVER_ERROR, "engine_error")
            );
        }
    }
}
