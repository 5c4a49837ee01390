//! What each entry of a compiled build uses, for `plan --compile`: registers, spills, local
//! memory, static shared memory, and the most threads a block of it may have. The driver
//! reads them from the loaded code where there is a GPU; without one, ptxas's report in
//! NVRTC's log gives what it knows of a CUBIN compiled here. A figure neither gives is
//! named unknown, with what it needs.

use crate::experiment::knobs::cache::bytes_text;
use cuda::Attributes;

/// What ptxas reports of one entry (`-Xptxas -v`): each figure where its line was there.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct PtxasEntry {
    registers: Option<u64>,
    /// Bytes spilled to local memory and loaded back.
    spills: Option<(u64, u64)>,
    /// The stack frame: local memory per thread, spills included.
    stack_frame: Option<u64>,
    static_shared: Option<u64>,
}

/// ptxas's report of `entry` (its lowered name) in a program log, where the log has one:
///
/// ```text
/// ptxas info    : Compiling entry function '_Z6kernelPf' for 'sm_90'
/// ptxas info    : Function properties for _Z6kernelPf
///     8 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads
/// ptxas info    : Used 32 registers, used 1 barriers, 4096 bytes smem, 360 bytes cmem[0]
/// ```
///
/// The properties of a device function the entry calls, which ptxas lists too, are not the
/// entry's.
pub(super) fn ptxas_entry(log: &str, entry: &str) -> Option<PtxasEntry> {
    let mut found: Option<PtxasEntry> = None;
    let (mut compiling, mut properties_of) = (false, false);
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            compiling = rest.split('\'').next() == Some(entry);
            found = found.or(compiling.then(PtxasEntry::default));
        } else if let Some(name) = line.split("Function properties for ").nth(1) {
            properties_of = name.trim() == entry;
        } else if let (true, Some(e)) = (properties_of, found.as_mut()) {
            if let Some(frame) = number_before(line, "bytes stack frame") {
                e.stack_frame = Some(frame);
                e.spills = number_before(line, "bytes spill stores")
                    .zip(number_before(line, "bytes spill loads"));
                properties_of = false;
            }
        }
        if let (true, Some(e), Some(r)) =
            (compiling, found.as_mut(), number_before(line, "registers"))
        {
            e.registers = Some(r);
            e.static_shared = number_before(line, "bytes smem").or(Some(0));
        }
    }
    found
}

/// The number written just before `marker` in `line` (`Used 32 registers` -> 32).
fn number_before(line: &str, marker: &str) -> Option<u64> {
    let before = &line[..line.find(marker)?];
    before.split_whitespace().last()?.parse().ok()
}

/// A figure, or what it would take to know it.
type Known<T> = Result<T, &'static str>;

/// What an entry uses and allows, each figure known or why not.
pub(super) struct Resources {
    registers: Known<u64>,
    spills: Known<(u64, u64)>,
    local_bytes: Known<u64>,
    static_shared: Known<u64>,
    max_threads: Known<u32>,
}

/// What the driver could not read (no GPU here), and what ptxas did not report.
pub(super) const NEEDS_GPU: &str = "needs a GPU";

impl Resources {
    /// From the driver's attributes (`Err`: why there are none) and ptxas's report (`Err`:
    /// why there is none): the driver's where it has them, as the run will load the code;
    /// a figure neither has is unknown for the driver's reason, but spills, which only
    /// ptxas reports.
    pub(super) fn of(
        driver: Result<&Attributes, &'static str>,
        ptxas: Result<&PtxasEntry, &'static str>,
    ) -> Resources {
        let either = |d: fn(&Attributes) -> u32, p: fn(&PtxasEntry) -> Option<u64>| match driver {
            Ok(a) => Ok(u64::from(d(a))),
            Err(why) => ptxas.ok().and_then(p).ok_or(why),
        };
        Resources {
            registers: either(|a| a.registers, |p| p.registers),
            spills: ptxas.and_then(|p| p.spills.ok_or("not in ptxas's report")),
            local_bytes: either(|a| a.local_bytes, |p| p.stack_frame),
            static_shared: either(|a| a.static_shared_bytes, |p| p.static_shared),
            max_threads: driver.map(|a| a.max_threads_per_block),
        }
    }

