//! `inputs`: whether every timed launch reads the data the first one did (`"same"`), or
//! new data copied into its buffers just before it, outside the timed region (`"fresh"`),
//! as the post's `benchmark_05` (before the one timed launch) and `benchmark_08` (before
//! every sample) do. The copy leaves the new data's lines where a host-to-device copy
//! leaves them.

use super::{Aspect, ConfigError, Knob, Layer};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Inputs {
    #[default]
    Same,
    Fresh,
}

impl Knob for Inputs {
    const KEYS: &'static [&'static str] = &["inputs"];
    const ASPECT: Aspect = Aspect::Method;

    fn read(layer: &Layer) -> Result<Self, ConfigError> {
        Ok(layer.get("inputs")?.unwrap_or_default())
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
        assert_eq!(read::<Inputs>("inputs = \"fresh\"").unwrap(), Inputs::Fresh);
        assert!(read::<Inputs>("inputs = \"new\"").is_err());
    }
}
