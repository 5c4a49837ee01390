//! Writing a run as it happens: each finished cell's samples and telemetry as one zstd
//! frame (a gzip member in a resumed older run) of their CSV files, then its line of
//! `cells.jsonl` (a zstd frame of its own; plain in an older run), each flushed. A cell's
//! line is written last, so a line in `cells.jsonl` means its samples are on disk.

use super::format::Format;
use super::names::{samples_header, TELEMETRY_HEADER};
use super::names::{
    CELLS_FILE, EXPERIMENT_FILE, PEERS_FILE, RUN_FILE, SAMPLES_FILE, SOURCES_DIR, TELEMETRY_FILE,
    TEMPLATE_FILE,
};
use super::{FolderLock, PeerRow, RunMeta, Samples, Stored};
use crate::experiment::Experiment;
use crate::files;
use crate::plan::Cell;
use crate::protocol::{CellRecord, TelemetryPoint};
use anyhow::{Context, Result};
use std::fs::File;
use std::io::Write;
use std::path::{Component, Path, PathBuf};

/// Writes a run as it happens.
pub struct Writer {
    dir: PathBuf,
    format: Format,
    samples: File,
    telemetry: File,
    cells: File,
    params: Vec<String>,
}

/// Writes `meta` as `dir`'s `run.json`, whole (a temporary file renamed into place).
fn write_meta(dir: &Path, meta: &RunMeta) -> Result<()> {
    let path = dir.join(RUN_FILE);
    files::write(&path, serde_json::to_string_pretty(meta)? + "\n")
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Appends `text` to `file`, the stored file `name`, as one frame (see [`Format::frame`]).
fn append(file: &mut File, format: Format, name: &str, text: &[u8]) -> Result<()> {
    file.write_all(&format.frame(name, text)?)?;
    file.flush()?;
    Ok(())
}

/// Appends CSV rows to `file`, the stored CSV `name`, as one zstd frame or gzip member.
fn append_rows(file: &mut File, format: Format, name: &str, rows: &[Vec<String>]) -> Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in rows {
        w.write_record(r)?;
    }
    append(file, format, name, &w.into_inner()?)
}

/// A kernel source's path inside the run folder: its path as written, relative to the
/// experiment, with `..` steps dropped so it stays inside `sources/`.
pub fn source_copy(written: &str) -> PathBuf {
    Path::new(written)
        .components()
        .filter_map(|c| match c {
            Component::Normal(p) => Some(p),
            _ => None,
        })
        .collect()
}

impl Writer {
    /// Starts a run in the locked folder, which [`super::claim`] has cleared of an earlier
    /// run.
    pub fn create(lock: &FolderLock, exp: &Experiment, meta: &RunMeta) -> Result<Writer> {
        let dir = lock.dir();
        let sources = dir.join(SOURCES_DIR);
        // A `[[copy]]` has no source.
        for k in exp.kernels.iter().filter(|k| !k.source.is_empty()) {
            let to = sources.join(source_copy(&k.source));
            if let Some(parent) = to.parent() {
                files::create_dir(parent)
                    .with_context(|| format!("cannot create {}", parent.display()))?;
            }
            files::write(&to, k.code())
                .with_context(|| format!("cannot write {}", to.display()))?;
        }
        // The Python references as read, beside the kernels.
        for c in exp.kernels.iter().filter_map(|k| k.check_python.as_ref()) {
            let to = sources.join(source_copy(&c.source));
            if let Some(parent) = to.parent() {
                files::create_dir(parent)
                    .with_context(|| format!("cannot create {}", parent.display()))?;
            }
            files::write(&to, &c.text).with_context(|| format!("cannot write {}", to.display()))?;
        }
        if let Some(t) = &exp.report.template {
            let from = exp.path.parent().unwrap_or(Path::new(".")).join(t);
            let text = files::read(&from, files::MAX_TEXT_BYTES)
                .with_context(|| format!("cannot read the template {}", from.display()))?;
            files::write(&dir.join(TEMPLATE_FILE), text)
                .with_context(|| format!("cannot write into {}", dir.display()))?;
        }
        files::write(&dir.join(EXPERIMENT_FILE), &exp.text)
            .with_context(|| format!("cannot write into {}", dir.display()))?;
        let writer = Writer::empty(dir, exp, Format::Zstd, PathBuf::from)?;
        writer.write_meta(meta)?;
        Ok(writer)
    }

    /// A run in the locked folder made of other runs' cells (`runner merge`): its
    /// experiment, sources and template are copied from them, its metadata is `meta`, said
    /// unfinished until [`Writer::finish`] (a merge stopped half-way must not read as
    /// complete).
    pub fn merged(lock: &FolderLock, exp: &Experiment, meta: &RunMeta) -> Result<Writer> {
        let writer = Writer::empty(lock.dir(), exp, Format::Zstd, PathBuf::from)?;
        writer.write_meta(&RunMeta {
            complete: false,
            ..meta.clone()
        })?;
        Ok(writer)
    }

