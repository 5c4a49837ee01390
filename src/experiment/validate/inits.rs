//! Buffers' `.npy` files at every point: each path (which may come from the sweep, a file
//! per point) resolved against the experiment's folder, its header read once, and the file
//! checked to hold exactly the buffer's elements of its type there.

use super::validator::Validator;
use crate::experiment::error::ConfigError;
use crate::experiment::npy::{self, Header};
use crate::experiment::schema::{Init, RawKernel};
use crate::experiment::{ArgValue, InitSpec, LaunchSpec, Point, Sources};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

impl Validator<'_> {
    /// Resolves every `.npy` init of `launches` (one per point of `points`) in place: the
    /// path against the experiment's folder, the data's offset from the header. Left as
    /// written where sources are not read (rendering a stored run).
    pub(super) fn npy_files(
        &self,
        rk: &RawKernel,
        points: &[Point],
        launches: &mut [LaunchSpec],
    ) -> Result<(), ConfigError> {
        if self.sources == Sources::Skip {
            return Ok(());
        }
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let mut headers: HashMap<PathBuf, Header> = HashMap::new();
        for (p, launch) in points.iter().zip(launches.iter_mut()) {
            for (i, a) in launch.args.iter_mut().enumerate() {
                let ArgValue::Buffer {
                    dtype,
                    len,
                    init: Init::Npy { path, offset },
                    ..
                } = a
                else {
                    continue;
                };
                let raw = &rk.args[i];
                let at = raw
                    .init
                    .as_ref()
                    .expect("a buffer read from a file has an init");
                // Where the path takes the sweep, say at which point it is this file.
                let here = match raw.init.as_ref().map(|t| InitSpec::parse(t.get_ref())) {
                    Some(Ok(InitSpec::Swept(_))) => format!(" {}", self.at_point(p)),
                    _ => String::new(),
                };
                let full = dir.join(&*path);
                let header = match headers.get(&full) {
                    Some(h) => h,
                    None => {
                        let h = npy::header(&full).map_err(|m| {
                            self.err(at, format!("{m}{here}"))
                                .with_hint("a .npy path is relative to the experiment file; save the array with numpy.save in C order")
                        })?;
                        headers.entry(full.clone()).or_insert(h)
                    }
                };
                if !npy::fits(header.dtype, *dtype) || *len as u64 != header.count {
                    return Err(self
                        .err(at, format!("`{}` holds {} elements of {}, but buffer `{}` takes {len} of {}{here}", full.display(), header.count, header.dtype.key(), raw.name.get_ref(), dtype.key()))
                        .with_hint("the file must hold exactly the buffer's elements, of its type (bf16 as '<u2' bits)"));
                }
                *offset = header.offset;
                *path = full.to_string_lossy().into_owned();
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::experiment::{ArgValue, ConfigError, DeviceFacts, Experiment, Init, Sources};
    use std::path::Path;

    /// A kernel over `sweep` whose buffer `x` (of `dtype`, `len` elements) has `init`, on
    /// line 11; read from `dir` (sources read) or not.
    fn parse(dir: Option<&Path>, sweep: &str, x: &str) -> Result<Experiment, ConfigError> {
        let text = format!(
            "[experiment]\ntitle = \"t\"\n[sweep]\n{sweep}\n[[kernel]]\nname = \"k\"\nsource = \"k.cu\"\nentry = \"k\"\ngrid = [1]\nblock = [1]\nargs = [\n  {{ name = \"x\", {x} }},\n  {{ name = \"y\", buffer = \"f32\", len = 4, init = \"output\" }},\n]\nunchecked = true\n[[variant]]\nname = \"hot\"\n"
        );
        let (path, sources) = match dir {
            Some(d) => (d.join("e.toml"), Sources::Read),
            None => (Path::new("e.toml").to_path_buf(), Sources::Skip),
        };
        Experiment::parse(&path, &text, &DeviceFacts::nominal(), sources)
    }

    fn inits(e: &Experiment) -> Vec<Init> {
        (e.kernels[0].launches.iter())
            .map(|l| match &l.args[0] {
                ArgValue::Buffer { init, .. } => init.clone(),
                ArgValue::Scalar { .. } => panic!("a buffer"),
            })
            .collect()
    }

    #[test]
    fn an_init_from_the_sweep_is_read_and_checked_at_every_point() {
        let x = r#"buffer = "u32", len = 4, init = "uniform(0, {{ spread }})""#;
        let e = parse(None, "spread = [256, 1]", x).unwrap();
        assert_eq!(
            inits(&e),
            [Init::Uniform(0.0, 256.0), Init::Uniform(0.0, 1.0)]
        );
        assert!(
            !e.kernels[0].writes(0),
            "an init from the sweep is an input"
        );
        let e = parse(
            None,
            "dist = [\"iota\", \"zeros\"]",
            r#"buffer = "f32", len = 4, init = "{{ dist }}""#,
        )
        .unwrap();
        assert_eq!(inits(&e), [Init::Iota(0.0, 1.0), Init::Constant(0.0)]);
        // Each point's init is checked there, the error on the buffer's line.
        let bad = parse(None, "spread = [256, 300]", &x.replace("u32", "u8")).unwrap_err();
        assert_eq!(bad.position.map(|p| p.0), Some(12), "{bad}");
        assert!(
            bad.message.contains("beyond what u8 holds") && bad.message.contains("(at 300, on"),
            "{bad}"
        );
        let bad = parse(
            None,
            "dist = [\"iota\", \"output\"]",
            r#"buffer = "f32", len = 4, init = "{{ dist }}""#,
        )
        .unwrap_err();
        assert_eq!(bad.position.map(|p| p.0), Some(12), "{bad}");
        assert!(bad.message.contains("`{{ dist }}` is `output` here, but an init from the sweep must be input data at every point"), "{bad}");
        let bad = parse(
            None,
            "dist = [\"iota\", \"gauss\"]",
            r#"buffer = "f32", len = 4, init = "{{ dist }}""#,
        )
        .unwrap_err();
        assert!(
            bad.message
                .contains("`{{ dist }}` is `gauss` here: unknown init `gauss`")
                && bad.message.contains("(at gauss, on"),
            "{bad}"
        );
    }

    #[test]
    fn a_npy_path_from_the_sweep_is_a_file_per_point() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("k.cu"),
            "__global__ void k(float* x, float* y) {}",
        )
        .unwrap();
        for rows in [4, 8] {
            let values: Vec<f32> = (0..rows).map(|v| v as f32).collect();
            let npy = crate::experiment::npy::npy_f32(&format!("({rows},)"), &values);
            std::fs::write(dir.path().join(format!("x_{rows}.npy")), npy).unwrap();
        }
        let x = r#"buffer = "f32", len = "rows", init = "npy(x_{{ rows }}.npy)""#;
        let e = parse(Some(dir.path()), "rows = [4, 8]", x).unwrap();
        let file = |rows: u32| {
            dir.path()
                .join(format!("x_{rows}.npy"))
                .to_string_lossy()
                .into_owned()
        };
        assert_eq!(
            inits(&e),
            [
                Init::Npy {
                    path: file(4),
                    offset: 128
                },
                Init::Npy {
                    path: file(8),
                    offset: 128
                }
            ]
        );
        let missing = parse(Some(dir.path()), "rows = [4, 16]", x).unwrap_err();
        assert_eq!(missing.position.map(|p| p.0), Some(12), "{missing}");
        assert!(
            missing.message.contains("x_16.npy") && missing.message.contains("(at 16, on"),
            "{missing}"
        );
        let short = parse(
            Some(dir.path()),
            "rows = [4, 8]",
            &x.replace("len = \"rows\"", "len = 4"),
        )
        .unwrap_err();
        assert!(
            short.message.contains(
                "x_8.npy` holds 8 elements of f32, but buffer `x` takes 4 of f32 (at 8, on"
            ),
            "{short}"
        );
        // Without the sources read (a stored run), the path stays as written.
        let e = parse(None, "rows = [4, 8]", x).unwrap();
        assert_eq!(
            inits(&e)[1],
            Init::Npy {
                path: "x_8.npy".into(),
                offset: 0
            }
        );
    }
}
