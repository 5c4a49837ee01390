//! The methodology knobs of `[defaults]` and each `[[variant]]`. A knob is one file here: its
//! keys with their documentation (`runner keys` and docs/keys.md print them),
//! how its raw TOML values become a checked value at one sweep point, its default and how it
//! describes itself (for `runner plan`, the methodology table and the report). The code that
//! acts on a knob reads the value; nothing else restates it.

use super::error::ConfigError;
use serde::{Deserialize, Serialize};

mod knob;
pub mod reference;

pub use knob::{parse_duration, seconds, Aspect, Key, Knob, Layer};

/// Declares the knobs: the `Knobs` struct, its reading and its description.
macro_rules! knobs {
    ($($field:ident: $module:ident::$ty:ident),* $(,)?) => {
        $(pub mod $module;)*

        /// A methodology with every value fixed for one sweep point.
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        pub struct Knobs {
            $(pub $field: $module::$ty,)*
        }

        impl Knobs {
            /// Every knob's keys, in the order the knobs are declared.
            pub fn documented_keys() -> Vec<&'static Key> {
                let mut keys = Vec::new();
                $(keys.extend(<$module::$ty as Knob>::KEYS);)*
                keys
            }

            pub fn read(layer: &Layer) -> Result<Knobs, ConfigError> {
                Ok(Knobs { $($field: <$module::$ty as Knob>::read(layer)?,)* })
            }

            /// The phrases of every knob with something to say, by aspect.
            pub fn describe(&self, aspect: Aspect) -> Vec<String> {
                self.phrases(aspect).into_iter().flatten().collect()
            }

            /// Each knob of `aspect`'s phrase in a fixed order, `None` where it has nothing
            /// to say, so that a knob's phrases line up over the sweep points.
            pub fn phrases(&self, aspect: Aspect) -> Vec<Option<String>> {
                let mut out = Vec::new();
                $(if <$module::$ty as Knob>::ASPECT == aspect {
                    out.push(self.$field.describe());
                })*
                out
            }
        }
    };
}

knobs! {
    timer: timer::TimerKind,
    warmup: warmup::Warmup,
    samples: samples::Samples,
    budget: budget::Budget,
    launches: launches::Launches,
    queue: queue::Queue,
    cache: cache::Cache,
    flushed_graph: flushed_graph::FlushedGraph,
    rotate: rotate::Rotate,
    cupti_collect: cupti_collect::CuptiCollect,
    counters: counters::Counters,
    order: order::Order,
    process: process::Process,
    env: env::Env,
    compile: compile::Compile,
    timeout: timeout::Timeout,
    first_launch: first_launch::FirstLaunch,
    inputs: inputs::Inputs,
    launch_config: launch_config::LaunchConfig,
    nvrtc_options: nvrtc_options::NvrtcOptions,
    l2_persist: l2_persist::L2Persist,
}

impl Knobs {
    /// Every key a `[defaults]` or `[[variant]]` table may hold.
    pub fn keys() -> Vec<&'static str> {
        let knobs = Knobs::documented_keys().into_iter().map(|k| k.name);
        ["name", "description"].into_iter().chain(knobs).collect()
    }

    /// Steady samples per run: the samples asked for, split over the rounds (rounded up).
    pub fn samples_per_run(&self) -> u64 {
        self.samples
            .count
            .div_ceil(u64::from(self.order.rounds.max(1)))
    }

    /// Runs of a cell: one per fresh process, or one per round.
    pub fn runs(&self) -> u32 {
        self.process.count() * self.order.rounds.max(1)
    }

    /// What a worker process is started with: the variables and JIT cache of `env`, and
    /// Nsight Compute around it for `timer = "profiler"`, its cache control matched to the
    /// cell's cache.
    pub fn process_env(&self) -> env::ProcessEnv {
        env::ProcessEnv {
            vars: self.env.vars.clone(),
            jit_cache: self.env.jit_cache,
            profiler: (self.timer == timer::TimerKind::Profiler)
                .then(|| env::ProfilerCache::of(&self.cache)),
        }
    }
}

#[cfg(test)]
pub mod tests {
    use super::knob::MAX_DURATION;
    use super::*;
    use crate::experiment::schema::RawTable;
    use crate::experiment::DeviceFacts;
    use std::path::Path;

    /// Reads `T` from a variant table written as TOML, over no defaults, at n = 512.
    pub fn read<T: Knob>(variant: &str) -> Result<T, ConfigError> {
        let table: RawTable = toml::from_str(variant).expect("valid TOML");
        let point = vec![("n".to_string(), 512.into())];
        let layer = Layer {
            variant: &table,
            defaults: &RawTable::new(),
            path: Path::new("t.toml"),
            text: variant,
            point: &point,
            facts: &DeviceFacts::nominal(),
        };
        T::read(&layer)
    }

    #[test]
    fn every_key_belongs_to_one_knob() {
        let keys = Knobs::keys();
        let mut sorted = keys.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(
            sorted.len(),
            keys.len(),
            "a key read by two knobs: {keys:?}"
        );
    }

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(parse_duration("0.5s").unwrap().as_millis(), 500);
        assert_eq!(parse_duration("10 min").unwrap().as_secs(), 600);
        assert!(parse_duration("soon").is_err());
        for huge in [
            "1e300s",
            "1e20s",
            "25h",
            "1000000 h",
            "99999999999999999999 years",
        ] {
            let e = parse_duration(huge).unwrap_err();
            assert!(e.0.contains("longer than"), "{huge}: {e}");
        }
        assert_eq!(parse_duration("24h").unwrap(), MAX_DURATION);
    }

    #[test]
    fn a_count_beyond_its_limit_names_the_limit() {
        let table: RawTable = toml::from_str("samples = 11").unwrap();
        let point = vec![("n".to_string(), 512.into())];
        let layer = Layer {
            variant: &table,
            defaults: &RawTable::new(),
            path: Path::new("t.toml"),
            text: "samples = 11",
            point: &point,
            facts: &DeviceFacts::nominal(),
        };
        assert_eq!(layer.int("samples", 0..=11).unwrap(), Some(11));
        let e = layer.int("samples", 0..=10).unwrap_err().to_string();
        assert!(
            e.contains("t.toml:1:") && e.contains("more than the 10"),
            "{e}"
        );
    }
}
