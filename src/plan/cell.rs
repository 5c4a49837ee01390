//! A cell of the plan: one kernel at one sweep point under one variant (or a floor cell of
//! the empty kernel under one timer), its knobs and launch fixed.

use crate::experiment::knobs::launches::Launches;
use crate::experiment::{ArgValue, Knobs, LaunchSpec, Point};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A kernel of the experiment at a sweep point under a variant.
    Measure,
    /// The built-in empty kernel under one timer: what the method itself reads.
    Floor,
}

/// Which statistic a table shows for a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Headline {
    /// The steady samples after the first launch.
    Steady,
    /// The first launches (one per process or run): the cell takes no other samples.
    First,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Cell {
    pub index: usize,
    /// `matmul/n=512/events`, `copy/hot` (no sweep), or `floor/events`.
    pub id: String,
    pub role: Role,
    /// Index into the experiment's kernels; `None` for the built-in empty kernel.
    pub kernel: Option<usize>,
    pub kernel_name: String,
    pub point: Point,
    pub variant: String,
    pub knobs: Knobs,
    /// The kernel's launch at this point (one thread and no arguments for the empty kernel).
    pub launch: LaunchSpec,
    /// The reference kernel's launch at this point, for a `check_kernel`.
    #[serde(default)]
    pub reference_launch: Option<LaunchSpec>,
}

impl Cell {
    /// Runs of the cell: one per fresh process, or one per round.
    pub fn runs(&self) -> u32 {
        self.knobs.runs()
    }

    pub fn headline(&self) -> Headline {
        if self.knobs.samples_per_run() > 0 {
            Headline::Steady
        } else {
            Headline::First
        }
    }

    /// Whether each reading is a difference of two timings, which noise can take below
    /// zero: a flushed graph read less its flushes alone or by event nodes, and a batch or
    /// graph whose resets are timed alone and taken off (the timed body `worker::arm` builds,
    /// which `method::timer` reads; a histogram of 512 values in batches of 10 by events read
    /// -851 ns once on an H200).
    pub fn reads_a_difference(&self) -> bool {
        let resets = self.launch.resets_each_launch();
        let taken_off = match self.knobs.launches {
            Launches::Batch(n) => n > 1 && resets,
            Launches::Graph(_) => resets,
            Launches::Single => false,
        };
        self.knobs.flushed_graph.reads_a_difference() || taken_off
    }

    /// What its timed inputs are drawn from ([`draw_key`]).
    pub fn draw_key(&self) -> String {
        draw_key(&self.launch.args)
    }

    /// Whether it has inputs to draw and upload (a buffer the kernel reads), which cells of
    /// one draw key share.
    pub fn has_inputs(&self) -> bool {
        (self.launch.args.iter())
            .any(|a| matches!(a, ArgValue::Buffer { init, .. } if !init.is_written()))
    }

    /// The kernel and point, as reference results and the audit's host draws key them.
    pub fn point_key(&self) -> String {
        let label = point_id(&self.point);
        format!("{}/{label}", self.kernel_name)
    }
}

/// What a set of arguments' inputs are drawn from: each argument's place and, for an
/// input, its type, length and init (a scalar or an output is only a place). Cells whose
/// arguments have one draw key time the same data, whatever their kernel and point: a sweep
/// over a launch parameter, or kernels set side by side on one shape, draw and upload their
/// inputs once, and keep them on the device from cell to cell.
pub fn draw_key(args: &[ArgValue]) -> String {
    let place = |a: &ArgValue| match a {
        ArgValue::Buffer {
            dtype, len, init, ..
        } if !init.is_written() => format!("{dtype:?} {len} {init:?}"),
        _ => "-".to_string(),
    };
    args.iter().map(place).collect::<Vec<_>>().join(";")
}

/// The point as a cell id holds it: `n=512`, `m=1 n=2`.
pub fn point_id(point: &Point) -> String {
    point
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    #[test]
    fn readings_less_resets_timed_alone_may_read_below_zero_in_batches_and_graphs_only() {
        let bins = "unchecked = true\nargs = [{ name = \"bins\", buffer = \"u32\", len = 256, reset = \"zeros\" }]";
        let variants = "[defaults]\ntimer = \"events\"\n[[variant]]\nname = \"one\"\n[[variant]]\nname = \"batch\"\nbatch = 10\n[[variant]]\nname = \"graph\"\ngraph = 4\n[report]\nfloor = false\n";
        let differences = |args: &str| {
            let plan = crate::plan::Plan::new(&crate::plan::tests::experiment(&format!(
                "{args}\n{variants}"
            )))
            .unwrap();
            let cells = plan
                .cells
                .iter()
                .filter(|c| c.id.starts_with("k/n=1 m=10/"));
            cells.map(|c| c.reads_a_difference()).collect::<Vec<_>>()
        };
        assert_eq!(differences(bins), [false, true, true]);
        assert_eq!(differences(""), [false, false, false]);
    }
}
