//! `compile`, `arch`: what NVRTC emits for the kernel: a CUBIN for a real architecture
//! (loads with no JIT) or PTX the driver JIT-compiles at module load.

use super::knob::{Aspect, Key, Knob, Layer};
use crate::experiment::ConfigError;
use serde::{Deserialize, Serialize};

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Compile {
    pub mode: CompileMode,
    pub arch: Option<Arch>,
}

/// A compute capability such as 90, or 90 with the `a` (architecture-specific) suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
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

    pub fn text(&self) -> String {
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


impl Default for Compile {
    fn default() -> Self {
        Compile::DEFAULT
    }
}

impl Knob for Compile {
    const KEYS: &'static [Key] = &[
        Key::set(
            "compile",
            r#""cubin""#,
            r#"or "ptx": PTX that the driver JIT-compiles at module load"#,
        ),
        Key::set(
            "arch",
            r#""sm_90""#,
            r#"optional: "sm_XY" for a CUBIN, "compute_XY" for PTX (default: the device's
            own)"#,
        ),
    ];
    const ASPECT: Aspect = Aspect::Process;

    fn read(layer: &Layer) -> Result<Self, ConfigError> {
        let mode = layer.get("compile")?.unwrap_or(CompileMode::Cubin);
        let arch: Option<String> = layer.get("arch")?;
        Compile::parse(mode, arch.as_deref())
            .map_err(|(msg, hint)| layer.err_at("arch", msg).with_hint(hint))
    }

    fn describe(&self) -> Option<String> {
        Some(self.text())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            ptx.text(),
            "PTX for the device's compute_XX (JIT at load)"
        );
        assert_eq!(old.text(), "PTX for compute_70 (JIT at load)");
    }
}
