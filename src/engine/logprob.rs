//! Log-probabilities of sampled tokens under the model's raw distribution: the log-softmax of
//! the logits llama.cpp returns for a position, before any sampling stage (logit biases,
//! top-k/p, min-p, temperature, the tool grammar) has touched them. Trainers compare these with
//! their own forward pass (PPO's ratio), so they must be the model's, not the sampler's.
//!
//! One pass finds the largest logit, a second sums `exp(l - max)`; the exponential is a
//! polynomial written so the compiler vectorises the loop (the real vocabulary has 248,320
//! rows; the standard library's `exp` is a scalar call per row). Its relative error is below
//! 4e-7 (a few float32 roundings), far under what a logit carries. The top alternatives, when
//! asked, come from one more pass that keeps the `n` largest. What rating costs a decode step
//! is measured in `lilypad bench` (docs/PERFORMANCE.md).
//!
//! Does not own: which tokens are sampled (`llama::sampler`), or reporting them (`llama::step`).

use serde::{Deserialize, Serialize};

/// The most alternatives a request may ask for (OpenAI's `top_logprobs` bound).
pub const MAX_TOP: u8 = 20;

/// One sampled token, rated by the model's raw distribution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampledToken {
    pub id: u32,
    /// Natural log of its probability.
    pub logprob: f32,
    /// The most likely tokens at its position and their log-probabilities, most likely first
    /// (as many as the request asked for; empty when it asked for none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub top: Vec<(u32, f32)>,
}

/// `token`'s log-probability in `logits`, and the `top` most likely tokens with theirs.
/// `None` when `token` is not a row of `logits`.
pub fn rate(logits: &[f32], token: u32, top: u8) -> Option<SampledToken> {
    let own = *logits.get(token as usize)?;
    let block_max = block_maxima(logits);
    let lse = log_sum_exp_of(logits, &block_max);
    Some(SampledToken {
        id: token,
        logprob: own - lse,
        top: largest(logits, &block_max, top.min(MAX_TOP) as usize)
            .into_iter()
            .map(|(id, l)| (id, l - lse))
            .collect(),
    })
}

/// Logits this far below the largest are left out of the sum: each adds less than `e^-30`
/// (1e-13) of the largest term, so all of a 248,320-row vocabulary together change the sum by
/// less than 3e-8 of itself, under float32's resolution.
const NEGLIGIBLE: f32 = 30.0;

const LANES: usize = 16;

/// `ln(sum(exp(logits)))`, computed stably (shifted by the largest logit). The sum skips every
/// block of 16 logits whose largest is negligible, so where most of a row sits far below its
/// likely tokens a rating costs little more than the pass that finds the maxima.
pub fn log_sum_exp(logits: &[f32]) -> f32 {
    log_sum_exp_of(logits, &block_maxima(logits))
}

/// The largest logit of each whole block of [`LANES`].
fn block_maxima(logits: &[f32]) -> Vec<f32> {
    logits.chunks_exact(LANES).map(largest_value).collect()
}

fn log_sum_exp_of(logits: &[f32], block_max: &[f32]) -> f32 {
    let rest = logits.chunks_exact(LANES).remainder();
    let max = largest_value(block_max).max(largest_value(rest));
    if !max.is_finite() {
        return max;
    }
    let cut = max - NEGLIGIBLE;
    let acc = sum_exp(logits, block_max, max, cut);
    let mut sum: f64 = acc.iter().map(|&x| x as f64).sum();
    sum += rest
        .iter()
        .map(|&l| exp_nonpositive(l - max) as f64)
        .sum::<f64>();
    max + (sum as f32).ln()
}

/// The per-lane sums of `exp(l - max)` over the blocks whose largest is not under `cut`: with
/// AVX2 where the CPU has it (eight lanes a step instead of SSE2's four; the same arithmetic,
/// so the same result), else the baseline build's.
fn sum_exp(logits: &[f32], block_max: &[f32], max: f32, cut: f32) -> [f32; LANES] {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { sum_exp_avx2(logits, block_max, max, cut) };
    }
    sum_exp_blocks(logits, block_max, max, cut)
}

