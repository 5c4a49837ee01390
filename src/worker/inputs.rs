//! A cell's input data: drawn once per sweep point (every variant and round at a point
//! times the same data), shared with later processes of the run through its cache folder.

use super::failure::Failure;
use super::shared;
use crate::experiment::knobs::inputs::Inputs;
use crate::experiment::{ArgValue, Dtype, Init};
use crate::plan::Cell;
use rand::{rngs::SmallRng, Rng, SeedableRng};
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// Initial contents of a cell's input buffers, one per argument (None: not an input), by
/// the seed they were drawn with.
pub type HostInputs = Rc<Drawn>;
/// Each argument's initial bytes (None: not an input).
type Drawn = Vec<Option<Vec<u8>>>;

/// Seeds of `inputs = "fresh"` data lie this far from the point's own (rotation sets use
/// the seeds right after it).
const FRESH_SEED: u64 = 1 << 32;

/// The audit's inputs (`worker::audit`) lie this far from the point's own seed: data no
/// timed launch saw, the same for every variant at a point (drawn once per run).
const AUDIT_SEED: u64 = 1 << 33;

/// The seed of the inputs a cell's audit launch reads.
pub fn audit_seed(cell: &Cell) -> u64 {
    fnv1a(cell.point_key().as_bytes()).wrapping_add(AUDIT_SEED)
}

/// The seeds of a cell's input sets: one per `rotate` set it uses, then those of its
/// `inputs = "fresh"` draws. Every variant and round at one point times the same inputs.
pub fn seeds_of(cell: &Cell) -> (Vec<u64>, Vec<u64>) {
    let seed = fnv1a(cell.point_key().as_bytes());
    let used = cell.knobs.rotate.sets(cell.knobs.launches);
    let sets = (0..used).map(|i| seed.wrapping_add(i));
    let fresh = match cell.knobs.inputs {
        Inputs::Same => vec![],
        Inputs::Fresh => (1..=2).map(|i| seed.wrapping_add(FRESH_SEED + i)).collect(),
    };
    (sets.collect(), fresh)
}

/// Whether a cell's inputs go through the run's folder: those of cells in fresh processes
/// (a shared process keeps them in memory, and gigabytes need not touch the disk).
pub fn shares(cell: &Cell) -> bool {
    cell.knobs.process.fresh.is_some()
}

/// A cell's inputs read (or drawn) on another thread, handed to the worker's cache later:
/// a fresh process reads its first cell's inputs while its CUDA context is created.
pub struct Prefetched {
    point: String,
    args: Vec<ArgValue>,
    sets: Vec<(u64, Result<Drawn, Failure>)>,
}

impl Prefetched {
    /// Reads every input set `cell` will ask the cache for, as [`InputCache::get`] would.
    pub fn read(cell: &Cell, dir: Option<&Path>) -> Prefetched {
        let dir = dir.filter(|_| shares(cell));
        let args = &cell.launch.args;
        let (sets, fresh) = seeds_of(cell);
        Prefetched {
            point: cell.point_key(),
            args: args.clone(),
            sets: (sets.into_iter().chain(fresh))
                .map(|seed| (seed, shared_inputs(dir, args, seed)))
                .collect(),
        }
    }
}

/// Inputs already drawn for recent kernels and sweep points: in this worker, or by an
/// earlier process of the run (in the run's cache folder). Drawing 1 GiB of random floats
/// takes about a second, longer than most cells' samples and than a fresh process's start;
/// and rounds interleaved over the points come back to each point once per round, so the
/// sets of several points are kept, the least recently used let go beyond [`KEPT_BYTES`].
#[derive(Default)]
pub struct InputCache {
    /// Each set by its point, arguments and seed, the most recently used last.
    sets: Vec<(SetKey, HostInputs)>,
    /// The run's folder shared with its other processes.
    dir: Option<PathBuf>,
}

/// What a set of inputs is drawn for: a point, its arguments as evaluated, a seed.
type SetKey = (String, Vec<ArgValue>, u64);

/// The host memory kept sets may take together; the set just asked for is kept whatever
/// its size.
const KEPT_BYTES: usize = 4 << 30;

