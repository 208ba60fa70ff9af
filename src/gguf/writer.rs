//! Writing GGUF files in one pass: metadata and the tensor table are declared first (so every
//! offset is known), then tensor data is streamed in declaration order, in chunks if the caller
//! likes, so that a multi-gigabyte model never has to be held in memory. The writer checks that
//! each tensor receives exactly the bytes its type and shape call for.

use super::types::{GgmlType, Value};
use super::{DEFAULT_ALIGNMENT, MAGIC, VERSION};
use std::io::Write;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum GgufWriteError {
    #[error("write failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("tensor {name}: type {ty} cannot hold {n_elements} elements (shape {dims:?})")]
    BadShape {
        name: String,
        ty: String,
        n_elements: u64,
        dims: Vec<u64>,
    },
    #[error("tensor {name} declared twice")]
    Duplicate { name: String },
    #[error("expected data for tensor {expected}, got {got}")]
    OutOfOrder { expected: String, got: String },
    #[error("tensor {name} takes {expected} bytes, {got} were written")]
    WrongSize {
        name: String,
        expected: u64,
        got: u64,
    },
    #[error("{0} tensors were declared but never written")]
    Missing(usize),
}

/// A tensor to be written: name, dimensions in ggml order, element type.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorSpec {
    pub name: String,
    pub dims: Vec<u64>,
    pub ty: GgmlType,
}

impl TensorSpec {
    pub fn new(name: impl Into<String>, dims: &[u64], ty: GgmlType) -> Self {
        Self {
            name: name.into(),
            dims: dims.to_vec(),
            ty,
        }
    }
}

/// Collects metadata and tensor declarations, then writes the header with [`Self::begin`].
#[derive(Debug, Default)]
pub struct GgufWriter {
    metadata: Vec<(String, Value)>,
    tensors: Vec<(TensorSpec, u64)>,
}

impl GgufWriter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Set a metadata key (a later call for the same key replaces the value in place).
    pub fn set(&mut self, key: impl Into<String>, value: Value) -> &mut Self {
        let key = key.into();
        match self.metadata.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.metadata.push((key, value)),
        }
        self
    }

    /// Declare a tensor; its data must later be written in declaration order.
    pub fn add_tensor(&mut self, spec: TensorSpec) -> Result<&mut Self, GgufWriteError> {
        let n_elements: u64 = spec.dims.iter().product();
        let size = spec
            .ty
            .data_size(n_elements)
            .ok_or_else(|| GgufWriteError::BadShape {
                name: spec.name.clone(),
                ty: spec.ty.name(),
                n_elements,
                dims: spec.dims.clone(),
            })?;
        if self.tensors.iter().any(|(t, _)| t.name == spec.name) {
            return Err(GgufWriteError::Duplicate { name: spec.name });
        }
        self.tensors.push((spec, size));
        Ok(self)
    }

    fn alignment(&self) -> u64 {
        self.metadata
            .iter()
            .find(|(k, _)| k == "general.alignment")
            .and_then(|(_, v)| v.as_u64())
            .filter(|a| a.is_power_of_two())
            .unwrap_or(DEFAULT_ALIGNMENT)
    }

    /// Write the header, metadata and tensor table; returns the stream for the tensor data.
    pub fn begin<W: Write>(self, mut out: W) -> Result<TensorStream<W>, GgufWriteError> {
        let align = self.alignment();
        let mut header = Vec::new();
        header.extend_from_slice(&MAGIC);
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.extend_from_slice(&(self.tensors.len() as u64).to_le_bytes());
        header.extend_from_slice(&(self.metadata.len() as u64).to_le_bytes());
        for (key, value) in &self.metadata {
            put_string(&mut header, key);
            header.extend_from_slice(&value.value_type().code().to_le_bytes());
            put_value(&mut header, value);
        }
        let mut offset = 0u64;
        for (spec, size) in &self.tensors {
            put_string(&mut header, &spec.name);
            header.extend_from_slice(&(spec.dims.len() as u32).to_le_bytes());
            for d in &spec.dims {
                header.extend_from_slice(&d.to_le_bytes());
            }
            header.extend_from_slice(&spec.ty.0.to_le_bytes());
            header.extend_from_slice(&offset.to_le_bytes());
            offset = (offset + size).div_ceil(align) * align;
        }
        let padded = (header.len() as u64).div_ceil(align) * align;
        header.resize(padded as usize, 0);
        out.write_all(&header)?;
        Ok(TensorStream {
            out,
            align,
            pending: self.tensors.into_iter().rev().collect(),
            current: None,
        })
    }
}

