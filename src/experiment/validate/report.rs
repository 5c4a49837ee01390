//! The `[report]` table: differences, bias and kernel pairs, the tuned parameter, published
//! numbers and derived metrics, each checked against the experiment.

use super::*;
use crate::experiment::knobs::samples::MAX_SAMPLES;
use crate::experiment::schema::RawPublished;

impl Validator<'_> {
    /// `name` as one of `known`, the names of this experiment's `what`s (variants, kernels).
    fn known(
        &self,
        what: &str,
        known: &[&str],
        name: &Spanned<String>,
    ) -> Result<String, ConfigError> {
        if known.contains(&name.get_ref().as_str()) {
            Ok(name.get_ref().clone())
        } else {
            Err(self
                .err(name, format!("unknown {what} `{}`", name.get_ref()))
                .with_hint(format!("{what}s of this experiment: {}", known.join(", "))))
        }
    }

    /// Pairs of names of `what`s (variants, kernels), as `differences`, `bias` and
    /// `kernels` list them: two different ones, each pair once.
    fn pairs(
        &self,
        list: &[Spanned<Vec<Spanned<String>>>],
        (what, of): (&str, &str),
        known: &[&str],
        example: &str,
    ) -> Result<Vec<(String, String)>, ConfigError> {
        let mut pairs: Vec<(String, String)> = Vec::new();
        for pair in list {
            let (a, b) = match pair.get_ref().as_slice() {
                [a, b] => (self.known(of, known, a)?, self.known(of, known, b)?),
                _ => {
                    return Err(self
                        .err(pair, format!("each {what} is a pair of {of}s"))
                        .with_hint(format!("e.g. {example}")))
                }
            };
            if a == b {
                return Err(self
                    .err(pair, format!("{what} of the {of} `{a}` with itself"))
                    .with_hint(format!(
                        "a {what} pairs two different {of}s, e.g. {example}"
                    )));
            }
            if pairs.contains(&(a.clone(), b.clone())) {
                return Err(self.err(pair, format!("the {what} [`{a}`, `{b}`] is listed twice")));
            }
            pairs.push((a, b));
        }
        Ok(pairs)
    }

    /// `best`: a sweep parameter with at least two values to choose between.
    fn best(
        &self,
        best: Option<Spanned<String>>,
        params: &[(String, Vec<SweepValue>)],
    ) -> Result<Option<String>, ConfigError> {
        let Some(best) = best else {
            return Ok(None);
        };
        let name = best.get_ref();
        let names: Vec<&str> = params.iter().map(|(n, _)| n.as_str()).collect();
        match params.iter().find(|(n, _)| n == name) {
            None => Err(self
                .err(&best, format!("best: `{name}` is not a sweep parameter"))
                .with_hint(match names.is_empty() {
                    true => "this experiment sweeps no parameter; add one under [sweep]".into(),
                    false => format!("sweep parameters of this experiment: {}", names.join(", ")),
                })),
            Some((_, values)) if values.len() < 2 => Err(self
                .err(
                    &best,
                    format!(
                        "best: the sweep takes only one value of `{name}`, nothing to choose between"
                    ),
                )
                .with_hint(format!("sweep `{name}` over two values or more, e.g. {name} = [128, 256, 512]"))),
            Some(_) => Ok(Some(name.clone())),
        }
    }

    /// Derived metrics, each evaluated once at every kernel's first point (with a time of
    /// 1 ns) so that a mistake is reported at its line now, not in the report.
    fn metrics(
        &self,
        raw: &[crate::experiment::schema::RawMetric],
        kernels: &[Kernel],
    ) -> Result<Vec<crate::experiment::Metric>, ConfigError> {
        for (i, m) in raw.iter().enumerate() {
            let name = m.name.get_ref();
            let fine = !name.trim().is_empty()
                && name.chars().count() <= names::MAX_NAME_CHARS
                && !name.chars().any(char::is_control);
            if !fine {
                return Err(self
                    .err(&m.name, format!("a metric's name is {name:?}"))
                    .with_hint(format!(
                    "name it in words, at most {} characters on one line, e.g. \"ns per access\"",
                    names::MAX_NAME_CHARS
                )));
            }
            if raw[..i].iter().any(|o| o.name.get_ref() == name) {
                return Err(self.err(&m.name, format!("metric `{name}` is defined twice")));
            }
        }
        raw.iter()
            .map(|m| {
                let metric = crate::experiment::Metric {
                    name: m.name.get_ref().clone(),
                    value: m.value.get_ref().clone(),
                    unit: m.unit.clone().unwrap_or_default(),
                };
                for k in kernels {
                    if let (Some(p), Some(l)) = (k.points.first(), k.launches.first()) {
                        crate::experiment::metric_value(&metric, p, self.facts, 1.0, l)
                            .map_err(|e| {
                                self.err(&m.value, e).with_hint(
                                    "a metric may use time_ns (the cell's median), bytes (or reads and writes, where the kernel declares them apart), flops, the sweep parameters and device facts",
                                )
                            })?;
                    }
                }
                Ok(metric)
            })
            .collect()
    }

    pub(super) fn report(
        &self,
        r: RawReport,
        variants: &[Variant],
        kernels: &[Kernel],
        params: &[(String, Vec<SweepValue>)],
        points: &[Point],
    ) -> Result<ReportSpec, ConfigError> {
        let names: Vec<&str> = variants.iter().map(|v| v.name.as_str()).collect();
        let mut differences = Vec::new();
        if let Some(b) = &r.baseline {
            let b = self.known("variant", &names, b)?;
            differences.extend(
                names
                    .iter()
                    .filter(|n| **n != b)
                    .map(|n| (n.to_string(), b.clone())),
            );
        }
        differences.extend(self.pairs(
            &r.differences,
            ("difference", "variant"),
            &names,
            "differences = [[\"sync\", \"events\"]]",
        )?);
        let bias = self.pairs(
            &r.bias,
            ("bias", "variant"),
            &names,
            "bias = [[\"events\", \"cupti\"]] (method, reference)",
        )?;
        let kernel_pairs = self.kernel_pairs(&r.kernels, kernels)?;
        let best = self.best(r.best, &every_axis(params, kernels))?;
        let published = self.published(&r.published, &names, points)?;
        if let (Some(t), Sources::Read) = (&r.template, self.sources) {
            let path = self
                .path
                .parent()
                .unwrap_or(Path::new("."))
                .join(t.get_ref());
            crate::files::read_text(&path, crate::files::MAX_TEXT_BYTES).map_err(|e| {
                self.err(t, format!("cannot read template {}: {e}", path.display()))
                    .with_hint("templates are relative to the experiment file, e.g. \"../templates/report.md.j2\"")
            })?;
        }
        let floor_samples = self.floor_samples(r.floor_samples.as_ref())?;
        Ok(ReportSpec {
            differences,
            bias,
            kernels: kernel_pairs,
            best,
            unit: r.unit.unwrap_or(Unit::Auto),
            template: r.template.map(Spanned::into_inner),
            floor: r.floor.unwrap_or(true),
            floor_samples,
            published,
            metrics: self.metrics(&r.metrics, kernels)?,
            fit: r.fit.unwrap_or(false),
        })
    }

    /// `kernels`: pairs of timed kernels (kernel, baseline), the baseline's points each
    /// answering one of the kernel's.
    fn kernel_pairs(
        &self,
        raw: &[Spanned<Vec<Spanned<String>>>],
        kernels: &[Kernel],
    ) -> Result<Vec<(String, String)>, ConfigError> {
        // A kernel that is not timed has no times to compare.
        let kernel_names: Vec<&str> = (kernels.iter())
            .filter(|k| !k.check_only)
            .map(|k| k.name.as_str())
            .collect();
        let kernel_pairs = self.pairs(
            raw,
            ("kernel comparison", "kernel"),
            &kernel_names,
            "kernels = [[\"matmul-tiled\", \"matmul-naive\"]] (kernel, baseline)",
        )?;
        for (pair, (kernel, baseline)) in raw.iter().zip(&kernel_pairs) {
            let of = |name: &str| {
                kernels
                    .iter()
                    .find(|k| k.name == name)
                    .expect("checked above")
            };
            let (k, b) = (of(kernel), of(baseline));
            if k.points.iter().any(|p| b.point_for(p).is_none()) {
                return Err(self
                    .err(pair, format!("`{baseline}` is swept over axes `{kernel}` lacks, or other values"))
                    .with_hint("a baseline kernel's own axes must be among the kernel's; the experiment's sweep is shared"));
            }
        }
        Ok(kernel_pairs)
    }

    /// `published`: each a known variant's positive times in a unit, at sweep points.
    fn published(
        &self,
        raw: &[RawPublished],
        variants: &[&str],
        points: &[Point],
    ) -> Result<Vec<Published>, ConfigError> {
        let labels: HashSet<String> = points.iter().map(point_label).collect();
        let mut published = Vec::new();
        for p in raw {
            let variant = self.known("variant", variants, &p.variant)?;
            if let Some(key) = p.values.get_ref().keys().find(|k| !labels.contains(*k)) {
                return Err(self
                    .err(
                        &p.values,
                        format!("published value for `{key}`, which is not a sweep point"),
                    )
                    .with_hint(format!(
                        "keys are sweep points as tables show them, e.g. \"{}\"",
                        points.first().map(point_label).unwrap_or_default()
                    )));
            }
            if let Some((k, v)) =
                (p.values.get_ref().iter()).find(|(_, v)| !(v.is_finite() && **v > 0.0))
            {
                return Err(self
                    .err(
                        &p.values,
                        format!("published value {v} for `{k}` is not a time"),
                    )
                    .with_hint("published values are positive, finite times in the given unit"));
            }
            if p.unit == Unit::Auto {
                return Err(self.err(
                    &p.variant,
                    "published values need a unit (ns, us, ms or s), not auto",
                ));
            }
            published.push(Published {
                variant,
                source: p.source.clone(),
                unit: p.unit,
                values: p
                    .values
                    .get_ref()
                    .iter()
                    .map(|(k, v)| (k.clone(), *v))
                    .collect(),
            });
        }
        Ok(published)
    }

    /// `floor_samples`: 1000 unless given, at most what a cell takes.
    fn floor_samples(&self, raw: Option<&Spanned<u64>>) -> Result<u64, ConfigError> {
        Ok(match raw {
            None => 1000,
            Some(n) if *n.get_ref() <= MAX_SAMPLES as u64 => *n.get_ref(),
            Some(n) => {
                return Err(self
                    .err(
                        n,
                        format!(
                            "floor_samples is {}, more than the {MAX_SAMPLES} a cell takes",
                            n.get_ref()
                        ),
                    )
                    .with_hint(format!("give floor_samples at most {MAX_SAMPLES}")))
            }
        })
    }
}

/// The experiment's sweep parameters and each kernel's own, with their values.
fn every_axis(
    params: &[(String, Vec<SweepValue>)],
    kernels: &[Kernel],
) -> Vec<(String, Vec<SweepValue>)> {
    let mut all = params.to_vec();
    for k in kernels {
        for (name, _) in k.points.first().into_iter().flatten() {
            if !all.iter().any(|(n, _)| n == name) {
                let mut values: Vec<SweepValue> = Vec::new();
                for p in &k.points {
                    let v = &p.iter().find(|(n, _)| n == name).expect("on every point").1;
                    if !values.contains(v) {
                        values.push(v.clone());
                    }
                }
                all.push((name.clone(), values));
            }
        }
    }
    all
}
