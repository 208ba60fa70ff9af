//! Metadata value types and ggml tensor types of the GGUF format, with their on-disk codes.

/// The type code of a metadata value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    F32,
    Bool,
    String,
    Array,
    U64,
    I64,
    F64,
}

impl ValueType {
    pub fn code(self) -> u32 {
        match self {
            Self::U8 => 0,
            Self::I8 => 1,
            Self::U16 => 2,
            Self::I16 => 3,
            Self::U32 => 4,
            Self::I32 => 5,
            Self::F32 => 6,
            Self::Bool => 7,
            Self::String => 8,
            Self::Array => 9,
            Self::U64 => 10,
            Self::I64 => 11,
            Self::F64 => 12,
        }
    }

    pub fn from_code(code: u32) -> Option<Self> {
        Some(match code {
            0 => Self::U8,
            1 => Self::I8,
            2 => Self::U16,
            3 => Self::I16,
            4 => Self::U32,
            5 => Self::I32,
            6 => Self::F32,
            7 => Self::Bool,
            8 => Self::String,
            9 => Self::Array,
            10 => Self::U64,
            11 => Self::I64,
            12 => Self::F64,
            _ => return None,
        })
    }
}

/// One metadata value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    String(String),
    /// Element type (kept so that an empty array round-trips) and the elements.
    Array(ValueType, Vec<Value>),
    U64(u64),
    I64(i64),
    F64(f64),
}

impl Value {
    pub fn value_type(&self) -> ValueType {
        match self {
            Self::U8(_) => ValueType::U8,
            Self::I8(_) => ValueType::I8,
            Self::U16(_) => ValueType::U16,
            Self::I16(_) => ValueType::I16,
            Self::U32(_) => ValueType::U32,
            Self::I32(_) => ValueType::I32,
            Self::F32(_) => ValueType::F32,
            Self::Bool(_) => ValueType::Bool,
            Self::String(_) => ValueType::String,
            Self::Array(..) => ValueType::Array,
            Self::U64(_) => ValueType::U64,
            Self::I64(_) => ValueType::I64,
            Self::F64(_) => ValueType::F64,
        }
    }

    /// The value as an unsigned integer, whatever its integer width.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Self::U8(v) => Some(v.into()),
            Self::U16(v) => Some(v.into()),
            Self::U32(v) => Some(v.into()),
            Self::U64(v) => Some(v),
            Self::I8(v) => u64::try_from(v).ok(),
            Self::I16(v) => u64::try_from(v).ok(),
            Self::I32(v) => u64::try_from(v).ok(),
            Self::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Self::F32(v) => Some(v.into()),
            Self::F64(v) => Some(v),
            _ => self.as_u64().map(|v| v as f64),
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Self::Array(_, items) => Some(items),
            _ => None,
        }
    }

    /// Convenience constructor for a string array.
    pub fn strings<I: IntoIterator<Item = S>, S: Into<String>>(items: I) -> Self {
        Self::Array(
            ValueType::String,
            items.into_iter().map(|s| Self::String(s.into())).collect(),
        )
    }

    /// Convenience constructor for an i32 array.
    pub fn i32s<I: IntoIterator<Item = i32>>(items: I) -> Self {
        Self::Array(ValueType::I32, items.into_iter().map(Self::I32).collect())
    }
}

/// A ggml tensor element type, as far as this crate needs to know it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GgmlType(pub u32);

impl GgmlType {
    pub const F32: Self = Self(0);
    pub const F16: Self = Self(1);
    pub const Q8_0: Self = Self(8);
    pub const BF16: Self = Self(30);

    /// (elements per block, bytes per block) for the types whose layout is known here.
    pub fn block_layout(self) -> Option<(u64, u64)> {
        Some(match self.0 {
            0 => (1, 4),       // F32
            1 | 30 => (1, 2),  // F16, BF16
            2 => (32, 18),     // Q4_0
            3 => (32, 20),     // Q4_1
            6 => (32, 22),     // Q5_0
            7 => (32, 24),     // Q5_1
            8 => (32, 34),     // Q8_0
            9 => (32, 36),     // Q8_1
            10 => (256, 84),   // Q2_K
            11 => (256, 110),  // Q3_K
            12 => (256, 144),  // Q4_K
            13 => (256, 176),  // Q5_K
            14 => (256, 210),  // Q6_K
            15 => (256, 292),  // Q8_K
            20 => (32, 18),    // IQ4_NL
            23 => (256, 136),  // IQ4_XS
            24 => (1, 1),      // I8
            25 => (1, 2),      // I16
            26 => (1, 4),      // I32
            27 | 28 => (1, 8), // I64, F64
            _ => return None,
        })
    }

    /// Bytes taken by `n_elements` elements, if the layout is known and `n_elements` fills
    /// whole blocks.
    pub fn data_size(self, n_elements: u64) -> Option<u64> {
        let (block, bytes) = self.block_layout()?;
        n_elements
            .is_multiple_of(block)
            .then(|| n_elements / block * bytes)
    }

    pub fn name(self) -> String {
        let known = match self.0 {
            0 => "F32",
            1 => "F16",
            2 => "Q4_0",
            3 => "Q4_1",
            6 => "Q5_0",
            7 => "Q5_1",
            8 => "Q8_0",
            9 => "Q8_1",
            10 => "Q2_K",
            11 => "Q3_K",
            12 => "Q4_K",
            13 => "Q5_K",
            14 => "Q6_K",
            15 => "Q8_K",
            20 => "IQ4_NL",
            23 => "IQ4_XS",
            24 => "I8",
            25 => "I16",
            26 => "I32",
            27 => "I64",
            28 => "F64",
            30 => "BF16",
            n => return format!("type{n}"),
        };
        known.to_string()
    }
}
