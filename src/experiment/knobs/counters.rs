//! `counters`: hardware counters of the measured kernel, read by Nsight Compute in a pass of
//! their own before the cell's timed run (never inside a timed sample), with the cell's
//! cache state: `counters = "memory"` for the memory set below, or a list of metric names
//! as `ncu --metrics` takes them.

use super::knob::{Aspect, Key, Knob, Layer};
use crate::experiment::ConfigError;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters(pub Vec<String>);

/// DRAM bytes each way, the bytes the SMs asked of L1 and of L2, and both hit rates: enough
/// to tell where a memory-bound kernel's bytes came from and to check its declared `bytes`.
pub const MEMORY: [&str; 6] = [
    DRAM_READ,
    DRAM_WRITE,
    L2_SECTORS_FROM_SMS,
    L1_BYTES,
    "lts__t_sector_hit_rate.pct",
    "l1tex__t_sector_hit_rate.pct",
];

/// The counters that set a cell's declared `bytes` against what moved. L2's sectors asked
/// for by the SMs' L1s (32 bytes each) leave out the traffic between the L2's halves, which
/// `lts__t_bytes` counts (1.5x a copy's bytes on the H100).
pub const DRAM_READ: &str = "dram__bytes_read.sum";
pub const DRAM_WRITE: &str = "dram__bytes_write.sum";
pub const L2_SECTORS_FROM_SMS: &str = "lts__t_sectors_srcunit_tex.sum";
pub const L1_BYTES: &str = "l1tex__t_bytes.sum";
/// Bytes in an L2 sector.
pub const SECTOR_BYTES: f64 = 32.0;

/// Steady samples a counter pass takes: each counter is the median of their launches.
pub const COUNTED_SAMPLES: u64 = 5;
/// Warm-up launches a counter pass keeps at most: one puts a hot cell's data in the cache,
/// and every launch under the profiler is replayed once per group of counters.
pub const COUNTED_WARMUP: u64 = 2;

/// The most counters a cell asks for: each pass of a replayed kernel collects a few.
pub const MAX_COUNTERS: usize = 64;

/// Whether `name` reads as an Nsight Compute metric: `unit__counter` with optional
/// `.rollup` parts, nothing that would split or escape `ncu`'s comma-separated list.
fn is_metric(name: &str) -> bool {
    let (base, rollups) = match name.split_once('.') {
        Some((base, rollups)) => (base, Some(rollups)),
        None => (name, None),
    };
    let word = |s: &str| {
        !s.is_empty()
            && s
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    };
    base.contains("__")
        && word(base)
        && rollups.is_none_or(|r| r.split('.').all(word))
}

impl Counters {
    /// Whether the cell reads counters at all.
    pub fn wanted(&self) -> bool {
        !self.0.is_empty()
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawCounters {
    Set(String),
    List(Vec<String>),
}

impl Knob for Counters {
    const KEYS: &'static [Key] = &[Key::commented(
        "counters",
        r#""memory""#,
        "hardware counters of the measured kernel, read by Nsight Compute in a pass of their
        own before the timed run, with the cell's cache state: \"memory\" (DRAM bytes each
        way, the bytes the SMs asked of L1 and L2, both hit rates; with `bytes`, the declared
        bytes are checked against them, and `reads` and `writes` stand beside DRAM's bytes
        read and written), or a list of metric names as `ncu --metrics` takes them",
    )];
    const ASPECT: Aspect = Aspect::Method;

    fn read(layer: &Layer) -> Result<Self, ConfigError> {
        let hint = "write counters = \"memory\", or a list of Nsight Compute metric names such as [\"dram__bytes_read.sum\", \"lts__t_sector_hit_rate.pct\"] (`ncu --query-metrics` lists them)";
        let names = match layer.get::<RawCounters>("counters")? {
            None => return Ok(Counters::default()),
            Some(RawCounters::Set(s)) if s == "memory" => {
                MEMORY.iter().map(|m| m.to_string()).collect()
            }
            Some(RawCounters::Set(s)) => {
                return Err(layer
                    .err_at("counters", format!("counters: unknown set `{s}`"))
                    .with_hint(hint))
            }
            Some(RawCounters::List(l)) => l,
        };
        if names.is_empty() || names.len() > MAX_COUNTERS {
            return Err(layer
                .err_at(
                    "counters",
                    format!(
                        "counters: {} names; a cell reads 1 to {MAX_COUNTERS}",
                        names.len()
                    ),
                )
                .with_hint(hint));
        }
        if let Some(bad) = names.iter().find(|n| !is_metric(n)) {
            return Err(layer
                .err_at(
                    "counters",
                    format!("counters: `{bad}` is not an Nsight Compute metric name"),
                )
                .with_hint(hint));
        }
        let mut unique: Vec<String> = Vec::new();
        for n in names {
            if !unique.contains(&n) {
                unique.push(n);
            }
        }
        Ok(Counters(unique))
    }

    fn describe(&self) -> Option<String> {
        self.wanted().then(|| {
            format!(
                "{} hardware counters in a pass of their own under Nsight Compute",
                self.0.len()
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::read;
    use super::*;

    #[test]
    fn the_memory_set_or_a_list_of_metric_names() {
        let c: Counters = read("counters = \"memory\"").unwrap();
        assert_eq!(c.0, MEMORY);
        let c: Counters =
            read("counters = [\"dram__bytes_read.sum\", \"dram__bytes_read.sum\", \"sm__cycles_elapsed.avg.per_second\"]")
                .unwrap();
        assert_eq!(c.0, ["dram__bytes_read.sum", "sm__cycles_elapsed.avg.per_second"]);
        assert!(!read::<Counters>("").unwrap().wanted());
    }

    #[test]
    fn names_that_are_not_metrics_are_refused() {
        for bad in [
            "counters = \"cache\"",
            "counters = []",
            "counters = [\"dram bytes\"]",
            "counters = [\"dram__bytes,sm__x\"]",
            "counters = [\"--launch-count\"]",
            "counters = [\"dram__bytes.\"]",
            "counters = 3",
        ] {
            assert!(read::<Counters>(bad).is_err(), "{bad}");
        }
    }
}