impl InputCache {
    /// A cache holding what `prefetched` read, as if it had drawn it (a failed read is
    /// left for [`InputCache::get`] to meet and report).
    pub fn new(dir: Option<PathBuf>, prefetched: Option<Prefetched>) -> Self {
        let Some(p) = prefetched else {
            return InputCache {
                dir,
                ..Default::default()
            };
        };
        let key = |seed| (p.point.clone(), p.args.clone(), seed);
        InputCache {
            sets: (p.sets.into_iter())
                .filter_map(|(seed, set)| Some((key(seed), Rc::new(set.ok()?))))
                .collect(),
            dir,
        }
    }

    /// `share`: read and store them in the run's folder (see [`shares`]).
    pub fn get(
        &mut self,
        point: &str,
        args: &[ArgValue],
        seed: u64,
        share: bool,
    ) -> Result<HostInputs, Failure> {
        let found =
            (self.sets.iter()).position(|((p, a, s), _)| p == point && a == args && *s == seed);
        let set = match found {
            Some(i) => self.sets.remove(i).1,
            None => {
                let dir = self.dir.as_deref().filter(|_| share);
                Rc::new(shared_inputs(dir, args, seed)?)
            }
        };
        self.sets
            .push(((point.to_string(), args.to_vec(), seed), set.clone()));
        self.let_go(KEPT_BYTES);
        Ok(set)
    }

    /// Lets the least recently used sets go until the rest fit `cap` bytes.
    fn let_go(&mut self, cap: usize) {
        let bytes = |set: &HostInputs| set.iter().flatten().map(Vec::len).sum::<usize>();
        let mut total: usize = self.sets.iter().map(|(_, set)| bytes(set)).sum();
        while total > cap && self.sets.len() > 1 {
            total -= bytes(&self.sets.remove(0).1);
        }
    }
}

/// The inputs of `args` drawn with `seed`: read where an earlier process stored them, else
/// drawn and stored. The file is named by the arguments as evaluated and the seed.
fn shared_inputs(dir: Option<&Path>, args: &[ArgValue], seed: u64) -> Result<Drawn, Failure> {
    let described = serde_json::to_vec(args).expect("arguments serialize");
    let file = shared::file(dir, &[&described, &seed.to_le_bytes()], "inputs");
    let lens: Vec<Option<usize>> = args
        .iter()
        .map(|a| match a {
            ArgValue::Buffer {
                dtype, len, init, ..
            } if !init.is_written() => Some(len * dtype.size()),
            _ => None,
        })
        .collect();
    let pieces: Vec<usize> = lens.iter().flatten().copied().collect();
    if let Some(read) = shared::read_pieces(file.as_deref(), &pieces) {
        let mut read = read.into_iter();
        return Ok(lens.iter().map(|l| l.and_then(|_| read.next())).collect());
    }
    let drawn = draw_inputs(args, seed)?;
    if !pieces.is_empty() {
        let parts: Vec<&[u8]> = drawn.iter().flatten().map(Vec::as_slice).collect();
        shared::write(file.as_deref(), &parts.concat());
    }
    Ok(drawn)
}

/// FNV-1a: a stable seed from a cell's point, the same on every machine and toolchain.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ *b as u64).wrapping_mul(0x100000001b3)
    })
}

/// The initial contents of each input buffer: uniform and normal ones in chunks drawn on
/// every core, each chunk from its own generator seeded by `seed`, the argument and the
/// chunk (a GiB of floats took 2.4 s on one core); a pointer chase from one generator
/// seeded with `seed`.
fn draw_inputs(args: &[ArgValue], seed: u64) -> Result<Drawn, Failure> {
    let mut rng = SmallRng::seed_from_u64(seed);
    args.iter()
        .enumerate()
        .map(|(arg, a)| match a {
            ArgValue::Buffer {
                dtype, len, init, ..
            } => {
                let (dtype, len) = (*dtype, *len);
                Ok(match init.clone() {
                    Init::Output | Init::Scratch | Init::Reset(_) => None,
                    Init::Npy { path, offset } => {
                        Some(npy_data(&path, offset, len * dtype.size())?)
                    }
                    Init::Chase(stride) => Some(chase(dtype, len, stride as usize, &mut rng)),
                    Init::Uniform(lo, hi) => Some(in_chunks(dtype, len, (seed, arg), |r| {
                        r.random_range(lo..hi)
                    })),
                    Init::Normal(mean, std) => Some(in_chunks(dtype, len, (seed, arg), |r| {
                        mean + std * standard_normal(r)
                    })),
                    Init::Constant(v) => Some(encode_all(dtype, len, || v)),
                    Init::Iota(start, step) => {
                        let mut i = 0.0;
                        Some(encode_all(dtype, len, || {
                            let v = start + step * i;
                            i += 1.0;
                            v
                        }))
                    }
                })
            }
            ArgValue::Scalar { .. } => Ok(None),
        })
        .collect()
}

