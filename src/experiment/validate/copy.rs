//! A `[[copy]]` table: a copy as a cell's own operation, made a kernel of the experiment
//! whose two buffers (`to`, then `from`) the copy joins, checked byte for byte.

use super::validator::Validator;
use crate::experiment::arg::{Arg, ArgKind, InitSpec, Memory, TypeSpec};
use crate::experiment::error::ConfigError;
use crate::experiment::expr::{self, NumExpr};
use crate::experiment::kernel::{self, Check, CopyOp, Kernel, LaunchExprs};
use crate::experiment::schema::{Dtype, Init, RawCopy};
use crate::experiment::{point_label, Point};
use indexmap::IndexMap;
use toml::Spanned;

/// Copies move 4-byte words: random words are cheap to draw for a GiB, and any size a user
/// asks of a transfer benchmark is a multiple of them.
const WORD: i64 = 4;

impl Validator<'_> {
    pub(super) fn copy(&self, rc: RawCopy, points: &[Point]) -> Result<Kernel, ConfigError> {
        let memory = |m: &Spanned<String>| {
            Memory::parse(m.get_ref())
                .map_err(|e| self.err(m, e).with_hint("a copy's ends are memory kinds"))
        };
        let (to, from) = (memory(&rc.to)?, memory(&rc.from)?);
        if to.on_host() && from.on_host() {
            return Err(self
                .err(&rc.to, "both ends of this copy are host memory")
                .with_hint("a copy moves data to, from or within the device: make one end \"device\" (or \"managed\")"));
        }
        // Checked at every point below to be a whole number of words.
        let words = match rc.bytes.get_ref() {
            NumExpr::Int(b) => NumExpr::Int(b / WORD),
            NumExpr::Float(b) => NumExpr::Float(b / WORD as f64),
            NumExpr::Expr(e) => NumExpr::Expr(format!("({e}) // {WORD}")),
        };
        let buffer = |name: &str, init: Init, memory: Memory| Arg {
            name: name.into(),
            kind: ArgKind::Buffer {
                dtype: TypeSpec::Fixed(Dtype::U32),
                len: words.clone(),
                init: InitSpec::Fixed(init),
                memory,
            },
        };
        let args = vec![
            buffer("to", Init::Output, to),
            buffer("from", Init::Uniform(0.0, 4.0e9), from),
        ];
        let one = [NumExpr::Int(1)];
        let exprs = LaunchExprs {
            grid: &one,
            block: &one,
            shared_bytes: &NumExpr::Int(0),
            args: &args,
            check_dims: &[],
        };
        let (points, base) = self.kernel_points(&IndexMap::new(), points)?;
        let mut launches = Vec::with_capacity(points.len());
        for p in &points {
            let scope = crate::experiment::scope(p, self.facts);
            let bytes =
                expr::eval_int(rc.bytes.get_ref(), &scope).map_err(|m| self.err(&rc.bytes, m))?;
            if bytes < WORD || bytes % WORD != 0 {
                return Err(self
                    .err(&rc.bytes, format!("the copy is {bytes} bytes at {}: a copy moves a positive multiple of {WORD} bytes", point_label(p)))
                    .with_hint("e.g. bytes = \"size\" with size = \"2^12..2^30\""));
            }
            let mut spec = kernel::evaluate(&exprs, p, self.facts)
                .map_err(|u| self.err(&rc.bytes, format!("{} {}", u.why, self.at_point(p))))?;
            // GB/s counts what crosses the memory it is bound by: a copy within the device
            // reads and writes its DRAM.
            let within_device = !to.on_host() && !from.on_host();
            let moved = if within_device { 2 * bytes } else { bytes };
            spec.bytes = Some(moved as f64);
            launches.push(spec);
        }
        Ok(Kernel {
            name: rc.name.into_inner(),
            source: String::new(),
            source_text: String::new(),
            entry: format!("copy {} -> {}", from.key(), to.key()),
            check: Some(Check {
                reference: "copy".into(),
                inputs: vec![1],
                output: 0,
                dims: vec![],
            }),
            args,
            check_kernel: None,
            check_python: None,
            unchecked: false,
            check_only: false,
            expect_caught: false,
            takes: None,
            steps: vec![],
            copy: Some(CopyOp {
                sync: rc.sync.unwrap_or(false),
            }),
            source_dir: String::new(),
            module: None,
            flops_type: None,
            points,
            only_variants: None,
            skipped: vec![],
            base,
            launches,
        })
    }
}
