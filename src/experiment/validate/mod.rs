//! Raw TOML -> [`Experiment`]: every name resolved, every expression evaluated at every
//! sweep point against the device, every mistake located at its file, line and column.

use super::error::ConfigError;
use super::expr::{DeviceFacts, FACT_NAMES};
use super::kernel::Kernel;
use super::knobs::{Knobs, Layer};
use super::peer::Peer;
use super::schema::RawTable;
use super::schema::{RawExperiment, RawPeer, RawReport};
use super::sweep::SweepSpec;
use super::{
    names, point_label, sweep, ClockPolicy, Experiment, Point, Published, ReportSpec, Sources,
    SweepValue, TelemetrySpec, Unit, Variant, MAX_CELLS,
};
mod checks;
mod copy;
mod inits;
mod kernel_table;
mod launches;
mod limits;
mod python_check;
mod report;
mod roles;
mod sequence;
mod set;
#[cfg(test)]
mod tests;
mod tolerances;
mod validator;
mod work;

use indexmap::IndexMap;
use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;
use toml::Spanned;
use validator::Validator;

/// `set`: `--set key=values` clauses that replace sweep parameters' values.
pub fn experiment(
    path: &Path,
    text: &str,
    facts: &DeviceFacts,
    sources: Sources,
    set: &[String],
) -> Result<Experiment, ConfigError> {
    let name = super::name_of(path)?;
    let raw: RawExperiment = toml::from_str(text).map_err(|e| match e.span() {
        Some(span) => ConfigError::at(path, text, Some(span), e.message().trim().to_string())
            .with_hint("see the experiment format in docs/experiments.md"),
        // TOML's reader stops at a depth it gives no place for: the deepest line is it.
        None => ConfigError::at(path, text, limits::deepest_line(text), e.message().trim().to_string())
            .with_hint("a key, table or array is nested deeper than TOML's reader follows (80 levels): flatten it"),
    })?;
    let validator = Validator {
        path,
        text,
        facts,
        sources,
        set,
    };
    validator.strings_within_limit()?;
    validator.experiment(raw, name)
}

/// The longest NVML sampling interval, in ms.
const MAX_INTERVAL_MS: u64 = 60_000;

