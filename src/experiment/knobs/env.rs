//! `env`, `jit_cache`: what a worker process starts with. The driver reads `CUDA_*`
//! variables once, at start, so every distinct environment runs in worker processes of its
//! own.

use super::cache::Cache;
use super::knob::{Aspect, Key, Knob, Layer};
use crate::experiment::ConfigError;
use crate::experiment::BadValue;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The JIT cache a worker process starts with (`jit_cache` knob).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize,
)]
#[serde(rename_all = "snake_case")]
pub enum JitCache {
    /// Whatever the user's environment gives (`~/.nv/ComputeCache` unless set otherwise).
    #[default]
    Inherit,
    /// A new, empty `CUDA_CACHE_PATH` for every worker process: each pays the first-ever JIT.
    Empty,
    /// One `CUDA_CACHE_PATH` per environment, filled by a priming process before the first run.
    Warm,
    /// `CUDA_CACHE_DISABLE=1`: nothing is read from or written to the cache.
    Disabled,
}

impl JitCache {
    pub fn describe(self) -> &'static str {
        match self {
            JitCache::Inherit => "the user's JIT cache",
            JitCache::Empty => "a new empty JIT cache per process",
            JitCache::Warm => "a JIT cache primed by an earlier process",
            JitCache::Disabled => "JIT cache disabled",
        }
    }
}

/// What a worker process is started with: the variables a variant sets, its JIT cache, and
/// whether it runs under Nsight Compute (`timer = "profiler"`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ProcessEnv {
    pub vars: BTreeMap<String, String>,
    pub jit_cache: JitCache,
    pub profiler: Option<ProfilerCache>,
}

/// Nsight Compute's `--cache-control`, matched to the cell's cache knob.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ProfilerCache {
    /// `--cache-control all`: caches flushed before each profiled launch (a cold cell).
    All,
    /// `--cache-control none`: caches left as they are (a hot cell).
    None,
}

impl ProfilerCache {
    /// The profiler's cache control for a cell's cache knob.
    pub fn of(cache: &Cache) -> Self {
        match cache {
            Cache::Hot => ProfilerCache::None,
            Cache::Flush { .. } => ProfilerCache::All,
        }
    }

    pub fn flag(self) -> &'static str {
        match self {
            ProfilerCache::All => "all",
            ProfilerCache::None => "none",
        }
    }
}

impl ProcessEnv {
    /// `CUDA_FORCE_JIT=1, empty JIT cache`, or `inherited` for a plain process.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = self.vars.iter().map(|(k, v)| format!("{k}={v}")).collect();
        if self.jit_cache != JitCache::Inherit {
            parts.push(self.jit_cache.describe().to_string());
        }
        if let Some(c) = self.profiler {
            parts.push(format!(
                "under Nsight Compute (--cache-control {}, --clock-control none)",
                c.flag()
            ));
        }
        if parts.is_empty() {
            "inherited".into()
        } else {
            parts.join(", ")
        }
    }
}

/// Variables the driver reads at start, with what a valid value looks like. Others may be
/// set too; a name within two edits of one of these is taken for a typo.
pub const KNOWN_VARS: &[(&str, &str)] = &[
    ("CUDA_FORCE_JIT", "0 or 1"),
    ("CUDA_FORCE_PTX_JIT", "0 or 1"),
    ("CUDA_DISABLE_PTX_JIT", "0 or 1"),
    ("CUDA_CACHE_DISABLE", "0 or 1"),
    ("CUDA_CACHE_PATH", "a directory"),
    ("CUDA_CACHE_MAXSIZE", "a size in bytes (at most 4294967296)"),
    ("CUDA_MODULE_LOADING", "LAZY or EAGER"),
    ("CUDA_MODULE_DATA_LOADING", "LAZY or EAGER"),
    (
        "CUDA_VISIBLE_DEVICES",
        "device indices or GPU-/MIG- UUIDs, comma-separated",
    ),
    ("CUDA_LAUNCH_BLOCKING", "0 or 1"),
    ("CUDA_DEVICE_MAX_CONNECTIONS", "an integer from 1 to 32"),
];

