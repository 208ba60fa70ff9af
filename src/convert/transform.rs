//! The numeric side of the conversion, as pure functions over rows of f32:
//! - the DeltaNet value-head reordering, from Hugging Face's grouped-by-key-head order
//!   `[k0: v0..v(r-1), k1: v0..v(r-1), ...]` to the tiled order ggml's broadcasting expects
//!   `[v0 of k0, v0 of k1, ..., v1 of k0, v1 of k1, ...]` ([`tile_v_heads`]);
//! - element maps: `+1` for the zero-centred RMS norm weights, `-exp(x)` for `A_log`;
//! - the output encodings (F32, F16, BF16, Q8_0 through [`crate::gguf`]), and which tensors get
//!   which type ([`output_type`]).
//!
//! A tensor is seen as a row-major matrix `[rows, cols]` (Hugging Face order; 1-D tensors are
//! `[n, 1]`, the squeezed conv kernel `[channels, kernel]`). Reordering only ever moves whole
//! rows or permutes columns within a row, so a chunk of whole rows can be transformed and
//! encoded on its own, and Q8_0 blocks (along a row) come out exactly as for the whole tensor.

use super::checkpoint::{Checkpoint, SourceTensor};
use super::{ConvertError, OutType};
use crate::gguf::{f32_to_bf16_bytes, f32_to_f16_bytes, quantize_q8_0, GgmlType};

/// The map applied to every element after reordering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElementOp {
    Identity,
    /// `w + 1`: Qwen3.5's RMS norms compute `x * (1 + w)`, llama.cpp's `x * w`.
    PlusOne,
    /// `-exp(w)`: `A_log` becomes `ssm_a`, the decay rate llama.cpp multiplies by.
    NegExp,
}

impl ElementOp {
    pub fn apply(self, values: &mut [f32]) {
        match self {
            Self::Identity => {}
            Self::PlusOne => values.iter_mut().for_each(|v| *v += 1.0),
            Self::NegExp => values.iter_mut().for_each(|v| *v = -v.exp()),
        }
    }
}

/// Source indices of the tiled value-head order: `out[i]` takes `in[result[i]]`, over
/// `v_heads * width` positions (`width` = elements per head: the head size for rows of a
/// projection, 1 for per-head scalars).
pub fn tile_v_heads(k_heads: u64, v_heads: u64, width: u64) -> Vec<u32> {
    let per = v_heads / k_heads;
    let mut src = Vec::with_capacity((v_heads * width) as usize);
    for j in 0..per {
        for k in 0..k_heads {
            for d in 0..width {
                src.push(((k * per + j) * width + d) as u32);
            }
        }
    }
    src
}

/// `tile_v_heads` for the value part of a longer axis: the first `keep` positions stay.
pub fn tile_after(keep: u64, k_heads: u64, v_heads: u64, width: u64) -> Vec<u32> {
    (0..keep as u32)
        .chain(
            tile_v_heads(k_heads, v_heads, width)
                .into_iter()
                .map(|i| i + keep as u32),
        )
        .collect()
}

/// How one checkpoint tensor becomes one GGUF tensor.
#[derive(Debug, Clone, PartialEq)]
pub struct Transform {
    pub rows: u64,
    pub cols: u64,
    /// Output row `r` is input row `row_src[r]` (identity when `None`).
    pub row_src: Option<Vec<u32>>,
    /// Output column `c` is input column `col_src[c]` (identity when `None`).
    pub col_src: Option<Vec<u32>>,
    pub op: ElementOp,
}

impl Transform {
    pub fn identity(rows: u64, cols: u64) -> Self {
        Self {
            rows,
            cols,
            row_src: None,
            col_src: None,
            op: ElementOp::Identity,
        }
    }

    /// Output rows `[first, first + n)` of `src`, transformed, into `out` (resized to fit).
    pub fn rows_of(
        &self,
        ckpt: &Checkpoint,
        src: &SourceTensor,
        first: u64,
        n: u64,
        out: &mut Vec<f32>,
    ) -> Result<(), ConvertError> {
        let cols = self.cols as usize;
        out.resize(n as usize * cols, 0.0);
        match &self.row_src {
            None => ckpt.read(src, first as usize * cols, out)?,
            Some(map) => {
                for (i, row) in out.chunks_exact_mut(cols).enumerate() {
                    let from = map[first as usize + i] as usize;
                    ckpt.read(src, from * cols, row)?;
                }
            }
        }
        self.finish_rows(out);
        Ok(())
    }

    /// Column reordering and the element map on rows already in output row order.
    pub fn finish_rows(&self, rows: &mut [f32]) {
        if let Some(map) = &self.col_src {
            let mut tmp = vec![0.0f32; self.cols as usize];
            for row in rows.chunks_exact_mut(self.cols as usize) {
                for (t, &from) in tmp.iter_mut().zip(map) {
                    *t = row[from as usize];
                }
                row.copy_from_slice(&tmp);
            }
        }
        self.op.apply(rows);
    }

    /// Apply to a whole in-memory tensor (tests and small checks).
    pub fn apply_all(&self, input: &[f32]) -> Vec<f32> {
        let cols = self.cols as usize;
        let mut out = match &self.row_src {
            None => input.to_vec(),
            Some(map) => map
                .iter()
                .flat_map(|&r| {
                    input[r as usize * cols..(r as usize + 1) * cols]
                        .iter()
                        .copied()
                })
                .collect(),
        };
        self.finish_rows(&mut out);
        out
    }
}