/// `bytes` of a `.npy` file's data from `offset` (checked against its header when the
/// experiment was).
fn npy_data(path: &str, offset: u64, bytes: usize) -> Result<Vec<u8>, Failure> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f =
        std::fs::File::open(path).map_err(|e| Failure::from(format!("cannot read {path}: {e}")))?;
    let mut data = vec![0u8; bytes];
    f.seek(SeekFrom::Start(offset))
        .and_then(|_| f.read_exact(&mut data))
        .map_err(|e| {
            Failure::from(format!(
                "cannot read {bytes} bytes of data from {path}: {e}"
            ))
        })?;
    Ok(data)
}

/// A pointer chase over `len` elements in lines of `stride`: the first element of each line
/// holds the next line's first index, the lines in one random cycle (Sattolo's shuffle).
fn chase(dtype: Dtype, len: usize, stride: usize, rng: &mut SmallRng) -> Vec<u8> {
    let lines = (len / stride).max(1);
    let mut next: Vec<usize> = (0..lines).collect();
    for i in (1..lines).rev() {
        let j = rng.random_range(0..i);
        next.swap(i, j);
    }
    let mut values = vec![0usize; len];
    for (line, to) in next.iter().enumerate() {
        if line * stride < len {
            values[line * stride] = to * stride;
        }
    }
    let mut out = Vec::with_capacity(len * dtype.size());
    for v in values {
        dtype.push(v as f64, &mut out);
    }
    out
}

