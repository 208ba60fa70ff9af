//! The in-process engine's device and kernel settings: flash attention, the attention cache's
//! element types, how a model is split over several GPUs and which devices it uses, and
//! whether decoding drafts tokens with the model's own MTP layer. Plain values
//! parsed from their names (config file, flags); mapping them onto llama.cpp's parameters is
//! the llama module's job.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Flash attention: llama.cpp decides per device (`auto`), or always / never.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FlashAttention {
    #[default]
    Auto,
    On,
    Off,
}

/// Element type of the attention cache's keys or values. Quantised values need flash attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheType {
    F32,
    #[default]
    F16,
    Bf16,
    Q8_0,
    Q5_1,
    Q5_0,
    Q4_1,
    Q4_0,
}

/// How a model is split over several GPUs: whole layers per GPU (`layer`), rows of each matrix
/// (`row`), or one GPU only (`none`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SplitMode {
    None,
    #[default]
    Layer,
    Row,
}

/// Self-speculative decoding with the model file's multi-token-prediction layer: used when the
/// file has one and layers are offloaded to a GPU (`auto`; on the CPU a draft's verification
/// costs about as much as decoding its tokens one by one), always when the file has one (`on`:
/// a file without the layer is refused), or never (`off`). Either way only a generation
/// decoding alone drafts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mtp {
    #[default]
    Auto,
    On,
    Off,
}

impl Mtp {
    /// Whether the engine drafts with this setting, for a file that has an MTP layer or not
    /// (`layer`) and layers on a GPU device or not (`on_gpu`). (`on` with no layer is refused
    /// when the model loads.)
    pub fn drafts(self, layer: bool, on_gpu: bool) -> bool {
        match self {
            Mtp::Off => false,
            // On the CPU verifying a draft costs about as many plain steps as it has tokens
            // (decoding is compute-bound there: `lilypad bench mtp`), so drafting would slow
            // decoding down whatever is accepted; on a GPU it costs little more than one.
            Mtp::Auto => layer && on_gpu,
            Mtp::On => layer,
        }
    }
}

/// The names each type accepts, for parsing and printing.
macro_rules! named {
    ($ty:ty, $what:literal, $($v:ident = $name:literal),+) => {
        impl $ty {
            pub fn name(self) -> &'static str {
                match self { $(Self::$v => $name),+ }
            }
        }
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
        impl FromStr for $ty {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s.to_ascii_lowercase().as_str() {
                    $($name => Ok(Self::$v),)+
                    _ => Err(format!(
                        concat!("unknown ", $what, " `{}` (one of: {})"),
                        s,
                        [$($name),+].join(", ")
                    )),
                }
            }
        }
    };
}

named!(
    FlashAttention,
    "flash attention setting",
    Auto = "auto",
    On = "on",
    Off = "off"
);
named!(Mtp, "MTP setting", Auto = "auto", On = "on", Off = "off");
named!(
    CacheType,
    "cache type",
    F32 = "f32",
    F16 = "f16",
    Bf16 = "bf16",
    Q8_0 = "q8_0",
    Q5_1 = "q5_1",
    Q5_0 = "q5_0",
    Q4_1 = "q4_1",
    Q4_0 = "q4_0"
);
named!(
    SplitMode,
    "split mode",
    None = "none",
    Layer = "layer",
    Row = "row"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_ones_are_refused() {
        for c in [
            CacheType::F16,
            CacheType::Q8_0,
            CacheType::Q4_0,
            CacheType::Bf16,
        ] {
            assert_eq!(c.name().parse::<CacheType>(), Ok(c));
        }
        assert_eq!("ON".parse::<FlashAttention>(), Ok(FlashAttention::On));
        assert_eq!("row".parse::<SplitMode>(), Ok(SplitMode::Row));
        let e = "q3".parse::<CacheType>().unwrap_err();
        assert!(e.contains("q8_0"), "{e}");
        let s: toml::Value = toml::from_str("t = \"q8_0\"").unwrap();
        let t: CacheType = s["t"].clone().try_into().unwrap();
        assert_eq!(t, CacheType::Q8_0);
    }
}
