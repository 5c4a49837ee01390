//! `first_launch`: what the first launch of a kernel in its process carries. `"prepared"`:
//! the module is loaded and the function looked up before anything is timed, outputs are
//! poisoned by a memset, and only the launch is timed. `"lazy"`: as a runtime-API program
//! (`kernel<<<...>>>`) with lazy loading (the default) sees it: the driver calls the CUDA
//! runtime makes at a program's first launch (load the image as a library, look the kernel
//! up, launch the library's kernel, which loads it into the context) run inside that
//! launch's timed region when no warm-up of the same kernel comes first; an empty warm-up
//! kernel lives in the same image, as the post's does; nothing runs on the GPU before it
//! but the copies that fill the buffers (outputs are poisoned by a copy), and no clock
//! probe runs before it. The worker returns its free heap to the system just before it, so
//! that the driver's allocations there fault fresh pages in as a new program's do. A kernel
//! with more than 48 KiB of dynamic shared memory also makes the call that allows it there,
//! at its loading.

use super::env::Env;
use super::launches::Launches;
use super::queue::Queue;
use super::knob::{Aspect, Key, Knob, Layer};
use crate::experiment::ConfigError;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FirstLaunch {
    #[default]
    Prepared,
    Lazy,
}

impl Knob for FirstLaunch {
    const KEYS: &'static [Key] = &[Key::set(
        "first_launch",
        r#""prepared""#,
        r#"or "lazy": the kernel loads at its first launch, inside its timed region when no
        same-kernel warm-up comes first, through the calls a runtime-API program's
        kernel<<<>>> makes (library load, kernel lookup, launch); nothing runs on the GPU
        before it, and the worker's free heap goes back to the system first"#,
    )];
    const ASPECT: Aspect = Aspect::Method;

    fn read(layer: &Layer) -> Result<Self, ConfigError> {
        let first: FirstLaunch = layer.get("first_launch")?.unwrap_or_default();
        if first == FirstLaunch::Lazy {
            if let Launches::Graph(_) = Launches::read(layer)? {
                return Err(layer
                    .err_at("first_launch", "first_launch = \"lazy\" does not apply to graph = N")
                    .with_hint("capturing a graph launches the kernel before anything is timed"));
            }
            if Queue::read(layer)? != Queue::Idle {
                return Err(layer
                    .err_at(
                        "first_launch",
                        "first_launch = \"lazy\" does not apply to queue = \"saturate\"",
                    )
                    .with_hint("sizing the wait kernel launches the kernel before anything is timed"));
            }
            let vars = Env::read(layer)?.vars;
            if vars.get("CUDA_MODULE_LOADING").map(String::as_str) == Some("EAGER") {
                return Err(layer
                    .err_at(
                        "first_launch",
                        "first_launch = \"lazy\" times the loading that lazy loading puts in a first launch, but env sets CUDA_MODULE_LOADING = \"EAGER\"",
                    )
                    .with_hint("a runtime-API program under EAGER loads its kernels at start-up: use first_launch = \"prepared\" there"));
            }
        }
        Ok(first)
    }

    fn describe(&self) -> Option<String> {
        match self {
            FirstLaunch::Prepared => None,
            FirstLaunch::Lazy => Some(
                "lazy loading (the kernel loads at its first launch)"
                    .into(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::read;
    use super::*;

    #[test]
    fn lazy_loading_excludes_what_launches_before_the_timed_region() {
        assert_eq!(read::<FirstLaunch>("").unwrap(), FirstLaunch::Prepared);
        assert_eq!(
            read::<FirstLaunch>("first_launch = \"lazy\"").unwrap(),
            FirstLaunch::Lazy
        );
        assert!(read::<FirstLaunch>("first_launch = \"lazy\"\ngraph = 10").is_err());
        assert!(read::<FirstLaunch>("first_launch = \"lazy\"\nqueue = \"saturate\"").is_err());
        assert!(read::<FirstLaunch>("first_launch = \"eager\"").is_err());
        let eager = "first_launch = \"lazy\"\nenv = { CUDA_MODULE_LOADING = \"EAGER\" }";
        assert!(read::<FirstLaunch>(eager).is_err());
    }
}
