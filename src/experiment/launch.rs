//! A kernel's launch evaluated at one sweep point: grid, block, shared memory and arguments,
//! checked against the device's limits.

use super::arg::{Arg, ArgKind, ArgValue, Memory};
use super::error::BadValue;
use super::expr::{self, DeviceFacts, NumExpr, Scope};
use super::schema::{Dtype, Init};
use super::tolerance::Tolerances;
use serde::{Deserialize, Serialize};

/// A kernel's launch with every expression evaluated for one sweep point and device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchSpec {
    /// Bytes read and written, and floating-point operations, per launch, where declared.
    #[serde(default)]
    pub bytes: Option<f64>,
    #[serde(default)]
    pub flops: Option<f64>,
    /// Bytes read and bytes written, where the kernel declares them apart (`reads`,
    /// `writes`, one left out counting 0): `bytes` is their sum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reads_writes: Option<(f64, f64)>,
    /// NVRTC options this point compiles the kernel with, beyond the architecture.
    #[serde(default)]
    pub options: Vec<String>,
    /// The entry at this point where it takes the sweep (`softmax<{{ T }}>`); empty: the
    /// kernel's own.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub entry: String,
    /// The entries of the kernel's steps at this point where one takes the sweep
    /// (`normalize<{{ dtype | ctype }}>`); empty: the steps' own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub step_entries: Vec<String>,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
    pub args: Vec<ArgValue>,
    pub check_dims: Vec<i64>,
    /// The check's tolerances at this point, where the experiment gives them.
    #[serde(default)]
    pub tolerances: Tolerances,
    /// The launch shape of each of the kernel's steps at this point.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<Shape>,
}

impl LaunchSpec {
    /// Whether a buffer is set before every launch (`reset = ...`).
    pub fn resets_each_launch(&self) -> bool {
        (self.args.iter()).any(|a| {
            matches!(
                a,
                ArgValue::Buffer {
                    init: super::Init::Reset(_),
                    ..
                }
            )
        })
    }

    /// Bytes of all its buffers.
    pub fn buffer_bytes(&self) -> u64 {
        self.bytes_where(|_| true)
    }

    /// Bytes of its buffers in device memory (host memory is not the device's to give).
    pub fn device_bytes(&self) -> u64 {
        self.bytes_where(|m| !m.on_host())
    }

    fn bytes_where(&self, take: impl Fn(Memory) -> bool) -> u64 {
        self.args
            .iter()
            .map(|a| match a {
                ArgValue::Buffer {
                    dtype, len, memory, ..
                } if take(*memory) => (*len as u64).saturating_mul(dtype.size() as u64),
                _ => 0,
            })
            .fold(0u64, u64::saturating_add)
    }
}

/// The memset that resets a buffer of `dtype` to `value` before each launch, as the bytes
/// the driver sets at a time (1, 2 or 4) and the value of each such unit (its low bytes):
/// the value encoded exactly in the type, in the narrowest unit that repeats it.
pub fn reset_memset(dtype: super::Dtype, value: f64) -> Result<(usize, u32), BadValue> {
    let number = if value.fract() == 0.0 && value.abs() < 1e30 {
        expr::Number::Int(value as i128)
    } else {
        expr::Number::Float(value)
    };
    let element = super::scalar::encode(dtype, number)?;
    let repeats = |unit: usize| {
        unit <= element.len()
            && element.len().is_multiple_of(unit)
            && element.chunks(unit).all(|c| c == &element[..unit])
    };
    let unit = [1, 2, 4].into_iter().find(|&u| repeats(u)).ok_or_else(|| {
        BadValue(format!(
            "{value} in {} has two different 4-byte halves, and the driver sets at most 4 bytes at a time: reset an 8-byte buffer to 0 or -1, or use a 4-byte type",
            dtype.key()
        ))
    })?;
    let mut word = [0u8; 4];
    word[..unit].copy_from_slice(&element[..unit]);
    Ok((unit, u32::from_ne_bytes(word)))
}

/// Which expression of a kernel an evaluation error is about, so it can be located.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Part {
    Grid(usize),
    Block(usize),
    Shared,
    Arg(usize),
    /// A buffer's `init`, where it takes the sweep.
    Init(usize),
    CheckDim(usize),
    /// The kernel as a whole (a limit over all its buffers).
    Whole,
}

/// A launch that cannot be made at a point: where, what, and whether an expression failed
/// (its fix: what expressions may use) or gave a value the device or a type cannot take
/// (its fix: the limit the message names).
#[derive(Debug)]
pub struct Unmade {
    pub part: Part,
    pub why: BadValue,
    pub expression: bool,
}

