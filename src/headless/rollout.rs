//! Rollouts: an attempt as an RL trainer reads it, from the tokens the engine sampled (never
//! re-tokenised text). Per model turn: `prompt_token_ids`, `completion_token_ids` (the
//! end-of-turn token included when the model ended there) and `logprobs` (one per completion
//! token, under the model's raw distribution). Then the flattened form trainers take (verl's
//! agent loop, SkyRL's generator output): `prompt_ids` (the first turn's prompt),
//! `response_ids` (every completion, and between them the template text and tool results the
//! next prompt adds), `loss_mask` (1 for sampled tokens, 0 for the rest) and
//! `response_logprobs` (0 where the mask is 0).
//!
//! Flattening needs turn t+1's prompt to begin with turn t's prompt and completion. Where it
//! does not (the template rewrote history: a new user message drops earlier reasoning, or the
//! rendered turn differs from the sampled tokens), a new segment starts, and the segment says
//! why and where the first difference is. Each segment is one training sample.
//!
//! Owns the format (docs/batch.md, "Rollouts"); not the tokens (`crate::agent::TokenLog`) or
//! where the files go (`super::results`, `super::run_task`).

use crate::agent::TurnTokens;
use crate::engine::StopReason;
use serde::Serialize;

/// Which attempt a rollout is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrajectoryId {
    pub instance_id: String,
    /// 1-based.
    pub attempt: u32,
}

/// What a rollout records beside the tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct RolloutFacts {
    pub id: TrajectoryId,
    /// `sha256:<hex>` of the weight file, when it was hashed.
    pub weight_version: Option<String>,
    pub reward: Option<f64>,
    /// How the task ended (the finish reason's name).
    pub stop_reason: String,
}

/// One attempt's rollout (`rollout.json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rollout {
    pub format: &'static str,
    pub trajectory_id: TrajectoryId,
    pub weight_version: Option<String>,
    /// What the log-probabilities are of.
    pub logprobs_of: &'static str,
    pub reward: Option<f64>,
    pub stop_reason: String,
    pub turns: Vec<RolloutTurn>,
    pub segments: Vec<Segment>,
}

/// One model turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RolloutTurn {
    pub turn: u32,
    /// The index of the segment the turn belongs to.
    pub segment: usize,
    pub prompt_token_ids: Vec<u32>,
    pub completion_token_ids: Vec<u32>,
    pub logprobs: Vec<f32>,
    pub stop: StopReason,
}

/// Turns whose prompts extend each other, flattened into one training sample.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Segment {
    pub turns: Vec<u32>,
    /// Why this segment starts a new sample (absent for the first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub break_reason: Option<String>,
    pub prompt_ids: Vec<u32>,
    pub response_ids: Vec<u32>,
    pub loss_mask: Vec<u8>,
    pub response_logprobs: Vec<f32>,
}

pub const FORMAT: &str = "lilypad-rollout-1";

/// What `logprobs` are: the log-softmax of the model's logits, before any sampling stage.
pub const LOGPROBS_OF: &str =
    "model: log-softmax of the raw logits, before logit biases, top-k, top-p, min-p, temperature and the tool grammar";