    /// Writes `meta`, last: a `run.json` that says the run is complete follows everything
    /// else of it on disk.
    pub fn finish(self, meta: &RunMeta) -> Result<()> {
        write_meta(&self.dir, meta)
    }

    /// New samples, telemetry and cell files in `dir`, holding their headers only; each at
    /// `at` of its path in `format`.
    fn empty(
        dir: &Path,
        exp: &Experiment,
        format: Format,
        at: fn(PathBuf) -> PathBuf,
    ) -> Result<Writer> {
        let params: Vec<String> = exp.params.iter().map(|(n, _)| n.clone()).collect();
        let create = |name: &str| {
            let path = at(dir.join(format.file(name)));
            files::create(&path).with_context(|| format!("cannot create {}", path.display()))
        };
        let mut samples = create(SAMPLES_FILE)?;
        append_rows(
            &mut samples,
            format,
            SAMPLES_FILE,
            &[samples_header(&params)],
        )?;
        let mut telemetry = create(TELEMETRY_FILE)?;
        let header = TELEMETRY_HEADER.map(String::from).to_vec();
        append_rows(&mut telemetry, format, TELEMETRY_FILE, &[header])?;
        Ok(Writer {
            dir: dir.to_path_buf(),
            format,
            samples,
            telemetry,
            cells: create(CELLS_FILE)?,
            params,
        })
    }

    /// Continues the stored run in the locked folder: its files are written anew from what
    /// was read back (a torn last cell dropped), in its own format, and later cells are
    /// appended.
    pub fn resume(
        lock: &FolderLock,
        stored: &Stored,
        samples: &Samples,
        meta: &RunMeta,
    ) -> Result<Writer> {
        let dir = lock.dir();
        // Written beside the old files as temporaries and renamed over them once whole, so
        // that nothing of the run is lost if this stops half-way.
        let beside = |path: PathBuf| files::temporary_beside(&path);
        let format = Format::of(dir)?.unwrap_or(Format::Zstd);
        let mut writer = Writer::empty(dir, &stored.experiment, format, beside)?;
        for rec in &stored.records {
            let rec = stored.with_samples(rec, samples);
            writer.append(&stored.plan.cells[rec.cell], &rec)?;
        }
        for path in [SAMPLES_FILE, TELEMETRY_FILE, CELLS_FILE].map(|n| dir.join(format.file(n))) {
            std::fs::rename(beside(path.clone()), &path)
                .with_context(|| format!("cannot replace {}", path.display()))?;
        }
        writer.write_meta(meta)?;
        Ok(writer)
    }

    /// Writes the peers' readings (all at once: they are taken after the cells).
    pub fn write_peers(&self, rows: &[PeerRow]) -> Result<()> {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(["peer", "point", "process", "time_ns", "note"])?;
        for r in rows {
            w.write_record([
                r.peer.clone(),
                r.point.clone(),
                r.process.to_string(),
                r.time_ns.map_or(String::new(), |t| t.to_string()),
                r.note.clone(),
            ])?;
        }
        let path = self.dir.join(PEERS_FILE);
        files::write(&path, w.into_inner()?)
            .with_context(|| format!("cannot write {}", path.display()))
    }

    pub fn write_meta(&self, meta: &RunMeta) -> Result<()> {
        write_meta(&self.dir, meta)
    }

    /// Appends a finished cell: its samples and telemetry, then its line of `cells.jsonl`.
    pub fn append(&mut self, cell: &Cell, rec: &CellRecord) -> Result<()> {
        let mut coords = vec![
            cell.id.clone(),
            cell.kernel_name.clone(),
            cell.variant.clone(),
            cell.knobs.timer.key().to_string(),
        ];
        for name in &self.params {
            let v = cell.point.iter().find(|(n, _)| n == name);
            coords.push(v.map_or(String::new(), |(_, v)| v.to_string()));
        }
        let start = |i: usize| {
            rec.starts_us
                .get(i)
                .map_or(String::new(), |t| format!("{t:.1}"))
        };
        let row = |phase: &str, i: usize, t: f64, s: String| {
            let mut r = coords.clone();
            r.extend([
                rec.process.to_string(),
                phase.into(),
                i.to_string(),
                t.to_string(),
                s,
            ]);
            r
        };
        let mut rows = Vec::with_capacity(rec.samples_ns.len() + 1);
        if let Some(first) = rec.first_ns {
            rows.push(row("first", 0, first, start(0)));
        }
        for (i, t) in rec.samples_ns.iter().enumerate() {
            rows.push(row("steady", i, *t, start(i + 1)));
        }
        append_rows(&mut self.samples, self.format, SAMPLES_FILE, &rows)?;
        let telemetry: Vec<Vec<String>> = rec
            .telemetry
            .iter()
            .map(|p| telemetry_row(&cell.id, rec.process, p))
            .collect();
        append_rows(&mut self.telemetry, self.format, TELEMETRY_FILE, &telemetry)?;
        let stored = CellRecord {
            samples_ns: vec![],
            starts_us: vec![],
            telemetry: vec![],
            ..rec.clone()
        };
        let line = serde_json::to_string(&stored)? + "\n";
        append(&mut self.cells, self.format, CELLS_FILE, line.as_bytes())
    }
}

