//! What the audit's host side recorded beside the regions: each region's host time, and each
//! look at the timed samples' spread, so that the gates they pass can be set from runs.

use serde::{Deserialize, Serialize};

/// Each region's host time in µs, in run order (`kinds`: `a` audited, `d` decoy, `p` pause):
/// its stage, the region with its stage (not its check), an audited one's check (0 for others).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RegionHostTimes {
    pub kinds: String,
    pub stages_us: Vec<f64>,
    pub regions_us: Vec<f64>,
    pub checks_us: Vec<f64>,
}

/// A look at the timed samples' spread (`worker::audit::among::spread`): at how many samples,
/// the interquartile range of the host's time around each (after the first), and of the
/// readings judged (none where the look read none: CUPTI's records behind the host's gate),
/// in ns, and whether they spread wide.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SpreadLook {
    pub taken: u64,
    pub host_iqr_ns: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iqr_ns: Option<f64>,
    pub wide: bool,
}