impl Unmade {
    fn expression(part: Part, why: BadValue) -> Unmade {
        Unmade {
            part,
            why,
            expression: true,
        }
    }

    fn limit(part: Part, why: BadValue) -> Unmade {
        Unmade {
            part,
            why,
            expression: false,
        }
    }
}

/// The written expressions of a kernel's launch.
pub struct LaunchExprs<'a> {
    pub grid: &'a [NumExpr],
    pub block: &'a [NumExpr],
    pub shared_bytes: &'a NumExpr,
    pub args: &'a [Arg],
    pub check_dims: &'a [NumExpr],
}

/// Evaluates a launch at one point, checked against the device's limits.
pub fn evaluate(
    e: &LaunchExprs,
    point: &super::Point,
    facts: &DeviceFacts,
) -> Result<LaunchSpec, Unmade> {
    let scope = super::scope(point, facts);
    let int = |x: &NumExpr, part: Part| {
        expr::eval_int(x, &scope).map_err(|m| Unmade::expression(part, m))
    };
    let ints = |exprs: &[NumExpr], part: fn(usize) -> Part| {
        exprs
            .iter()
            .enumerate()
            .map(|(i, x)| int(x, part(i)))
            .collect::<Result<Vec<i64>, _>>()
    };
    let (grid, block, shared) = launch_shape(
        &ints(e.grid, Part::Grid)?,
        &ints(e.block, Part::Block)?,
        int(e.shared_bytes, Part::Shared)?,
        facts,
    )?;
    let args = (e.args.iter().enumerate())
        .map(|(i, a)| arg_at(a, i, &scope, facts))
        .collect::<Result<Vec<_>, _>>()?;
    managed_fits(e.args, &args, facts)?;
    let check_dims = e
        .check_dims
        .iter()
        .enumerate()
        .map(|(i, d)| match int(d, Part::CheckDim(i))? {
            v if v >= 1 => Ok(v),
            v => Err(Unmade::limit(
                Part::CheckDim(i),
                BadValue(format!("a check dimension is {v}, not positive")),
            )),
        })
        .collect::<Result<_, _>>()?;
    let spec = LaunchSpec {
        bytes: None,
        reads_writes: None,
        flops: None,
        options: vec![],
        entry: String::new(),
        step_entries: Vec::new(),
        grid,
        block,
        shared_bytes: shared,
        args,
        check_dims,
        tolerances: Tolerances::default(),
        steps: vec![],
    };
    if spec.device_bytes() > facts.mem_bytes as u64 {
        return Err(Unmade::limit(
            Part::Whole,
            BadValue(format!(
                "its buffers need {} bytes of device memory, more than the device's {}",
                spec.device_bytes(),
                facts.mem_bytes
            )),
        ));
    }
    Ok(spec)
}

/// Argument `i`, `a`, at one point: a buffer's type, init and length, or a scalar's value
/// encoded in its type.
fn arg_at(a: &Arg, i: usize, scope: &Scope, facts: &DeviceFacts) -> Result<ArgValue, Unmade> {
    Ok(match &a.kind {
        ArgKind::Buffer {
            dtype,
            len,
            init,
            memory,
        } => {
            let dtype = &dtype
                .at(scope)
                .map_err(|m| Unmade::expression(Part::Arg(i), m))?;
            let init = &init.at(scope).map_err(|m| {
                Unmade::expression(Part::Init(i), BadValue(format!("buffer `{}`: {m}", a.name)))
            })?;
            let n = expr::eval_int(len, scope).map_err(|m| Unmade::expression(Part::Arg(i), m))?;
            let len = usize::try_from(n).map_err(|_| {
                Unmade::limit(
                    Part::Arg(i),
                    BadValue(format!("buffer `{}` has a negative length {n}", a.name)),
                )
            })?;
            buffer_fits(&a.name, i, *dtype, init, len, facts)?;
            ArgValue::Buffer {
                dtype: *dtype,
                len,
                init: init.clone(),
                memory: *memory,
            }
        }
        ArgKind::Scalar { dtype, value } => {
            let dtype = &dtype
                .at(scope)
                .map_err(|m| Unmade::expression(Part::Arg(i), m))?;
            let v =
                expr::eval_exact(value, scope).map_err(|m| Unmade::expression(Part::Arg(i), m))?;
            ArgValue::Scalar {
                dtype: *dtype,
                bytes: super::scalar::encode(*dtype, v).map_err(|m| {
                    Unmade::limit(Part::Arg(i), BadValue(format!("scalar `{}`: {m}", a.name)))
                })?,
            }
        }
    })
}

