//! What every knob is made of: its keys as documented, the aspect it describes, the `Knob`
//! trait, and the `Layer` it reads its values from (a variant's table over `[defaults]` at
//! one sweep point), with the durations knobs take.

use super::super::error::{BadValue, ConfigError};
use super::super::expr::{self, DeviceFacts, NumExpr, Scope};
use super::super::schema::RawTable;
use super::super::Point;
use serde::de::DeserializeOwned;
use std::path::Path;
use toml::Spanned;

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
                    super::super::point_label(self.point)
                ),
            ));
        }
        if n > max {
            return Err(self
                .err(
                    raw,
                    format!(
                        "{key} is {n} at {}, more than the {max} the runner takes",
                        super::super::point_label(self.point)
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
        super::super::scope(self.point, self.facts)
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
