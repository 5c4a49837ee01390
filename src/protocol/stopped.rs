//! Why a cell stopped taking samples before its count: the per-cell budget (news to the
//! reader) or the adaptive stop the experiment asked for (`stop`), with the numbers each
//! decided on. Stored as a tagged object; folders from before hold the sentence the report
//! prints, which reads back as the same reason.

use crate::statistics::Reached;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::time::Duration;

/// Why a cell stopped; [`fmt::Display`] gives the sentence the report prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self", tag = "by", rename_all = "snake_case")]
pub enum Stopped {
    /// The run's share of the budget was spent after `samples` of the `planned`.
    Budget {
        spent_s: f64,
        counted: Counted,
        samples: u64,
        planned: u64,
    },
    /// The precision the stop rule asks for was reached.
    Precise { reached: Precision, samples: u64 },
    /// NVBench's rule: the noise stopped changing above its target.
    Settled { reached: Precision, samples: u64 },
    /// The stop rule's timeout, whatever the precision.
    Timeout {
        #[serde(with = "humantime_text")]
        after: Duration,
        reached: Precision,
        samples: u64,
    },
    /// Every sample the cell was allowed, the precision not reached.
    Cap { reached: Precision, samples: u64 },
    /// A stored sentence that reads as none of these, kept as it is; `budget` where it
    /// begins as the budget's do.
    #[serde(skip)]
    Said { budget: bool, sentence: String },
}

/// What the budget counted as spent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Counted {
    /// The readings of a timer that reads each sample.
    GpuTime,
    /// The sample loop's wall time: CUPTI's and the profiler's readings come after it.
    LoopWallTime,
}

/// How precise the samples were when the cell stopped, in percent. Infinite where it could
/// not be told yet (too few samples), stored as null.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    /// The median's 95% interval, its wider side as a percentage of it (`ci_pct`).
    MedianCiPct(#[serde(with = "unbounded")] f64),
    /// The samples' relative standard deviation (`rsd_pct`).
    RsdPct(#[serde(with = "unbounded")] f64),
}

/// A stopping rule's measure, as the record stores it.
impl From<Reached> for Precision {
    fn from(reached: Reached) -> Precision {
        match reached {
            Reached::MedianCiPct(pct) => Precision::MedianCiPct(pct),
            Reached::RsdPct(pct) => Precision::RsdPct(pct),
        }
    }
}

const BUDGET: &str = "budget: ";

impl Stopped {
    /// Whether the budget stopped the cell (a stop the experiment asked for is no news).
    pub fn by_budget(&self) -> bool {
        matches!(
            self,
            Stopped::Budget { .. } | Stopped::Said { budget: true, .. }
        )
    }

    /// A stored sentence as the reason it says: one that would not be written again as it
    /// stands is kept as text.
    fn read(sentence: String) -> Stopped {
        match parse(&sentence) {
            Some(reason) if reason.to_string() == sentence => reason,
            _ => Stopped::Said {
                budget: sentence.starts_with(BUDGET),
                sentence,
            },
        }
    }
}

impl Counted {
    fn words(self) -> &'static str {
        match self {
            Counted::GpuTime => "of GPU time",
            Counted::LoopWallTime => {
                "of the sample loop's wall time (its readings come after the loop)"
            }
        }
    }
}

impl fmt::Display for Stopped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stopped::Budget {
                spent_s,
                counted,
                samples,
                planned,
            } => write!(
                f,
                "{BUDGET}{} {} spent after {samples} of {planned} samples",
                seconds(*spent_s),
                counted.words()
            ),
            Stopped::Precise { reached, samples } => {
                write!(f, "precise enough: {reached} after {samples} samples")
            }
            Stopped::Settled { reached, samples } => {
                write!(
                    f,
                    "noise no longer changing: {reached} after {samples} samples"
                )
            }
            Stopped::Timeout {
                after,
                reached,
                samples,
            } => write!(
                f,
                "timeout after {}: {reached} over {samples} samples",
                humantime::format_duration(*after)
            ),
            Stopped::Cap { reached, samples } => {
                write!(f, "sample cap reached: {reached} over {samples} samples")
            }
            Stopped::Said { sentence, .. } => f.write_str(sentence),
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Precision::MedianCiPct(pct) => write!(f, "median ±{pct:.2}% (95%)"),
            Precision::RsdPct(pct) => write!(f, "RSD {pct:.2}%"),
        }
    }
}

