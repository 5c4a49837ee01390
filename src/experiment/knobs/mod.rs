//! The methodology knobs of `[defaults]` and each `[[variant]]`. A knob is one file here: its
//! keys with their documentation (`runner keys` and docs/keys.md print them),
//! how its raw TOML values become a checked value at one sweep point, its default and how it
//! describes itself (for `runner plan`, the methodology table and the report). The code that
//! acts on a knob reads the value; nothing else restates it.

use super::error::{BadValue, ConfigError};
use super::expr::{self, DeviceFacts, NumExpr, Scope};
use super::Point;
use indexmap::IndexMap;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::path::Path;
use toml::Spanned;

pub mod reference;

/// A `[defaults]` or `[[variant]]` table as written: each key's value with its place.
pub type RawTable = IndexMap<String, Spanned<toml::Value>>;

/// Where a knob's value is described: the timer, how samples are taken, what the timed
/// launches meet (the cache, their data), or the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aspect {
    Timer,
    Method,
    Cache,
    Process,
}

impl Aspect {
    /// Every aspect, in the order the methodology is told.
    pub const ALL: [Aspect; 4] = [
        Aspect::Timer,
        Aspect::Method,
        Aspect::Cache,
        Aspect::Process,
    ];

    /// The aspect's column in the methodology table.
    pub fn title(self) -> &'static str {
        match self {
            Aspect::Timer => "timer",
            Aspect::Method => "method",
            Aspect::Cache => "cache and data",
            Aspect::Process => "process",
        }
    }
}

/// One key of a knob, as the key reference (`runner keys`, docs/keys.md) shows it: set to its
/// example in `[defaults]`, or, for a key unset by default, commented out.
#[derive(Debug)]
pub struct Key {
    pub name: &'static str,
    /// A value as TOML: the default, unless `doc` says otherwise.
    pub example: &'static str,
    /// Whether the reference sets the key, rather than showing it commented out.
    pub set: bool,
    /// What the key does and what else it takes; rewrapped when printed.
    pub doc: &'static str,
}

impl Key {
    /// A key the reference sets to `example`.
    pub const fn set(name: &'static str, example: &'static str, doc: &'static str) -> Key {
        Key {
            name,
            example,
            set: true,
            doc,
        }
    }

    /// A key unset by default, which the reference shows commented out.
    pub const fn commented(name: &'static str, example: &'static str, doc: &'static str) -> Key {
        Key {
            name,
            example,
            set: false,
            doc,
        }
    }
}

/// One knob: its keys, how it is read at a sweep point, and how it describes itself.
pub trait Knob: Sized + Default {
    /// Every key the knob reads, with its documentation: the one place it is written.
    const KEYS: &'static [Key];
    const ASPECT: Aspect;
    /// The knob's value at the layer's sweep point; the default where no key is set.
    fn read(layer: &Layer) -> Result<Self, ConfigError>;
    /// A phrase for the methodology table; `None` where there is nothing worth saying.
    fn describe(&self) -> Option<String>;
}

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

/// A variant's table over the experiment's `[defaults]`, read at one sweep point.
pub struct Layer<'a> {
    pub variant: &'a RawTable,
    pub defaults: &'a RawTable,
    pub path: &'a Path,
    pub text: &'a str,
    pub point: &'a Point,
    pub facts: &'a DeviceFacts,
}