/// [`sum_exp_blocks`] compiled for AVX2.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sum_exp_avx2(logits: &[f32], block_max: &[f32], max: f32, cut: f32) -> [f32; LANES] {
    sum_exp_blocks(logits, block_max, max, cut)
}

#[inline(always)]
fn sum_exp_blocks(logits: &[f32], block_max: &[f32], max: f32, cut: f32) -> [f32; LANES] {
    let mut acc = [0f32; LANES];
    for (c, &m) in logits.chunks_exact(LANES).zip(block_max) {
        if m < cut {
            continue;
        }
        for i in 0..LANES {
            acc[i] += exp_nonpositive(c[i] - max);
        }
    }
    acc
}

fn largest_value(logits: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; LANES];
    let chunks = logits.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        for i in 0..LANES {
            acc[i] = acc[i].max(c[i]);
        }
    }
    acc.iter()
        .chain(rest)
        .copied()
        .fold(f32::NEG_INFINITY, f32::max)
}

/// `exp(x)` for `x <= 0`: `x = n ln 2 + r` with an integer `n` (its power of two built in the
/// exponent bits) and `|r| <= ln 2 / 2`, `ln 2` taken in two parts so that `r` is exact
/// (Cody and Waite), then a degree-6 Taylor polynomial of `e^r`. Branch-free, so loops over
/// it vectorise; inputs below -87 give `exp(-87)`, about 1.6e-38.
#[inline(always)]
fn exp_nonpositive(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    // ln 2 = LN2_HI + LN2_LO, LN2_HI with few enough bits that n * LN2_HI is exact.
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // Adding and taking away 1.5 * 2^23 rounds to the nearest integer (|t| < 2^22 here).
    const ROUND: f32 = 12_582_912.0;
    const C: [f32; 7] = [
        1.0,
        1.0,
        1.0 / 2.0,
        1.0 / 6.0,
        1.0 / 24.0,
        1.0 / 120.0,
        1.0 / 720.0,
    ];
    let x = x.max(-87.0);
    // ROUND + n exactly (n a whole number in [-126, 0]): all of these share one exponent,
    // so n is also the difference of the bit patterns. (A float-to-int `as` would saturate
    // lane by lane and keep the loop from vectorising.)
    let shifted = x * LOG2E + ROUND;
    let n = shifted - ROUND;
    let r = (x - n * LN2_HI) - n * LN2_LO;
    let p = C[0] + r * (C[1] + r * (C[2] + r * (C[3] + r * (C[4] + r * (C[5] + r * C[6])))));
    let whole = shifted.to_bits().wrapping_sub(ROUND.to_bits()) as i32;
    // 2^n is a normal float with biased exponent n + 127.
    let scale = f32::from_bits(((whole + 127) as u32) << 23);
    p * scale
}