/// Seconds as the budget's sentence gives them: two decimals under 10 s, one from there.
fn seconds(s: f64) -> String {
    if s < 10.0 {
        format!("{s:.2} s")
    } else {
        format!("{s:.1} s")
    }
}

/// The reason a sentence of [`Stopped`]'s `Display` says, where it is one.
fn parse(sentence: &str) -> Option<Stopped> {
    if let Some(rest) = sentence.strip_prefix(BUDGET) {
        let (spent, rest) = rest.split_once(" s ")?;
        let (counted, rest) = [Counted::GpuTime, Counted::LoopWallTime]
            .into_iter()
            .find_map(|c| Some((c, rest.strip_prefix(c.words())?)))?;
        let (samples, planned) = rest.strip_prefix(" spent after ")?.split_once(" of ")?;
        return Some(Stopped::Budget {
            spent_s: spent.parse().ok()?,
            counted,
            samples: samples.parse().ok()?,
            planned: planned.strip_suffix(" samples")?.parse().ok()?,
        });
    }
    let (head, rest) = sentence.split_once(": ")?;
    let rest = rest.strip_suffix(" samples")?;
    let (reached, samples) =
        (rest.rsplit_once(" after ")).or_else(|| rest.rsplit_once(" over "))?;
    let (reached, samples) = (precision(reached)?, samples.parse().ok()?);
    Some(match head {
        "precise enough" => Stopped::Precise { reached, samples },
        "noise no longer changing" => Stopped::Settled { reached, samples },
        "sample cap reached" => Stopped::Cap { reached, samples },
        _ => Stopped::Timeout {
            after: humantime::parse_duration(head.strip_prefix("timeout after ")?).ok()?,
            reached,
            samples,
        },
    })
}

fn precision(text: &str) -> Option<Precision> {
    let median = text
        .strip_prefix("median ±")
        .and_then(|t| t.strip_suffix("% (95%)"));
    match median {
        Some(pct) => Some(Precision::MedianCiPct(pct.parse().ok()?)),
        None => Some(Precision::RsdPct(
            text.strip_prefix("RSD ")?.strip_suffix('%')?.parse().ok()?,
        )),
    }
}

/// A folder's old sentence is written back as it was; a reason as its tagged object.
impl Serialize for Stopped {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Stopped::Said { sentence, .. } => s.serialize_str(sentence),
            // The derived form (`remote = "Self"`): an inherent function, not this one.
            reason => Stopped::serialize(reason, s),
        }
    }
}

/// The tagged object, or the sentence that folders from before hold.
impl<'de> Deserialize<'de> for Stopped {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Stored {
            Sentence(String),
            Reason(#[serde(with = "Stopped")] Stopped),
        }
        Ok(match Stored::deserialize(d)? {
            Stored::Sentence(sentence) => Stopped::read(sentence),
            Stored::Reason(reason) => reason,
        })
    }
}

/// A duration as humantime writes it (`15s`), as the experiment gives it.
mod humantime_text {
    use serde::{de::Error, Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&humantime::format_duration(*d))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        humantime::parse_duration(&String::deserialize(d)?).map_err(D::Error::custom)
    }
}

