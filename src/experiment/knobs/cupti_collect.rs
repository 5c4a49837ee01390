//! `cupti_collect`: CUPTI collects kernel records during the samples (always with
//! `timer = "cupti"`; with another timer it measures what collecting costs that timer).

use super::timer::TimerKind;
use super::knob::{Aspect, Key, Knob, Layer};
use crate::experiment::ConfigError;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CuptiCollect {
    pub on: bool,
    /// Asked for beside another timer (not implied by `timer = "cupti"`).
    pub beside_timer: bool,
}

impl Knob for CuptiCollect {
    const KEYS: &'static [Key] = &[Key::set(
        "cupti_collect",
        "false",
        "CUPTI collects during the samples (measures what CUPTI costs)",
    )];
    const ASPECT: Aspect = Aspect::Method;

    fn read(layer: &Layer) -> Result<Self, ConfigError> {
        let timer: TimerKind = layer.get("timer")?.unwrap_or_default();
        let asked = layer.get("cupti_collect")?.unwrap_or(false);
        let implied = timer == TimerKind::Cupti;
        Ok(CuptiCollect {
            on: asked || implied,
            beside_timer: asked && !implied,
        })
    }

    fn describe(&self) -> Option<String> {
        self.beside_timer
            .then(|| "CUPTI collects kernel records during the samples".into())
    }
}
