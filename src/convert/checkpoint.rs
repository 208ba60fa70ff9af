//! The safetensors files of a checkpoint, memory-mapped: one `model.safetensors`, or the shards
//! named by `model.safetensors.index.json`, or (with neither) every `*.safetensors` in the
//! directory. Tensors are read as f32 rows, converted from BF16, F16 or F32 on the fly, so the
//! converter never holds more than the rows it is working on.
//!
//! The maps are read-only; pages already converted are handed back to the kernel
//! ([`Checkpoint::release`]) so that the resident set stays small on a 9 GB checkpoint.

use super::{read_json, ConvertError};
use memmap2::Mmap;
use safetensors::tensor::{Dtype, SafeTensors};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Element types the converter reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceType {
    F32,
    F16,
    Bf16,
}

impl SourceType {
    pub fn size(self) -> usize {
        match self {
            Self::F32 => 4,
            Self::F16 | Self::Bf16 => 2,
        }
    }
}

/// One tensor of the checkpoint: where its bytes lie and what they hold.
#[derive(Debug, Clone)]
pub struct SourceTensor {
    pub name: String,
    /// Index into the checkpoint's files.
    pub file: usize,
    /// The stored type; `None` for types the converter cannot read (fine for dropped tensors).
    pub ty: Option<SourceType>,
    /// The stored type's name, for messages.
    pub type_name: String,
    /// Hugging Face (row-major) shape.
    pub shape: Vec<u64>,
    /// Absolute byte range in the file.
    pub start: usize,
    pub end: usize,
}

impl SourceTensor {
    pub fn n_elements(&self) -> u64 {
        self.shape.iter().product()
    }
}

/// The opened checkpoint.
#[derive(Debug)]
pub struct Checkpoint {
    pub files: Vec<PathBuf>,
    maps: Vec<Mmap>,
    tensors: BTreeMap<String, SourceTensor>,
}

impl Checkpoint {
    /// Find and map the safetensors files of `dir`.
    pub fn open(dir: &Path) -> Result<Self, ConvertError> {
        let index_path = dir.join("model.safetensors.index.json");
        let mut expected: BTreeMap<String, PathBuf> = BTreeMap::new();
        let files: Vec<PathBuf> = if index_path.is_file() {
            let index = read_json(&index_path)?;
            let map = index
                .get("weight_map")
                .and_then(|m| m.as_object())
                .ok_or_else(|| ConvertError::Config {
                    path: index_path.clone(),
                    what: "no \"weight_map\" object".into(),
                })?;
            let mut shards = BTreeSet::new();
            for (name, file) in map {
                let file = file.as_str().ok_or_else(|| ConvertError::Config {
                    path: index_path.clone(),
                    what: format!("weight_map[{name:?}] is not a file name"),
                })?;
                shards.insert(dir.join(file));
                expected.insert(name.clone(), dir.join(file));
            }
            shards.into_iter().collect()
        } else if dir.join("model.safetensors").is_file() {
            vec![dir.join("model.safetensors")]
        } else {
            let mut found = Vec::new();
            let entries = std::fs::read_dir(dir).map_err(|e| ConvertError::io(dir, e))?;
            for entry in entries {
                let path = entry.map_err(|e| ConvertError::io(dir, e))?.path();
                if path.extension().is_some_and(|x| x == "safetensors") {
                    found.push(path);
                }
            }
            found.sort();
            found
        };
        if files.is_empty() {
            return Err(ConvertError::Config {
                path: dir.to_path_buf(),
                what: "no .safetensors files (and no model.safetensors.index.json)".into(),
            });
        }
        let mut maps = Vec::with_capacity(files.len());
        let mut tensors = BTreeMap::new();
        for (i, path) in files.iter().enumerate() {
            let file = std::fs::File::open(path).map_err(|e| ConvertError::io(path, e))?;
            // SAFETY: the map is read-only and lives as long as the checkpoint. Another process
            // truncating the file meanwhile could fault, as with any mapped model file.
            let map = unsafe { Mmap::map(&file) }.map_err(|e| ConvertError::io(path, e))?;
            let bad = |what: String| ConvertError::Safetensors {
                path: path.clone(),
                what,
            };
            let (header_len, meta) =
                SafeTensors::read_metadata(&map[..]).map_err(|e| bad(e.to_string()))?;
            let data_start = 8 + header_len;
            for (name, info) in meta.tensors() {
                let ty = match info.dtype {
                    Dtype::F32 => Some(SourceType::F32),
                    Dtype::F16 => Some(SourceType::F16),
                    Dtype::BF16 => Some(SourceType::Bf16),
                    _ => None,
                };
                let t = SourceTensor {
                    name: name.clone(),
                    file: i,
                    ty,
                    type_name: format!("{:?}", info.dtype),
                    shape: info.shape.iter().map(|&d| d as u64).collect(),
                    start: data_start + info.data_offsets.0,
                    end: data_start + info.data_offsets.1,
                };
                if let Some(prev) = tensors.insert(name.clone(), t) {
                    return Err(bad(format!(
                        "tensor {name} is also in {}",
                        files[prev.file].display()
                    )));
                }
            }
            maps.push(map);
        }
        for (name, file) in &expected {
            match tensors.get(name) {
                Some(t) if files[t.file] == *file => {}
                Some(t) => {
                    return Err(ConvertError::Tensor {
                        name: name.clone(),
                        what: format!(
                            "the index places it in {}, it is in {}",
                            file.display(),
                            files[t.file].display()
                        ),
                    })
                }
                None => {
                    return Err(ConvertError::Tensor {
                        name: name.clone(),
                        what: format!("listed in the index but absent from {}", file.display()),
                    })
                }
            }
        }
        Ok(Self {
            files,
            maps,
            tensors,
        })
    }

