//! `runner`: declarative GPU benchmarking-methodology experiments, from a TOML file to a
//! Markdown report measured on the GPU.
//!
//! Data walks one way: experiment -> plan -> (worker) samples -> analysis -> report, with
//! all CUDA behind the `cuda` crate (`crates/cuda`, which holds every `unsafe` block: this
//! crate forbids them) and the run folder behind `store`.

#![forbid(unsafe_code)]

mod analysis;
mod cli;
mod clock_lock;
mod commands;
mod compare;
mod execute;
mod experiment;
mod files;
mod method;
mod plan;
mod protocol;
mod report;
mod statistics;
mod store;
mod system;
mod telemetry;
mod terminal;
#[cfg(test)]
mod testkit;
mod worker;

use std::process::ExitCode;

fn main() -> ExitCode {
    commands::main()
}
