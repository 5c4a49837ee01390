//! What the timer saw of each region beyond its reading: its first launch, in a region of
//! several, and the gap on the GPU before it.

use super::nan;
use serde::{Deserialize, Serialize};

/// The first launch of each region of several launches, in ns from the region's start (an
/// event after it, a graph's node, or CUPTI's span): where a kernel that does its work only
/// on a region's first launch on new data shows.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct FirstLaunches {
    /// Of each audited region, decoy and pause, in the order they ran.
    #[serde(deserialize_with = "nan::null_as_nan")]
    pub audited: Vec<f64>,
    #[serde(deserialize_with = "nan::null_as_nan")]
    pub decoys: Vec<f64>,
    #[serde(deserialize_with = "nan::null_as_nan")]
    pub pauses: Vec<f64>,
    /// Of the steady timed regions: how many, their median, interquartile range and
    /// largest.
    pub timed_count: u64,
    pub timed_median: f64,
    pub timed_iqr: f64,
    pub timed_max: f64,
}

/// The gap on the GPU from the end of the kernel's previous launch to the start of a region's
/// first, in ns, as CUPTI's records give it: what a kernel reading the global timer sees.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Gaps {
    /// Before each audited region and decoy (their stages draw), in the order they ran.
    #[serde(deserialize_with = "nan::null_as_nan")]
    pub staged: Vec<f64>,
    /// Before each pause (its stage draws nothing).
    #[serde(deserialize_with = "nan::null_as_nan")]
    pub pauses: Vec<f64>,
    /// The median gap before the steady timed launches.
    pub timed_median: f64,
}
