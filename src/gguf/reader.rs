//! Reading a GGUF file's header, metadata and tensor table, memory-mapped, with every length
//! checked against the file size so that a truncated or corrupt file is an error, never a
//! crash or a huge allocation. Tensor data is not read; [`GgufFile::tensor_data`] borrows it.

use super::types::{GgmlType, Value, ValueType};
use super::{DEFAULT_ALIGNMENT, MAGIC};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Why a file could not be read as GGUF.
#[derive(Debug, Error)]
pub enum GgufError {
    #[error("model file {path} does not exist")]
    NotFound { path: PathBuf },
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    // The bytes found are kept for the caller but never shown: a served answer must not
    // quote the first bytes of a file the server can read.
    #[error("{path} is not a GGUF file (it does not start with \"GGUF\")")]
    BadMagic { path: PathBuf, found: Vec<u8> },
    #[error("{path} is GGUF version {version}, which is not supported (only 2 and 3)")]
    UnsupportedVersion { path: PathBuf, version: u32 },
    #[error("{path} is truncated: {what} at byte {offset} runs past the end of the file ({size} bytes); the download or conversion was probably interrupted")]
    Truncated {
        path: PathBuf,
        what: String,
        offset: u64,
        size: u64,
    },
    #[error("{path} is corrupt: {what}")]
    Corrupt { path: PathBuf, what: String },
}

/// One entry of the tensor table.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorInfo {
    pub name: String,
    /// Dimensions in ggml order (the first is the contiguous one).
    pub dims: Vec<u64>,
    pub ty: GgmlType,
    /// Offset from the start of the data section.
    pub offset: u64,
}

impl TensorInfo {
    pub fn n_elements(&self) -> u64 {
        self.dims.iter().product()
    }

    /// Bytes of data, when the type's layout is known.
    pub fn data_size(&self) -> Option<u64> {
        self.ty.data_size(self.n_elements())
    }
}

/// A parsed GGUF file.
#[derive(Debug)]
pub struct GgufFile {
    pub path: PathBuf,
    pub version: u32,
    /// Metadata in file order.
    pub metadata: Vec<(String, Value)>,
    pub tensors: Vec<TensorInfo>,
    /// Absolute offset of the data section.
    pub data_offset: u64,
    pub file_size: u64,
    map: memmap2::Mmap,
}

impl GgufFile {
    /// Open and parse `path`, checking that every tensor's data lies inside the file.
    pub fn open(path: &Path) -> Result<Self, GgufError> {
        let io = |source| GgufError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::File::open(path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                GgufError::NotFound {
                    path: path.to_path_buf(),
                }
            } else {
                io(e)
            }
        })?;
        // SAFETY: the map is read-only and private to this struct. Another process truncating
        // the file while it is mapped could fault; llama.cpp itself maps model files the same way.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        let mut c = Cursor {
            buf: &map,
            pos: 0,
            path,
        };
        let magic = c.bytes(4, "magic")?;
        if magic != MAGIC {
            return Err(GgufError::BadMagic {
                path: path.to_path_buf(),
                found: magic.to_vec(),
            });
        }
        let version = c.u32("version")?;
        if !(2..=3).contains(&version) {
            return Err(GgufError::UnsupportedVersion {
                path: path.to_path_buf(),
                version,
            });
        }
        let n_tensors = c.u64("tensor count")?;
        let n_kv = c.u64("metadata count")?;
        let mut metadata = Vec::new();
        for i in 0..n_kv {
            let key = c.string(&format!("metadata key {i}"))?;
            let code = c.u32(&format!("type of {key}"))?;
            let value = c.value(code, &key, 0)?;
            metadata.push((key, value));
        }
        let mut tensors = Vec::new();
        for i in 0..n_tensors {
            let name = c.string(&format!("tensor name {i}"))?;
            let n_dims = c.u32(&format!("dimension count of {name}"))?;
            if n_dims > 4 {
                return Err(c.corrupt(format!("tensor {name} has {n_dims} dimensions (max 4)")));
            }
            let mut dims = Vec::new();
            for _ in 0..n_dims {
                dims.push(c.u64(&format!("dimensions of {name}"))?);
            }
            let ty = GgmlType(c.u32(&format!("type of {name}"))?);
            let offset = c.u64(&format!("offset of {name}"))?;
            tensors.push(TensorInfo {
                name,
                dims,
                ty,
                offset,
            });
        }
        let alignment = metadata
            .iter()
            .find(|(k, _)| k == "general.alignment")
            .and_then(|(_, v)| v.as_u64())
            .unwrap_or(DEFAULT_ALIGNMENT);
        if alignment == 0 || !alignment.is_power_of_two() {
            return Err(c.corrupt(format!("general.alignment is {alignment}")));
        }
        let data_offset = (c.pos as u64).div_ceil(alignment) * alignment;
        let file_size = map.len() as u64;
        for t in &tensors {
            let size = t.data_size().unwrap_or(0);
            let end = data_offset
                .checked_add(t.offset)
                .and_then(|v| v.checked_add(size))
                .ok_or_else(|| c.corrupt(format!("tensor {} has an impossible offset", t.name)))?;
            if end > file_size {
                return Err(GgufError::Truncated {
                    path: path.to_path_buf(),
                    what: format!("data of tensor {}", t.name),
                    offset: data_offset + t.offset,
                    size: file_size,
                });
            }
        }
        Ok(Self {
            path: path.to_path_buf(),
            version,
            metadata,
            tensors,
            data_offset,
            file_size,
            map,
        })
    }

    /// The value of a metadata key.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }

    pub fn get_u64(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(Value::as_u64)
    }

    /// `general.architecture`.
    pub fn architecture(&self) -> Option<&str> {
        self.get_str("general.architecture")
    }

    /// An architecture-scoped key: `arch_key("context_length")` reads `{arch}.context_length`.
    pub fn arch_u64(&self, suffix: &str) -> Option<u64> {
        let arch = self.architecture()?;
        self.get_u64(&format!("{arch}.{suffix}"))
    }

    /// `tokenizer.chat_template`, if present.
    pub fn chat_template(&self) -> Option<&str> {
        self.get_str("tokenizer.chat_template")
    }

    /// Total number of elements over all tensors.
    pub fn parameter_count(&self) -> u64 {
        self.tensors.iter().map(TensorInfo::n_elements).sum()
    }

    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// The raw bytes of a tensor (its layout must be known).
    pub fn tensor_data(&self, info: &TensorInfo) -> Option<&[u8]> {
        let start = usize::try_from(self.data_offset + info.offset).ok()?;
        let len = usize::try_from(info.data_size()?).ok()?;
        self.map.get(start..start.checked_add(len)?)
    }
}

struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    path: &'a Path,
}

impl<'a> Cursor<'a> {
    fn corrupt(&self, what: String) -> GgufError {
        GgufError::Corrupt {
            path: self.path.to_path_buf(),
            what,
        }
    }

    fn bytes(&mut self, n: u64, what: &str) -> Result<&'a [u8], GgufError> {
        let end = usize::try_from(n)
            .ok()
            .and_then(|n| self.pos.checked_add(n))
            .filter(|&end| end <= self.buf.len())
            .ok_or_else(|| GgufError::Truncated {
                path: self.path.to_path_buf(),
                what: what.to_string(),
                offset: self.pos as u64,
                size: self.buf.len() as u64,
            })?;
        let out = &self.buf[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], GgufError> {
        let b = self.bytes(N as u64, what)?;
        let mut out = [0u8; N];
        out.copy_from_slice(b);
        Ok(out)
    }

    fn u32(&mut self, what: &str) -> Result<u32, GgufError> {
        self.array(what).map(u32::from_le_bytes)
    }

    fn u64(&mut self, what: &str) -> Result<u64, GgufError> {
        self.array(what).map(u64::from_le_bytes)
    }

    fn string(&mut self, what: &str) -> Result<String, GgufError> {
        let len = self.u64(what)?;
        let b = self.bytes(len, what)?;
        Ok(String::from_utf8_lossy(b).into_owned())
    }

    fn value(&mut self, code: u32, key: &str, depth: u32) -> Result<Value, GgufError> {
        let ty = ValueType::from_code(code)
            .ok_or_else(|| self.corrupt(format!("metadata {key} has unknown type {code}")))?;
        Ok(match ty {
            ValueType::U8 => Value::U8(self.array::<1>(key)?[0]),
            ValueType::I8 => Value::I8(i8::from_le_bytes(self.array(key)?)),
            ValueType::U16 => Value::U16(u16::from_le_bytes(self.array(key)?)),
            ValueType::I16 => Value::I16(i16::from_le_bytes(self.array(key)?)),
            ValueType::U32 => Value::U32(self.u32(key)?),
            ValueType::I32 => Value::I32(i32::from_le_bytes(self.array(key)?)),
            ValueType::F32 => Value::F32(f32::from_le_bytes(self.array(key)?)),
            ValueType::Bool => Value::Bool(self.array::<1>(key)?[0] != 0),
            ValueType::String => Value::String(self.string(key)?),
            ValueType::U64 => Value::U64(self.u64(key)?),
            ValueType::I64 => Value::I64(i64::from_le_bytes(self.array(key)?)),
            ValueType::F64 => Value::F64(f64::from_le_bytes(self.array(key)?)),
            ValueType::Array => {
                if depth > 0 {
                    return Err(self.corrupt(format!("metadata {key} nests arrays")));
                }
                let elem_code = self.u32(key)?;
                let elem = ValueType::from_code(elem_code).ok_or_else(|| {
                    self.corrupt(format!(
                        "metadata {key} has unknown element type {elem_code}"
                    ))
                })?;
                let n = self.u64(key)?;
                // Every element takes at least one byte: a count beyond the bytes left is a
                // truncated or corrupt file, and must not drive an allocation.
                let left = (self.buf.len() - self.pos) as u64;
                if n > left {
                    return Err(GgufError::Truncated {
                        path: self.path.to_path_buf(),
                        what: format!("array {key} of {n} elements"),
                        offset: self.pos as u64,
                        size: self.buf.len() as u64,
                    });
                }
                let mut items = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    items.push(self.value(elem.code(), key, depth + 1)?);
                }
                Value::Array(elem, items)
            }
        })
    }
}
