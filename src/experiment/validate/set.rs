//! `--set key=values`: a sweep parameter's values replaced for one run (the experiment's,
//! or a kernel's own), before anything is evaluated, so that the run is planned and checked
//! as if the file said so.

use super::validator::Validator;
use crate::experiment::error::ConfigError;
use crate::experiment::schema::RawExperiment;
use crate::experiment::sweep::{self, SweepSpec};
use crate::experiment::{point_label, Point};
use toml::Spanned;

impl Validator<'_> {
    /// Where an evaluation failed: the point and the device, and the `--set` clauses that
    /// gave the sweep its values (the file's line alone would not say so).
    pub(super) fn at_point(&self, p: &Point) -> String {
        let set = match self.set.is_empty() {
            true => String::new(),
            false => format!("; values from --set {}", self.set.join(" --set ")),
        };
        format!("(at {}, on {}{set})", point_label(p), self.facts.describe())
    }

    pub(super) fn apply_set(&self, raw: &mut RawExperiment) -> Result<(), ConfigError> {
        for clause in self.set {
            let Some((key, values)) = clause.split_once('=') else {
                return Err(self.nowhere(format!("--set {clause}: no `=`")).with_hint(
                    "write --set key=values, e.g. --set n=512,1024 or --set n=2^9..2^12",
                ));
            };
            let (key, spec) = (key.trim(), sweep::from_command_line(values));
            let replace = |s: &mut Spanned<SweepSpec>| *s = Spanned::new(s.span(), spec.clone());
            let mut found = raw.sweep.get_mut(key).map(replace).is_some();
            for k in &mut raw.kernels {
                found |= k.sweep.get_mut(key).map(replace).is_some();
            }
            if found {
                continue;
            }
            let zipped = raw
                .sweep
                .values()
                .any(|s| matches!(s.get_ref(), SweepSpec::Zip(c) if c.contains_key(key)));
            let names: Vec<&str> = raw
                .sweep
                .keys()
                .chain(raw.kernels.iter().flat_map(|k| k.sweep.keys()))
                .map(String::as_str)
                .collect();
            let message = match zipped {
                true => format!("--set {key}: `{key}` is zipped with other parameters, whose values go with its own"),
                false => format!("--set {key}: the experiment has no sweep parameter `{key}`"),
            };
            return Err(self.nowhere(message).with_hint(format!(
                "--set replaces a parameter of [sweep] or of a kernel's own sweep: {}",
                names.join(", ")
            )));
        }
        Ok(())
    }
}
