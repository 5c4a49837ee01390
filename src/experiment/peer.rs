//! Peers: other programs that measure what a variant measures (the post's own programs),
//! run in the same run, one process per reading, and shown beside the variant's column.

use super::error::{BadValue, ConfigError};
use super::knobs::process::MAX_PROCESSES;
use super::schema::RawPeer;
use super::{expr, names, point_label, scope, DeviceFacts, Point};
use serde::{Deserialize, Serialize};
use std::path::Path;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Peer {
    pub name: String,
    /// The variant whose column it stands beside.
    pub variant: String,
    pub label: String,
    /// The command at each sweep point (none where `when` is false).
    pub commands: Vec<Option<Vec<String>>>,
    pub reads: Reads,
    pub processes: u32,
    pub env: Vec<(String, String)>,
}

/// Where a time stands in a peer's output: after `before` and before `after`, in `unit_ns`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reads {
    pub before: String,
    pub after: String,
    pub unit_ns: f64,
    pub occurrence: usize,
}

impl Reads {
    /// Parses `Kernel took: {ms}ms`.
    pub fn parse(pattern: &str, occurrence: usize) -> Result<Reads, BadValue> {
        for (slot, unit_ns) in [("{ms}", 1e6), ("{us}", 1e3), ("{ns}", 1.0), ("{s}", 1e9)] {
            if let Some((before, after)) = pattern.split_once(slot) {
                return Ok(Reads {
                    before: before.into(),
                    after: after.into(),
                    unit_ns,
                    occurrence,
                });
            }
        }
        Err(BadValue(format!(
            "`{pattern}` has no {{ms}}, {{us}}, {{ns}} or {{s}} where the time stands"
        )))
    }

    /// The time in `output`, in ns.
    pub fn time_ns(&self, output: &str) -> Result<f64, NoReading> {
        let mut found = output.match_indices(&self.before).filter_map(|(i, _)| {
            let rest = &output[i + self.before.len()..];
            let end = if self.after.is_empty() {
                rest.find(char::is_whitespace).unwrap_or(rest.len())
            } else {
                rest.find(&self.after)?
            };
            rest[..end].trim().parse::<f64>().ok()
        });
        found
            .nth(self.occurrence)
            .map(|v| v * self.unit_ns)
            .ok_or_else(|| NoReading(self.clone()))
    }
}

/// A peer's output without the reading its pattern names.
#[derive(Debug, thiserror::Error)]
#[error("no reading `{}…{}` (match {}) in its output", .0.before, .0.after, .0.occurrence)]
pub struct NoReading(Reads);

/// Validates a `[[peer]]` table against the variants and renders its command per point.
pub fn validate(
    raw: &RawPeer,
    variants: &[&str],
    points: &[Point],
    facts: &DeviceFacts,
    err: &dyn Fn(std::ops::Range<usize>, String) -> ConfigError,
) -> Result<Peer, ConfigError> {
    names::check("peer", raw.name.get_ref())
        .map_err(|(m, h)| err(raw.name.span(), m).with_hint(h))?;
    if !variants.contains(&raw.variant.get_ref().as_str()) {
        return Err(err(
            raw.variant.span(),
            format!("unknown variant `{}`", raw.variant.get_ref()),
        )
        .with_hint(format!(
            "variants of this experiment: {}",
            variants.join(", ")
        )));
    }
    let reads = Reads::parse(raw.reads.get_ref(), raw.occurrence.unwrap_or(0))
        .map_err(|m| err(raw.reads.span(), m.into()))?;
    let command = raw.command.get_ref();
    if command.first().is_none_or(|p| p.trim().is_empty()) {
        return Err(err(
            raw.command.span(),
            "a peer's command names a program first".into(),
        )
        .with_hint("command = [\"path/to/program\", \"{{ n }}\"]"));
    }
    let processes = raw.processes.unwrap_or(5);
    if !(1..=MAX_PROCESSES).contains(&i64::from(processes)) {
        return Err(err(
            raw.command.span(),
            format!(
                "peer `{}` asks for {processes} processes per point",
                raw.name.get_ref()
            ),
        )
        .with_hint(format!("give processes from 1 to {MAX_PROCESSES}")));
    }
    if let Some((k, v)) = raw
        .env
        .iter()
        .find(|(k, v)| k.is_empty() || k.contains(['=', '\0']) || v.contains('\0'))
    {
        return Err(err(
            raw.command.span(),
            format!(
                "peer `{}`'s environment variable `{k}` = `{v}` cannot be set",
                raw.name.get_ref()
            ),
        )
        .with_hint(
            "a variable's name is not empty and holds no `=` or NUL, and its value holds no NUL",
        ));
    }
    let commands = points
        .iter()
        .map(|p| {
            let s = scope(p, facts);
            if let Some(when) = &raw.when {
                let on = expr::eval_bool(when.get_ref(), &s).map_err(|m| err(when.span(), m.into()))?;
                if !on {
                    return Ok(None);
                }
            }
            let words = command
                .iter()
                .map(|arg| expr::render(arg, &s).map_err(|m| err(raw.command.span(), m.into())))
                .collect::<Result<Vec<_>, _>>()?;
            // A NUL cannot pass to a program; an empty program is no program.
            if words[0].trim().is_empty() || words.iter().any(|w| w.contains('\0')) {
                return Err(err(
                    raw.command.span(),
                    format!("peer `{}`'s command at {} is {words:?}: a program name and arguments without NUL characters", raw.name.get_ref(), point_label(p)),
                ));
            }
            Ok(Some(words))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Peer {
        name: raw.name.get_ref().clone(),
        variant: raw.variant.get_ref().clone(),
        label: raw
            .label
            .clone()
            .unwrap_or_else(|| raw.name.get_ref().clone()),
        commands,
        reads,
        processes,
        env: raw
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    })
}

/// A peer program's path: as written when absolute or a bare name, else relative to the
/// experiment file.
pub fn program(experiment: &Path, written: &str) -> std::path::PathBuf {
    let p = Path::new(written);
    if p.is_absolute() || !written.contains('/') {
        p.to_path_buf()
    } else {
        experiment.parent().unwrap_or(Path::new(".")).join(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_reads_the_time_its_output_states() {
        let r = Reads::parse("Kernel took: {ms}ms", 0).unwrap();
        assert_eq!(r.time_ns("Kernel took: 0.2345ms\n").unwrap(), 234_500.0);
        let median = Reads::parse("Median: {ms}ms", 1).unwrap();
        let out = "Median: 0.100ms\nMedian: 0.050ms\n";
        assert_eq!(median.time_ns(out).unwrap(), 50_000.0);
        assert!(median.time_ns("Median: 0.1ms").is_err());
        assert!(Reads::parse("took {time}", 0).is_err());
    }
}
