//! Damage loses only what it damaged: stored files built byte by byte with a frame
//! corrupted, a gzip member's byte flipped, a frame stored twice, a row past the caps, a
//! torn last frame, a bomb in a sparse file and a damaged record, each read back.

use super::format::Format;
use super::frames::{Frames, Limits};
use super::names::{CELLS_FILE, SAMPLES_FILE};
use super::records::read_cells;
use super::rows::{each_csv_row, CsvRead, CSV_LIMITS};
use std::io::Write;
use std::path::{Path, PathBuf};

/// `samples.csv` in `dir` in `format`: a header, then one frame (or member) per run; the
/// file, and where each frame starts (the header's first).
pub(super) fn write_runs(dir: &Path, format: Format, runs: &[&str]) -> (PathBuf, Vec<usize>) {
    let path = dir.join(format.file(SAMPLES_FILE));
    let mut bytes = Vec::new();
    let mut starts = Vec::new();
    for text in std::iter::once("cell,process,time_ns\n").chain(runs.iter().copied()) {
        starts.push(bytes.len());
        bytes.extend(format.frame(SAMPLES_FILE, text.as_bytes()).unwrap());
    }
    std::fs::write(&path, bytes).unwrap();
    (path, starts)
}

/// Each row's cell and time, and what reading them found.
pub(super) fn rows(dir: &Path) -> (Vec<String>, CsvRead) {
    let mut got = Vec::new();
    let want = ["cell", "process", "time_ns"];
    let read = each_csv_row(dir, (SAMPLES_FILE, &[]), &want, |_, _, r| {
        got.push(format!("{}={}", &r[0], &r[2]));
    })
    .unwrap()
    .unwrap();
    (got, read)
}

/// Applies `damage` to the bytes of the file at `path`.
fn damage(path: &Path, damage: impl FnOnce(&mut Vec<u8>)) {
    let mut bytes = std::fs::read(path).unwrap();
    damage(&mut bytes);
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn a_corrupt_middle_zstd_frame_loses_its_rows_alone_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let runs = ["a,0,1\n", "b,0,2\n", "c,0,3\n", "d,0,4\n"];
    let (path, starts) = write_runs(dir.path(), Format::Zstd, &runs);
    // Frame 3 holds b: its content no longer matches its checksum.
    damage(&path, |b| b[starts[3] - 5] ^= 0x01);
    let (got, read) = rows(dir.path());
    assert_eq!(got, ["a=1", "c=3", "d=4"]);
    assert_eq!(read.lost.len(), 1);
    let lost = read.lost[0].0.describe();
    assert!(
        lost.starts_with(&format!(
            "frame 3 (at byte {}) does not decode (",
            starts[2]
        )) && lost.contains("checksum"),
        "{lost}"
    );
}

#[test]
fn a_frame_whose_start_is_damaged_is_passed_and_the_next_one_read() {
    for byte in [0, 4] {
        let dir = tempfile::tempdir().unwrap();
        let runs = ["a,0,1\n", "b,0,2\n", "c,0,3\n"];
        let (path, starts) = write_runs(dir.path(), Format::Zstd, &runs);
        // Its magic, or its frame header's reserved bit.
        damage(&path, |b| b[starts[2] + byte] ^= 0x08);
        let (got, read) = rows(dir.path());
        assert_eq!(got, ["a=1", "c=3"], "byte {byte}");
        assert_eq!(read.lost.len(), 1);
        assert!(read.lost[0].1.is_none(), "it gave no rows");
    }
}

#[test]
fn the_rows_a_frame_gave_before_it_failed_are_told_with_their_run() {
    let dir = tempfile::tempdir().unwrap();
    let long: String = (0..100_000).map(|i| format!("b,1,{i}\n")).collect();
    let runs = ["a,0,1\n", &long, "c,0,3\n"];
    let (path, starts) = write_runs(dir.path(), Format::Zstd, &runs);
    // b's checksum, read after all of its rows were decoded.
    damage(&path, |b| b[starts[3] - 1] ^= 0xff);
    let (got, read) = rows(dir.path());
    assert_eq!(
        (got[0].as_str(), got[got.len() - 1].as_str()),
        ("a=1", "c=3")
    );
    assert_eq!(read.lost.len(), 1);
    assert_eq!(read.lost[0].1, Some(("b".to_string(), "1".to_string())));
}

