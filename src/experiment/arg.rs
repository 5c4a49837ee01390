//! A kernel's arguments: as written (names, types that may come from the sweep, lengths and
//! values as expressions, where buffers live), and as evaluated at one point.

use super::error::BadValue;
use super::expr::{self, NumExpr};
use super::schema::{parse_init, Dtype, Init};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Arg {
    pub name: String,
    pub kind: ArgKind,
}

/// Where a buffer argument lives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Memory {
    /// `cuMemAlloc`: device memory.
    #[default]
    Device,
    /// `cuMemAllocManaged`: unified memory, its inputs written by the host, so that a
    /// kernel's first touch migrates them.
    Managed,
    /// `cuMemHostAlloc(DEVICEMAP)`: page-locked host memory the kernel reads and writes
    /// over the interconnect (zero-copy).
    Mapped,
    /// `cuMemHostAlloc`: page-locked host memory, what copies from and to the host want.
    Pinned,
    /// Ordinary host memory (`malloc`): copies stage it; no kernel can address it.
    Pageable,
}

impl Memory {
    const ALL: [Memory; 5] = [
        Memory::Device,
        Memory::Managed,
        Memory::Mapped,
        Memory::Pinned,
        Memory::Pageable,
    ];

    /// Its name in an experiment file.
    pub fn key(self) -> &'static str {
        match self {
            Memory::Device => "device",
            Memory::Managed => "managed",
            Memory::Mapped => "mapped",
            Memory::Pinned => "pinned",
            Memory::Pageable => "pageable",
        }
    }

    pub fn parse(s: &str) -> Result<Memory, BadValue> {
        Memory::ALL.into_iter().find(|m| m.key() == s).ok_or_else(|| {
            BadValue(format!(
                "unknown memory `{s}`: use \"device\", \"managed\", \"mapped\", \"pinned\" or \"pageable\""
            ))
        })
    }

    /// Whether it is host memory: a copy to or from it crosses the host link.
    pub fn on_host(self) -> bool {
        matches!(self, Memory::Mapped | Memory::Pinned | Memory::Pageable)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum ArgKind {
    Buffer {
        dtype: TypeSpec,
        len: NumExpr,
        init: InitSpec,
        #[serde(default)]
        memory: Memory,
    },
    Scalar {
        dtype: TypeSpec,
        value: NumExpr,
    },
}

/// An argument's type as written: fixed, or taken from the sweep (`"{{ dtype }}"`), so a
/// type can be an axis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum TypeSpec {
    Fixed(Dtype),
    Swept(String),
}

const TYPES: &str = "f16, bf16, f32, f64, i8, u8, i16, u16, i32, u32, i64, u64";

impl TypeSpec {
    /// Reads a type as written; an unknown fixed type is an error naming the known ones.
    pub fn parse(text: &str) -> Result<TypeSpec, BadValue> {
        if text.contains("{{") {
            return Ok(TypeSpec::Swept(text.to_string()));
        }
        Dtype::parse(text)
            .map(TypeSpec::Fixed)
            .ok_or_else(|| BadValue(format!("unknown type `{text}`; types are {TYPES}, or a sweep parameter such as \"{{{{ dtype }}}}\"")))
    }

    pub(super) fn at(&self, scope: &expr::Scope) -> Result<Dtype, BadValue> {
        let template = match self {
            TypeSpec::Fixed(d) => return Ok(*d),
            TypeSpec::Swept(t) => t,
        };
        let text = expr::render(template, scope)?;
        Dtype::parse(&text).ok_or_else(|| {
            BadValue(format!(
                "`{template}` is `{text}` here, not a type ({TYPES})"
            ))
        })
    }
}

/// A buffer's `init` as written: fixed, or taken from the sweep (`"{{ dist }}"`, a
/// data-distribution axis; `"npy(csr_{{ rows }}_vals.npy)"`, a file per point), read at
/// every point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum InitSpec {
    Fixed(Init),
    Swept(String),
}

impl InitSpec {
    /// Reads an init as written; one that uses the sweep is read at each point.
    pub fn parse(text: &str) -> Result<InitSpec, BadValue> {
        if text.contains("{{") {
            return Ok(InitSpec::Swept(text.to_string()));
        }
        parse_init(text).map(InitSpec::Fixed)
    }

    /// Whether the kernel writes the buffer (one from the sweep holds input data).
    pub fn is_written(&self) -> bool {
        matches!(self, InitSpec::Fixed(init) if init.is_written())
    }

    /// The init at one point: an init from the sweep draws or reads input data at every
    /// point, since what the kernel writes and what is checked are the kernel's, not a
    /// point's.
    pub(super) fn at(&self, scope: &expr::Scope) -> Result<Init, BadValue> {
        let template = match self {
            InitSpec::Fixed(init) => return Ok(init.clone()),
            InitSpec::Swept(t) => t,
        };
        let text = expr::render(template, scope)?;
        let init = parse_init(&text)
            .map_err(|m| BadValue(format!("`{template}` is `{text}` here: {m}")))?;
        if init.is_written() {
            return Err(BadValue(format!("`{template}` is `{text}` here, but an init from the sweep must be input data at every point (what the kernel writes is the same at all of them): write init = \"{text}\" without the sweep")));
        }
        Ok(init)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ArgValue {
    Buffer {
        dtype: Dtype,
        len: usize,
        init: Init,
        #[serde(default)]
        memory: Memory,
    },
    /// The scalar's bytes, encoded exactly in its dtype.
    Scalar { dtype: Dtype, bytes: Vec<u8> },
}

/// The bytes of the managed buffers among `args`: what must fit in the device's memory,
/// since managed memory beyond it is evicted and refaulted (a stall on a shared GPU).
pub fn managed_bytes(args: &[ArgValue]) -> u128 {
    (args.iter())
        .map(|a| match a {
            ArgValue::Buffer {
                dtype,
                len,
                memory: Memory::Managed,
                ..
            } => *len as u128 * dtype.size() as u128,
            _ => 0,
        })
        .sum()
}