/// The `n` largest logits and their rows, largest first (the lower row first among equals).
/// Only blocks whose largest reaches the `n`-th largest block maximum are read: each of the `n`
/// blocks with the largest maxima holds a logit at least that high, so nothing below it can be
/// among the `n` largest.
fn largest(logits: &[f32], block_max: &[f32], n: usize) -> Vec<(u32, f32)> {
    if n == 0 {
        return Vec::new();
    }
    let bound = if block_max.len() >= n {
        let mut m = block_max.to_vec();
        let (_, nth, _) = m.select_nth_unstable_by(n - 1, |a, b| b.total_cmp(a));
        *nth
    } else {
        f32::NEG_INFINITY
    };
    let mut best: Vec<(u32, f32)> = Vec::with_capacity(n + 1);
    let mut consider = |i: usize, l: f32| {
        if best.len() == n && best[n - 1].1 >= l {
            return;
        }
        let at = best.partition_point(|&(_, b)| b >= l);
        best.insert(at, (i as u32, l));
        best.truncate(n);
    };
    let whole = block_max.len() * LANES;
    for (b, &m) in block_max.iter().enumerate() {
        if m < bound {
            continue;
        }
        for (j, &l) in logits[b * LANES..(b + 1) * LANES].iter().enumerate() {
            consider(b * LANES + j, l);
        }
    }
    for (j, &l) in logits[whole..].iter().enumerate() {
        consider(whole + j, l);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact(logits: &[f32]) -> f64 {
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
        max + logits
            .iter()
            .map(|&l| (l as f64 - max).exp())
            .sum::<f64>()
            .ln()
    }

    #[test]
    fn the_fast_exponential_is_close_to_the_exact_one() {
        let mut worst = 0f64;
        for i in 0..=87_000 {
            let x = -(i as f32) / 1000.0;
            let got = exp_nonpositive(x) as f64;
            let want = (x as f64).exp();
            worst = worst.max(((got - want) / want).abs());
        }
        assert!(worst < 4e-7, "worst relative error {worst}");
    }

    #[test]
    fn log_sum_exp_matches_the_exact_sum_on_a_vocabulary_sized_row() {
        // A deterministic spread of logits like a model's: most far below the top few.
        let mut state = 12345u64;
        let logits: Vec<f32> = (0..248_320)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                ((state >> 40) as f32 / (1u64 << 24) as f32) * 40.0 - 25.0
            })
            .collect();
        let got = log_sum_exp(&logits) as f64;
        let want = exact(&logits);
        assert!((got - want).abs() < 1e-4, "{got} vs {want}");
    }

    #[test]
    fn far_below_logits_are_skipped_without_changing_the_sum_measurably() {
        // Most rows 40 below a few likely tokens (skipped), some just inside the cut.
        let mut logits = vec![-25.0f32; 248_320];
        logits[7] = 15.0;
        logits[99_000] = 13.5;
        for i in (0..248_320).step_by(997) {
            logits[i] = -14.0;
        }
        let got = log_sum_exp(&logits) as f64;
        let want = exact(&logits);
        assert!((got - want).abs() < 1e-5, "{got} vs {want}");
    }

    #[test]
    fn rates_a_token_and_its_alternatives() {
        let logits = [1.0f32, 3.0, 2.0, -1.0];
        let r = rate(&logits, 2, 2).unwrap();
        let lse = exact(&logits);
        assert!((r.logprob as f64 - (2.0 - lse)).abs() < 1e-5);
        assert_eq!(r.top.iter().map(|t| t.0).collect::<Vec<_>>(), [1, 2]);
        assert!((r.top[0].1 as f64 - (3.0 - lse)).abs() < 1e-5);
        let probs: f64 = logits.iter().map(|&l| (l as f64 - lse).exp()).sum();
        assert!((probs - 1.0).abs() < 1e-9);
        assert!(rate(&logits, 9, 0).is_none(), "a token outside the row");
        assert!(rate(&logits, 0, 0).unwrap().top.is_empty());
    }

    #[test]
    fn ties_keep_the_lower_row_first_and_n_is_capped_by_the_row() {
        let logits = [5.0f32, 5.0, 1.0];
        let top = largest(&logits, &block_maxima(&logits), 5);
        assert_eq!(top.iter().map(|t| t.0).collect::<Vec<_>>(), [0, 1, 2]);
        // Across blocks (some skipped): the same as sorting the whole row.
        let mut state = 99u64;
        let row: Vec<f32> = (0..10_007)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                ((state >> 45) % 5000) as f32 / 100.0
            })
            .collect();
        let mut sorted: Vec<(u32, f32)> = row
            .iter()
            .enumerate()
            .map(|(i, &l)| (i as u32, l))
            .collect();
        sorted.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        assert_eq!(largest(&row, &block_maxima(&row), 20), sorted[..20]);
    }
}
