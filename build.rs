//! Records the commit the runner is built from, so every run names the code that made it
//! even where the run's folder is not a git checkout.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let commit = git(&["rev-parse", "HEAD"]).unwrap_or_default();
    let dirty = git(&[
        "status",
        "--porcelain",
        "--untracked-files=no",
        "--",
        ":/",
        ":(top,exclude)reports",
    ])
    .is_some_and(|s| !s.is_empty());
    println!("cargo:rustc-env=RUNNER_BUILD_COMMIT={commit}");
    println!("cargo:rustc-env=RUNNER_BUILD_DIRTY={}", u8::from(dirty));
    // A new commit moves the branch HEAD names; staging changes the index. Their paths come
    // from git, since in a linked worktree `.git` is a file and the branch lives in the
    // common folder: a build that watched none of them kept an old commit.
    let path = |p: &str| git(&["rev-parse", "--path-format=absolute", "--git-path", p]);
    let branch = git(&["symbolic-ref", "-q", "HEAD"]);
    let watched = ["HEAD", "index", "packed-refs"]
        .into_iter()
        .map(String::from)
        .chain(branch)
        .filter_map(|p| path(&p));
    for f in watched {
        if std::path::Path::new(&f).exists() {
            println!("cargo:rerun-if-changed={f}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
