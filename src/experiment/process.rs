//! Knobs that act on a worker process before its first CUDA call: environment variables,
//! the JIT cache state, and how kernels are compiled. The driver reads `CUDA_*` variables
//! once, at start, so every distinct environment runs in worker processes of its own.

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
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct ProcessEnv {
    pub vars: BTreeMap<String, String>,
    pub jit_cache: JitCache,
    pub profiler: Option<ProfilerCache>,
}

/// Nsight Compute's `--cache-control`, matched to the cell's cache knob.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum ProfilerCache {
    /// `--cache-control all`: caches flushed before each profiled launch (a cold cell).
    All,
    /// `--cache-control none`: caches left as they are (a hot cell).
    None,
}

impl ProfilerCache {
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
) -> Result<(), String> {
    let clash = match cache {
        JitCache::Empty | JitCache::Warm => vars.contains_key("CUDA_CACHE_PATH"),
        JitCache::Disabled => vars.contains_key("CUDA_CACHE_DISABLE"),
        JitCache::Inherit => false,
    };
    if clash {
        Err(format!(
            "jit_cache = {:?} sets the JIT cache itself; remove the cache variable from env",
            serde_json::to_value(cache).expect("serializes")
        ))
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

/// What NVRTC emits (`compile` knob).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CompileMode {
    /// SASS for a real architecture (`sm_XX`): the driver loads it with no JIT.
    Cubin,
    /// PTX for a virtual architecture (`compute_XX`): the driver JIT-compiles it at load.
    Ptx,
}

/// How a kernel is compiled: the mode and the architecture (`None`: the device's own).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Compile {
    pub mode: CompileMode,
    pub arch: Option<Arch>,
}

/// A compute capability such as 90, or 90 with the `a` (architecture-specific) suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Arch {
    pub number: u32,
    pub specific: bool,
}

impl Compile {
    pub const DEFAULT: Compile = Compile {
        mode: CompileMode::Cubin,
        arch: None,
    };

    /// Parses the `arch` knob (`sm_90`, `compute_80`, `sm_90a`) against the mode.
    pub fn parse(mode: CompileMode, arch: Option<&str>) -> Result<Compile, (String, String)> {
        let Some(text) = arch else {
            return Ok(Compile { mode, arch: None });
        };
        let (prefix, want) = match mode {
            CompileMode::Cubin => (
                "sm_",
                "compile = \"cubin\" takes a real architecture such as arch = \"sm_90\"",
            ),
            CompileMode::Ptx => (
                "compute_",
                "compile = \"ptx\" takes a virtual architecture such as arch = \"compute_80\"",
            ),
        };
        let digits = text.strip_prefix(prefix).ok_or_else(|| {
            (
                format!("arch `{text}` does not fit compile = \"{}\"", mode.key()),
                want.to_string(),
            )
        })?;
        let (digits, specific) = match digits.strip_suffix('a') {
            Some(d) => (d, true),
            None => (digits, false),
        };
        let number: u32 = digits
            .parse()
            .ok()
            .filter(|n| (30..=150).contains(n))
            .ok_or_else(|| {
                (
                    format!("arch `{text}` has no valid compute capability"),
                    want.to_string(),
                )
            })?;
        Ok(Compile {
            mode,
            arch: Some(Arch { number, specific }),
        })
    }

    /// The NVRTC architecture option for a device of compute capability `device`.
    pub fn nvrtc_arch(&self, device: (i64, i64)) -> String {
        let arch = self.arch.unwrap_or(Arch {
            number: (device.0 * 10 + device.1) as u32,
            specific: false,
        });
        let prefix = match self.mode {
            CompileMode::Cubin => "sm_",
            CompileMode::Ptx => "compute_",
        };
        format!(
            "{prefix}{}{}",
            arch.number,
            if arch.specific { "a" } else { "" }
        )
    }

    pub fn describe(&self) -> String {
        let arch = match self.mode {
            CompileMode::Cubin => self
                .arch
                .map_or("the device's sm_XX".into(), |_| self.nvrtc_arch((0, 0))),
            CompileMode::Ptx => self.arch.map_or("the device's compute_XX".into(), |_| {
                self.nvrtc_arch((0, 0))
            }),
        };
        match self.mode {
            CompileMode::Cubin => format!("CUBIN for {arch} (no JIT)"),
            CompileMode::Ptx => format!("PTX for {arch} (JIT at load)"),
        }
    }
}

impl CompileMode {
    pub fn key(self) -> &'static str {
        match self {
            CompileMode::Cubin => "cubin",
            CompileMode::Ptx => "ptx",
        }
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
    fn compile_modes_pick_their_architecture_prefix() {
        let ptx = Compile::parse(CompileMode::Ptx, None).unwrap();
        assert_eq!(ptx.nvrtc_arch((9, 0)), "compute_90");
        let cubin = Compile::parse(CompileMode::Cubin, None).unwrap();
        assert_eq!(cubin.nvrtc_arch((9, 0)), "sm_90");
        let old = Compile::parse(CompileMode::Ptx, Some("compute_70")).unwrap();
        assert_eq!(old.nvrtc_arch((9, 0)), "compute_70");
        let specific = Compile::parse(CompileMode::Cubin, Some("sm_90a")).unwrap();
        assert_eq!(specific.nvrtc_arch((8, 0)), "sm_90a");
        assert!(Compile::parse(CompileMode::Ptx, Some("sm_90")).is_err());
        assert!(Compile::parse(CompileMode::Cubin, Some("compute_90")).is_err());
        assert!(Compile::parse(CompileMode::Cubin, Some("sm_9x")).is_err());
        assert_eq!(
            ptx.describe(),
            "PTX for the device's compute_XX (JIT at load)"
        );
        assert_eq!(old.describe(), "PTX for compute_70 (JIT at load)");
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
