//! Whether each cell's reading can be trusted: every run passed its check and its audit, no
//! reading was suspect against its audit launch, and the throughput is one the device can
//! reach. Speed-ups, best marks and comparisons take trusted cells only, and a kernel
//! written to be caught (`expect = "caught"`) must have none.

use super::peaks::Peaks;
use crate::experiment::Kernel;
use crate::plan::Cell;
use crate::protocol::{CellRecord, Status};

/// What a cell's runs and the device say about its reading.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Every run passed its check and its audit.
    Ok,
    /// No run finished, or every one was skipped (an interrupted run, a missing tool).
    NotRun,
    /// A run failed: the first one's reason.
    Failed(String),
    /// A run's reading is far faster than its audit launch (`method::audit`).
    Suspect(String),
    /// The reading is faster than the device can go.
    Impossible(String),
}

impl Verdict {
    /// The word a table shows in place of a number the reading does not support.
    pub fn word(&self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::NotRun => "not run",
            Verdict::Failed(_) => "failed",
            Verdict::Suspect(_) => "suspect",
            Verdict::Impossible(_) => "impossible",
        }
    }

    /// Why, where the reading is not trusted.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Verdict::Failed(r) | Verdict::Suspect(r) | Verdict::Impossible(r) => Some(r),
            Verdict::Ok | Verdict::NotRun => None,
        }
    }

    /// The reason without the verdict's word it may open with (`impossible: ...`): for a
    /// place that says the word beside it.
    pub fn reason_after_word(&self) -> Option<&str> {
        let r = self.reason()?;
        Some(r.strip_prefix(&format!("{}: ", self.word())).unwrap_or(r))
    }

    /// Whether the cell ended as its kernel's `expect` says: trusted, or (a kernel written
    /// to be caught) failed, suspect or impossible. A cell that did not run is neither.
    pub fn as_expected(&self, expect_caught: bool) -> Option<bool> {
        match self {
            Verdict::NotRun => None,
            Verdict::Ok => Some(!expect_caught),
            _ => Some(expect_caught),
        }
    }
}

/// What the device offers a cell's reading: its peaks and its L2's size.
pub struct Device<'a> {
    pub peaks: &'a Peaks,
    pub l2_bytes: u64,
}

/// The verdict on `cell` of `kernel` (None: the built-in empty kernel) from its runs, the
/// audit's test over them (`audits::judged`: why they are suspect, where they are) and,
/// where it declares its work, its headline median against the device.
pub fn judge(
    cell: &Cell,
    kernel: Option<&Kernel>,
    records: &[&CellRecord],
    (median_ns, audit): (Option<f64>, Option<String>),
    device: Option<&Device>,
) -> Verdict {
    if let Some(r) = records.iter().find(|r| r.status == Status::Failed) {
        return Verdict::Failed(r.error.clone().unwrap_or_default());
    }
    // The weaker audit's verdict is in its record; the audits among the timed ones' is
    // the analysis's.
    let audits = records.iter().filter_map(|r| r.audit.as_ref());
    if let Some(why) = audits.filter_map(|a| a.suspect.clone()).next().or(audit) {
        return Verdict::Suspect(why);
    }
    if !records.iter().any(|r| r.status == Status::Ok) {
        return Verdict::NotRun;
    }
    let impossible =
        (kernel.zip(median_ns).zip(device)).and_then(|((k, ns), d)| impossible(cell, k, ns, d));
    impossible.map_or(Verdict::Ok, Verdict::Impossible)
}

