//! What the run happened on, apart from the GPU: host CPU and OS, the runner's version, the
//! experiment's hash and the git state of its checkout.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::process::Command;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Host {
    pub cpu: String,
    pub cores: usize,
    pub os: String,
    pub kernel: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Git {
    pub commit: String,
    /// Whether the checkout had uncommitted changes when the run started.
    pub dirty: bool,
}

pub fn host() -> Host {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map_or_else(
            || std::env::consts::ARCH.to_string(),
            |(_, v)| v.trim().to_string(),
        );
    let os = std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("PRETTY_NAME="))
                .map(|l| l["PRETTY_NAME=".len()..].trim_matches('"').to_string())
        })
        .unwrap_or_else(|| std::env::consts::OS.to_string());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    Host {
        cpu,
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        os,
        kernel,
    }
}

/// The code a run is made with: the commit the runner was built from, dirty if its tree
/// had changes then or, where the experiment lies in a checkout of that same commit, has
/// them now (outside the output folder). A checkout of another commit (a copy of the tree
/// with a stale `.git`) says nothing about this build. Without build information, the
/// checkout's state.
pub fn git(path: &Path, out_dir: &Path) -> Option<Git> {
    let checkout = checkout(path, out_dir);
    match (build(), checkout) {
        (Some(b), Some(c)) if c.commit == b.commit => Some(Git {
            commit: b.commit,
            dirty: b.dirty || c.dirty,
        }),
        (Some(b), _) => Some(b),
        (None, c) => c,
    }
}

/// The commit checked out where the experiment `path` lies, if it is in a git checkout,
/// and whether the checkout had uncommitted changes outside `out_dir`'s folder (the reports
/// earlier runs of the same session just wrote do not make the code dirty).
fn checkout(path: &Path, out_dir: &Path) -> Option<Git> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let run = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = run(&["rev-parse", "HEAD"])?;
    let top = std::path::PathBuf::from(run(&["rev-parse", "--show-toplevel"])?);
    let reports = out_dir.parent().unwrap_or(out_dir);
    let mut args = vec![
        "status".to_string(),
        "--porcelain".into(),
        "--untracked-files=no".into(),
        "--".into(),
        ":/".into(),
    ];
    let excluded = reports
        .canonicalize()
        .ok()
        .and_then(|r| Some(r.strip_prefix(top.canonicalize().ok()?).ok()?.to_path_buf()))
        .filter(|r| !r.as_os_str().is_empty());
    if let Some(rel) = excluded {
        args.push(format!(":(top,exclude){}", rel.display()));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let dirty = !run(&args)?.is_empty();
    Some(Git { commit, dirty })
}

/// The commit the runner was built from, and whether its tree had changes then (outside
/// `reports/`), as the build script found them.
fn build() -> Option<Git> {
    let commit = option_env!("RUNNER_BUILD_COMMIT").filter(|c| !c.is_empty())?;
    Some(Git {
        commit: commit.to_string(),
        dirty: option_env!("RUNNER_BUILD_DIRTY") == Some("1"),
    })
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_empty_input() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
