//! `runner plan`'s kernels: each with its launch (grid, block, dynamic shared memory, its
//! steps), what its buffers are (inputs, outputs, scratch, reset), the work it declares and
//! what checks it; a value that differs by point written once as a short list.

use super::by_point::by_point;
use super::Shown;
use crate::experiment::expr::significant;
use crate::experiment::knobs::cache::bytes_text;
use crate::experiment::rates::FlopsType;
use crate::experiment::{Experiment, Kernel, Tolerances};
use std::fmt::Write;

/// The kernels as `runner plan` shows them, a block each.
pub fn describe(exp: &Experiment, shown: Shown) -> String {
    let mut out = String::from("kernels:\n");
    for k in &exp.kernels {
        describe_kernel(exp, k, shown, &mut out);
    }
    out
}

fn describe_kernel(exp: &Experiment, k: &Kernel, shown: Shown, out: &mut String) {
    let own: Vec<&str> = (k.points.first().map_or(&[][..], |p| &p[exp.params.len()..]))
        .iter()
        .map(|(n, _)| n.as_str())
        .collect();
    let origin = match (k.source.is_empty(), &k.module) {
        (true, _) => k.entry.clone(),
        (false, Some(m)) => format!("{}, a prebuilt {} module", k.source, m.kind.name()),
        (false, None) => k.source.clone(),
    };
    let _ = write!(out, "  {} ({origin})", k.name);
    if !own.is_empty() {
        let _ = write!(
            out,
            ", also sweeping {}: {} point(s)",
            own.join(", "),
            k.points.len()
        );
    }
    out.push('\n');
    let at = |f: &dyn Fn(usize) -> String| at_each(k, f);
    if k.copy.is_none() {
        let taken: Vec<&str> = match &k.takes {
            Some(t) => t.iter().map(|&i| k.args[i].name.as_str()).collect(),
            None => k.args.iter().map(|a| a.name.as_str()).collect(),
        };
        let entry = |p: usize| match k.launches[p].entry.as_str() {
            "" => format!("{}({})", k.entry, taken.join(", ")),
            e => format!("{e}({})", taken.join(", ")),
        };
        let _ = writeln!(out, "    entry {}", at(&entry));
        let l = &k.launches;
        let _ = writeln!(
            out,
            "    launch: grid {}; block {}; dynamic shared {}; static shared {}",
            at(&|p| dims(l[p].grid)),
            at(&|p| dims(l[p].block)),
            at(&|p| bytes_text(l[p].shared_bytes.into())),
            match shown.compiled {
                true => "in each build's resources below",
                false => "unknown until compiled (`runner plan --compile` reads it)",
            }
        );
        out.push_str(&steps(k));
    }
    let _ = writeln!(out, "    buffers: {}", super::buffers::roles(k));
    if shown.verbose {
        out.push_str(&super::buffers::each(k));
    }
    let work = |v: Option<f64>, text: fn(f64) -> String| v.map_or("not declared".into(), text);
    let _ = writeln!(
        out,
        "    per launch: bytes {}; flops {}",
        at(&|p| match k.launches[p].reads_writes {
            Some((r, w)) => format!(
                "{} = {} read + {} written",
                bytes_text((r + w) as u64),
                bytes_text(r as u64),
                bytes_text(w as u64)
            ),
            None => work(k.launches[p].bytes, |b| bytes_text(b as u64)),
        }),
        at(&|p| work(k.launches[p].flops, flops_text))
    );
    if let Some(line) = peaks(exp, k) {
        let _ = writeln!(out, "    {line}");
    }
    let _ = writeln!(out, "    check: {}", check(exp, k));
    if let Some(names) = &k.only_variants {
        let _ = writeln!(
            out,
            "    variants: {} only (its `variants`)",
            names.join(", ")
        );
    }
    let skipped: Vec<String> = (k.points.iter().zip(&k.skipped))
        .filter(|(_, s)| **s)
        .map(|(p, _)| crate::experiment::point_label(p))
        .collect();
    if !skipped.is_empty() {
        let _ = writeln!(out, "    skipped at: {} (its `skip`)", skipped.join("; "));
    }
}

