//! A cell's input data drawn from its `init`s: random (uniform, normal) in chunks on every
//! core, constants and ranges, pointer chases, `.npy` files.

use super::cores;
use super::failure::Failure;
use crate::experiment::{ArgValue, Dtype, Init};
use rand::{rngs::SmallRng, Rng, SeedableRng};

/// Each argument's initial bytes (None: not an input).
pub(super) type Drawn = Vec<Option<Vec<u8>>>;

/// FNV-1a: a stable seed from a cell's point, the same on every machine and toolchain.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ *b as u64).wrapping_mul(0x100000001b3)
    })
}

/// The initial contents of each input buffer: uniform and normal ones drawn in chunks on
/// every core ([`fill_random`]); a pointer chase from one generator seeded with `seed`.
pub(super) fn draw_inputs(args: &[ArgValue], seed: u64) -> Result<Drawn, Failure> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut random = Vec::new();
    let mut drawn = Vec::with_capacity(args.len());
    for (arg, a) in args.iter().enumerate() {
        let ArgValue::Buffer {
            dtype, len, init, ..
        } = a
        else {
            drawn.push(None);
            continue;
        };
        let (dtype, len) = (*dtype, *len);
        let mut draw = |dist| {
            random.push((arg, dtype, dist));
            Some(vec![0u8; len * dtype.size()])
        };
        drawn.push(match init.clone() {
            Init::Output | Init::Scratch | Init::Reset(_) => None,
            Init::Npy { path, offset } => Some(npy_data(&path, offset, len * dtype.size())?),
            Init::Chase(stride) => Some(chase(dtype, len, stride as usize, &mut rng)),
            Init::Uniform(lo, hi) => draw(Random::Uniform(lo, hi)),
            Init::Normal(mean, std) => draw(Random::Normal(mean, std)),
            Init::Constant(v) => Some(encode_all(dtype, len, || v)),
            Init::Iota(start, step) => {
                let mut i = 0.0;
                Some(encode_all(dtype, len, || {
                    let v = start + step * i;
                    i += 1.0;
                    v
                }))
            }
        });
    }
    fill_random(&mut drawn, &random, seed);
    Ok(drawn)
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

/// The distribution of a random input's values.
#[derive(Debug, Clone, Copy)]
enum Random {
    Uniform(f64, f64),
    Normal(f64, f64),
}

impl Random {
    fn sample(self, rng: &mut SmallRng) -> f64 {
        match self {
            Random::Uniform(lo, hi) => rng.random_range(lo..hi),
            Random::Normal(mean, std) => mean + std * standard_normal(rng),
        }
    }
}

/// One chunk of a random input, to be drawn into its place.
struct Chunk<'a> {
    key: u64,
    dtype: Dtype,
    dist: Random,
    out: &'a mut [u8],
}

impl Chunk<'_> {
    fn fill(self) {
        let mut rng = SmallRng::seed_from_u64(self.key);
        for element in self.out.chunks_exact_mut(self.dtype.size()) {
            self.dtype.write(self.dist.sample(&mut rng), element);
        }
    }
}

/// Draws the `random` inputs (argument, type, distribution) of `drawn` in chunks of
/// [`CHUNK`], each from a generator seeded by the draw's seed, the argument and the chunk's
/// index: the same data whatever the number of cores. Every input's chunks share one pool
/// of threads (a matmul's two inputs of one chunk each draw side by side), and each is
/// drawn straight into its place: fresh pages, touched once, cost more than the draw (a GiB
/// of floats took 2.4 s on one core).
fn fill_random(drawn: &mut Drawn, random: &[(usize, Dtype, Random)], seed: u64) {
    let mut chunks = Vec::new();
    for (arg, data) in drawn.iter_mut().enumerate() {
        let found = random.iter().find(|r| r.0 == arg);
        let (Some(&(_, dtype, dist)), Some(data)) = (found, data) else {
            continue;
        };
        let pieces = data.chunks_mut(CHUNK * dtype.size()).enumerate();
        chunks.extend(pieces.map(|(i, out)| Chunk {
            key: chunk_seed(seed, arg, i),
            dtype,
            dist,
            out,
        }));
    }
    cores::each(chunks, Chunk::fill);
}

/// The seed of chunk `chunk` of argument `arg` in a draw seeded with `seed`.
fn chunk_seed(seed: u64, arg: usize, chunk: usize) -> u64 {
    let key = [seed, arg as u64, chunk as u64].map(u64::to_le_bytes);
    fnv1a(&key.concat())
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
    fn chunks_drawn_on_every_core_are_the_chunks_drawn_in_turn() {
        let len = 2 * CHUNK + CHUNK / 2;
        let args = [
            ArgValue::Scalar {
                dtype: Dtype::I32,
                bytes: vec![0; 4],
            },
            ArgValue::Buffer {
                dtype: Dtype::F32,
                len,
                init: Init::Uniform(0.0, 1.0),
                memory: Memory::Device,
            },
        ];
        let drawn = draw_inputs(&args, 9).unwrap();
        let mut one_core = Vec::new();
        for i in 0..len.div_ceil(CHUNK) {
            let key = [
                9u64.to_le_bytes(),
                1u64.to_le_bytes(),
                (i as u64).to_le_bytes(),
            ];
            let mut rng = SmallRng::seed_from_u64(fnv1a(&key.concat()));
            for _ in 0..CHUNK.min(len - i * CHUNK) {
                Dtype::F32.push(rng.random_range(0.0..1.0), &mut one_core);
            }
        }
        assert!(drawn[0].is_none());
        assert!(drawn[1].as_deref() == Some(&one_core[..]));
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