/// A standard normal draw (Box-Muller), from two uniform ones.
fn standard_normal(rng: &mut SmallRng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// Elements a chunk of a random input holds: each chunk is drawn by its own generator.
const CHUNK: usize = 1 << 20;

/// `len` values drawn by `value` in chunks of [`CHUNK`], each chunk from a generator seeded
/// by the draw's seed, the argument and the chunk's index, on every core: the same data
/// whatever the number of cores.
fn in_chunks(
    dtype: Dtype,
    len: usize,
    (seed, arg): (u64, usize),
    value: impl Fn(&mut SmallRng) -> f64 + Sync,
) -> Vec<u8> {
    let size = dtype.size();
    let mut out = vec![0u8; len * size];
    let chunks: Vec<(usize, &mut [u8])> = out.chunks_mut(CHUNK * size).enumerate().collect();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per_thread = chunks.len().div_ceil(threads).max(1);
    let mut queue = chunks;
    std::thread::scope(|scope| {
        while !queue.is_empty() {
            let mine: Vec<_> = queue.drain(..per_thread.min(queue.len())).collect();
            let value = &value;
            scope.spawn(move || {
                let mut bytes = Vec::with_capacity(CHUNK * size);
                for (i, chunk) in mine {
                    let key = fnv1a(
                        &[
                            seed.to_le_bytes(),
                            (arg as u64).to_le_bytes(),
                            (i as u64).to_le_bytes(),
                        ]
                        .concat(),
                    );
                    let mut rng = SmallRng::seed_from_u64(key);
                    bytes.clear();
                    for _ in 0..chunk.len() / size {
                        dtype.push(value(&mut rng), &mut bytes);
                    }
                    chunk.copy_from_slice(&bytes);
                }
            });
        }
    });
    out
}

/// `len` values from `next`, each encoded in `dtype` (integers rounded down).
fn encode_all(dtype: Dtype, len: usize, mut next: impl FnMut() -> f64) -> Vec<u8> {
    let mut out = Vec::with_capacity(len * dtype.size());
    for _ in 0..len {
        // Appends in dtype's bytes, with no allocation per element: inputs hold millions.
        dtype.push(next(), &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::Memory;

    #[test]
    fn inputs_are_drawn_once_per_point_and_seed() {
        let args = vec![
            ArgValue::Buffer {
                dtype: Dtype::F32,
                len: 4,
                init: Init::Uniform(1.0, 2.0),
                memory: Memory::Device,
            },
            ArgValue::Buffer {
                dtype: Dtype::F32,
                len: 4,
                init: Init::Output,
                memory: Memory::Device,
            },
            ArgValue::Scalar {
                dtype: Dtype::I32,
                bytes: 4i32.to_ne_bytes().to_vec(),
            },
        ];
        let mut cache = InputCache::default();
        let a = cache.get("k/n=1", &args, 7, true).unwrap();
        assert_eq!(
            a.iter().map(Option::is_some).collect::<Vec<_>>(),
            [true, false, false]
        );
        assert!(Rc::ptr_eq(&a, &cache.get("k/n=1", &args, 7, true).unwrap()));
        // Another seed (a rotation set) draws other data; the same seed draws the same data.
        assert_ne!(a[0], cache.get("k/n=1", &args, 8, true).unwrap()[0]);
        let again = cache.get("k/n=2", &args, 7, true).unwrap();
        assert!(!Rc::ptr_eq(&a, &again) && a[0] == again[0]);
        // Interleaved rounds come back to a point: its sets are still there.
        assert!(Rc::ptr_eq(&a, &cache.get("k/n=1", &args, 7, true).unwrap()));
        assert_eq!(cache.sets.len(), 3);
    }

    #[test]
    fn chunks_drawn_on_every_core_are_the_chunks_drawn_in_turn() {
        let len = 2 * CHUNK + CHUNK / 2;
        let drawn = in_chunks(Dtype::F32, len, (9, 1), |r| r.random_range(0.0..1.0));
        let mut one_core = Vec::new();
        for i in 0..len.div_ceil(CHUNK) {
            let key = [9u64.to_le_bytes(), 1u64.to_le_bytes(), (i as u64).to_le_bytes()];
            let mut rng = SmallRng::seed_from_u64(fnv1a(&key.concat()));
            for _ in 0..CHUNK.min(len - i * CHUNK) {
                Dtype::F32.push(rng.random_range(0.0..1.0), &mut one_core);
            }
        }
        assert!(drawn == one_core);
    }

    #[test]
    fn sets_beyond_the_kept_bytes_go_least_recently_used_first() {
        let args = vec![ArgValue::Buffer {
            dtype: Dtype::U8,
            len: 100,
            init: Init::Constant(0.0),
            memory: Memory::Device,
        }];
        let mut cache = InputCache::default();
        for point in ["a", "b", "a", "c"] {
            cache.get(point, &args, 1, false).unwrap();
        }
        cache.let_go(250);
        let kept: Vec<&str> = cache.sets.iter().map(|((p, ..), _)| p.as_str()).collect();
        assert_eq!(kept, ["a", "c"]);
        // One set larger than the cap is kept alone.
        cache.let_go(10);
        assert_eq!(cache.sets.len(), 1);
    }

    #[test]
    fn a_later_process_reads_the_inputs_an_earlier_one_drew() {
        let dir = tempfile::tempdir().unwrap();
        let args = vec![
            ArgValue::Buffer {
                dtype: Dtype::F32,
                len: 1000,
                init: Init::Uniform(0.0, 1.0),
                memory: Memory::Device,
            },
            ArgValue::Buffer {
                dtype: Dtype::F32,
                len: 1000,
                init: Init::Output,
                memory: Memory::Device,
            },
            ArgValue::Buffer {
                dtype: Dtype::I32,
                len: 10,
                init: Init::Iota(0.0, 1.0),
                memory: Memory::Device,
            },
        ];
        let first = InputCache::new(Some(dir.path().into()), None)
            .get("k/n=1", &args, 5, true)
            .unwrap();
        let stored: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(stored.len(), 1, "one file per point and seed");
        let later = InputCache::new(Some(dir.path().into()), None)
            .get("k/n=1", &args, 5, true)
            .unwrap();
        assert_eq!(*first, *later);
        assert_eq!(*later, draw_inputs(&args, 5).unwrap());
        let other = InputCache::new(Some(dir.path().into()), None)
            .get("k/n=1", &args, 6, true)
            .unwrap();
        assert_ne!(*first, *other, "another seed is drawn anew");
    }

    #[test]
    fn a_cache_serves_what_was_read_beside_the_context() {
        let args = vec![ArgValue::Buffer {
            dtype: Dtype::F32,
            len: 2,
            init: Init::Uniform(0.0, 1.0),
            memory: Memory::Device,
        }];
        let read = vec![Some(vec![7u8; 8])];
        let prefetched = Prefetched {
            point: "k/n=1".into(),
            args: args.clone(),
            sets: vec![
                (5, Ok(read.clone())),
                (6, Err(Failure::from("unreadable".to_string()))),
            ],
        };
        let mut cache = InputCache::new(None, Some(prefetched));
        assert_eq!(*cache.get("k/n=1", &args, 5, false).unwrap(), read);
        // A set the other thread could not read is drawn as usual.
        let drawn = cache.get("k/n=1", &args, 6, false).unwrap();
        assert_eq!(*drawn, draw_inputs(&args, 6).unwrap());
    }

    #[test]
    fn a_npy_init_reads_the_files_data() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.npy");
        std::fs::write(
            &path,
            crate::experiment::npy::npy_f32("(4,)", &[1.0, 2.0, 3.0, 4.0]),
        )
        .unwrap();
        let args = [ArgValue::Buffer {
            dtype: Dtype::F32,
            len: 4,
            init: Init::Npy {
                path: path.to_string_lossy().into_owned(),
                offset: crate::experiment::npy::header(&path).unwrap().offset,
            },
            memory: Memory::Device,
        }];
        let data = draw_inputs(&args, 1).unwrap();
        let floats: Vec<f32> = data[0]
            .as_ref()
            .unwrap()
            .chunks(4)
            .map(|c| f32::from_ne_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(floats, [1.0, 2.0, 3.0, 4.0]);
        std::fs::remove_file(&path).unwrap();
        assert!(draw_inputs(&args, 1)
            .unwrap_err()
            .message
            .contains("cannot read"));
    }

    #[test]
    fn a_chase_visits_every_line_once_before_it_repeats() {
        let mut rng = SmallRng::seed_from_u64(3);
        let bytes = chase(Dtype::U32, 64, 4, &mut rng);
        let v: Vec<usize> = bytes
            .chunks(4)
            .map(|c| u32::from_ne_bytes(c.try_into().unwrap()) as usize)
            .collect();
        let (mut at, mut seen) = (0, vec![]);
        for _ in 0..16 {
            seen.push(at);
            at = v[at];
            assert_eq!(at % 4, 0, "lines start at multiples of the stride");
        }
        assert_eq!(at, 0, "one cycle of 16 lines");
        seen.sort();
        assert_eq!(seen, (0..16).map(|l| l * 4).collect::<Vec<_>>());
    }

    #[test]
    fn seeds_are_stable() {
        assert_eq!(fnv1a(b""), 0xcbf29ce484222325);
        assert_ne!(fnv1a(b"matmul/n=512"), fnv1a(b"matmul/n=1024"));
    }

    #[test]
    fn every_init_draws_what_it_says() {
        let buf = |init| ArgValue::Buffer {
            dtype: Dtype::F32,
            len: 20_000,
            init,
            memory: Memory::Device,
        };
        let floats = |b: &[u8]| -> Vec<f32> {
            b.chunks(4)
                .map(|c| f32::from_ne_bytes(c.try_into().unwrap()))
                .collect()
        };
        let all = draw_inputs(
            &[
                buf(Init::Normal(5.0, 2.0)),
                buf(Init::Constant(1.5)),
                buf(Init::Iota(10.0, 2.0)),
            ],
            3,
        )
        .unwrap();
        let normal = floats(all[0].as_ref().unwrap());
        let mean = normal.iter().map(|x| *x as f64).sum::<f64>() / normal.len() as f64;
        let var = normal
            .iter()
            .map(|x| (*x as f64 - mean).powi(2))
            .sum::<f64>()
            / normal.len() as f64;
        assert!(
            (mean - 5.0).abs() < 0.1 && (var.sqrt() - 2.0).abs() < 0.1,
            "{mean} {var}"
        );
        assert!(floats(all[1].as_ref().unwrap()).iter().all(|x| *x == 1.5));
        assert_eq!(&floats(all[2].as_ref().unwrap())[..3], &[10.0, 12.0, 14.0]);
    }

    #[test]
    fn random_inputs_stay_in_range_and_are_not_zero() {
        let mut rng = SmallRng::seed_from_u64(1);
        let b = encode_all(Dtype::F32, 1000, || rng.random_range(0.0..100.0));
        let v: Vec<f32> = b
            .chunks(4)
            .map(|c| f32::from_ne_bytes(c.try_into().unwrap()))
            .collect();
        assert!(v.iter().all(|x| (0.0..100.0).contains(x)));
        assert!(v.iter().filter(|x| **x == 0.0).count() < 2);
    }
}