#[test]
fn a_flipped_byte_in_gzip_member_3_of_13_loses_that_member_alone() {
    let dir = tempfile::tempdir().unwrap();
    let texts: Vec<String> = (0..12)
        .map(|i| (0..50).map(|j| format!("c{i},0,{j}\n")).collect())
        .collect();
    let runs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let (path, starts) = write_runs(dir.path(), Format::Gzip, &runs);
    // Member 3 holds c1's rows.
    damage(&path, |b| b[(starts[2] + starts[3]) / 2] ^= 0x10);
    let (got, read) = rows(dir.path());
    let others: Vec<&String> = got.iter().filter(|r| !r.starts_with("c1=")).collect();
    let want: Vec<String> = (0..12)
        .filter(|&i| i != 1)
        .flat_map(|i| (0..50).map(move |j| format!("c{i}={j}")))
        .collect();
    assert_eq!(others, want.iter().collect::<Vec<_>>());
    assert_eq!(read.lost.len(), 1);
    let lost = read.lost[0].0.describe();
    assert!(lost.starts_with("member 3 (at byte"), "{lost}");
    assert!(read.lost[0].1.iter().all(|(cell, _)| cell == "c1"));
}

#[test]
fn a_frame_stored_twice_is_kept_once_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let (path, starts) = write_runs(dir.path(), Format::Zstd, &["a,0,1\n", "b,0,2\nb,0,3\n"]);
    damage(&path, |b| {
        let copy = b[starts[2]..].to_vec();
        b.extend(copy);
    });
    let (got, read) = rows(dir.path());
    assert_eq!(got, ["a=1", "b=2", "b=3"]);
    assert_eq!(
        read.warnings(),
        ["samples.csv.zst: frame 4 repeats the rows of cell b (process 0) that frame 3 holds: they are kept once"]
    );
}

#[test]
fn a_torn_last_frame_stands_as_the_crash_left_it() {
    for (format, unit) in [(Format::Zstd, "frame"), (Format::Gzip, "member")] {
        let dir = tempfile::tempdir().unwrap();
        let (path, _) = write_runs(dir.path(), format, &["a,0,1\n"]);
        let last = format.frame(SAMPLES_FILE, "b,0,2\n".repeat(100).as_bytes());
        let last = last.unwrap();
        damage(&path, |b| b.extend(&last[..last.len() / 2]));
        let (got, read) = rows(dir.path());
        assert_eq!(got, ["a=1"]);
        assert!(read.lost.is_empty());
        let file = format.file(SAMPLES_FILE);
        assert_eq!(
            read.warnings(),
            [format!(
                "{file}: dropped a torn last {unit} (the run stopped while writing it)"
            )]
        );
    }
}

#[test]
fn a_header_frame_that_does_not_decode_is_named_with_the_decoders_reason() {
    let dir = tempfile::tempdir().unwrap();
    let (path, starts) = write_runs(dir.path(), Format::Zstd, &["a,0,1\n"]);
    damage(&path, |b| b[starts[1] - 1] ^= 0xff);
    let e = format!(
        "{:#}",
        each_csv_row(dir.path(), (SAMPLES_FILE, &[]), &["cell"], |_, _, _| {})
            .err()
            .unwrap()
    );
    assert!(
        e.contains("frame 1 (at byte 0) does not decode (") && e.contains("header"),
        "{e}"
    );
}

#[test]
fn a_row_past_the_caps_is_parsed_past_and_its_cell_named() {
    let dir = tempfile::tempdir().unwrap();
    let huge = format!("big,0,{}\nc,0,3\n", "9".repeat(5 << 20));
    write_runs(dir.path(), Format::Zstd, &["a,0,1\n", &huge]);
    let (got, read) = rows(dir.path());
    assert_eq!(got, ["a=1", "c=3"]);
    assert_eq!(read.damaged, [(3, Some("big".to_string()))]);
}

#[test]
fn a_large_run_reads_whole_and_a_bomb_stops_at_the_floor() {
    // 10 million samples: 128 MB of gzip, 875 MB of text.
    assert!(CSV_LIMITS.cap(128 << 20) > 875 << 20);
    // 100 million: 1.3 GB of gzip, 8.7 GB of text.
    assert!(CSV_LIMITS.cap(1300 << 20) > 8700 << 20);
    // 3 MB of gzip that would be 3 GB of newlines.
    assert_eq!(
        CSV_LIMITS.cap(3 << 20),
        crate::files::MAX_DECOMPRESSED_BYTES
    );
}

#[test]
fn a_bomb_in_a_sparse_file_stops_at_the_cap_of_what_it_decoded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("samples.csv.zst");
    let bomb = Format::Zstd
        .frame(SAMPLES_FILE, &vec![b'\n'; 8 << 20])
        .unwrap();
    let mut file = std::fs::File::create(&path).unwrap();
    file.write_all(&bomb).unwrap();
    // 3 GiB that take no disk: 64 times them would let 192 GiB be decoded.
    file.set_len(bomb.len() as u64 + (3 << 30)).unwrap();
    let limits = Limits {
        on_disk: 4 << 30,
        floor: 1 << 20,
        grows: true,
    };
    let mut frames = Frames::open(path, SAMPLES_FILE, Some(Format::Zstd), limits).unwrap();
    let mut decoded = 0;
    let e = loop {
        match frames.next(&mut |b| decoded += b.len()) {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("read {decoded} bytes to the end"),
            Err(e) => break e.to_string(),
        }
    };
    assert!(decoded <= 1 << 20, "{decoded} bytes decoded");
    assert!(e.contains("decodes to more than 1 MiB"), "{e}");
}