/// Buffer `i`, `name`, holds what its init writes (a chase's indices, a reset's value,
/// every value of its distribution) and fits in the device's memory.
fn buffer_fits(
    name: &str,
    i: usize,
    dtype: Dtype,
    init: &Init,
    len: usize,
    facts: &DeviceFacts,
) -> Result<(), Unmade> {
    if let Init::Chase(_) = init {
        // The chase stores indices: an integer type that holds the last one.
        let fits = dtype
            .int_range()
            .is_some_and(|(_, hi)| (len as i128).saturating_sub(1) <= hi);
        if !fits {
            return Err(Unmade::limit(
                Part::Init(i),
                BadValue(format!("buffer `{name}`: a chase of {len} elements needs an integer type that holds index {}, not {}", len.saturating_sub(1), dtype.key())),
            ));
        }
    }
    if let Init::Reset(v) = init {
        reset_memset(dtype, *v).map_err(|m| {
            Unmade::limit(
                Part::Init(i),
                BadValue(format!("buffer `{name}`: reset {m}")),
            )
        })?;
    }
    let (lowest, highest) = dtype.value_range();
    if let Some((lo, hi)) = init
        .extremes(len, dtype)
        .filter(|(lo, hi)| !(lo.is_finite() && hi.is_finite() && *lo >= lowest && *hi <= highest))
    {
        return Err(Unmade::limit(
            Part::Init(i),
            BadValue(format!(
                "buffer `{name}`: its init writes values from {} to {}, beyond what {} holds ({} to {})",
                bound(lo),
                bound(hi),
                dtype.key(),
                bound(lowest),
                bound(highest)
            )),
        ));
    }
    if (len as u128) * (dtype.size() as u128) > facts.mem_bytes as u128 {
        return Err(Unmade::limit(
            Part::Arg(i),
            BadValue(format!(
                "buffer `{name}` of {len} elements is larger than the device's memory"
            )),
        ));
    }
    Ok(())
}

/// The managed buffers together fit in the device's memory (a shared GPU can stall beyond
/// it); an error names the first managed one of the `declared` arguments.
fn managed_fits(declared: &[Arg], args: &[ArgValue], facts: &DeviceFacts) -> Result<(), Unmade> {
    let managed = super::arg::managed_bytes(args);
    if managed > facts.mem_bytes as u128 {
        let first = declared
            .iter()
            .position(|a| {
                matches!(
                    a.kind,
                    ArgKind::Buffer {
                        memory: Memory::Managed,
                        ..
                    }
                )
            })
            .unwrap_or(0);
        return Err(Unmade::limit(
            Part::Arg(first),
            BadValue(format!("the managed buffers take {managed} bytes together, more than the device's memory (a run also refuses more than the card has free): managed memory beyond it can stall a shared GPU")),
        ));
    }
    Ok(())
}

/// A launch's grid, block and dynamic shared memory bytes.
pub type Shape = ([u32; 3], [u32; 3], u32);

/// A launch's grid, block and dynamic shared memory, checked against the device's limits.
pub fn launch_shape(
    grid: &[i64],
    block: &[i64],
    shared: i64,
    facts: &DeviceFacts,
) -> Result<Shape, Unmade> {
    let dims = |values: &[i64], what: &str, max: [i64; 3], part: fn(usize) -> Part| {
        let mut d = [1u32; 3];
        for (i, &v) in values.iter().enumerate() {
            if v < 1 || v > max[i] {
                return Err(Unmade::limit(
                    part(i),
                    BadValue(format!(
                        "{what} dimension {} is {v}, but the device allows 1 to {}",
                        ["x", "y", "z"][i],
                        max[i]
                    )),
                ));
            }
            d[i] = v as u32;
        }
        Ok(d)
    };
    let grid = dims(grid, "grid", facts.max_grid, Part::Grid)?;
    let block = dims(block, "block", facts.max_block, Part::Block)?;
    let threads: i64 = block.iter().map(|&b| i64::from(b)).product();
    if threads > facts.max_threads_per_block {
        return Err(Unmade::limit(
            Part::Block(0),
            BadValue(format!(
                "a block of {threads} threads is more than the device's {} per block",
                facts.max_threads_per_block
            )),
        ));
    }
    if shared < 0 || shared > facts.max_shared_bytes {
        return Err(Unmade::limit(
            Part::Shared,
            BadValue(format!(
                "shared_bytes is {shared}, but a block may have 0 to {} bytes of dynamic shared memory",
                facts.max_shared_bytes
            )),
        ));
    }
    Ok((grid, block, shared as u32))
}