/// Checks one variable: `Err((message, hint))` for a known variable with a bad value or a
/// name that looks like a misspelt known one.
pub fn check_var(name: &str, value: &str) -> Result<(), (String, String)> {
    if name.is_empty() || name.contains('=') || name.contains('\0') || value.contains('\0') {
        return Err((
            format!("`{name}` cannot be an environment variable name"),
            "names are non-empty and hold no `=` or NUL".into(),
        ));
    }
    let Some((_, valid)) = KNOWN_VARS.iter().find(|(k, _)| *k == name) else {
        if let Some((k, _)) = KNOWN_VARS.iter().find(|(k, _)| edit_distance(k, name) <= 2) {
            return Err((
                format!("unknown variable `{name}`"),
                format!("did you mean `{k}`?"),
            ));
        }
        return Ok(());
    };
    let flag = || matches!(value, "0" | "1");
    let ok = match name {
        "CUDA_CACHE_PATH" => !value.is_empty(),
        "CUDA_CACHE_MAXSIZE" => value.parse::<u64>().is_ok_and(|n| n <= 1 << 32),
        "CUDA_MODULE_LOADING" | "CUDA_MODULE_DATA_LOADING" => matches!(value, "LAZY" | "EAGER"),
        "CUDA_VISIBLE_DEVICES" => value.split(',').all(|d| {
            let d = d.trim();
            d.parse::<u32>().is_ok() || d.starts_with("GPU-") || d.starts_with("MIG-")
        }),
        "CUDA_DEVICE_MAX_CONNECTIONS" => value.parse::<u32>().is_ok_and(|n| (1..=32).contains(&n)),
        _ => flag(),
    };
    if ok {
        Ok(())
    } else {
        Err((
            format!("`{name}` cannot be {value:?}"),
            format!("{name} takes {valid}"),
        ))
    }
}

/// Checks that the variables and the JIT cache knob do not both set the cache.
pub fn check_cache_conflict(
    vars: &BTreeMap<String, String>,
    cache: JitCache,
) -> Result<(), BadValue> {
    let clash = match cache {
        JitCache::Empty | JitCache::Warm => vars.contains_key("CUDA_CACHE_PATH"),
        JitCache::Disabled => vars.contains_key("CUDA_CACHE_DISABLE"),
        JitCache::Inherit => false,
    };
    if clash {
        Err(BadValue(format!(
            "jit_cache = {:?} sets the JIT cache itself; remove the cache variable from env",
            serde_json::to_value(cache).expect("serializes")
        )))
    } else {
        Ok(())
    }
}

/// Levenshtein distance, for typo hints.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}


/// The `env` and `jit_cache` knobs: the variables a variant sets over the defaults', and
/// its JIT cache.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Env {
    pub vars: BTreeMap<String, String>,
    pub jit_cache: JitCache,
}

