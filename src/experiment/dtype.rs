//! Element types of buffers and scalars: their sizes, encodings and default tolerances.

use serde::{Deserialize, Serialize};

/// An element type of a buffer or scalar, as CUDA stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Dtype {
    F16,
    Bf16,
    F32,
    F64,
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
}

impl Dtype {
    /// Every type, in the order the audit's draw kernel numbers them.
    pub const ALL: [Dtype; 12] = [
        Dtype::F16,
        Dtype::Bf16,
        Dtype::F32,
        Dtype::F64,
        Dtype::I8,
        Dtype::U8,
        Dtype::I16,
        Dtype::U16,
        Dtype::I32,
        Dtype::U32,
        Dtype::I64,
        Dtype::U64,
    ];

    /// Its code in the built-in kernels (`kernels/audit.cu`): its place in [`Dtype::ALL`].
    pub fn code(self) -> u32 {
        Dtype::ALL
            .iter()
            .position(|d| *d == self)
            .expect("every type is in Dtype::ALL") as u32
    }

    pub fn key(self) -> &'static str {
        match self {
            Dtype::F16 => "f16",
            Dtype::Bf16 => "bf16",
            Dtype::F32 => "f32",
            Dtype::F64 => "f64",
            Dtype::I8 => "i8",
            Dtype::U8 => "u8",
            Dtype::I16 => "i16",
            Dtype::U16 => "u16",
            Dtype::I32 => "i32",
            Dtype::U32 => "u32",
            Dtype::I64 => "i64",
            Dtype::U64 => "u64",
        }
    }

    /// The type a name such as `"bf16"` names.
    pub fn parse(text: &str) -> Option<Dtype> {
        Dtype::ALL.into_iter().find(|d| d.key() == text.trim())
    }

    /// The CUDA C type it is stored as (the `ctype` filter of entries and options).
    pub fn c_type(self) -> &'static str {
        match self {
            Dtype::F16 => "__half",
            Dtype::Bf16 => "__nv_bfloat16",
            Dtype::F32 => "float",
            Dtype::F64 => "double",
            Dtype::I8 => "signed char",
            Dtype::U8 => "unsigned char",
            Dtype::I16 => "short",
            Dtype::U16 => "unsigned short",
            Dtype::I32 => "int",
            Dtype::U32 => "unsigned int",
            Dtype::I64 => "long long",
            Dtype::U64 => "unsigned long long",
        }
    }

    pub fn size(self) -> usize {
        match self {
            Dtype::I8 | Dtype::U8 => 1,
            Dtype::F16 | Dtype::Bf16 | Dtype::I16 | Dtype::U16 => 2,
            Dtype::F32 | Dtype::I32 | Dtype::U32 => 4,
            Dtype::F64 | Dtype::I64 | Dtype::U64 => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, Dtype::F16 | Dtype::Bf16 | Dtype::F32 | Dtype::F64)
    }

    /// The values the type holds: a float type's finite ones, an integer type's range.
    pub fn value_range(self) -> (f64, f64) {
        let max = match self {
            Dtype::F16 => f64::from(half::f16::MAX),
            Dtype::Bf16 => f64::from(half::bf16::MAX),
            Dtype::F32 => f64::from(f32::MAX),
            Dtype::F64 => f64::MAX,
            int => {
                let (lo, hi) = int.int_range().expect("an integer type");
                return (lo as f64, hi as f64);
            }
        };
        (-max, max)
    }

    /// The range an integer type holds.
    pub fn int_range(self) -> Option<(i128, i128)> {
        Some(match self {
            Dtype::I8 => (i8::MIN.into(), i8::MAX.into()),
            Dtype::U8 => (0, u8::MAX.into()),
            Dtype::I16 => (i16::MIN.into(), i16::MAX.into()),
            Dtype::U16 => (0, u16::MAX.into()),
            Dtype::I32 => (i32::MIN.into(), i32::MAX.into()),
            Dtype::U32 => (0, u32::MAX.into()),
            Dtype::I64 => (i64::MIN.into(), i64::MAX.into()),
            Dtype::U64 => (0, u64::MAX.into()),
            _ => return None,
        })
    }

    /// Writes `v` in this type's bytes into `out` (one element's size): floats rounded to
    /// nearest, integers rounded down and saturated at the type's range.
    pub fn write(self, v: f64, out: &mut [u8]) {
        match self {
            Dtype::F16 => out.copy_from_slice(&half::f16::from_f64(v).to_ne_bytes()),
            Dtype::Bf16 => out.copy_from_slice(&half::bf16::from_f64(v).to_ne_bytes()),
            Dtype::F32 => out.copy_from_slice(&(v as f32).to_ne_bytes()),
            Dtype::F64 => out.copy_from_slice(&v.to_ne_bytes()),
            Dtype::I8 => out.copy_from_slice(&(v.floor() as i8).to_ne_bytes()),
            Dtype::U8 => out.copy_from_slice(&(v.floor() as u8).to_ne_bytes()),
            Dtype::I16 => out.copy_from_slice(&(v.floor() as i16).to_ne_bytes()),
            Dtype::U16 => out.copy_from_slice(&(v.floor() as u16).to_ne_bytes()),
            Dtype::I32 => out.copy_from_slice(&(v.floor() as i32).to_ne_bytes()),
            Dtype::U32 => out.copy_from_slice(&(v.floor() as u32).to_ne_bytes()),
            Dtype::I64 => out.copy_from_slice(&(v.floor() as i64).to_ne_bytes()),
            Dtype::U64 => out.copy_from_slice(&(v.floor() as u64).to_ne_bytes()),
        }
    }

    /// Appends `v` in this type's bytes, as [`Dtype::write`] does.
    pub fn push(self, v: f64, out: &mut Vec<u8>) {
        let start = out.len();
        out.resize(start + self.size(), 0);
        self.write(v, &mut out[start..]);
    }

    /// The integer `v` in this type's bytes, exactly (the caller checked its range).
    pub fn push_int(self, v: i128, out: &mut Vec<u8>) {
        let bytes = v.to_le_bytes();
        match self.int_range() {
            // Little-endian: the low bytes hold the value in two's complement.
            Some(_) if cfg!(target_endian = "little") => {
                out.extend_from_slice(&bytes[..self.size()])
            }
            _ => self.push(v as f64, out),
        }
    }

    /// The value of one element stored in this type.
    pub fn read(self, b: &[u8]) -> f64 {
        let b2 = || -> [u8; 2] { b.try_into().expect("2 bytes") };
        let b4 = || -> [u8; 4] { b.try_into().expect("4 bytes") };
        let b8 = || -> [u8; 8] { b.try_into().expect("8 bytes") };
        match self {
            Dtype::F16 => half::f16::from_ne_bytes(b2()).to_f64(),
            Dtype::Bf16 => half::bf16::from_ne_bytes(b2()).to_f64(),
            Dtype::F32 => f32::from_ne_bytes(b4()) as f64,
            Dtype::F64 => f64::from_ne_bytes(b8()),
            Dtype::I8 => b[0] as i8 as f64,
            Dtype::U8 => b[0] as f64,
            Dtype::I16 => i16::from_ne_bytes(b2()) as f64,
            Dtype::U16 => u16::from_ne_bytes(b2()) as f64,
            Dtype::I32 => i32::from_ne_bytes(b4()) as f64,
            Dtype::U32 => u32::from_ne_bytes(b4()) as f64,
            Dtype::I64 => i64::from_ne_bytes(b8()) as f64,
            Dtype::U64 => u64::from_ne_bytes(b8()) as f64,
        }
    }

    /// Tolerances a reference-kernel check uses where the experiment gives none:
    /// `(rtol, atol)`; for f16 and bf16 those of `torch.testing.assert_close`; for integers
    /// none (exact: a histogram's count off by one is wrong, not close).
    pub fn default_tolerances(self) -> (f64, f64) {
        match self {
            Dtype::F16 => (1e-3, 1e-5),
            Dtype::Bf16 => (1.6e-2, 1e-5),
            Dtype::F32 | Dtype::F64 => (1e-5, 1e-6),
            _ => (0.0, 0.0),
        }
    }

    /// The value of one element of an integer type, exactly (a 64-bit one does not fit an
    /// f64's 53 bits); None for a float type.
    pub fn read_int(self, b: &[u8]) -> Option<i128> {
        let b2 = || -> [u8; 2] { b.try_into().expect("2 bytes") };
        let b4 = || -> [u8; 4] { b.try_into().expect("4 bytes") };
        let b8 = || -> [u8; 8] { b.try_into().expect("8 bytes") };
        Some(match self {
            Dtype::I8 => (b[0] as i8).into(),
            Dtype::U8 => b[0].into(),
            Dtype::I16 => i16::from_ne_bytes(b2()).into(),
            Dtype::U16 => u16::from_ne_bytes(b2()).into(),
            Dtype::I32 => i32::from_ne_bytes(b4()).into(),
            Dtype::U32 => u32::from_ne_bytes(b4()).into(),
            Dtype::I64 => i64::from_ne_bytes(b8()).into(),
            Dtype::U64 => u64::from_ne_bytes(b8()).into(),
            Dtype::F16 | Dtype::Bf16 | Dtype::F32 | Dtype::F64 => return None,
        })
    }
}