/// A value's bound as a person reads it: plainly where it is of a size to (`-128`, `65504`,
/// `0.5`), else in e notation (`3.4028234663852886e38`).
fn bound(v: f64) -> String {
    match v.abs() {
        a if a < 1e15 && v.fract() == 0.0 => format!("{v:.0}"),
        a if (1e-4..1e15).contains(&a) => format!("{v}"),
        _ => format!("{v:e}"),
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_bound_reads_as_a_number_of_its_size() {
        assert_eq!(super::bound(-128.0), "-128");
        assert_eq!(super::bound(65504.0), "65504");
        assert_eq!(super::bound(0.5), "0.5");
        assert_eq!(super::bound(f64::from(f32::MAX)), "3.4028234663852886e38");
    }

    #[test]
    fn a_reset_value_takes_the_narrowest_memset_that_repeats_it() {
        use crate::experiment::Dtype;
        assert_eq!(reset_memset(Dtype::U64, 0.0), Ok((1, 0)));
        assert_eq!(reset_memset(Dtype::I32, -1.0), Ok((1, 0xFF)));
        assert_eq!(reset_memset(Dtype::F16, 1.0), Ok((2, 0x3C00)));
        assert_eq!(reset_memset(Dtype::F32, 1.5), Ok((4, 1.5f32.to_bits())));
        assert_eq!(reset_memset(Dtype::I64, -1.0), Ok((1, 0xFF)));
        assert!(reset_memset(Dtype::F64, 1.0)
            .unwrap_err()
            .0
            .contains("two different 4-byte halves"));
        assert!(reset_memset(Dtype::U8, 256.0).is_err());
    }
    use super::*;
    use crate::experiment::arg::{InitSpec, TypeSpec};
    use crate::experiment::schema::Dtype;

    fn spec(block: [i64; 3], shared: i64, scalar: NumExpr) -> Result<LaunchSpec, Unmade> {
        let args = [
            Arg {
                name: "x".into(),
                kind: ArgKind::Buffer {
                    dtype: TypeSpec::Fixed(Dtype::F32),
                    len: NumExpr::Expr("n".into()),
                    init: InitSpec::Fixed(Init::Output),
                    memory: Memory::Device,
                },
            },
            Arg {
                name: "s".into(),
                kind: ArgKind::Scalar {
                    dtype: TypeSpec::Fixed(Dtype::I32),
                    value: scalar,
                },
            },
        ];
        let block: Vec<NumExpr> = block.iter().map(|b| NumExpr::Int(*b)).collect();
        evaluate(
            &LaunchExprs {
                grid: &[NumExpr::Int(4)],
                block: &block,
                shared_bytes: &NumExpr::Int(shared),
                args: &args,
                check_dims: &[],
            },
            &vec![("n".to_string(), 1024.into())],
            &DeviceFacts::nominal(),
        )
    }

    #[test]
    fn a_launch_within_the_limits_evaluates_exactly() {
        let s = spec([256, 1, 1], 0, NumExpr::Int(-5)).unwrap();
        assert_eq!(s.grid, [4, 1, 1]);
        assert_eq!(s.buffer_bytes(), 4096);
        assert_eq!(
            s.args[1],
            ArgValue::Scalar {
                dtype: Dtype::I32,
                bytes: (-5i32).to_ne_bytes().to_vec()
            }
        );
    }

    #[test]
    fn limits_and_overflowing_scalars_are_errors() {
        assert_eq!(
            spec([2048, 1, 1], 0, NumExpr::Int(1)).unwrap_err().part,
            Part::Block(0)
        );
        assert_eq!(
            spec([64, 32, 1], 0, NumExpr::Int(1)).unwrap_err().part,
            Part::Block(0)
        );
        assert_eq!(
            spec([1, 1, 1], 1_000_000, NumExpr::Int(1))
                .unwrap_err()
                .part,
            Part::Shared
        );
        let Unmade { part, why: msg, .. } =
            spec([1, 1, 1], 0, NumExpr::Expr("2 ** 32".into())).unwrap_err();
        assert_eq!(part, Part::Arg(1));
        assert!(msg.0.contains("does not fit i32"), "{msg}");
        assert!(spec([1, 1, 1], 0, NumExpr::Float(0.5)).is_err());
    }
}
