//! The JIT cache each worker process starts with: a new empty one per process, one warm
//! one per environment (filled by a priming process before its first use), disabled, or
//! the user's. The caches live in a temporary folder removed when the run ends.

use super::worker_process::{tail, WorkerEvent, WorkerProcess, WorkerProgram};
use super::INTERRUPTED;
use crate::experiment::knobs::env::{JitCache, ProcessEnv};
use crate::protocol::{Job, Message};
use anyhow::{Context, Result};
use std::collections::HashMap;
use std::error::Error;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;

/// Why a JIT cache could not be prepared. It is kept per warm environment and handed,
/// cloned, to every job of it (hence `Arc` around the causes, which do not clone); the
/// job's cells record [`PrimeError::text`] as their error.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PrimeError {
    /// The cache's folder could not be created.
    #[error("cannot create the JIT cache {}", .dir.display())]
    Folder {
        dir: PathBuf,
        source: Arc<std::io::Error>,
    },
    /// The priming process could not be started.
    #[error("cannot start the priming process")]
    Start(#[source] Shared),
    /// The priming process reported a fatal error, in its words.
    #[error("priming the JIT cache failed: {0}")]
    Fatal(String),
    /// The priming process timed out, was interrupted or wrote a malformed line.
    #[error("priming the JIT cache did not finish")]
    Unfinished,
    /// The priming process exited with a failure.
    #[error("priming the JIT cache failed ({status}){}", tail(.stderr))]
    Exit { status: ExitStatus, stderr: String },
    /// A worker process could not be waited for: the priming one, or the one exiting
    /// before it (a priming process does not share the device). Its message is the
    /// outermost error's; its causes follow.
    #[error(transparent)]
    Wait(Shared),
}

/// An error of the runner's and its causes, shared by the clones of a [`PrimeError`].
type Shared = Arc<dyn Error + Send + Sync>;

/// `e` as a [`PrimeError`] holds it.
pub(super) fn shared(e: anyhow::Error) -> Shared {
    Arc::from(Box::<dyn Error + Send + Sync>::from(e))
}

impl PrimeError {
    /// The error and its causes on one line (`a: b: c`), as the job's cells record it.
    pub fn text(&self) -> String {
        let mut text = self.to_string();
        let mut cause = self.source();
        while let Some(c) = cause {
            text += &format!(": {c}");
            cause = c.source();
        }
        text
    }

    /// The priming process's exit status, where it exited on its own.
    pub fn status(&self) -> Option<&ExitStatus> {
        match self {
            PrimeError::Exit { status, .. } => Some(status),
            _ => None,
        }
    }
}

pub struct JitCaches {
    root: tempfile::TempDir,
    empties: usize,
    /// Per warm environment: the variables that point at its primed cache, or why priming
    /// failed (kept, and handed cloned to every job of the environment).
    warm: HashMap<ProcessEnv, Result<Vec<(String, String)>, PrimeError>>,
}

impl JitCaches {
    pub fn new() -> Result<Self> {
        Ok(JitCaches {
            root: tempfile::Builder::new()
                .prefix("runner-jit-cache-")
                .tempdir()
                .context("cannot create a folder for JIT caches")?,
            empties: 0,
            warm: HashMap::new(),
        })
    }

    /// The variables a worker process in `env` starts with. A warm cache is primed (by
    /// `prime`, with those variables) the first time its environment is asked for.
    pub fn vars(
        &mut self,
        env: &ProcessEnv,
        prime: impl FnOnce(&[(String, String)]) -> Result<(), PrimeError>,
    ) -> Result<Vec<(String, String)>, PrimeError> {
        let mut vars: Vec<(String, String)> = env
            .vars
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        match env.jit_cache {
            JitCache::Inherit => {}
            JitCache::Disabled => vars.push(("CUDA_CACHE_DISABLE".into(), "1".into())),
            JitCache::Empty => {
                self.empties += 1;
                let dir = self.new_dir(&format!("empty-{}", self.empties))?;
                vars.push(cache_path(dir));
            }
            JitCache::Warm => {
                if let Some(known) = self.warm.get(env) {
                    return known.clone();
                }
                let outcome = self
                    .new_dir(&format!("warm-{}", self.warm.len() + 1))
                    .and_then(|dir| {
                        vars.push(cache_path(dir));
                        prime(&vars).map(|()| vars)
                    });
                self.warm.insert(env.clone(), outcome.clone());
                return outcome;
            }
        }
        Ok(vars)
    }

    /// A new folder for a cache.
    fn new_dir(&self, name: &str) -> Result<PathBuf, PrimeError> {
        let dir = self.root.path().join(name);
        match std::fs::create_dir(&dir) {
            Ok(()) => Ok(dir),
            Err(e) => Err(PrimeError::Folder {
                dir,
                source: Arc::new(e),
            }),
        }
    }
}

fn cache_path(dir: PathBuf) -> (String, String) {
    ("CUDA_CACHE_PATH".into(), dir.to_string_lossy().into_owned())
}