/// Receives tensor data in declaration order.
#[derive(Debug)]
pub struct TensorStream<W: Write> {
    out: W,
    align: u64,
    /// Tensors still to write, last first.
    pending: Vec<(TensorSpec, u64)>,
    /// The tensor being written: name, expected size, bytes so far.
    current: Option<(String, u64, u64)>,
}

impl<W: Write> TensorStream<W> {
    /// The next tensor that expects data.
    pub fn next_spec(&self) -> Option<&TensorSpec> {
        self.pending.last().map(|(s, _)| s)
    }

    /// Write a whole tensor at once.
    pub fn write_tensor(&mut self, name: &str, data: &[u8]) -> Result<(), GgufWriteError> {
        self.start(name)?;
        self.chunk(data)?;
        self.end()
    }

    /// Start streaming the named tensor (must be the next declared one).
    pub fn start(&mut self, name: &str) -> Result<(), GgufWriteError> {
        if let Some((cur, _, _)) = &self.current {
            return Err(GgufWriteError::OutOfOrder {
                expected: format!("the end of {cur}"),
                got: name.to_string(),
            });
        }
        let (spec, size) = self
            .pending
            .pop()
            .ok_or_else(|| GgufWriteError::OutOfOrder {
                expected: "no more tensors".into(),
                got: name.to_string(),
            })?;
        if spec.name != name {
            let expected = spec.name.clone();
            self.pending.push((spec, size));
            return Err(GgufWriteError::OutOfOrder {
                expected,
                got: name.to_string(),
            });
        }
        self.current = Some((spec.name, size, 0));
        Ok(())
    }

    /// Append bytes to the current tensor.
    pub fn chunk(&mut self, data: &[u8]) -> Result<(), GgufWriteError> {
        let Some((name, expected, got)) = &mut self.current else {
            return Err(GgufWriteError::OutOfOrder {
                expected: "start() first".into(),
                got: format!("{} bytes", data.len()),
            });
        };
        *got += data.len() as u64;
        if *got > *expected {
            return Err(GgufWriteError::WrongSize {
                name: name.clone(),
                expected: *expected,
                got: *got,
            });
        }
        self.out.write_all(data)?;
        Ok(())
    }

    /// Finish the current tensor, padding to the alignment.
    pub fn end(&mut self) -> Result<(), GgufWriteError> {
        let Some((name, expected, got)) = self.current.take() else {
            return Ok(());
        };
        if got != expected {
            return Err(GgufWriteError::WrongSize {
                name,
                expected,
                got,
            });
        }
        let pad = expected.div_ceil(self.align) * self.align - expected;
        self.out.write_all(&vec![0u8; pad as usize])?;
        Ok(())
    }