impl Layer<'_> {
    /// A key's raw value: the variant's, else the defaults'.
    pub fn raw(&self, key: &str) -> Option<&Spanned<toml::Value>> {
        self.variant.get(key).or_else(|| self.defaults.get(key))
    }

    /// Whether the variant itself (not the defaults) sets `key`.
    pub fn variant_sets(&self, key: &str) -> bool {
        self.variant.contains_key(key)
    }

    /// A key's value as `T`; a value of the wrong shape is an error at its place.
    pub fn get<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, ConfigError> {
        let Some(raw) = self.raw(key) else {
            return Ok(None);
        };
        raw.get_ref()
            .clone()
            .try_into()
            .map(Some)
            .map_err(|e: toml::de::Error| {
                self.err(raw, format!("{key}: {}", e.message().trim()))
                    .with_hint("see the experiment format in docs/experiments.md")
            })
    }

    /// A whole number within `range` at this point, from a number or an expression of the
    /// sweep parameters and device facts. Each knob's upper limit lies far beyond any real
    /// measurement, so that a slip (an extra digit, an exponent) is caught before a run.
    pub fn int(
        &self,
        key: &str,
        range: std::ops::RangeInclusive<i64>,
    ) -> Result<Option<i64>, ConfigError> {
        let (min, max) = (*range.start(), *range.end());
        let Some(e) = self.get::<NumExpr>(key)? else {
            return Ok(None);
        };
        let raw = self.raw(key).expect("read above");
        let scope = self.scope();
        let n = expr::eval_int(&e, &scope).map_err(|m| {
            self.err(raw, format!("{key}: {m}"))
                .with_hint(format!("{key} may use: {}", expr::names(&scope)))
        })?;
        if n < min {
            return Err(self.err(
                raw,
                format!(
                    "{key} is {n} at {}, but must be at least {min}",
                    super::point_label(self.point)
                ),
            ));
        }
        if n > max {
            return Err(self
                .err(
                    raw,
                    format!(
                        "{key} is {n} at {}, more than the {max} the runner takes",
                        super::point_label(self.point)
                    ),
                )
                .with_hint(format!(
                    "give {key} at most {max}: no real measurement needs more, and a value this large is likely a slip"
                )));
        }
        Ok(Some(n))
    }

    /// A duration written as text (`"30s"`, `"10 min"`).
    pub fn duration(&self, key: &str) -> Result<Option<std::time::Duration>, ConfigError> {
        let Some(text) = self.get::<String>(key)? else {
            return Ok(None);
        };
        parse_duration(&text).map(Some).map_err(|m| {
            self.err(self.raw(key).expect("read above"), format!("{key}: {m}"))
                .with_hint(format!(
                    "write a duration such as {key} = \"30s\" or \"10 min\""
                ))
        })
    }

    pub fn scope(&self) -> Scope {
        super::scope(self.point, self.facts)
    }

    /// An error at a value's place in the file.
    pub fn err<T>(&self, at: &Spanned<T>, msg: impl Into<String>) -> ConfigError {
        ConfigError::at(self.path, self.text, Some(at.span()), msg)
    }

    /// An error at `key`'s value where one is set, else at no particular place.
    pub fn err_at(&self, key: &str, msg: impl Into<String>) -> ConfigError {
        ConfigError::at(self.path, self.text, self.raw(key).map(|r| r.span()), msg)
    }
}

/// The longest duration an experiment may give (a cell's timeout, a warm-up, a stop rule's):
/// a day, longer than any cell needs.
pub const MAX_DURATION: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// A duration as text: `30s`, `10 min`, `0.5s`; at most [`MAX_DURATION`].
pub fn parse_duration(text: &str) -> Result<std::time::Duration, BadValue> {
    let seconds = text
        .trim()
        .strip_suffix('s')
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0);
    let d = match seconds {
        Some(v) if v <= MAX_DURATION.as_secs_f64() => std::time::Duration::from_secs_f64(v),
        Some(_) => std::time::Duration::MAX,
        None => humantime::parse_duration(text).map_err(|e| {
            BadValue(match e {
                humantime::DurationError::NumberOverflow => {
                    format!("`{text}` is longer than a day")
                }
                _ => format!("`{text}` is not a duration"),
            })
        })?,
    };
    if d > MAX_DURATION {
        return Err(BadValue(format!(
            "`{text}` is longer than {}, the longest duration the runner takes",
            humantime::format_duration(MAX_DURATION)
        )));
    }
    Ok(d)
}

/// Serializes a duration as seconds.
pub mod seconds {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_secs_f64(f64::deserialize(d)?))
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;

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
