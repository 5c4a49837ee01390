//! A cell's input data: drawn once for all cells whose inputs are drawn alike (every variant
//! and round at a point, and any kernel or point of the same input buffers), shared with
//! later processes of the run through its cache folder.

pub use super::draw::fnv1a;
use super::draw::{draw_inputs, Drawn};
use super::failure::Failure;
use super::shared;
use crate::experiment::knobs::inputs::Inputs;
use crate::experiment::ArgValue;
use crate::plan::{draw_key, Cell};
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// Initial contents of a cell's input buffers, one per argument (None: not an input), by
/// the seed they were drawn with.
pub type HostInputs = Rc<Drawn>;

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
/// `inputs = "fresh"` draws: the same for every cell of its draw key (`Cell::draw_key`).
pub fn seeds_of(cell: &Cell) -> (Vec<u64>, Vec<u64>) {
    let seed = fnv1a(cell.draw_key().as_bytes());
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
    args: Vec<ArgValue>,
    sets: Vec<(u64, Result<Drawn, Failure>)>,
}

impl Prefetched {
    /// Reads every input set `cell` will ask the cache for, as [`InputCache::get`] would:
    /// the audit's too where `audited` (its draw then costs the audit nothing beyond the
    /// context's creation).
    pub fn read(cell: &Cell, dir: Option<&Path>, audited: bool) -> Prefetched {
        let dir = dir.filter(|_| shares(cell));
        let args = &cell.launch.args;
        let key = draw_key(args);
        let (sets, fresh) = seeds_of(cell);
        let audit = audited.then(|| audit_seed(cell));
        Prefetched {
            args: args.clone(),
            sets: (sets.into_iter().chain(fresh).chain(audit))
                .map(|seed| (seed, shared_inputs(dir, (args, &key), seed)))
                .collect(),
        }
    }
}

/// Inputs already drawn for recent kernels and sweep points: in this worker, or by an
/// earlier process of the run (in the run's cache folder). Drawing 1 GiB of random floats
/// takes about a second, longer than most cells' samples and than a fresh process's start;
/// and rounds interleaved over the points come back to each point once per round, so the
/// sets of several draw keys are kept, the least recently used let go beyond [`KEPT_BYTES`].
#[derive(Default)]
pub struct InputCache {
    /// Each set by its draw key and seed, the most recently used last.
    sets: Vec<(SetKey, HostInputs)>,
    /// The run's folder shared with its other processes.
    dir: Option<PathBuf>,
}

/// What a set of inputs is drawn for: a draw key ([`draw_key`]) and a seed.
type SetKey = (String, u64);

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
        let key = |seed| (draw_key(&p.args), seed);
        InputCache {
            sets: (p.sets.into_iter())
                .filter_map(|(seed, set)| Some((key(seed), Rc::new(set.ok()?))))
                .collect(),
            dir,
        }
    }

    /// The inputs of `args` drawn with `seed`, the same set (`Rc`) for every cell of their
    /// draw key. `share`: read and store them in the run's folder (see [`shares`]).
    pub fn get(
        &mut self,
        args: &[ArgValue],
        seed: u64,
        share: bool,
    ) -> Result<HostInputs, Failure> {
        let key = (draw_key(args), seed);
        let set = match (self.sets.iter()).position(|(k, _)| *k == key) {
            Some(i) => self.sets.remove(i).1,
            None => {
                let dir = self.dir.as_deref().filter(|_| share);
                Rc::new(shared_inputs(dir, (args, &key.0), seed)?)
            }
        };
        self.sets.push((key, set.clone()));
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

/// The inputs of `args` (of draw key `key`) drawn with `seed`: read where an earlier
/// process stored them, else drawn and stored. The file is named by the draw key and seed.
fn shared_inputs(
    dir: Option<&Path>,
    (args, key): (&[ArgValue], &str),
    seed: u64,
) -> Result<Drawn, Failure> {
    let file = shared::file(dir, &[key.as_bytes(), &seed.to_le_bytes()], "inputs");
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
        shared::write_pieces(file.as_deref(), &parts);
    }
    Ok(drawn)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::Memory;
    use crate::experiment::{Dtype, Init};

    #[test]
    fn inputs_are_drawn_once_per_draw_key_and_seed_whatever_the_scalars() {
        let args = |n: i32, init: Init| {
            vec![
                ArgValue::Buffer {
                    dtype: Dtype::F32,
                    len: 4,
                    init,
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
                    bytes: n.to_ne_bytes().to_vec(),
                },
            ]
        };
        let uniform = Init::Uniform(1.0, 2.0);
        let mut cache = InputCache::default();
        let a = cache.get(&args(4, uniform.clone()), 7, true).unwrap();
        assert_eq!(
            a.iter().map(Option::is_some).collect::<Vec<_>>(),
            [true, false, false]
        );
        // Another kernel or point whose inputs are drawn alike (a launch parameter, here a
        // scalar, differs) gets the very same set.
        assert_eq!(
            draw_key(&args(4, uniform.clone())),
            draw_key(&args(8, uniform.clone()))
        );
        assert!(Rc::ptr_eq(
            &a,
            &cache.get(&args(8, uniform.clone()), 7, true).unwrap()
        ));
        // Another seed (a rotation set) draws other data; another init is another draw.
        assert_ne!(
            a[0],
            cache.get(&args(4, uniform.clone()), 8, true).unwrap()[0]
        );
        let normal = cache
            .get(&args(4, Init::Normal(0.0, 1.0)), 7, true)
            .unwrap();
        assert_ne!(a[0], normal[0]);
        assert_ne!(
            draw_key(&args(4, uniform.clone())),
            draw_key(&args(4, Init::Normal(0.0, 1.0)))
        );
        // Interleaved rounds come back to a draw: its sets are still there.
        assert!(Rc::ptr_eq(
            &a,
            &cache.get(&args(4, uniform), 7, true).unwrap()
        ));
        assert_eq!(cache.sets.len(), 3);
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
        for seed in [1, 2, 1, 3] {
            cache.get(&args, seed, false).unwrap();
        }
        cache.let_go(250);
        let kept: Vec<u64> = cache.sets.iter().map(|((_, seed), _)| *seed).collect();
        assert_eq!(kept, [1, 3]);
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
            .get(&args, 5, true)
            .unwrap();
        let stored: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(stored.len(), 1, "one file per draw key and seed");
        let later = InputCache::new(Some(dir.path().into()), None)
            .get(&args, 5, true)
            .unwrap();
        assert_eq!(*first, *later);
        assert_eq!(*later, draw_inputs(&args, 5).unwrap());
        let other = InputCache::new(Some(dir.path().into()), None)
            .get(&args, 6, true)
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
            args: args.clone(),
            sets: vec![
                (5, Ok(read.clone())),
                (6, Err(Failure::from("unreadable".to_string()))),
            ],
        };
        let mut cache = InputCache::new(None, Some(prefetched));
        assert_eq!(*cache.get(&args, 5, false).unwrap(), read);
        // A set the other thread could not read is drawn as usual.
        let drawn = cache.get(&args, 6, false).unwrap();
        assert_eq!(*drawn, draw_inputs(&args, 6).unwrap());
    }

    #[test]
    fn seeds_are_stable() {
        assert_eq!(fnv1a(b""), 0xcbf29ce484222325);
        assert_ne!(fnv1a(b"matmul/n=512"), fnv1a(b"matmul/n=1024"));
    }
}