    /// Check that every tensor was written and flush; returns the underlying writer.
    pub fn finish(mut self) -> Result<W, GgufWriteError> {
        self.end()?;
        if !self.pending.is_empty() {
            return Err(GgufWriteError::Missing(self.pending.len()));
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

fn put_string(buf: &mut Vec<u8>, s: &str) {
    buf.extend_from_slice(&(s.len() as u64).to_le_bytes());
    buf.extend_from_slice(s.as_bytes());
}

fn put_value(buf: &mut Vec<u8>, v: &Value) {
    match v {
        Value::U8(x) => buf.push(*x),
        Value::I8(x) => buf.extend_from_slice(&x.to_le_bytes()),
        Value::U16(x) => buf.extend_from_slice(&x.to_le_bytes()),
        Value::I16(x) => buf.extend_from_slice(&x.to_le_bytes()),
        Value::U32(x) => buf.extend_from_slice(&x.to_le_bytes()),
        Value::I32(x) => buf.extend_from_slice(&x.to_le_bytes()),
        Value::F32(x) => buf.extend_from_slice(&x.to_le_bytes()),
        Value::Bool(x) => buf.push(u8::from(*x)),
        Value::String(s) => put_string(buf, s),
        Value::U64(x) => buf.extend_from_slice(&x.to_le_bytes()),
        Value::I64(x) => buf.extend_from_slice(&x.to_le_bytes()),
        Value::F64(x) => buf.extend_from_slice(&x.to_le_bytes()),
        Value::Array(elem, items) => {
            buf.extend_from_slice(&elem.code().to_le_bytes());
            buf.extend_from_slice(&(items.len() as u64).to_le_bytes());
            for item in items {
                put_value(buf, item);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{GgufError, GgufFile, ValueType};
    use super::*;

    fn sample(path: &std::path::Path) {
        let mut w = GgufWriter::new();
        w.set("general.architecture", Value::String("test".into()))
            .set("test.context_length", Value::U32(77))
            .set("tokenizer.ggml.tokens", Value::strings(["a", "é", "<x>"]))
            .set("empty", Value::Array(ValueType::I32, vec![]));
        w.add_tensor(TensorSpec::new("a", &[3, 2], GgmlType::F32))
            .unwrap();
        w.add_tensor(TensorSpec::new("b", &[5], GgmlType::F16))
            .unwrap();
        let f = std::fs::File::create(path).unwrap();
        let mut s = w.begin(std::io::BufWriter::new(f)).unwrap();
        let a: Vec<u8> = (0..6).flat_map(|i| (i as f32).to_le_bytes()).collect();
        s.start("a").unwrap();
        s.chunk(&a[..10]).unwrap();
        s.chunk(&a[10..]).unwrap();
        s.end().unwrap();
        s.write_tensor("b", &[7u8; 10]).unwrap();
        s.finish().unwrap();
    }

    #[test]
    fn round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.gguf");
        sample(&p);
        let g = GgufFile::open(&p).unwrap();
        assert_eq!(g.architecture(), Some("test"));
        assert_eq!(g.arch_u64("context_length"), Some(77));
        assert_eq!(
            g.get("tokenizer.ggml.tokens")
                .unwrap()
                .as_array()
                .unwrap()
                .len(),
            3
        );
        assert_eq!(g.get("empty"), Some(&Value::Array(ValueType::I32, vec![])));
        assert_eq!(g.parameter_count(), 11);
        let a = g.tensor("a").unwrap();
        let data = g.tensor_data(a).unwrap();
        assert_eq!(f32::from_le_bytes(data[20..24].try_into().unwrap()), 5.0);
        assert_eq!(g.tensor_data(g.tensor("b").unwrap()).unwrap(), &[7u8; 10]);
        assert_eq!(g.data_offset % 32, 0);
    }

    #[test]
    fn every_truncation_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.gguf");
        sample(&p);
        let bytes = std::fs::read(&p).unwrap();
        let q = dir.path().join("cut.gguf");
        for len in 0..bytes.len() - 1 {
            std::fs::write(&q, &bytes[..len]).unwrap();
            // the last tensor's padding is not data: cutting only padding is still readable
            match GgufFile::open(&q) {
                Err(GgufError::Truncated { .. }) => {}
                Err(e) => panic!("len {len}: unexpected error {e}"),
                Ok(_) => assert!(len >= bytes.len() - 32, "len {len} accepted"),
            }
        }
    }

    #[test]
    fn wrong_sizes_and_order_are_refused() {
        let mut w = GgufWriter::new();
        assert!(matches!(
            w.add_tensor(TensorSpec::new("q", &[33], GgmlType::Q8_0)),
            Err(GgufWriteError::BadShape { .. })
        ));
        w.add_tensor(TensorSpec::new("a", &[4], GgmlType::F32))
            .unwrap();
        w.add_tensor(TensorSpec::new("b", &[4], GgmlType::F32))
            .unwrap();
        let mut s = w.begin(Vec::new()).unwrap();
        assert!(matches!(
            s.write_tensor("b", &[0; 16]),
            Err(GgufWriteError::OutOfOrder { .. })
        ));
        assert!(matches!(
            s.write_tensor("a", &[0; 15]),
            Err(GgufWriteError::WrongSize { .. })
        ));
    }

    #[test]
    fn garbage_is_not_gguf() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.gguf");
        std::fs::write(&p, b"PK\x03\x04 zip file, not a model").unwrap();
        assert!(matches!(
            GgufFile::open(&p),
            Err(GgufError::BadMagic { .. })
        ));
        let missing = dir.path().join("none.gguf");
        assert!(matches!(
            GgufFile::open(&missing),
            Err(GgufError::NotFound { .. })
        ));
        let mut huge = Vec::new();
        huge.extend_from_slice(b"GGUF");
        huge.extend_from_slice(&3u32.to_le_bytes());
        huge.extend_from_slice(&0u64.to_le_bytes());
        huge.extend_from_slice(&1u64.to_le_bytes());
        huge.extend_from_slice(&1u64.to_le_bytes());
        huge.push(b'k');
        huge.extend_from_slice(&9u32.to_le_bytes());
        huge.extend_from_slice(&0u32.to_le_bytes());
        huge.extend_from_slice(&u64::MAX.to_le_bytes());
        std::fs::write(&p, &huge).unwrap();
        assert!(matches!(
            GgufFile::open(&p),
            Err(GgufError::Truncated { .. })
        ));
    }
}
