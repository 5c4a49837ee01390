//! A stored file read one zstd frame (gzip member) at a time, so that damage costs only the
//! frames it touches: a frame that does not decode is reported with the decoder's reason,
//! and reading goes on at the next frame's magic bytes after its start. Decoded bytes are
//! counted as they come against a cap set by the compressed bytes decoded so far, not by
//! the file's size (which a sparse file inflates at no cost), and no frame is held whole:
//! a bomb stops early, and memory stays bounded whatever the file holds.

use super::format::Format;
use crate::files;
use anyhow::{anyhow, Context, Result};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::PathBuf;

/// Bytes decoded, and read from the file, at a time.
const CHUNK: usize = 1 << 16;

/// The most a stored file may hold.
#[derive(Clone, Copy)]
pub(super) struct Limits {
    /// On disk.
    pub on_disk: u64,
    /// Decoded: at least this...
    pub floor: u64,
    /// ... or, where true, `files::MAX_EXPANSION` times the compressed bytes decoded when
    /// that is more: a large run reads whole, a bomb (a thousandfold) stops early.
    pub grows: bool,
}

impl Limits {
    /// The most that may be decoded from `consumed` compressed bytes.
    pub fn cap(self, consumed: u64) -> u64 {
        let grown = consumed.saturating_mul(files::MAX_EXPANSION);
        match self.grows {
            true => self.floor.max(grown),
            false => self.floor,
        }
    }
}

/// A frame that did not decode whole.
#[derive(Debug)]
pub(super) struct Lost {
    /// `frame` (zstd) or `member` (gzip).
    pub unit: &'static str,
    /// Its place among the file's frames, from 1.
    pub frame: u64,
    /// Where it starts in the file.
    pub at: u64,
    /// The decoder's reason.
    pub why: io::Error,
}

impl Lost {
    /// `frame 3 (at byte 1024) does not decode (Restored data doesn't match checksum)`:
    /// where to look with `zstdcat` or `zcat`, and what the decoder said.
    pub fn describe(&self) -> String {
        format!(
            "{} {} (at byte {}) does not decode ({})",
            self.unit, self.frame, self.at, self.why
        )
    }
}

/// How a frame ended.
pub(super) enum Decoded {
    Whole,
    Lost(Lost),
}

/// How the file's frames decode.
enum Coding {
    Zstd(zstd::stream::raw::Decoder<'static>),
    Gzip,
    /// Plain text, read as one frame.
    Text,
}

/// The file, with the offset of the next byte taken from it.
struct Source {
    file: BufReader<File>,
    at: u64,
}

impl Read for Source {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read(buf)?;
        self.at += n as u64;
        Ok(n)
    }
}

impl BufRead for Source {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.file.fill_buf()
    }

    fn consume(&mut self, n: usize) {
        self.file.consume(n);
        self.at += n as u64;
    }
}

impl Source {
    /// Moves to the first place at or after `from` where `magic` begins, or to the end.
    fn find(&mut self, from: u64, magic: &[u8]) -> io::Result<()> {
        let mut at = from;
        loop {
            // A seek empties the buffer: it refills from `at`, so a magic cut by the
            // buffer's end is found whole.
            self.file.seek(SeekFrom::Start(at))?;
            self.at = at;
            let buf = self.file.fill_buf()?;
            if let Some(i) = buf.windows(magic.len()).position(|w| w == magic) {
                self.consume(i);
                return Ok(());
            }
            if buf.len() < magic.len() {
                let n = buf.len();
                self.consume(n);
                return Ok(());
            }
            at += (buf.len() + 1 - magic.len()) as u64;
        }
    }
}

/// Bytes decoded and the compressed bytes they came from, against the limits.
struct Counts {
    limits: Limits,
    decoded: u64,
    consumed: u64,
    over: bool,
}

impl Counts {
    fn cap(&self) -> u64 {
        self.limits.cap(self.consumed)
    }

    /// Counts `wrote` bytes decoded from `read` more compressed ones: an error past the cap.
    fn add(&mut self, read: usize, wrote: usize) -> io::Result<()> {
        self.consumed += read as u64;
        self.decoded += wrote as u64;
        self.over = self.decoded > self.cap();
        match self.over {
            true => Err(io::Error::other("past the most the runner decodes")),
            false => Ok(()),
        }
    }
}

/// A stored file, frame by frame.
pub(super) struct Frames {
    pub path: PathBuf,
    coding: Coding,
    /// The bytes each frame starts with, to find the next after damage.
    magic: &'static [u8],
    source: Source,
    chunk: Vec<u8>,
    counts: Counts,
    /// Frames reported, whole or not.
    count: u64,
    /// Where reading goes on after a frame that did not decode: the byte after its start.
    resume: Option<u64>,
    /// Since the last whole frame: the first frame lost, and whether the file ended in it.
    damage: Option<(u64, bool)>,
}

impl Frames {
    /// The stored file `name` at `path`, in `format` (None: plain text), refused where it
    /// is over `limits.on_disk` or does not start as its format does.
    pub fn open(
        path: PathBuf,
        name: &str,
        format: Option<Format>,
        limits: Limits,
    ) -> Result<Frames> {
        let cannot = || format!("cannot read {}", path.display());
        let file = files::open(&path).with_context(cannot)?;
        if file.metadata().with_context(cannot)?.len() > limits.on_disk {
            return Err(files::too_large(limits.on_disk)).with_context(cannot);
        }
        let mut file = BufReader::with_capacity(CHUNK, file);
        let magic = format.and_then(|f| f.magic(name));
        let coding = match (format, magic) {
            (Some(Format::Zstd), Some(_)) => {
                Coding::Zstd(zstd::stream::raw::Decoder::new().with_context(cannot)?)
            }
            (Some(Format::Gzip), Some(_)) => Coding::Gzip,
            _ => Coding::Text,
        };
        if let Some(f) = format {
            f.check_magic(&path, name, file.fill_buf().with_context(cannot)?)?;
        }
        Ok(Frames {
            path,
            coding,
            magic: magic.unwrap_or_default(),
            source: Source { file, at: 0 },
            chunk: vec![0; CHUNK],
            counts: Counts {
                limits,
                decoded: 0,
                consumed: 0,
                over: false,
            },
            count: 0,
            resume: None,
            damage: None,
        })
    }

