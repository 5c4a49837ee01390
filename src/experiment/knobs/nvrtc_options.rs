//! `options`: NVRTC options a variant adds to its kernels' own (`["--use_fast_math"]`,
//! `["-DUNROLL={{ unroll }}"]`), so one source can be timed compiled two ways.

use super::knob::{Aspect, Key, Knob, Layer};
use crate::experiment::ConfigError;
use crate::experiment::{expr, BadValue};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NvrtcOptions(pub Vec<String>);

/// An option with a relative include directory (`-I../include`) made relative to `dir`, the
/// experiment file's folder, as every path of an experiment is.
pub fn resolve_include(option: &str, dir: &std::path::Path) -> String {
    for prefix in ["-I", "--include-path="] {
        if let Some(path) = option.strip_prefix(prefix) {
            let path = std::path::Path::new(path);
            if path.is_relative() {
                return format!("{prefix}{}", dir.join(path).display());
            }
        }
    }
    option.to_string()
}

/// The most NVRTC options a kernel or a variant gives.
pub const MAX_OPTIONS: usize = 256;

/// Options as a kernel or a variant writes them, rendered at a sweep point (`scope`), with
/// relative include directories made relative to `dir`.
pub fn render_all(
    options: &[String],
    scope: &expr::Scope,
    dir: &std::path::Path,
) -> Result<Vec<String>, BadValue> {
    if options.len() > MAX_OPTIONS {
        return Err(BadValue(format!(
            "{} options, more than the {MAX_OPTIONS} the runner passes to NVRTC",
            options.len()
        )));
    }
    options
        .iter()
        .map(|o| expr::render(o, scope).map(|o| resolve_include(&o, dir)))
        .collect()
}

impl NvrtcOptions {
    /// The kernel's launch at this point with these options after its own.
    pub fn apply(&self, launch: &mut crate::experiment::LaunchSpec) {
        launch.options.extend(self.0.iter().cloned());
    }
}

impl Knob for NvrtcOptions {
    const KEYS: &'static [Key] = &[Key::commented(
        "options",
        r#"["--use_fast_math"]"#,
        "NVRTC options a variant adds to its kernels' own (may use the sweep): one source
        timed compiled two ways",
    )];
    const ASPECT: Aspect = Aspect::Process;

    fn read(layer: &Layer) -> Result<Self, ConfigError> {
        let Some(options) = layer.get::<Vec<String>>("options")? else {
            return Ok(NvrtcOptions::default());
        };
        let dir = layer.path.parent().unwrap_or(std::path::Path::new("."));
        render_all(&options, &layer.scope(), dir)
            .map(NvrtcOptions)
            .map_err(|m| layer.err_at("options", m))
    }

    fn describe(&self) -> Option<String> {
        (!self.0.is_empty()).then(|| format!("NVRTC options {}", self.0.join(" ")))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::read;
    use super::*;

    #[test]
    fn a_variant_adds_options_that_may_follow_the_sweep() {
        let o: NvrtcOptions = read("options = [\"--use_fast_math\", \"-DN={{ n // 2 }}\"]").unwrap();
        assert_eq!(o.0, ["--use_fast_math", "-DN=256"]);
        assert_eq!(
            o.describe().unwrap(),
            "NVRTC options --use_fast_math -DN=256"
        );
        assert!(read::<NvrtcOptions>("options = [\"-D{{ nope }}\"]").is_err());
        let dir = std::path::Path::new("/exp");
        assert_eq!(resolve_include("-I../include", dir), "-I/exp/../include");
        assert_eq!(resolve_include("--include-path=inc", dir), "--include-path=/exp/inc");
        assert_eq!(resolve_include("-I/usr/include", dir), "-I/usr/include");
        assert_eq!(resolve_include("-DI=1", dir), "-DI=1");
        assert_eq!(read::<NvrtcOptions>("").unwrap(), NvrtcOptions::default());
    }
}