/// Why a reading of `ns` per launch is beyond the device: fewer bytes than must cross
/// DRAM at its peak, or more FLOPs than its type's peak. What must cross DRAM: the bytes
/// declared (at most each buffer read and written once: bytes counted twice are a cache's)
/// less what L2 can hold from before the launch and keep written after it (twice its size).
/// A copy across the host link is not judged against DRAM.
fn impossible(cell: &Cell, kernel: &Kernel, ns: f64, device: &Device) -> Option<String> {
    let per_s = |work: f64| work / (ns * 1e-9);
    let launch = &cell.launch;
    let across_host = kernel.copy.is_some() && (kernel.on_host(0) || kernel.on_host(1));
    let buffers = launch.device_bytes() as f64;
    let held = 2.0 * device.l2_bytes as f64;
    if let (Some(bytes), Some(dram), false) = (launch.bytes, device.peaks.dram, across_host) {
        let must_cross = bytes.min(2.0 * buffers) - held;
        if must_cross > 0.0 && per_s(must_cross) > dram {
            return Some(format!(
                "impossible: {:.0} GB/s declared, of which at least {:.1} MiB must cross DRAM ({:.1} MiB of buffers, L2 holding at most {:.0} MiB): {:.0} GB/s, above the {:.0} GB/s DRAM peak; `bytes` overstates the work, or work was skipped",
                per_s(bytes) / 1e9,
                must_cross / MIB,
                buffers / MIB,
                held / MIB,
                per_s(must_cross) / 1e9,
                dram / 1e9
            ));
        }
    }
    if let (Some(flops), Some(ceiling)) = (launch.flops, device.peaks.flops_ceiling()) {
        if per_s(flops) > ceiling {
            return Some(format!(
                "impossible: {:.1} TFLOP/s is above the most the device does of any type on any unit ({:.1} TFLOP/s: FP8 or INT8 on tensor cores, 2:4 sparse): the launches did not do the work declared (`flops` overstates it, or work was skipped)",
                per_s(flops) / 1e12,
                ceiling / 1e12
            ));
        }
    }
    None
}

const MIB: f64 = 1024.0 * 1024.0;

/// How closely a trusted cell was looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scrutiny {
    /// Checked, and its timed launches audited on new inputs in every run (in one, of runs
    /// of one launch each).
    Audited,
    /// Checked, not audited: a run from before audits.
    Checked,
    /// A checked `[[copy]]`: the driver's, with no code of the experiment's to audit.
    DriverCopy,
    /// A kernel that writes nothing to check (an empty kernel).
    NoOutput,
    /// `unchecked = true`, by the experiment's choice.
    Unchecked,
}

/// A run's verdicts counted against what its kernels expect.
#[derive(Debug, Default, Clone)]
pub struct Summary {
    /// Cells trusted, of kernels expected to pass.
    pub trusted: usize,
    /// Of those, the cells audited in every run, those with no output to check, and those
    /// unchecked by choice.
    pub audited: usize,
    pub copies: usize,
    pub no_output: usize,
    pub unchecked: usize,
    /// Cells failed, suspect or impossible, of kernels written to be caught.
    pub caught: usize,
    pub not_run: usize,
    /// Cells a finished part of a run left to the other parts (`--claims`).
    pub other_parts: usize,
    /// Cells that did not end as their kernel expects, with their verdicts: untrusted cells
    /// of kernels expected to pass, trusted cells of kernels written to be caught.
    pub unexpected: Vec<(String, Verdict)>,
}