/// What the kernel's declared work is counted against: its FLOPs' type (`flops_type`) or
/// the peak it states (`peak`), and that peak, its bytes against DRAM's, on the device the
/// plan checked against (the report's shares of peak use the same); None where it declares
/// neither.
fn peaks(exp: &Experiment, k: &Kernel) -> Option<String> {
    let flops = k.launches.iter().any(|l| l.flops.is_some());
    let bytes = k.launches.iter().any(|l| l.bytes.is_some());
    let device = match exp.facts.assumed {
        true => "an assumed H100",
        false => "this device",
    };
    let mhz = exp.facts.sm_clock_max_mhz;
    let mut parts = Vec::new();
    if flops {
        let t = k.counted_as();
        let how = match &k.flops_type {
            Some(FlopsType::Declared(d)) => format!(
                "its `peak`: {} operations per SM per clock x {} SMs",
                significant(d.per_sm_clock, 4),
                exp.facts.sm_count
            ),
            Some(_) => "its `flops_type`".to_string(),
            None => "the default; set `flops_type` or `peak` for another unit".to_string(),
        };
        let peak = match exp.facts.flops_peak(&t) {
            Some(p) => format!("{} TFLOP/s at {mhz} MHz", significant(p / 1e12, 4)),
            None => "no peak known for this compute capability".to_string(),
        };
        parts.push(format!("flops as {} ({how}): {peak}", t.name()));
    }
    if bytes {
        let peak = match exp.facts.dram_peak() {
            Some(p) => format!("{} GB/s", significant(p / 1e9, 4)),
            None => "no peak known (memory bus not given)".to_string(),
        };
        parts.push(format!("bytes against DRAM: {peak}"));
    }
    (!parts.is_empty()).then(|| format!("peaks on {device}: {}", parts.join("; ")))
}

/// `f` of each of the kernel's points, a value that differs by point written by point.
fn at_each(k: &Kernel, f: &dyn Fn(usize) -> String) -> String {
    let values: Vec<String> = (0..k.points.len()).map(f).collect();
    by_point(&k.points, &values)
}

/// A line per step of the kernel: its launch, or the copy it makes, in order.
fn steps(k: &Kernel) -> String {
    let at = |f: &dyn Fn(usize) -> String| at_each(k, f);
    let (l, mut out) = (&k.launches, String::new());
    for (s, step) in k.steps.iter().enumerate() {
        let names: Vec<&str> = step.args.iter().map(|&i| k.args[i].name.as_str()).collect();
        // The step's entry at a point, where the sweep sets it (`finish<{{ tile }}>`).
        let entry_index = k.steps[..s].iter().filter(|x| x.copy.is_none()).count();
        let entry = |p: usize| {
            let e = l[p].step_entries.get(entry_index).unwrap_or(&step.entry);
            format!("{e}({})", names.join(", "))
        };
        let what = match step.copy {
            Some(_) => format!("a copy of {} into {}", names[1], names[0]),
            None => format!(
                "{}: grid {}; block {}; dynamic shared {}",
                at(&entry),
                at(&|p| dims(l[p].steps[s].0)),
                at(&|p| dims(l[p].steps[s].1)),
                at(&|p| bytes_text(l[p].steps[s].2.into()))
            ),
        };
        let when = if step.before { "first" } else { "then" };
        let _ = writeln!(out, "    {when} {what}");
    }
    out
}