/// `lines` in `dir`'s `cells.jsonl.zst`, a frame each, as runs write them now; where each
/// frame starts.
fn write_records(dir: &Path, lines: &[&str]) -> (PathBuf, Vec<usize>) {
    let path = dir.join(Format::Zstd.file(CELLS_FILE));
    let (mut bytes, mut starts) = (Vec::new(), Vec::new());
    for line in lines {
        starts.push(bytes.len());
        let frame = Format::Zstd.frame(CELLS_FILE, format!("{line}\n").as_bytes());
        bytes.extend(frame.unwrap());
    }
    std::fs::write(&path, bytes).unwrap();
    (path, starts)
}

#[test]
fn a_record_frame_that_does_not_decode_loses_that_record_alone() {
    let dir = tempfile::tempdir().unwrap();
    let lines = [r#"{"id":"a"}"#, r#"{"id":"b"}"#, r#"{"id":"c"}"#];
    let (path, starts) = write_records(dir.path(), &lines);
    damage(&path, |b| b[starts[2] - 1] ^= 0xff);
    let read = read_cells(dir.path()).unwrap().unwrap();
    assert_eq!(read.lost.len(), 1);
    assert_eq!(read.lost[0].0.frame, 2);
    let kept: Vec<&[u8]> = (read.lines.iter())
        .filter(|l| l.lost.is_none())
        .map(|l| l.bytes.as_slice())
        .collect();
    assert_eq!(kept, [lines[0].as_bytes(), lines[2].as_bytes()]);
}

/// `lines` in `dir`'s `cells.jsonl.zst` as runs before wrote them: one zstd stream with a
/// checksum, flushed after each line.
fn write_stream(dir: &Path, lines: &[String]) -> zstd::Encoder<'static, std::fs::File> {
    let path = dir.join(Format::Zstd.file(CELLS_FILE));
    let mut w = zstd::Encoder::new(std::fs::File::create(path).unwrap(), 3).unwrap();
    w.include_checksum(true).unwrap();
    for line in lines {
        writeln!(w, "{line}").unwrap();
        w.flush().unwrap();
    }
    w
}

#[test]
fn an_older_records_stream_that_does_not_decode_keeps_the_records_before_its_last() {
    let dir = tempfile::tempdir().unwrap();
    // Records of 10 KB that compress little, so that they decode in several steps.
    let mut seed = 1u64;
    let mut noise = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        format!("{:016x}", seed)
    };
    let lines: Vec<String> = (0..12)
        .map(|i| {
            format!(
                r#"{{"id":"c{i}","note":"{}"}}"#,
                (0..640).map(|_| noise()).collect::<String>()
            )
        })
        .collect();
    write_stream(dir.path(), &lines).finish().unwrap();
    let path = dir.path().join(Format::Zstd.file(CELLS_FILE));
    // Its checksum: which record the damage is in cannot be told.
    damage(&path, |b| *b.last_mut().unwrap() ^= 0xff);
    let read = read_cells(dir.path()).unwrap().unwrap();
    assert_eq!(read.lost.len(), 1);
    let kept: Vec<String> = (read.lines.iter())
        .filter(|l| l.lost.is_none())
        .map(|l| String::from_utf8(l.bytes.clone()).unwrap())
        .collect();
    assert!(!kept.is_empty() && kept.len() < lines.len(), "{kept:?}");
    assert_eq!(kept, lines[..kept.len()]);
}

#[test]
fn records_of_an_older_stream_left_open_read_back_to_its_last_flush() {
    let dir = tempfile::tempdir().unwrap();
    let w = write_stream(dir.path(), &["{\"a\":1}".into(), "{\"b\":2}".into()]);
    // A run killed here never ended the stream's frame.
    std::mem::forget(w);
    let read = read_cells(dir.path()).unwrap().unwrap();
    let lines: Vec<&[u8]> = read.lines.iter().map(|l| l.bytes.as_slice()).collect();
    assert_eq!(lines, [&b"{\"a\":1}"[..], b"{\"b\":2}"]);
    assert!(read.lost.is_empty() && read.lines.iter().all(|l| l.lost.is_none()));
    assert_eq!(Format::of(dir.path()).unwrap(), Some(Format::Zstd));
}
