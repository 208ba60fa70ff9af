//! Importance matrices as `llama-imatrix` writes them, read into the per-tensor weights
//! `llama_model_quantize` takes: the GGUF form (`NAME.in_sum2` and `NAME.counts` tensors, F32,
//! each matrix's squared-activation sums divided by its count; a count of 0 gives weights of 1)
//! and the legacy `.dat` form (entries of name, call count and sums, divided by the call count),
//! with the same normalisation `llama-quantize` applies.

use super::QuantizeError;
use crate::gguf::{GgmlType, GgufError, GgufFile};
use std::collections::BTreeMap;
use std::path::Path;
use thiserror::Error;

/// What is wrong with an importance matrix file (the source of [`QuantizeError::Imatrix`]).
#[derive(Debug, Error)]
pub enum ImatrixError {
    #[error("{name} is missing")]
    Missing { name: String },
    #[error("{name} is {ty}, expected F32")]
    NotF32 { name: String, ty: String },
    #[error("{name}: data out of bounds")]
    OutOfBounds { name: String },
    #[error("no imatrix.chunk_count: not an importance matrix")]
    NoChunkCount,
    #[error("{name}: {sums} sums for {counts} counts")]
    Counts {
        name: String,
        sums: usize,
        counts: usize,
    },
    #[error("no .in_sum2 tensors")]
    NoSums,
    #[error("truncated at byte {at}")]
    Truncated { at: usize },
    #[error("neither GGUF nor a legacy imatrix with entries")]
    NoEntries,
    #[error("negative name length")]
    NameLength,
    #[error("truncated name at byte {at}")]
    TruncatedName { at: usize },
    #[error("negative value count")]
    ValueCount,
    #[error("{name}: truncated values")]
    TruncatedValues { name: String },
}

/// One tensor's importance weights.
#[derive(Debug, Clone, PartialEq)]
pub struct ImatrixEntry {
    pub name: String,
    pub values: Vec<f32>,
}

/// Read an importance matrix file, GGUF or legacy.
pub fn read_imatrix(path: &Path) -> Result<Vec<ImatrixEntry>, QuantizeError> {
    let bad = |source| QuantizeError::Imatrix {
        path: path.to_path_buf(),
        source,
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

fn f32s(file: &GgufFile, name: &str) -> Result<Vec<f32>, ImatrixError> {
    let t = file
        .tensor(name)
        .ok_or_else(|| ImatrixError::Missing { name: name.into() })?;
    if t.ty != GgmlType::F32 {
        return Err(ImatrixError::NotF32 {
            name: name.into(),
            ty: t.ty.name(),
        });
    }
    let data = file
        .tensor_data(t)
        .ok_or_else(|| ImatrixError::OutOfBounds { name: name.into() })?;
    Ok(data
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

fn read_gguf(file: &GgufFile) -> Result<Vec<ImatrixEntry>, ImatrixError> {
    if file.get("imatrix.chunk_count").is_none() {
        return Err(ImatrixError::NoChunkCount);
    }
    let mut out = Vec::new();
    for t in &file.tensors {
        let Some(name) = t.name.strip_suffix(".in_sum2") else {
            continue;
        };
        let sums = f32s(file, &t.name)?;
        let counts = f32s(file, &format!("{name}.counts"))?;
        if counts.is_empty() || !sums.len().is_multiple_of(counts.len()) {
            return Err(ImatrixError::Counts {
                name: name.to_string(),
                sums: sums.len(),
                counts: counts.len(),
            });
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
        return Err(ImatrixError::NoSums);
    }
    Ok(out)
}

fn read_legacy(bytes: &[u8]) -> Result<Vec<ImatrixEntry>, ImatrixError> {
    let mut pos = 0usize;
    let i32_at = |pos: &mut usize| -> Result<i32, ImatrixError> {
        let b = bytes
            .get(*pos..*pos + 4)
            .ok_or(ImatrixError::Truncated { at: *pos })?;
        *pos += 4;
        Ok(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let n = i32_at(&mut pos)?;
    if n < 1 {
        return Err(ImatrixError::NoEntries);
    }
    let mut entries = BTreeMap::new();
    for _ in 0..n {
        let len = usize::try_from(i32_at(&mut pos)?).map_err(|_| ImatrixError::NameLength)?;
        let name = bytes
            .get(pos..pos + len)
            .ok_or(ImatrixError::TruncatedName { at: pos })?;
        let name = String::from_utf8_lossy(name).into_owned();
        pos += len;
        let ncall = i32_at(&mut pos)?;
        let nval = usize::try_from(i32_at(&mut pos)?).map_err(|_| ImatrixError::ValueCount)?;
        let data = bytes
            .get(pos..pos + 4 * nval)
            .ok_or_else(|| ImatrixError::TruncatedValues { name: name.clone() })?;
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
        assert!(matches!(
            read_legacy(&b[..b.len() - 1]),
            Err(ImatrixError::TruncatedValues { name }) if name == "abc"
        ));
    }

    #[test]
    fn a_bad_file_says_which_and_why() {
        use std::error::Error as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.dat");
        std::fs::write(&path, 0i32.to_le_bytes()).unwrap();
        let err = read_imatrix(&path).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "importance matrix {}: neither GGUF nor a legacy imatrix with entries",
                path.display()
            )
        );
        let source = err.source().expect("the imatrix error");
        assert!(matches!(
            source.downcast_ref::<ImatrixError>(),
            Some(ImatrixError::NoEntries)
        ));
    }
}