/// JSON has no infinity: a precision not told yet is stored as null and read back so.
mod unbounded {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        match x.is_finite() {
            true => s.serialize_some(x),
            false => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn back(text: &str) -> Stopped {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn old_sentences_read_as_their_reasons_and_say_the_same() {
        let said = [
            (
                "budget: 4.00 s of GPU time spent after 4 of 50 samples",
                Stopped::Budget {
                    spent_s: 4.0,
                    counted: Counted::GpuTime,
                    samples: 4,
                    planned: 50,
                },
            ),
            (
                "budget: 12.3 s of the sample loop's wall time (its readings come after the loop) spent after 7 of 100 samples",
                Stopped::Budget {
                    spent_s: 12.3,
                    counted: Counted::LoopWallTime,
                    samples: 7,
                    planned: 100,
                },
            ),
            (
                "precise enough: median ±0.02% (95%) after 1421 samples",
                Stopped::Precise {
                    reached: Precision::MedianCiPct(0.02),
                    samples: 1421,
                },
            ),
            (
                "noise no longer changing: RSD 5.89% after 20160 samples",
                Stopped::Settled {
                    reached: Precision::RsdPct(5.89),
                    samples: 20160,
                },
            ),
            (
                "timeout after 1m 30s: median ±inf% (95%) over 3 samples",
                Stopped::Timeout {
                    after: Duration::from_secs(90),
                    reached: Precision::MedianCiPct(f64::INFINITY),
                    samples: 3,
                },
            ),
            (
                "sample cap reached: RSD 0.71% over 100000 samples",
                Stopped::Cap {
                    reached: Precision::RsdPct(0.71),
                    samples: 100_000,
                },
            ),
        ];
        for (sentence, reason) in said {
            let read = back(&serde_json::to_string(sentence).unwrap());
            assert_eq!(read, reason, "{sentence}");
            assert_eq!(read.to_string(), sentence);
            assert_eq!(read.by_budget(), sentence.starts_with("budget"));
        }
    }

    #[test]
    fn a_sentence_that_would_not_be_written_again_is_kept_as_text() {
        // 9.996 s is written `10.00 s`, which reads back as 10 s, written `10.0 s`.
        for (sentence, budget) in [
            (
                "budget: 10.00 s of GPU time spent after 9 of 50 samples",
                true,
            ),
            ("budget: most of it", true),
            ("precise enough: RSD 0.5% after 12 samples", false),
            ("stopped by the moon", false),
        ] {
            let read = back(&serde_json::to_string(sentence).unwrap());
            let kept = Stopped::Said {
                budget,
                sentence: sentence.to_string(),
            };
            assert_eq!(read, kept);
            assert_eq!(read.to_string(), sentence);
            assert_eq!(read.by_budget(), budget);
            // Written back as the folder had it.
            assert_eq!(
                serde_json::to_string(&read).unwrap(),
                format!("{sentence:?}")
            );
        }
    }

    #[test]
    fn a_reason_is_stored_as_its_tagged_numbers_and_read_back() {
        let precise = Stopped::Precise {
            reached: Precision::MedianCiPct(0.4871),
            samples: 1421,
        };
        let text = serde_json::to_string(&precise).unwrap();
        assert_eq!(
            text,
            r#"{"by":"precise","reached":{"median_ci_pct":0.4871},"samples":1421}"#
        );
        assert_eq!(back(&text), precise);
        let timeout = Stopped::Timeout {
            after: Duration::from_millis(15_500),
            reached: Precision::RsdPct(f64::INFINITY),
            samples: 1,
        };
        let text = serde_json::to_string(&timeout).unwrap();
        assert_eq!(
            text,
            r#"{"by":"timeout","after":"15s 500ms","reached":{"rsd_pct":null},"samples":1}"#
        );
        assert_eq!(back(&text), timeout);
        assert_eq!(
            back(&text).to_string(),
            "timeout after 15s 500ms: RSD inf% over 1 samples"
        );
        let budget = Stopped::Budget {
            spent_s: 30.24,
            counted: Counted::GpuTime,
            samples: 12,
            planned: 50,
        };
        let text = serde_json::to_string(&budget).unwrap();
        assert_eq!(
            text,
            r#"{"by":"budget","spent_s":30.24,"counted":"gpu_time","samples":12,"planned":50}"#
        );
        assert!(back(&text).by_budget());
        assert_eq!(
            budget.to_string(),
            "budget: 30.2 s of GPU time spent after 12 of 50 samples"
        );
        assert!(serde_json::from_str::<Stopped>(r#"{"by":"luck"}"#).is_err());
    }
}
