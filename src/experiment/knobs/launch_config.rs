//! `grid`, `block`, `shared_bytes`: a variant's own launch configuration, replacing the
//! kernel's (the same kernel timed with 128 and 256 threads per block as two variants).

use super::knob::{Aspect, Key, Knob, Layer};
use crate::experiment::ConfigError;
use crate::experiment::expr::{self, NumExpr};
use crate::experiment::kernel::{self, Part};
use serde::{Deserialize, Serialize};

/// The variant's launch configuration where it sets one (each part evaluated at the point
/// and checked against the device), else the kernel's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchConfig {
    pub grid: Option<[u32; 3]>,
    pub block: Option<[u32; 3]>,
    pub shared_bytes: Option<u32>,
}

impl LaunchConfig {
    /// `launch` with this configuration's parts in place of its own.
    pub fn apply(&self, launch: &mut kernel::LaunchSpec) {
        launch.grid = self.grid.unwrap_or(launch.grid);
        launch.block = self.block.unwrap_or(launch.block);
        launch.shared_bytes = self.shared_bytes.unwrap_or(launch.shared_bytes);
    }
}

impl Knob for LaunchConfig {
    const KEYS: &'static [Key] = &[
        Key::commented(
            "grid",
            r#"["sm_count * 32"]"#,
            "a variant's own launch configuration (grid, block, shared_bytes), replacing the
            kernel's (launch-config.toml)",
        ),
        Key::commented("block", "[256]", "the variant's block, replacing the kernel's"),
        Key::commented(
            "shared_bytes",
            "49152",
            "the variant's dynamic shared memory in bytes, replacing the kernel's",
        ),
    ];
    const ASPECT: Aspect = Aspect::Method;

    fn read(layer: &Layer) -> Result<Self, ConfigError> {
        let scope = layer.scope();
        let dims = |key: &str| -> Result<Option<Vec<i64>>, ConfigError> {
            let Some(list) = layer.get::<Vec<NumExpr>>(key)? else {
                return Ok(None);
            };
            if list.is_empty() || list.len() > 3 {
                return Err(layer.err_at(key, format!("{key} needs 1 to 3 dimensions")));
            }
            list.iter()
                .map(|e| expr::eval_int(e, &scope).map_err(|m| layer.err_at(key, format!("{key}: {m}"))))
                .collect::<Result<Vec<_>, _>>()
                .map(Some)
        };
        let (grid, block) = (dims("grid")?, dims("block")?);
        let shared = layer.int("shared_bytes", 0..=i64::MAX)?;
        if grid.is_none() && block.is_none() && shared.is_none() {
            return Ok(LaunchConfig::default());
        }
        // Checked with ones where the variant leaves a part to the kernel (the kernel's own
        // launch was checked with it).
        let (g, b, s) = kernel::launch_shape(
            grid.as_deref().unwrap_or(&[1]),
            block.as_deref().unwrap_or(&[1]),
            shared.unwrap_or(0),
            layer.facts,
        )
        .map_err(|u| {
            let key = match u.part {
                Part::Grid(_) => "grid",
                Part::Block(_) => "block",
                _ => "shared_bytes",
            };
            layer.err_at(key, u.why)
        })?;
        Ok(LaunchConfig {
            grid: grid.map(|_| g),
            block: block.map(|_| b),
            shared_bytes: shared.map(|_| s),
        })
    }

    fn describe(&self) -> Option<String> {
        let shape = |d: [u32; 3]| format!("({}, {}, {})", d[0], d[1], d[2]);
        let parts: Vec<String> = [
            self.grid.map(|g| format!("grid {}", shape(g))),
            self.block.map(|b| format!("block {}", shape(b))),
            self.shared_bytes.map(|s| format!("{s} B of dynamic shared memory")),
        ]
        .into_iter()
        .flatten()
        .collect();
        (!parts.is_empty()).then(|| format!("launched with {}", parts.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::read;
    use super::*;

    #[test]
    fn a_variant_sets_its_own_launch_within_the_device_limits() {
        let c: LaunchConfig = read("block = [\"n // 4\"]\ngrid = [8, 2]").unwrap();
        assert_eq!(c.block, Some([128, 1, 1]));
        assert_eq!(c.grid, Some([8, 2, 1]));
        assert_eq!(c.shared_bytes, None);
        assert_eq!(
            c.describe().unwrap(),
            "launched with grid (8, 2, 1), block (128, 1, 1)"
        );
        assert_eq!(read::<LaunchConfig>("").unwrap(), LaunchConfig::default());
        assert!(read::<LaunchConfig>("block = [2048]").is_err());
        assert!(read::<LaunchConfig>("shared_bytes = 1000000").is_err());
        assert!(read::<LaunchConfig>("block = []").is_err());
    }
}
