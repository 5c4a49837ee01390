//! `order`, `rounds`: how the variants at one sweep point take turns in their shared process.

use super::knob::{Aspect, Key, Knob, Layer};
use crate::experiment::ConfigError;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Order {
    pub kind: OrderKind,
    /// Turns the samples are split into (1 for sequential order).
    pub rounds: u32,
}

impl Default for Order {
    fn default() -> Self {
        Order {
            kind: OrderKind::Sequential,
            rounds: 1,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OrderKind {
    /// Each cell runs all its samples, then the next cell.
    Sequential,
    /// The cells run in rounds, each taking its turn per round, so drift spreads evenly.
    Interleaved,
    /// As interleaved, in a new seeded order every round.
    Shuffled,
}

/// Rounds of an interleaved or shuffled variant unless it says.
pub const DEFAULT_ROUNDS: u32 = 10;
/// The most rounds a variant takes.
pub const MAX_ROUNDS: i64 = 10_000;

impl Knob for Order {
    const KEYS: &'static [Key] = &[
        Key::set(
            "order",
            r#""sequential""#,
            r#"or "interleaved" / "shuffled": the variants at a point with the same rounds take
            turns, samples split over the rounds, so drift of the GPU spreads evenly
            (shared-process cells only); "shuffled" takes a new seeded order every round"#,
        ),
        Key::commented(
            "rounds",
            "10",
            "the rounds of an interleaved or shuffled order (default 10)",
        ),
    ];
    const ASPECT: Aspect = Aspect::Method;

    fn read(layer: &Layer) -> Result<Self, ConfigError> {
        let kind = layer.get("order")?.unwrap_or(OrderKind::Sequential);
        let rounds = layer.int("rounds", 1..=MAX_ROUNDS)?;
        match (kind, rounds) {
            (OrderKind::Sequential, Some(_)) => Err(layer
                .err_at("rounds", "rounds needs order = \"interleaved\" or \"shuffled\"")
                .with_hint("sequential cells take all their samples in one turn")),
            (OrderKind::Sequential, None) => Ok(Order::default()),
            (kind, rounds) => {
                if layer.get::<bool>("fresh_process")?.unwrap_or(false) {
                    return Err(layer
                        .err_at(
                            "order",
                            "order applies to cells of a shared process, not fresh_process ones",
                        )
                        .with_hint("fresh-process runs already take turns, round-robin"));
                }
                // Within MAX_ROUNDS, which fits.
                let rounds = rounds.map_or(DEFAULT_ROUNDS, |r| r as u32);
                Ok(Order { kind, rounds })
            }
        }
    }

    fn describe(&self) -> Option<String> {
        let how = match self.kind {
            OrderKind::Sequential => return None,
            OrderKind::Interleaved => "interleaved",
            OrderKind::Shuffled => "shuffled",
        };
        let rounds = match self.rounds {
            1 => "1 round".to_string(),
            n => format!("{n} rounds"),
        };
        Some(format!("samples {how} in {rounds}"))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::read;
    use super::*;

    #[test]
    fn rounds_need_turns_and_a_shared_process() {
        let o: Order = read("order = \"shuffled\"").unwrap();
        assert_eq!((o.kind, o.rounds), (OrderKind::Shuffled, DEFAULT_ROUNDS));
        assert!(read::<Order>("rounds = 3").is_err());
        assert!(read::<Order>("order = \"interleaved\"\nfresh_process = true").is_err());
    }
}