impl Summary {
    /// Counts `verdicts`: each cell's, with whether its kernel is written to be caught and
    /// how closely it was looked at.
    pub fn of<'v>(
        verdicts: impl IntoIterator<Item = (&'v Cell, &'v Verdict, bool, Scrutiny)>,
    ) -> Summary {
        let mut s = Summary::default();
        for (cell, verdict, caught, scrutiny) in verdicts {
            match verdict.as_expected(caught) {
                None => s.not_run += 1,
                Some(true) if caught => s.caught += 1,
                Some(true) => {
                    s.trusted += 1;
                    s.audited += usize::from(scrutiny == Scrutiny::Audited);
                    s.copies += usize::from(scrutiny == Scrutiny::DriverCopy);
                    s.no_output += usize::from(scrutiny == Scrutiny::NoOutput);
                    s.unchecked += usize::from(scrutiny == Scrutiny::Unchecked);
                }
                Some(false) => s.unexpected.push((cell.id.clone(), verdict.clone())),
            }
        }
        s
    }

    /// The run's trust in one or two sentences: what the report's first lines and the end
    /// of a run say.
    pub fn line(&self) -> String {
        let count = |n: usize| match n {
            1 => "1 cell".to_string(),
            n => format!("{n} cells"),
        };
        let mut parts = Vec::new();
        let checked = self.trusted - self.audited - self.copies - self.no_output - self.unchecked;
        let how: Vec<String> = [
            (
                self.audited,
                "checked, and their timed launches audited on new inputs",
            ),
            (
                self.copies,
                "checked, a copy the driver makes (no code of the experiment's to audit)",
            ),
            (checked, "checked, not audited (a run from before audits)"),
            (self.no_output, "with no output to check"),
            (self.unchecked, "unchecked by the experiment's choice"),
        ]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
        let trusted = match how.len() {
            0 => String::new(),
            _ => format!(": {}", how.join(", ")),
        };
        if self.unexpected.is_empty() {
            parts.push(format!("{} trusted{trusted}", count(self.trusted)));
        } else {
            let (mut words, mut fooled) = (Vec::<String>::new(), 0);
            for word in ["failed", "suspect", "impossible"] {
                let n = (self.unexpected.iter())
                    .filter(|(_, v)| v.word() == word)
                    .count();
                if n > 0 {
                    words.push(format!("{} {word}", count(n)));
                }
            }
            fooled += (self.unexpected.iter())
                .filter(|(_, v)| *v == Verdict::Ok)
                .count();
            if fooled > 0 {
                words.push(format!(
                    "{} of kernels written to be caught passed",
                    count(fooled)
                ));
            }
            parts.push(format!(
                "NOT TRUSTED: {}; their readings are left out of speed-ups and comparisons; {} trusted{trusted}",
                words.join(", "),
                count(self.trusted)
            ));
        }
        if self.caught > 0 {
            parts.push(format!(
                "{} of kernels written to be caught (`expect = \"caught\"`) were caught, as expected",
                count(self.caught)
            ));
        }
        if self.not_run > 0 {
            parts.push(format!("{} did not run", count(self.not_run)));
        }
        if self.other_parts > 0 {
            parts.push(format!(
                "{} ran in the run's other parts",
                count(self.other_parts)
            ));
        }
        let mut line = parts.join("; ");
        line.push('.');
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::Experiment;
    use crate::plan::Plan;
    use crate::protocol::{AuditRecord, FailureKind};

    const H100: Peaks = Peaks {
        dram: Some(3.352e12),
        host_link: None,
        fp32: Some(66.9e12),
        fp64: None,
        fp16: None,
        bf16: None,
        int32: None,
        per_sm_clock: vec![],
        ceiling: Some(4282e12),
        source: String::new(),
    };

    /// A kernel over `n` floats declaring 8 bytes each, under a hot and a flushed variant.
    fn plan(n: &str) -> (Kernel, Plan) {
        let text = format!(
            "[experiment]\ntitle = \"t\"\n[sweep]\nn = [\"{n}\"]\n[[kernel]]\nname = \"copy\"\nsource = \"k.cu\"\nentry = \"k\"\ngrid = [1]\nblock = [1]\nargs = [{{ name = \"x\", buffer = \"f32\", len = \"n\", init = \"uniform(0, 1)\" }}]\nbytes = \"8 * n\"\n[[variant]]\nname = \"hot\"\n[[variant]]\nname = \"cold\"\ncache = \"flush\"\n[report]\nfloor = false\n"
        );
        let exp = Experiment::from_text(&text).unwrap();
        let plan = Plan::new(&exp).unwrap();
        (exp.kernels[0].clone(), plan)
    }

    fn ok() -> CellRecord {
        let mut r = CellRecord::new(0, "c", 0);
        r.status = Status::Ok;
        r.error = None;
        r
    }

    #[test]
    fn a_failed_run_outranks_a_suspect_one_and_a_suspect_one_an_ok_one() {
        let (_, p) = plan("1024");
        let cell = &p.cells[0];
        let mut suspect = ok();
        suspect.audit = Some(AuditRecord {
            suspect: Some("suspect: 30x".into()),
            ..Default::default()
        });
        let failed = CellRecord::failed(
            0,
            "c",
            1,
            FailureKind::Audit,
            "audit on new inputs: stale".into(),
        );
        let v = |rs: &[&CellRecord]| judge(cell, None, rs, (Some(1e3), None), None);
        assert_eq!(v(&[&ok()]), Verdict::Ok);
        assert_eq!(v(&[&ok(), &suspect]).word(), "suspect");
        assert_eq!(
            v(&[&suspect, &failed]),
            Verdict::Failed("audit on new inputs: stale".into())
        );
        assert_eq!(v(&[]), Verdict::NotRun);
        assert_eq!(Verdict::Ok.as_expected(true), Some(false));
        assert_eq!(v(&[&failed]).as_expected(true), Some(true));
        assert_eq!(Verdict::NotRun.as_expected(false), None);
    }

    #[test]
    fn the_summary_counts_cells_against_what_their_kernels_expect() {
        let (_, p) = plan("1024");
        let (hot, cold) = (&p.cells[0], &p.cells[1]);
        let failed = Verdict::Failed("stale".into());
        let all_ok = Summary::of([
            (hot, &Verdict::Ok, false, Scrutiny::Audited),
            (cold, &Verdict::Ok, false, Scrutiny::Unchecked),
            (hot, &Verdict::Ok, false, Scrutiny::DriverCopy),
            (cold, &failed, true, Scrutiny::Audited),
        ]);
        assert!(all_ok.unexpected.is_empty());
        assert_eq!(
            all_ok.line(),
            "3 cells trusted: 1 checked, and their timed launches audited on new inputs, 1 checked, a copy the driver makes (no code of the experiment's to audit), 1 unchecked by the experiment's choice; 1 cell of kernels written to be caught (`expect = \"caught\"`) were caught, as expected."
        );
        let fooled = Summary::of([
            (hot, &failed, false, Scrutiny::Audited),
            (cold, &Verdict::Ok, true, Scrutiny::Audited),
            (cold, &Verdict::NotRun, false, Scrutiny::Audited),
        ]);
        assert_eq!(fooled.unexpected.len(), 2);
        assert!(
            fooled.line().starts_with(
                "NOT TRUSTED: 1 cell failed, 1 cell of kernels written to be caught passed;"
            ),
            "{}",
            fooled.line()
        );
        assert!(fooled.line().ends_with("1 cell did not run."));
    }

    #[test]
    fn above_the_dram_peak_is_impossible_only_for_bytes_l2_cannot_hold() {
        let device = Device {
            peaks: &H100,
            l2_bytes: 50 << 20,
        };
        let v = |k: &Kernel, c: &Cell, ns: f64| {
            judge(c, Some(k), &[&ok()], (Some(ns), None), Some(&device))
        };
        // 8 MiB of buffer, 16 MiB declared: L2 can hold all of it, hot or cold.
        let (k, small) = plan("2^21");
        assert_eq!(v(&k, &small.cells[0], 1e3), Verdict::Ok);
        assert_eq!(v(&k, &small.cells[1], 1e3), Verdict::Ok);
        // 256 MiB of buffer, 512 MiB declared: at least 412 MiB cross DRAM, 130 µs at the
        // peak. A reading of 100 µs is impossible, hot or cold; 150 µs is not.
        let (k, large) = plan("2^26");
        let hot = v(&k, &large.cells[0], 100e3);
        assert!(
            hot.reason()
                .unwrap()
                .contains("at least 412.0 MiB must cross DRAM"),
            "{hot:?}"
        );
        assert_eq!(v(&k, &large.cells[1], 100e3).word(), "impossible");
        assert_eq!(v(&k, &large.cells[0], 150e3), Verdict::Ok);
        // FLOPs: far above the FP32 lanes' 66.9 TFLOP/s is tensor cores' work; above the
        // sparse FP8 ceiling of 4282 it is no unit's.
        let mut cell = large.cells[0].clone();
        cell.launch.bytes = None;
        cell.launch.flops = Some(1e9);
        assert_eq!(v(&k, &cell, 1e3), Verdict::Ok, "1000 TFLOP/s");
        let beyond = v(&k, &cell, 100.0);
        assert!(
            beyond
                .reason()
                .unwrap()
                .contains("10000.0 TFLOP/s is above"),
            "{beyond:?}"
        );
    }
}