fn telemetry_row(id: &str, process: u32, p: &TelemetryPoint) -> Vec<String> {
    let r = &p.reading;
    let opt = |v: Option<String>| v.unwrap_or_default();
    vec![
        id.to_string(),
        process.to_string(),
        format!("{:.1}", p.t_us),
        opt(r.sm_mhz.map(|v| v.to_string())),
        opt(r.mem_mhz.map(|v| v.to_string())),
        opt(r.power_w.map(|v| format!("{v:.3}"))),
        opt(r.temp_c.map(|v| v.to_string())),
        opt(r.pstate.clone()),
        r.throttle.join(";"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::format::find;

    #[test]
    fn source_copies_stay_inside_the_folder() {
        assert_eq!(
            source_copy("../kernels/matmul.cu"),
            PathBuf::from("kernels/matmul.cu")
        );
        assert_eq!(
            source_copy("/../../etc/passwd"),
            PathBuf::from("etc/passwd")
        );
    }

    #[test]
    fn a_resumed_older_run_goes_on_in_gzip_and_plain_records() {
        let dir = tempfile::tempdir().unwrap();
        let old = Path::new("reports/statistics");
        for name in [
            "run.json",
            "experiment.toml",
            "cells.jsonl",
            "samples.csv.gz",
            "telemetry.csv.gz",
        ] {
            std::fs::copy(old.join(name), dir.path().join(name)).unwrap();
        }
        let mut samples = Samples::default();
        let stored = Stored::load(dir.path(), &mut samples).unwrap();
        let lock = FolderLock::take(dir.path()).unwrap();
        drop(Writer::resume(&lock, &stored, &samples, &stored.meta).unwrap());
        for name in [SAMPLES_FILE, TELEMETRY_FILE, CELLS_FILE] {
            let (path, format) = find(dir.path(), name).unwrap().unwrap();
            assert_eq!(format, Format::Gzip, "{}", path.display());
        }
        let mut again_samples = Samples::default();
        let again = Stored::load(dir.path(), &mut again_samples).unwrap();
        assert_eq!(again.records, stored.records);
        assert_eq!(again_samples.time_ns, samples.time_ns);
    }

    /// The run in `part` merged alone into `out`: written as a run is written now.
    fn merge_alone(part: &Path, out: &Path) {
        let parts = crate::store::read_parts(&[part], out).unwrap();
        parts
            .write(&crate::store::new_run_folder(out, false).unwrap(), false)
            .unwrap();
    }

    #[test]
    fn a_run_written_now_stores_each_record_as_a_frame_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("statistics");
        merge_alone(Path::new("reports/statistics"), &run);
        let bytes = std::fs::read(run.join(Format::Zstd.file(CELLS_FILE))).unwrap();
        let (mut frames, mut at) = (0, 0);
        while at < bytes.len() {
            at += zstd::zstd_safe::find_frame_compressed_size(&bytes[at..]).unwrap();
            frames += 1;
        }
        let records = crate::store::stored_records(&run).lines().count();
        assert!(
            records > 1 && frames == records,
            "{frames} frames, {records} records"
        );
    }

    #[test]
    fn a_resumed_run_written_now_goes_on_in_zstd() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("statistics");
        merge_alone(Path::new("reports/statistics"), &run);
        let mut samples = Samples::default();
        let stored = Stored::load(&run, &mut samples).unwrap();
        let lock = FolderLock::take(&run).unwrap();
        drop(Writer::resume(&lock, &stored, &samples, &stored.meta).unwrap());
        for name in [SAMPLES_FILE, TELEMETRY_FILE, CELLS_FILE] {
            let (path, format) = find(&run, name).unwrap().unwrap();
            assert_eq!(format, Format::Zstd, "{}", path.display());
        }
        assert_eq!(
            Stored::load(&run, &mut Samples::default()).unwrap().records,
            stored.records
        );
    }
}