/// The GGUF type of a tensor, following the Python converter's habits: vectors, norms, the
/// conv kernel and anything not named `*.weight` (`ssm_a`, `ssm_dt.bias`) stay F32; matrices
/// take the chosen type, except that Q8_0 needs rows of whole 32-element blocks and falls back
/// to F16 otherwise.
pub fn output_type(gguf_name: &str, n_dims: usize, row_len: u64, out: OutType) -> GgmlType {
    let keep_f32 = n_dims < 2
        || gguf_name.ends_with("_norm.weight")
        || gguf_name.contains("ssm_conv1d")
        || !gguf_name.ends_with(".weight");
    if keep_f32 {
        return GgmlType::F32;
    }
    match out {
        OutType::F32 => GgmlType::F32,
        OutType::F16 => GgmlType::F16,
        OutType::Bf16 => GgmlType::BF16,
        OutType::Q8_0 if row_len.is_multiple_of(32) => GgmlType::Q8_0,
        OutType::Q8_0 => GgmlType::F16,
    }
}

/// Encode values as `ty` (F32, F16, BF16 or Q8_0; Q8_0 needs whole blocks).
pub fn encode(ty: GgmlType, values: &[f32]) -> Vec<u8> {
    match ty {
        GgmlType::F16 => f32_to_f16_bytes(values),
        GgmlType::BF16 => f32_to_bf16_bytes(values),
        GgmlType::Q8_0 => quantize_q8_0(values),
        _ => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_heads_go_from_grouped_to_tiled() {
        // 2 key heads, 2 value heads each: HF order k0v0 k0v1 k1v0 k1v1.
        assert_eq!(tile_v_heads(2, 4, 1), vec![0, 2, 1, 3]);
        // 2 key heads, 3 value heads each, 2 elements per head.
        let src = tile_v_heads(2, 6, 2);
        let heads: Vec<u32> = src.chunks(2).map(|c| c[0] / 2).collect();
        assert_eq!(heads, vec![0, 3, 1, 4, 2, 5]);
        assert!(src.chunks(2).all(|c| c[1] == c[0] + 1));
        // Equal counts: nothing moves.
        assert_eq!(tile_v_heads(4, 4, 3), (0..12).collect::<Vec<_>>());
        assert_eq!(tile_after(2, 2, 4, 1), vec![0, 1, 2, 4, 3, 5]);
    }

    #[test]
    fn row_and_column_reorders_on_a_known_pattern() {
        // in_proj_z-like: 4 value heads of 2 rows, 3 columns; value = 10*row + col.
        let input: Vec<f32> = (0..8)
            .flat_map(|r| (0..3).map(move |c| (10 * r + c) as f32))
            .collect();
        let t = Transform {
            row_src: Some(tile_v_heads(2, 4, 2)),
            ..Transform::identity(8, 3)
        };
        let out = t.apply_all(&input);
        let first_col: Vec<f32> = out.chunks(3).map(|r| r[0]).collect();
        assert_eq!(
            first_col,
            vec![0.0, 10.0, 40.0, 50.0, 20.0, 30.0, 60.0, 70.0]
        );
        // out_proj-like: the same on columns.
        let t = Transform {
            col_src: Some(tile_v_heads(2, 4, 1)),
            ..Transform::identity(1, 4)
        };
        assert_eq!(t.apply_all(&[0.0, 1.0, 2.0, 3.0]), vec![0.0, 2.0, 1.0, 3.0]);
    }

    #[test]
    fn element_maps() {
        let mut a = [0.0f32, 1.0_f32.ln(), 2.0_f32.ln()];
        ElementOp::NegExp.apply(&mut a);
        assert_eq!(a, [-1.0, -1.0, -2.0]);
        let mut n = [0.0f32, -0.5, 0.25];
        ElementOp::PlusOne.apply(&mut n);
        assert_eq!(n, [1.0, 0.5, 1.25]);
    }

    #[test]
    fn types_follow_the_python_converter() {
        let q = OutType::Q8_0;
        assert_eq!(output_type("blk.0.ffn_up.weight", 2, 64, q), GgmlType::Q8_0);
        assert_eq!(output_type("blk.0.ffn_up.weight", 2, 48, q), GgmlType::F16);
        assert_eq!(
            output_type("blk.0.attn_norm.weight", 1, 64, q),
            GgmlType::F32
        );
        assert_eq!(
            output_type("blk.0.ssm_conv1d.weight", 2, 4, q),
            GgmlType::F32
        );
        assert_eq!(output_type("blk.0.ssm_a", 1, 4, q), GgmlType::F32);
        assert_eq!(output_type("blk.0.ssm_dt.bias", 1, 4, q), GgmlType::F32);
        assert_eq!(
            output_type("token_embd.weight", 2, 64, OutType::Bf16),
            GgmlType::BF16
        );
        assert_eq!(
            output_type("token_embd.weight", 2, 64, OutType::F16),
            GgmlType::F16
        );
    }

    #[test]
    fn q8_0_blocks_match_ggml_reference_values() {
        // One block: amax 2.54 gives d = 0.02, so values are x / 0.02 rounded.
        let mut v = vec![0.0f32; 32];
        v[0] = 2.54;
        v[1] = -1.0;
        v[2] = 0.064;
        let q = encode(GgmlType::Q8_0, &v);
        assert_eq!(q.len(), 34);
        assert_eq!(
            half::f16::from_le_bytes([q[0], q[1]]),
            half::f16::from_f32(0.02)
        );
        assert_eq!([q[2] as i8, q[3] as i8, q[4] as i8], [127, -50, 3]);
        // Chunked encoding of whole rows equals encoding the whole tensor.
        let big: Vec<f32> = (0..256)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0)
            .collect();
        let whole = encode(GgmlType::Q8_0, &big);
        let parts: Vec<u8> = big
            .chunks(64)
            .flat_map(|c| encode(GgmlType::Q8_0, c))
            .collect();
        assert_eq!(whole, parts);
    }
}