/// What the kernel's output is checked against, and how.
fn check(exp: &Experiment, k: &Kernel) -> String {
    let name = |i: usize| k.args[i].name.as_str();
    // The kernels this one is the reference of (`check_kernel`).
    let checks: Vec<&str> = (exp.kernels.iter())
        .filter(|o| (o.check_kernel.as_ref()).is_some_and(|c| exp.kernels[c.kernel].name == k.name))
        .map(|o| o.name.as_str())
        .collect();
    let mut text = if k.unchecked {
        "none: timed unchecked (unchecked = true), and every table says so".to_string()
    } else if let Some(c) = &k.check {
        let inputs: Vec<&str> = c.inputs.iter().map(|&i| name(i)).collect();
        format!(
            "the CPU reference `{}` of {} against {}",
            c.reference,
            inputs.join(", "),
            name(c.output)
        )
    } else if let Some(c) = &k.check_python {
        let outputs: Vec<&str> = c.outputs.iter().map(|&i| name(i)).collect();
        let given: Vec<&str> = (0..k.args.len())
            .filter(|&i| !k.writes(i) || k.updates_in_place(i))
            .map(name)
            .collect();
        format!(
            "the Python function `{}` ({}, run by {}), given {} by name{}, against {}",
            c.function,
            c.source,
            c.python,
            given.join(", "),
            match (c.gpu, c.torch) {
                (true, _) =>
                    " as torch tensors on the GPU (the runner's buffers, shared; compared there)",
                (false, true) => " as torch tensors",
                (false, false) => " as NumPy arrays and numbers",
            },
            outputs.join(", ")
        )
    } else if let Some(c) = &k.check_kernel {
        let reference = &exp.kernels[c.kernel];
        let outputs: Vec<&str> = c.outputs.iter().map(|&i| name(i)).collect();
        let given: Vec<&str> = (c.from.iter().flatten()).map(|&i| name(i)).collect();
        let own: Vec<&str> = (c.from.iter().zip(&reference.args))
            .filter(|(f, _)| f.is_none())
            .map(|(_, a)| a.name.as_str())
            .collect();
        let mut t = format!(
            "kernel `{}` on the same inputs, comparing {}; it is given {} by name",
            reference.name,
            outputs.join(", "),
            given.join(", ")
        );
        if !own.is_empty() {
            t += &format!(" and has its own {}", own.join(", "));
        }
        t
    } else if checks.is_empty() {
        "nothing to check (it writes no output)".to_string()
    } else {
        format!(
            "none of its own: it is the reference of {}",
            checks.join(", ")
        )
    };
    text += &tolerances(k);
    if k.expect_caught {
        text += "; expected to be caught (expect = \"caught\")";
    }
    if !checks.is_empty() && (k.check.is_some() || k.check_kernel.is_some() || k.unchecked) {
        text += &format!("; the reference of {}", checks.join(", "));
    }
    text
}

/// The check's tolerances the experiment gives, each by point ("; rtol 0.001 (dtype=f16),
/// 1e-5 (dtype=f32)"); nothing where it takes the defaults.
fn tolerances(k: &Kernel) -> String {
    let mut text = String::new();
    for (i, (key, _)) in Tolerances::default().by_key().iter().enumerate() {
        let values: Option<Vec<String>> = (k.launches.iter())
            .map(|l| l.tolerances.by_key()[i].1.map(|v| significant(v, 6)))
            .collect();
        if let Some(values) = values.filter(|v| !v.is_empty()) {
            text += &format!("; {key} {}", by_point(&k.points, &values));
        }
    }
    text
}

/// A launch dimension without its trailing ones: `256`, `32x32`.
fn dims(d: [u32; 3]) -> String {
    let used = match d {
        [x, 1, 1] => vec![x],
        [x, y, 1] => vec![x, y],
        [x, y, z] => vec![x, y, z],
    };
    used.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join("x")
}

fn flops_text(f: f64) -> String {
    let (scale, unit) = [
        (1e12, "TFLOP"),
        (1e9, "GFLOP"),
        (1e6, "MFLOP"),
        (1e3, "kFLOP"),
    ]
    .into_iter()
    .find(|(s, _)| f >= *s)
    .unwrap_or((1.0, "FLOP"));
    format!("{:.1} {unit}", f / scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_and_flops_read_as_plan_writes_them() {
        assert_eq!(dims([256, 1, 1]), "256");
        assert_eq!(dims([32, 32, 1]), "32x32");
        assert_eq!(flops_text(2.0 * 4096f64.powi(3)), "137.4 GFLOP");
        assert_eq!(significant(3.0 * 0.0043724, 6), "0.0131172");
        assert_eq!(significant(1e-5, 6), "0.00001");
    }
}