impl Validator<'_> {
    fn experiment(&self, mut raw: RawExperiment, name: String) -> Result<Experiment, ConfigError> {
        self.apply_set(&mut raw)?;
        let axes = self.axes(&raw.sweep)?;
        let params = self.params(&axes)?;
        if raw.kernels.is_empty() && raw.copies.is_empty() {
            return Err(self.nowhere("the experiment has no kernel").with_hint(
                "add a [[kernel]] table with name, source, entry, grid, block and args (or a [[copy]] with name, from, to and bytes)",
            ));
        }
        if raw.variants.is_empty() {
            return Err(self
                .nowhere("the experiment has no variant")
                .with_hint("add a [[variant]] table with a name and its knobs"));
        }
        self.cap(
            &axes,
            raw.kernels.len() + raw.copies.len(),
            raw.variants.len(),
        )?;
        let points = sweep::product(&axes);
        // The variants' names, for kernels that name the ones they run under.
        let variant_names: Vec<String> = (raw.variants.iter())
            .filter_map(|v| {
                v.get_ref()
                    .get("name")?
                    .get_ref()
                    .as_str()
                    .map(str::to_string)
            })
            .collect();
        let kernels = self.kernels(raw.kernels, raw.copies, &points, &variant_names)?;
        let variants = self.variants(raw.defaults.as_ref(), &raw.variants, &points)?;
        let report = self.report(
            raw.report.unwrap_or_default(),
            &variants,
            &kernels,
            &params,
            &points,
        )?;
        let env = raw.environment.as_ref();
        let clocks = self.clocks(env.and_then(|e| e.clocks.as_ref()))?;
        let gpu_warmup = self.gpu_warmup(env.and_then(|e| e.gpu_warmup.as_ref()))?;
        let peers = self.peers(&raw.peers, &variants, &points)?;
        let telemetry = self.telemetry(raw.telemetry.as_ref())?;
        Ok(Experiment {
            path: self.path.to_path_buf(),
            text: self.text.to_string(),
            name,
            title: raw.experiment.title,
            description: raw.experiment.description.unwrap_or_default(),
            params,
            zipped: (axes.iter())
                .filter(|a| a.names.len() > 1)
                .map(|a| a.names.clone())
                .collect(),
            points,
            kernels,
            variants,
            report,
            clocks,
            gpu_warmup,
            facts: self.facts.clone(),
            peers,
            telemetry,
        })
    }

    /// The experiment's sweep axes, their parameters named well and apart from the device
    /// facts.
    fn axes(
        &self,
        sweep: &IndexMap<String, Spanned<SweepSpec>>,
    ) -> Result<Vec<sweep::Axis>, ConfigError> {
        let mut axes = Vec::new();
        for (name, spec) in sweep {
            let axis = sweep::axis(name, spec.get_ref()).map_err(|m| self.err(spec, m))?;
            for name in &axis.names {
                self.name("sweep parameter", spec, name)?;
                if FACT_NAMES.contains(&name.as_str()) {
                    return Err(self
                        .err(
                            spec,
                            format!("sweep parameter `{name}` shadows a device fact"),
                        )
                        .with_hint(format!(
                            "rename it; device facts are {}",
                            FACT_NAMES.join(", ")
                        )));
                }
            }
            axes.push(axis);
        }
        Ok(axes)
    }

    /// Each sweep parameter with its values, each name once (a zipped group's too).
    fn params(&self, axes: &[sweep::Axis]) -> Result<Vec<(String, Vec<SweepValue>)>, ConfigError> {
        let params: Vec<(String, Vec<SweepValue>)> = axes
            .iter()
            .flat_map(|a| {
                a.names
                    .iter()
                    .map(|n| (n.clone(), a.values_of(n).expect("its own name")))
            })
            .collect();
        if let Some(dup) = params
            .iter()
            .enumerate()
            .find(|(i, (n, _))| params[..*i].iter().any(|(m, _)| m == n))
        {
            return Err(self
                .nowhere(format!("sweep parameter `{}` appears twice", (dup.1).0))
                .with_hint(
                    "a zipped group's parameters are parameters of the experiment: name each once",
                ));
        }
        Ok(params)
    }

    /// The variants, each over `[defaults]` (which has no name).
    fn variants(
        &self,
        defaults: Option<&Spanned<RawTable>>,
        raw: &[Spanned<RawTable>],
        points: &[Point],
    ) -> Result<Vec<Variant>, ConfigError> {
        let empty = Spanned::new(0..0, RawTable::new());
        let defaults = defaults.unwrap_or(&empty);
        if let Some(name) = defaults.get_ref().get("name") {
            return Err(self
                .err(name, "[defaults] cannot have a name")
                .with_hint("names belong to [[variant]] tables"));
        }
        self.known_keys(defaults)?;
        let mut variants: Vec<Variant> = Vec::new();
        for rv in raw {
            variants.push(self.variant(rv, defaults, &variants, points)?);
        }
        Ok(variants)
    }

    /// `[environment] gpu_warmup`: none unless given.
    fn gpu_warmup(&self, raw: Option<&Spanned<String>>) -> Result<Duration, ConfigError> {
        let Some(t) = raw else {
            return Ok(Duration::ZERO);
        };
        super::knobs::parse_duration(t.get_ref()).map_err(|m| {
            self.err(t, format!("gpu_warmup: {m}"))
                .with_hint("write a duration such as gpu_warmup = \"30s\"")
        })
    }

    /// The peers, each named once and checked against the variants and points.
    fn peers(
        &self,
        raw: &[RawPeer],
        variants: &[Variant],
        points: &[Point],
    ) -> Result<Vec<Peer>, ConfigError> {
        let names: Vec<&str> = variants.iter().map(|v| v.name.as_str()).collect();
        let err = |span, msg| ConfigError::at(self.path, self.text, Some(span), msg);
        let peers = raw
            .iter()
            .map(|p| super::peer::validate(p, &names, points, self.facts, &err))
            .collect::<Result<Vec<_>, _>>()?;
        if let Some((i, p)) = (raw.iter().enumerate()).find(|(i, p)| {
            raw[..*i]
                .iter()
                .any(|o| o.name.get_ref() == p.name.get_ref())
        }) {
            return Err(self.err(
                &p.name,
                format!(
                    "peer `{}` is defined twice (peer #{})",
                    p.name.get_ref(),
                    i + 1
                ),
            ));
        }
        Ok(peers)
    }

    /// `[telemetry]`: an interval up to a minute, tolerances that are percentages.
    fn telemetry(
        &self,
        t: Option<&crate::experiment::schema::RawTelemetry>,
    ) -> Result<TelemetrySpec, ConfigError> {
        let value = |v: Option<&Spanned<f64>>, default| v.map_or(default, |v| *v.get_ref());
        let spec = TelemetrySpec {
            interval_ms: t
                .and_then(|t| t.interval_ms.as_ref())
                .map_or(10, |i| *i.get_ref()),
            clock_tolerance_pct: value(t.and_then(|t| t.clock_tolerance_pct.as_ref()), 1.0),
            clock_probe: t.and_then(|t| t.clock_probe).unwrap_or(false),
            probe_tolerance_pct: value(t.and_then(|t| t.probe_tolerance_pct.as_ref()), 0.5),
        };
        let Some(t) = t else {
            return Ok(spec);
        };
        if let Some(i) = t
            .interval_ms
            .as_ref()
            .filter(|i| *i.get_ref() > MAX_INTERVAL_MS)
        {
            return Err(self
                .err(i, format!("interval_ms is {}, more than the {MAX_INTERVAL_MS} (a minute) the sampler takes", i.get_ref()))
                .with_hint("sample every 10 ms or so, or give 0 to turn sampling off"));
        }
        for pct in [&t.clock_tolerance_pct, &t.probe_tolerance_pct]
            .into_iter()
            .flatten()
        {
            let v = *pct.get_ref();
            if !(v.is_finite() && (0.0..=100.0).contains(&v)) {
                return Err(self
                    .err(pct, format!("a tolerance of {v}%"))
                    .with_hint("give a percentage from 0 to 100, e.g. 1.0"));
            }
        }
        Ok(spec)
    }

    /// Refuses a matrix too large to plan, before a single point is made.
    fn cap(
        &self,
        axes: &[sweep::Axis],
        kernels: usize,
        variants: usize,
    ) -> Result<(), ConfigError> {
        let cells = axes
            .iter()
            .map(|a| a.rows.len() as u64)
            .chain([kernels as u64, variants as u64])
            .try_fold(1u64, u64::checked_mul);
        match cells {
            Some(n) if n <= MAX_CELLS => Ok(()),
            n => Err(self
                .nowhere(format!(
                    "the experiment has {} cells ({} kernel(s) x {} point(s) x {} variant(s)), more than the {MAX_CELLS} a run may hold",
                    n.map_or("too many".into(), |n| n.to_string()),
                    kernels,
                    axes.iter().map(|a| format!("{} {}", a.rows.len(), a.names.join("/"))).collect::<Vec<_>>().join(" x "),
                    variants
                ))
                .with_hint("sweep fewer values (a larger step, powers of two) or split the experiment")),
        }
    }

    fn known_keys(&self, table: &Spanned<RawTable>) -> Result<(), ConfigError> {
        let keys = Knobs::keys();
        for (key, value) in table.get_ref() {
            if !keys.contains(&key.as_str()) {
                return Err(self
                    .err(
                        value,
                        format!(
                            "unknown field `{key}`, expected one of {}",
                            keys.iter()
                                .map(|k| format!("`{k}`"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    )
                    .with_hint("see the experiment format in docs/experiments.md"));
            }
        }
        Ok(())
    }

    fn variant(
        &self,
        rv: &Spanned<RawTable>,
        defaults: &Spanned<RawTable>,
        others: &[Variant],
        points: &[Point],
    ) -> Result<Variant, ConfigError> {
        self.known_keys(rv)?;
        let table = rv.get_ref();
        let name = table.get("name").ok_or_else(|| {
            self.err(rv, format!("variant #{} has no name", others.len() + 1))
                .with_hint("add name = \"...\" to every [[variant]]")
        })?;
        let text = |v: &Spanned<toml::Value>, what: &str| match v.get_ref() {
            toml::Value::String(s) => Ok(s.clone()),
            _ => Err(self.err(v, format!("a variant's {what} is a string"))),
        };
        let name_text = text(name, "name")?;
        self.name("variant", name, &name_text)?;
        if others.iter().any(|v| v.name == name_text) {
            return Err(self.err(name, format!("variant `{name_text}` is defined twice")));
        }
        let description = match table.get("description") {
            Some(d) => text(d, "description")?,
            None => String::new(),
        };
        let knobs = points
            .iter()
            .map(|point| {
                Knobs::read(&Layer {
                    variant: table,
                    defaults: defaults.get_ref(),
                    path: self.path,
                    text: self.text,
                    point,
                    facts: self.facts,
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Variant {
            name: name_text,
            description,
            knobs,
        })
    }

    fn clocks(&self, raw: Option<&Spanned<toml::Value>>) -> Result<ClockPolicy, ConfigError> {
        let Some(raw) = raw else {
            return Ok(ClockPolicy::Observe);
        };
        let mhz = |v: &toml::Value| v.as_integer().and_then(|i| u32::try_from(i).ok());
        let policy = match raw.get_ref() {
            toml::Value::String(s) if s == "observe" => Some(ClockPolicy::Observe),
            toml::Value::Table(t) if t.len() == 1 => match t.iter().next() {
                Some((k, v)) if k == "expect" => mhz(v).map(ClockPolicy::Expect),
                Some((k, v)) if k == "lock" => mhz(v).map(ClockPolicy::Lock),
                _ => None,
            },
            _ => None,
        };
        let policy = policy.ok_or_else(|| {
            self.err(raw, "unknown clock policy")
                .with_hint("write clocks = \"observe\", clocks = { expect = <MHz> } or clocks = { lock = <MHz> }")
        })?;
        if let ClockPolicy::Lock(mhz) | ClockPolicy::Expect(mhz) = policy {
            let max = self.facts.sm_clock_max_mhz;
            if mhz == 0 || i64::from(mhz) > max {
                return Err(self
                    .err(raw, format!("an SM clock of {mhz} MHz is outside what {} supports (up to {max} MHz)", self.facts.describe()))
                    .with_hint("`nvidia-smi -q -d SUPPORTED_CLOCKS` lists the clocks a GPU supports"));
            }
        }
        Ok(policy)
    }
}