/// Fills a warm JIT cache: a worker in the cells' environment loads every kernel they use.
pub(super) fn prime(
    program: &WorkerProgram,
    job: Job,
    vars: &[(String, String)],
    timeout: Duration,
) -> Result<(), PrimeError> {
    let mut worker =
        WorkerProcess::start(program, job, vars).map_err(|e| PrimeError::Start(shared(e)))?;
    loop {
        match worker.next(timeout, &INTERRUPTED) {
            WorkerEvent::Message(Message::Fatal { error }) => {
                worker.kill();
                return Err(PrimeError::Fatal(error));
            }
            WorkerEvent::Message(_) => {}
            WorkerEvent::Closed => break,
            WorkerEvent::TimedOut(_) | WorkerEvent::Interrupted | WorkerEvent::Malformed(_) => {
                worker.kill();
                return Err(PrimeError::Unfinished);
            }
        }
    }
    let (status, stderr) = worker.finish().map_err(|e| PrimeError::Wait(shared(e)))?;
    if status.success() {
        Ok(())
    } else {
        Err(PrimeError::Exit { status, stderr })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(cache: JitCache) -> ProcessEnv {
        ProcessEnv {
            vars: [("CUDA_FORCE_JIT".to_string(), "1".to_string())].into(),
            jit_cache: cache,
            profiler: None,
        }
    }

    fn path_of(vars: &[(String, String)]) -> PathBuf {
        PathBuf::from(&vars.iter().find(|(k, _)| k == "CUDA_CACHE_PATH").unwrap().1)
    }

    /// A priming step, of the type `vars` takes, for caches that are never primed.
    fn never(_: &[(String, String)]) -> Result<(), PrimeError> {
        panic!("only a warm cache is primed")
    }

    #[test]
    fn every_process_with_an_empty_cache_gets_a_new_empty_folder() {
        let mut caches = JitCaches::new().unwrap();
        let a = caches.vars(&env(JitCache::Empty), never).unwrap();
        let b = caches.vars(&env(JitCache::Empty), never).unwrap();
        assert!(a.contains(&("CUDA_FORCE_JIT".into(), "1".into())));
        let (pa, pb) = (path_of(&a), path_of(&b));
        assert_ne!(pa, pb);
        for p in [&pa, &pb] {
            assert!(p.is_dir() && std::fs::read_dir(p).unwrap().next().is_none());
        }
        let root = pa.parent().unwrap().to_path_buf();
        drop(caches);
        assert!(!root.exists(), "the caches are removed with the run");
    }

    #[test]
    fn a_warm_cache_is_primed_once_in_its_own_folder_and_shared() {
        let mut caches = JitCaches::new().unwrap();
        let mut primed = Vec::new();
        let a = caches
            .vars(&env(JitCache::Warm), |v| {
                primed.push(v.to_vec());
                Ok(())
            })
            .unwrap();
        let b = caches
            .vars(&env(JitCache::Warm), |_| panic!("primed twice"))
            .unwrap();
        assert_eq!(a, b);
        assert_eq!(
            primed,
            vec![a.clone()],
            "primed with the workers' own variables"
        );
        let other = ProcessEnv {
            jit_cache: JitCache::Warm,
            ..Default::default()
        };
        let c = caches.vars(&other, |_| Ok(())).unwrap();
        assert_ne!(path_of(&a), path_of(&c), "one warm cache per environment");
    }

    #[test]
    fn a_failed_priming_fails_every_process_of_that_environment() {
        let mut caches = JitCaches::new().unwrap();
        let e = env(JitCache::Warm);
        let first = caches.vars(&e, |_| Err(PrimeError::Fatal("no driver".into())));
        let first = first.unwrap_err().text();
        assert_eq!(first, "priming the JIT cache failed: no driver");
        assert_eq!(caches.vars(&e, |_| Ok(())).unwrap_err().text(), first);
    }

    #[test]
    fn a_priming_error_reads_as_its_sentence_then_its_causes() {
        let gone = || std::io::Error::from(std::io::ErrorKind::NotFound);
        let folder = PrimeError::Folder {
            dir: "/tmp/c".into(),
            source: Arc::new(gone()),
        };
        assert_eq!(
            folder.text(),
            format!("cannot create the JIT cache /tmp/c: {}", gone())
        );
        let failed = || anyhow::Error::new(gone()).context("cannot wait for a worker process");
        assert_eq!(
            PrimeError::Start(shared(failed())).text(),
            format!("cannot start the priming process: {:#}", failed())
        );
        assert_eq!(
            PrimeError::Wait(shared(failed())).text(),
            format!("{:#}", failed())
        );
    }

    #[test]
    fn disabled_and_inherited_caches_set_no_path() {
        let mut caches = JitCaches::new().unwrap();
        let d = caches.vars(&env(JitCache::Disabled), never).unwrap();
        assert!(d.contains(&("CUDA_CACHE_DISABLE".into(), "1".into())));
        let i = caches.vars(&env(JitCache::Inherit), never).unwrap();
        assert_eq!(i, vec![("CUDA_FORCE_JIT".to_string(), "1".to_string())]);
    }
}