/// The rollout of `turns`.
pub fn build(turns: &[TurnTokens], facts: RolloutFacts) -> Rollout {
    let mut segments: Vec<Segment> = Vec::new();
    let mut out_turns = Vec::with_capacity(turns.len());
    // The tokens the current segment holds so far: its prompt, then its response.
    let mut context: Vec<u32> = Vec::new();
    for t in turns {
        let completion: Vec<u32> = t.sampled.iter().map(|s| s.id).collect();
        let logprobs: Vec<f32> = t.sampled.iter().map(|s| s.logprob).collect();
        let extending = segments
            .last_mut()
            .filter(|_| t.prompt.starts_with(&context));
        if let Some(seg) = extending {
            let added = &t.prompt[context.len()..];
            seg.response_ids.extend_from_slice(added);
            seg.loss_mask.extend(std::iter::repeat_n(0, added.len()));
            seg.response_logprobs
                .extend(std::iter::repeat_n(0.0, added.len()));
            seg.turns.push(t.turn);
        } else {
            let break_reason = (!segments.is_empty()).then(|| {
                let at = context
                    .iter()
                    .zip(&t.prompt)
                    .take_while(|(a, b)| a == b)
                    .count();
                format!(
                    "turn {}'s prompt does not begin with the previous turn's prompt and completion: they differ from token {at} on (the template rewrote the history, or the turn as rendered is not the tokens sampled)",
                    t.turn
                )
            });
            segments.push(Segment {
                turns: vec![t.turn],
                break_reason,
                prompt_ids: t.prompt.clone(),
                response_ids: Vec::new(),
                loss_mask: Vec::new(),
                response_logprobs: Vec::new(),
            });
        }
        let seg = segments.len() - 1;
        let s = &mut segments[seg];
        s.response_ids.extend_from_slice(&completion);
        s.loss_mask.extend(std::iter::repeat_n(1, completion.len()));
        s.response_logprobs.extend_from_slice(&logprobs);
        context.clone_from(&t.prompt);
        context.extend_from_slice(&completion);
        out_turns.push(RolloutTurn {
            turn: t.turn,
            segment: seg,
            prompt_token_ids: t.prompt.clone(),
            completion_token_ids: completion,
            logprobs,
            stop: t.stop,
        });
    }
    Rollout {
        format: FORMAT,
        trajectory_id: facts.id,
        weight_version: facts.weight_version,
        logprobs_of: LOGPROBS_OF,
        reward: facts.reward,
        stop_reason: facts.stop_reason,
        turns: out_turns,
        segments,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::SampledToken;

    fn turn(n: u32, prompt: &[u32], completion: &[u32]) -> TurnTokens {
        TurnTokens {
            turn: n,
            prompt: prompt.to_vec(),
            sampled: completion
                .iter()
                .map(|&id| SampledToken {
                    id,
                    logprob: -(id as f32) / 100.0,
                    top: Vec::new(),
                })
                .collect(),
            stop: StopReason::EndOfGeneration,
        }
    }

    fn facts() -> RolloutFacts {
        RolloutFacts {
            id: TrajectoryId {
                instance_id: "t".into(),
                attempt: 1,
            },
            weight_version: None,
            reward: Some(1.0),
            stop_reason: "answered".into(),
        }
    }

    #[test]
    fn turns_that_extend_each_other_flatten_into_one_masked_sample() {
        // Prompt 1,2; completion 3,4; tool result 5,6; completion 7; tool result 8; completion 9.
        let r = build(
            &[
                turn(1, &[1, 2], &[3, 4]),
                turn(2, &[1, 2, 3, 4, 5, 6], &[7]),
                turn(3, &[1, 2, 3, 4, 5, 6, 7, 8], &[9]),
            ],
            facts(),
        );
        assert_eq!(r.segments.len(), 1);
        let s = &r.segments[0];
        assert_eq!(s.prompt_ids, [1, 2]);
        assert_eq!(s.response_ids, [3, 4, 5, 6, 7, 8, 9]);
        assert_eq!(s.loss_mask, [1, 1, 0, 0, 1, 0, 1]);
        assert_eq!(
            s.response_logprobs,
            [-0.03, -0.04, 0.0, 0.0, -0.07, 0.0, -0.09]
        );
        assert_eq!(s.turns, [1, 2, 3]);
        assert!(s.break_reason.is_none());
        assert_eq!(r.turns[1].completion_token_ids, [7]);
    }

    #[test]
    fn a_rewritten_history_starts_a_new_segment_and_says_where() {
        let r = build(
            &[
                turn(1, &[1, 2], &[3, 4]),
                // The reasoning (3) was dropped by the template.
                turn(2, &[1, 2, 4, 5], &[6]),
                turn(3, &[1, 2, 4, 5, 6, 7], &[8]),
            ],
            facts(),
        );
        assert_eq!(r.segments.len(), 2);
        let second = &r.segments[1];
        assert_eq!(second.prompt_ids, [1, 2, 4, 5]);
        assert_eq!(second.response_ids, [6, 7, 8]);
        assert_eq!(second.loss_mask, [1, 0, 1]);
        assert_eq!(second.turns, [2, 3]);
        let why = second.break_reason.as_deref().unwrap();
        assert!(why.contains("from token 2"), "{why}");
        assert_eq!(
            r.turns.iter().map(|t| t.segment).collect::<Vec<_>>(),
            [0, 1, 1]
        );
    }
}