    /// Every tensor, by name.
    pub fn tensors(&self) -> impl Iterator<Item = &SourceTensor> {
        self.tensors.values()
    }

    pub fn get(&self, name: &str) -> Option<&SourceTensor> {
        self.tensors.get(name)
    }

    /// Bytes of the checkpoint's tensors.
    pub fn total_bytes(&self) -> u64 {
        self.tensors
            .values()
            .map(|t| (t.end - t.start) as u64)
            .sum()
    }

    /// Elements `[first, first + out.len())` of `t` (flat, row-major) as f32.
    pub fn read(
        &self,
        t: &SourceTensor,
        first: usize,
        out: &mut [f32],
    ) -> Result<(), ConvertError> {
        let ty = t.ty.ok_or_else(|| ConvertError::Tensor {
            name: t.name.clone(),
            what: format!(
                "stored as {}, which the converter cannot read (only BF16, F16, F32)",
                t.type_name
            ),
        })?;
        let size = ty.size();
        let lo = t.start + first * size;
        let hi = lo + out.len() * size;
        let bytes = self.maps[t.file]
            .get(lo..hi)
            .filter(|_| hi <= t.end)
            .ok_or_else(|| ConvertError::Tensor {
                name: t.name.clone(),
                what: format!("read of elements {first}.. past the end of its data"),
            })?;
        decode(ty, bytes, out);
        Ok(())
    }

    /// Tell the kernel the tensor's pages will not be read again (it may drop them from this
    /// process's resident set; they stay in the page cache).
    pub fn release(&self, t: &SourceTensor) {
        let map = &self.maps[t.file];
        // Page-align the range inward-out: madvise needs a page-aligned start.
        let page = 4096;
        let start = t.start / page * page;
        let len = t.end - start;
        // SAFETY: DontNeed on a private read-only file mapping only discards pages that are
        // re-read from the file on the next access; no slice into this map is alive here
        // (every read copies into an f32 buffer).
        let _ =
            unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, len) };
    }
}

/// Decode little-endian elements of `ty` into `out` (`bytes.len() == out.len() * size`).
pub fn decode(ty: SourceType, bytes: &[u8], out: &mut [f32]) {
    match ty {
        SourceType::F32 => {
            for (o, b) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                *o = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
        }
        SourceType::F16 => {
            for (o, b) in out.iter_mut().zip(bytes.chunks_exact(2)) {
                *o = half::f16::from_le_bytes([b[0], b[1]]).to_f32();
            }
        }
        SourceType::Bf16 => {
            for (o, b) in out.iter_mut().zip(bytes.chunks_exact(2)) {
                *o = half::bf16::from_le_bytes([b[0], b[1]]).to_f32();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_the_three_types() {
        let mut out = [0.0f32; 2];
        decode(SourceType::Bf16, &[0x80, 0x3f, 0x00, 0xc0], &mut out);
        assert_eq!(out, [1.0, -2.0]);
        decode(SourceType::F16, &[0x00, 0x3c, 0x00, 0x38], &mut out);
        assert_eq!(out, [1.0, 0.5]);
        let mut one = [0.0f32; 1];
        decode(SourceType::F32, &1.5f32.to_le_bytes(), &mut one);
        assert_eq!(one, [1.5]);
    }
}