    /// "32 registers; spills 8 B stored, 4 B loaded; local memory 8 B per thread; static
    /// shared 4.0 KiB; threads per block unknown (needs a GPU)".
    pub(super) fn text(&self) -> String {
        let bytes = |b: u64| bytes_text(b);
        let figures: [(&str, Known<String>); 5] = [
            (
                "registers",
                self.registers.map(|r| format!("{r} registers")),
            ),
            (
                "spills",
                self.spills.map(|spilled| match spilled {
                    (0, 0) => "no spills".to_string(),
                    (stored, loaded) => {
                        format!("spills {} stored, {} loaded", bytes(stored), bytes(loaded))
                    }
                }),
            ),
            (
                "local memory",
                (self.local_bytes).map(|b| format!("local memory {} per thread", bytes(b))),
            ),
            (
                "static shared memory",
                (self.static_shared).map(|b| format!("static shared {}", bytes(b))),
            ),
            (
                "threads per block",
                (self.max_threads).map(|t| format!("at most {t} threads per block")),
            ),
        ];
        let mut parts: Vec<String> = (figures.iter())
            .filter_map(|(_, f)| f.as_ref().ok().cloned())
            .collect();
        let mut reasons: Vec<&str> = Vec::new();
        for why in figures.iter().filter_map(|(_, f)| f.as_ref().err()) {
            if !reasons.contains(why) {
                reasons.push(why);
            }
        }
        for why in reasons {
            let names: Vec<&str> = (figures.iter())
                .filter(|(_, f)| f.as_ref().err() == Some(&why))
                .map(|(name, _)| *name)
                .collect();
            parts.push(format!("{} unknown ({why})", names.join(", ")));
        }
        parts.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NVRTC 12.9's log of `k.cu` compiled with `--ptxas-options=-v --maxrregcount=16`:
    /// a `#warning`, a template with a `__shared__` array, an entry that calls a device
    /// function which spills, and a plain one (the spills of `calls` set to 8 and 4 here,
    /// to tell an entry's own from its callee's).
    const LOG: &str = "\
k.cu(1): warning #1105-D: #warning directive: this kernel is a test
  #warning this kernel is a test
   ^

Remark: The warnings can be suppressed with \"-diag-suppress <warning-number>\"

ptxas warning : For profile sm_90 adjusting per thread register count of 16 to lower bound of 24
ptxas info    : Overriding maximum register limit 256 for '_Z5tiledILi256EEvPfPKfi' with  24 of maxrregcount option
ptxas info    : Overriding maximum register limit 256 for 'calls' with  24 of maxrregcount option
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z5tiledILi256EEvPfPKfi' for 'sm_90'
ptxas info    : Function properties for _Z5tiledILi256EEvPfPKfi
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 1 barriers, 1024 bytes smem
ptxas info    : Compile time = 2.618 ms
ptxas info    : Compiling entry function 'calls' for 'sm_90'
ptxas info    : Function properties for calls
ptxas         .     272 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 22 registers, used 0 barriers, 272 bytes cumulative stack size
ptxas info    : Compile time = 3.357 ms
ptxas info    : Function properties for _Z6helperf
ptxas         .     0 bytes stack frame, 16 bytes spill stores, 16 bytes spill loads
ptxas info    : Compiling entry function 'plain' for 'sm_90'
ptxas info    : Function properties for plain
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 0 barriers
ptxas info    : Compile time = 0.855 ms
";

    #[test]
    fn ptxas_reports_each_entry_apart_from_the_functions_it_calls() {
        let entry = |registers, spills, stack_frame, static_shared| PtxasEntry {
            registers: Some(registers),
            spills: Some(spills),
            stack_frame: Some(stack_frame),
            static_shared: Some(static_shared),
        };
        assert_eq!(
            ptxas_entry(LOG, "_Z5tiledILi256EEvPfPKfi"),
            Some(entry(10, (0, 0), 0, 1024))
        );
        // Its own spills; the device function it calls spills apart.
        assert_eq!(ptxas_entry(LOG, "calls"), Some(entry(22, (8, 4), 272, 0)));
        assert_eq!(ptxas_entry(LOG, "plain"), Some(entry(10, (0, 0), 0, 0)));
        assert_eq!(ptxas_entry(LOG, "_Z6helperf"), None, "not an entry");
        assert_eq!(ptxas_entry(LOG, "plai"), None, "a name is matched whole");
        assert_eq!(ptxas_entry("", "plain"), None);
    }

    #[test]
    fn each_figure_comes_from_the_driver_else_ptxas_else_says_what_it_needs() {
        let ptxas = ptxas_entry(LOG, "calls").unwrap();
        assert_eq!(
            Resources::of(Err(NEEDS_GPU), Ok(&ptxas)).text(),
            "22 registers; spills 8 B stored, 4 B loaded; local memory 272 B per thread; static shared 0 B; threads per block unknown (needs a GPU)"
        );
        let driver = Attributes {
            registers: 40,
            local_bytes: 16,
            static_shared_bytes: 8192,
            max_threads_per_block: 768,
        };
        assert_eq!(
            Resources::of(Ok(&driver), Err("the driver compiles PTX at load")).text(),
            "40 registers; local memory 16 B per thread; static shared 8.0 KiB; at most 768 threads per block; spills unknown (the driver compiles PTX at load)"
        );
        assert_eq!(
            Resources::of(Ok(&driver), Ok(&ptxas)).text(),
            "40 registers; spills 8 B stored, 4 B loaded; local memory 16 B per thread; static shared 8.0 KiB; at most 768 threads per block"
        );
        // A PTX build without a GPU: the driver would compile it.
        assert_eq!(
            Resources::of(Err(NEEDS_GPU), Err("the driver compiles PTX at load")).text(),
            "registers, local memory, static shared memory, threads per block unknown (needs a GPU); spills unknown (the driver compiles PTX at load)"
        );
    }
}