impl Knob for Env {
    const KEYS: &'static [Key] = &[
        Key::set(
            "env",
            r#"{ CUDA_MODULE_LOADING = "EAGER" }"#,
            "variables of the worker processes (none by default; merged with a variant's);
            CUDA_FORCE_JIT, CUDA_CACHE_DISABLE, CUDA_CACHE_PATH, CUDA_CACHE_MAXSIZE,
            CUDA_MODULE_LOADING, CUDA_VISIBLE_DEVICES and a few more are checked; a near miss
            of one is an error",
        ),
        Key::set(
            "jit_cache",
            r#""inherit""#,
            r#""empty": a new empty CUDA_CACHE_PATH per process; "warm": one per environment,
            filled by a priming process first; "disabled": CUDA_CACHE_DISABLE=1; "inherit":
            the user's cache"#,
        ),
    ];
    const ASPECT: Aspect = Aspect::Process;

    fn read(layer: &Layer) -> Result<Self, ConfigError> {
        let mut vars = BTreeMap::new();
        // The variant's variables go over the defaults'.
        for table in [layer.defaults, layer.variant] {
            let Some(raw) = table.get("env") else {
                continue;
            };
            let toml::Value::Table(t) = raw.get_ref() else {
                return Err(layer
                    .err(raw, "env must be a table of variables")
                    .with_hint("write env = { CUDA_MODULE_LOADING = \"EAGER\" }"));
            };
            for (name, value) in t {
                let text = match value {
                    toml::Value::String(s) => s.clone(),
                    toml::Value::Integer(i) => i.to_string(),
                    _ => {
                        return Err(layer
                            .err(raw, format!("`{name}` must be a string or an integer"))
                            .with_hint(format!("write {name} = \"1\"")))
                    }
                };
                check_var(name, &text).map_err(|(msg, hint)| layer.err(raw, msg).with_hint(hint))?;
                vars.insert(name.clone(), text);
            }
        }
        let jit_cache = layer.get("jit_cache")?.unwrap_or_default();
        check_cache_conflict(&vars, jit_cache).map_err(|m| layer.err_at("env", m))?;
        Ok(Env { vars, jit_cache })
    }

    fn describe(&self) -> Option<String> {
        let env = ProcessEnv {
            vars: self.vars.clone(),
            jit_cache: self.jit_cache,
            profiler: None,
        };
        Some(format!("environment: {}", env.describe()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_variables_are_checked_and_others_pass() {
        assert!(check_var("CUDA_FORCE_JIT", "1").is_ok());
        assert!(check_var("CUDA_FORCE_JIT", "yes").is_err());
        assert!(check_var("CUDA_MODULE_LOADING", "EAGER").is_ok());
        assert!(check_var("CUDA_MODULE_LOADING", "eager").is_err());
        assert!(check_var("CUDA_CACHE_MAXSIZE", "268435456").is_ok());
        assert!(check_var("CUDA_CACHE_MAXSIZE", "1GB").is_err());
        assert!(check_var("CUDA_VISIBLE_DEVICES", "0,1").is_ok());
        assert!(check_var("CUDA_VISIBLE_DEVICES", "GPU-12ab").is_ok());
        assert!(check_var("CUDA_VISIBLE_DEVICES", "first").is_err());
        assert!(check_var("OMP_NUM_THREADS", "4").is_ok());
        let (msg, hint) = check_var("CUDA_FORCE_JTI", "1").unwrap_err();
        assert!(msg.contains("CUDA_FORCE_JTI"), "{msg}");
        assert!(hint.contains("CUDA_FORCE_JIT"), "{hint}");
        assert!(check_var("A=B", "1").is_err());
    }

    #[test]
    fn the_cache_knob_and_the_cache_variables_exclude_each_other() {
        let vars = |k: &str| BTreeMap::from([(k.to_string(), "1".to_string())]);
        assert!(check_cache_conflict(&vars("CUDA_CACHE_PATH"), JitCache::Empty).is_err());
        assert!(check_cache_conflict(&vars("CUDA_CACHE_PATH"), JitCache::Warm).is_err());
        assert!(check_cache_conflict(&vars("CUDA_CACHE_DISABLE"), JitCache::Disabled).is_err());
        assert!(check_cache_conflict(&vars("CUDA_CACHE_DISABLE"), JitCache::Empty).is_ok());
        assert!(check_cache_conflict(&vars("CUDA_FORCE_JIT"), JitCache::Warm).is_ok());
    }

    #[test]
    fn environments_describe_themselves() {
        let mut env = ProcessEnv::default();
        assert_eq!(env.describe(), "inherited");
        env.vars.insert("CUDA_FORCE_JIT".into(), "1".into());
        env.jit_cache = JitCache::Empty;
        assert_eq!(
            env.describe(),
            "CUDA_FORCE_JIT=1, a new empty JIT cache per process"
        );
    }
}