    /// Decodes the next frame, handing its bytes to `take` as they come; None at the
    /// file's end. Past the cap, or where the file itself cannot be read, the file is
    /// refused.
    pub fn next(&mut self, take: &mut dyn FnMut(&[u8])) -> Result<Option<Decoded>> {
        let cannot = |path: &PathBuf| format!("cannot read {}", path.display());
        loop {
            if let Some(from) = self.resume.take() {
                (self.source.find(from, self.magic)).with_context(|| cannot(&self.path))?;
            }
            let at = self.source.at;
            if (self.source.fill_buf())
                .with_context(|| cannot(&self.path))?
                .is_empty()
            {
                return Ok(None);
            }
            let mut wrote = 0;
            let decoded = self.decode(&mut |bytes| {
                wrote += bytes.len();
                take(bytes);
            });
            if self.counts.over {
                return Err(self.too_much());
            }
            let why = match decoded {
                Ok(()) => {
                    self.count += 1;
                    self.damage = None;
                    return Ok(Some(Decoded::Whole));
                }
                Err(why) if self.magic.is_empty() => {
                    return Err(why).with_context(|| cannot(&self.path))
                }
                Err(why) => why,
            };
            self.resume = Some(at + 1);
            // Magic bytes inside a damaged frame start no frame of their own: a false
            // start that decodes nothing is part of the damage already reported.
            if self.damage.is_some() && wrote == 0 {
                continue;
            }
            self.count += 1;
            let cut = why.kind() == io::ErrorKind::UnexpectedEof;
            self.damage = self.damage.or(Some((self.count, cut)));
            return Ok(Some(Decoded::Lost(Lost {
                unit: self.unit(),
                frame: self.count,
                at,
                why,
            })));
        }
    }

    /// What a frame of the file is called: a gzip file has members.
    pub fn unit(&self) -> &'static str {
        match self.coding {
            Coding::Gzip => "member",
            _ => "frame",
        }
    }

    /// The frame a crash cut the file short in, where it ends so: the last damage began
    /// with a frame cut by the file's end, and no frame decodes after it.
    pub fn torn(&self) -> Option<u64> {
        self.damage.filter(|(_, cut)| *cut).map(|(frame, _)| frame)
    }

    fn decode(&mut self, take: &mut dyn FnMut(&[u8])) -> io::Result<()> {
        let Frames {
            coding,
            source,
            chunk,
            counts,
            ..
        } = self;
        match coding {
            Coding::Zstd(decoder) => zstd_frame(decoder, source, chunk, counts, take),
            Coding::Gzip => gzip_member(source, chunk, counts, take),
            Coding::Text => loop {
                let wrote = source.read(chunk)?;
                counts.add(0, wrote)?;
                if wrote == 0 {
                    return Ok(());
                }
                take(&chunk[..wrote]);
            },
        }
    }

    fn too_much(&self) -> anyhow::Error {
        let limits = self.counts.limits;
        let basis = match limits.grows {
            true => format!(
                " ({}x the compressed bytes decoded, or {})",
                files::MAX_EXPANSION,
                files::size_text(limits.floor)
            ),
            false => String::new(),
        };
        anyhow!(
            "{} decodes to more than {}, the most the runner reads of it{basis}: the file is damaged, or the run too large to render (split it into parts)",
            self.path.display(),
            files::size_text(self.counts.cap())
        )
    }
}

/// One zstd frame from `source`, which is left just after it.
fn zstd_frame(
    decoder: &mut zstd::stream::raw::Decoder<'static>,
    source: &mut Source,
    chunk: &mut [u8],
    counts: &mut Counts,
    take: &mut dyn FnMut(&[u8]),
) -> io::Result<()> {
    use zstd::stream::raw::{InBuffer, Operation, OutBuffer};
    decoder.reinit()?;
    loop {
        let input = source.fill_buf()?;
        let ended = input.is_empty();
        let mut input = InBuffer::around(input);
        let mut output = OutBuffer::around(&mut chunk[..]);
        let left = decoder.run(&mut input, &mut output)?;
        let (read, wrote) = (input.pos(), output.pos());
        source.consume(read);
        counts.add(read, wrote)?;
        take(&chunk[..wrote]);
        if left == 0 {
            return Ok(());
        }
        if ended && wrote == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the file ends inside it",
            ));
        }
    }
}

/// One gzip member from `source`, which is left just after it.
fn gzip_member(
    source: &mut Source,
    chunk: &mut [u8],
    counts: &mut Counts,
    take: &mut dyn FnMut(&[u8]),
) -> io::Result<()> {
    let mut at = source.at;
    let mut member = flate2::bufread::GzDecoder::new(source);
    loop {
        let wrote = member.read(chunk)?;
        let now = member.get_ref().at;
        counts.add((now - at) as usize, wrote)?;
        at = now;
        if wrote == 0 {
            return Ok(());
        }
        take(&chunk[..wrote]);
    }
}
