//! Element encodings for tensor data: F16, BF16 and Q8_0, each bit-compatible with ggml's
//! reference conversions (round-to-nearest-even for the halves; ggml's `quantize_row_q8_0_ref`
//! for Q8_0: per block of 32, scale `amax / 127` stored as F16, values `round(x / scale)`).

/// Little-endian F16 bytes of `values`.
pub fn f32_to_f16_bytes(values: &[f32]) -> Vec<u8> {
    values
        .iter()
        .flat_map(|&v| half::f16::from_f32(v).to_le_bytes())
        .collect()
}

/// Little-endian BF16 bytes of `values` (round to nearest even; NaN stays NaN).
pub fn f32_to_bf16_bytes(values: &[f32]) -> Vec<u8> {
    values
        .iter()
        .flat_map(|&v| half::bf16::from_f32(v).to_le_bytes())
        .collect()
}

/// Q8_0 blocks of `values`, whose length must be a multiple of 32 (the caller checks shapes).
pub fn quantize_q8_0(values: &[f32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() / 32 * 34);
    for block in values.chunks(32) {
        let amax = block.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let d = amax / 127.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        out.extend_from_slice(&half::f16::from_f32(d).to_le_bytes());
        for &x in block {
            // ggml's reference uses roundf (half away from zero), which `f32::round` matches.
            out.push((x * id).round() as i8 as u8);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q8_0_block_layout() {
        let mut v = vec![0.0f32; 32];
        v[0] = 1.27;
        v[1] = -0.64;
        v[2] = 0.006;
        let q = quantize_q8_0(&v);
        assert_eq!(q.len(), 34);
        let d = half::f16::from_le_bytes([q[0], q[1]]).to_f32();
        assert!((d - 0.01).abs() < 1e-5, "{d}");
        assert_eq!(q[2] as i8, 127);
        assert_eq!(q[3] as i8, -64, "-64 exactly");
        assert_eq!(q[4] as i8, 1, "0.6 rounds to 1");
        let zeros = quantize_q8_0(&[0.0; 32]);
        assert!(zeros.iter().all(|&b| b == 0));
    }

    #[test]
    fn halves() {
        assert_eq!(f32_to_f16_bytes(&[1.0]), vec![0x00, 0x3c]);
        assert_eq!(f32_to_bf16_bytes(&[1.0]), vec![0x80, 0x3f]);
    }
}
