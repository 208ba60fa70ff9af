//! Importance matrices as `llama-imatrix` writes them, read into the per-tensor weights
//! `llama_model_quantize` takes: the GGUF form (`NAME.in_sum2` and `NAME.counts` tensors, F32,
//! each matrix's squared-activation sums divided by its count; a count of 0 gives weights of 1)
//! and the legacy `.dat` form (entries of name, call count and sums, divided by the call count),
//! with the same normalisation `llama-quantize` applies.

use super::QuantizeError;
use crate::gguf::{GgmlType, GgufError, GgufFile};
use std::collections::BTreeMap;
use std::path::Path;

/// One tensor's importance weights.
#[derive(Debug, Clone, PartialEq)]
pub struct ImatrixEntry {
    pub name: String,
    pub values: Vec<f32>,
}

/// Read an importance matrix file, GGUF or legacy.
pub fn read_imatrix(path: &Path) -> Result<Vec<ImatrixEntry>, QuantizeError> {
    let bad = |what: String| QuantizeError::Imatrix {
        path: path.to_path_buf(),
        what,
    };
    match GgufFile::open(path) {
        Ok(file) => read_gguf(&file).map_err(bad),
        Err(GgufError::BadMagic { .. }) => {
            let bytes = std::fs::read(path).map_err(|source| QuantizeError::Io {
                path: path.to_path_buf(),
                source,
            })?;
            read_legacy(&bytes).map_err(bad)
        }
        Err(source) => Err(QuantizeError::Input {
            path: path.to_path_buf(),
            source,
        }),
    }
}

fn f32s(file: &GgufFile, name: &str) -> Result<Vec<f32>, String> {
    let t = file
        .tensor(name)
        .ok_or_else(|| format!("{name} is missing"))?;
    if t.ty != GgmlType::F32 {
        return Err(format!("{name} is {}, expected F32", t.ty.name()));
    }
    let data = file
        .tensor_data(t)
        .ok_or_else(|| format!("{name}: data out of bounds"))?;
    Ok(data
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

fn read_gguf(file: &GgufFile) -> Result<Vec<ImatrixEntry>, String> {
    if file.get("imatrix.chunk_count").is_none() {
        return Err("no imatrix.chunk_count: not an importance matrix".into());
    }
    let mut out = Vec::new();
    for t in &file.tensors {
        let Some(name) = t.name.strip_suffix(".in_sum2") else {
            continue;
        };
        let sums = f32s(file, &t.name)?;
        let counts = f32s(file, &format!("{name}.counts"))?;
        if counts.is_empty() || !sums.len().is_multiple_of(counts.len()) {
            return Err(format!(
                "{name}: {} sums for {} counts",
                sums.len(),
                counts.len()
            ));
        }
        let per = sums.len() / counts.len();
        let mut values = Vec::with_capacity(sums.len());
        for (j, &c) in counts.iter().enumerate() {
            let count = c.round();
            for &s in &sums[j * per..(j + 1) * per] {
                values.push(if count > 0.0 { s / count } else { 1.0 });
            }
        }
        out.push(ImatrixEntry {
            name: name.to_string(),
            values,
        });
    }
    if out.is_empty() {
        return Err("no .in_sum2 tensors".into());
    }
    Ok(out)
}

fn read_legacy(bytes: &[u8]) -> Result<Vec<ImatrixEntry>, String> {
    let mut pos = 0usize;
    let i32_at = |pos: &mut usize| -> Result<i32, String> {
        let b = bytes
            .get(*pos..*pos + 4)
            .ok_or_else(|| format!("truncated at byte {pos}"))?;
        *pos += 4;
        Ok(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let n = i32_at(&mut pos)?;
    if n < 1 {
        return Err("neither GGUF nor a legacy imatrix with entries".into());
    }
    let mut entries = BTreeMap::new();
    for _ in 0..n {
        let len = usize::try_from(i32_at(&mut pos)?).map_err(|_| "negative name length")?;
        let name = bytes
            .get(pos..pos + len)
            .ok_or_else(|| format!("truncated name at byte {pos}"))?;
        let name = String::from_utf8_lossy(name).into_owned();
        pos += len;
        let ncall = i32_at(&mut pos)?;
        let nval = usize::try_from(i32_at(&mut pos)?).map_err(|_| "negative value count")?;
        let data = bytes
            .get(pos..pos + 4 * nval)
            .ok_or_else(|| format!("{name}: truncated values"))?;
        pos += 4 * nval;
        let values = data
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .map(|s| if ncall > 0 { s / ncall as f32 } else { s })
            .collect();
        entries.insert(name, values);
    }
    Ok(entries
        .into_iter()
        .map(|(name, values)| ImatrixEntry { name, values })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_entries_are_divided_by_their_call_count() {
        let mut b = Vec::new();
        b.extend(1i32.to_le_bytes());
        b.extend(3i32.to_le_bytes());
        b.extend(b"abc");
        b.extend(4i32.to_le_bytes());
        b.extend(2i32.to_le_bytes());
        b.extend(8.0f32.to_le_bytes());
        b.extend(2.0f32.to_le_bytes());
        let e = read_legacy(&b).unwrap();
        assert_eq!(
            e,
            vec![ImatrixEntry {
                name: "abc".into(),
                values: vec![2.0, 0.5]
            }]
        );
        assert!(read_legacy(&b[..b.len() - 1]).is_err());
    }
}
