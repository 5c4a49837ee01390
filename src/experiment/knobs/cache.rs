//! `cache`, `flush_bytes`, `flush_method`: the L2 state each timed launch starts from.

use super::knob::{Aspect, Key, Knob, Layer};
use crate::experiment::ConfigError;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Cache {
    /// Whatever the previous launch left in L2 (repeated launches on one input: hot).
    #[default]
    Hot,
    /// Evict L2 before every timed launch, outside the timed region, then synchronize.
    Flush { bytes: u64, method: FlushMethod },
}

/// How the flush buffer evicts L2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FlushMethod {
    /// `cuMemsetD8Async` over the buffer (the post's and seed 001's way).
    Memset,
    /// A grid-stride write kernel (`kernels/flush.cu`).
    Kernel,
    /// A grid-stride read kernel (`kernels/flush.cu`): L2 left holding clean lines, so the
    /// timed kernel does not pay for writing the flush's lines back.
    Read,
}

impl Cache {
    /// The cache in `runner plan`'s cell table.
    pub fn plan_text(&self) -> String {
        match self {
            Cache::Hot => "hot".into(),
            Cache::Flush { bytes, method } => format!(
                "flush {} ({})",
                bytes_text(*bytes),
                match method {
                    FlushMethod::Memset => "memset",
                    FlushMethod::Kernel => "write kernel",
                    FlushMethod::Read => "read kernel",
                }
            ),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum CacheKind {
    Hot,
    Flush,
}

impl Knob for Cache {
    const KEYS: &'static [Key] = &[
        Key::set(
            "cache",
            r#""hot""#,
            r#"or "flush": evict L2 before every timed launch"#,
        ),
        Key::set(
            "flush_bytes",
            r#""2 * l2_bytes""#,
            "flush buffer size (expression; default twice the L2)",
        ),
        Key::set(
            "flush_method",
            r#""memset""#,
            r#"or "kernel" (kernels/flush.cu, a grid-stride write), or "read" (a grid-stride
            read: L2 left clean, no write-back to pay)"#,
        ),
    ];
    const ASPECT: Aspect = Aspect::Cache;

    fn read(layer: &Layer) -> Result<Self, ConfigError> {
        let bytes = layer.int("flush_bytes", 1..=i64::MAX)?;
        let method: Option<FlushMethod> = layer.get("flush_method")?;
        match layer.get("cache")?.unwrap_or(CacheKind::Hot) {
            CacheKind::Hot => Ok(Cache::Hot),
            CacheKind::Flush => {
                // The default: twice the L2, as the post does.
                let bytes = bytes.map_or(2 * layer.facts.l2_bytes, |b| b) as u64;
                if bytes > layer.facts.mem_bytes as u64 {
                    return Err(layer.err_at(
                        "flush_bytes",
                        format!(
                            "a flush of {} does not fit the device's {}",
                            bytes_text(bytes),
                            bytes_text(layer.facts.mem_bytes as u64)
                        ),
                    ));
                }
                Ok(Cache::Flush {
                    bytes,
                    method: method.unwrap_or(FlushMethod::Memset),
                })
            }
        }
    }

    fn describe(&self) -> Option<String> {
        Some(match self {
            Cache::Hot => "hot L2".into(),
            Cache::Flush { bytes, method } => format!(
                "L2 flushed before each timed launch: {} by {}",
                bytes_text(*bytes),
                match method {
                    FlushMethod::Memset => "memset",
                    FlushMethod::Kernel => "a write kernel",
                    FlushMethod::Read => "a read kernel",
                }
            ),
        })
    }
}

/// Bytes as a reader wants them: `100.0 MiB`, `2.0 GiB`.
pub fn bytes_text(b: u64) -> String {
    const KIB: f64 = 1024.0;
    let b = b as f64;
    if b >= KIB * KIB * KIB {
        format!("{:.1} GiB", b / (KIB * KIB * KIB))
    } else if b >= KIB * KIB {
        format!("{:.1} MiB", b / (KIB * KIB))
    } else if b >= KIB {
        format!("{:.1} KiB", b / KIB)
    } else {
        format!("{b} B")
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::read;
    use super::*;

    #[test]
    fn a_flush_is_twice_the_l2_by_default_and_described_in_bytes() {
        let c: Cache = read("cache = \"flush\"").unwrap();
        assert_eq!(
            c,
            Cache::Flush {
                bytes: 100 << 20,
                method: FlushMethod::Memset
            }
        );
        assert_eq!(
            c.describe().unwrap(),
            "L2 flushed before each timed launch: 100.0 MiB by memset"
        );
        assert!(read::<Cache>("cache = \"flush\"\nflush_bytes = 0").is_err());
        assert!(read::<Cache>("cache = \"flush\"\nflush_bytes = \"mem_bytes * 2\"").is_err());
        assert_eq!(bytes_text(1536), "1.5 KiB");
    }
}
