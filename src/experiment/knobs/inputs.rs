//! `inputs`: whether every timed launch reads the data the first one did (`"same"`), or
//! new data copied into its buffers just before it, outside the timed region (`"fresh"`),
//! as the post's `benchmark_05` (before the one timed launch) and `benchmark_08` (before
//! every sample) do. The copy leaves the new data's lines where a host-to-device copy
//! leaves them.

use super::rotate::Rotate;
use super::warmup::{Warmup, WarmupKernel};
use super::knob::{Aspect, Key, Knob, Layer};
use crate::experiment::ConfigError;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Inputs {
    #[default]
    Same,
    Fresh,
}

impl Knob for Inputs {
    const KEYS: &'static [Key] = &[Key::set(
        "inputs",
        r#""same""#,
        r#"or "fresh": new input data copied to the GPU before each timed launch, outside the
        timed region (the post's 05 and 08)"#,
    )];
    const ASPECT: Aspect = Aspect::Cache;

    fn read(layer: &Layer) -> Result<Self, ConfigError> {
        let inputs = layer.get("inputs")?.unwrap_or_default();
        if inputs == Inputs::Fresh {
            let warm = Warmup::read(layer)?;
            if warm.launches == 0 || warm.kernel != WarmupKernel::Same {
                return Err(layer
                    .err_at("inputs", "inputs = \"fresh\" needs a warm-up of the same kernel")
                    .with_hint("the output is checked on the first data, by the first warm-up launch, before any new data is copied"));
            }
            if Rotate::read(layer)?.0 > 1 {
                return Err(layer
                    .err_at("inputs", "inputs = \"fresh\" and rotate exclude each other")
                    .with_hint("new data is copied into the one set of buffers"));
            }
        }
        Ok(inputs)
    }

    fn describe(&self) -> Option<String> {
        match self {
            Inputs::Same => None,
            Inputs::Fresh => Some(
                "new input data copied to the GPU before each timed launch (outside the timed region)"
                    .into(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::read;
    use super::*;

    #[test]
    fn the_same_inputs_unless_asked() {
        assert_eq!(read::<Inputs>("").unwrap(), Inputs::Same);
        assert_eq!(
            read::<Inputs>("inputs = \"fresh\"\nwarmup = 2").unwrap(),
            Inputs::Fresh
        );
        assert!(read::<Inputs>("inputs = \"fresh\"").is_err(), "checked on the first data");
        assert!(read::<Inputs>("inputs = \"fresh\"\nwarmup = 2\nwarmup_kernel = \"empty\"").is_err());
        assert!(read::<Inputs>("inputs = \"fresh\"\nwarmup = 2\nrotate = 2").is_err());
        assert!(read::<Inputs>("inputs = \"new\"").is_err());
    }
}
