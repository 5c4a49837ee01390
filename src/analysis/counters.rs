//! Counters against the declared work: a cell that declares the `bytes` its kernel moves
//! and reads the memory counters (`counters = "memory"`) gets a check of the declaration,
//! and one that declares its `reads` and `writes` apart has each set against DRAM's.
//! A GB/s figure rests on the declared bytes; this tells a reading the caches served (hot
//! data, reuse, writes still in L2 when the kernel ends: DRAM saw fewer bytes, the caches
//! all of them) apart from a count that is wrong.

use super::facts::Facts;
use crate::experiment::knobs::counters::{
    DRAM_READ, DRAM_WRITE, L1_BYTES, L2_SECTORS_FROM_SMS, SECTOR_BYTES,
};
use crate::plan::Cell;
use crate::protocol::CounterRecord;

/// Declared and counted bytes within this fraction of each other agree.
pub const BYTES_TOLERANCE: f64 = 0.10;

/// What the counters say of a cell's declared bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BytesVerdict {
    /// DRAM moved the declared bytes, within the tolerance.
    Agrees,
    /// DRAM moved fewer, but the SMs asked L1 or L2 for at least the declared bytes: data
    /// the caches held (a hot cell, bytes read more than once) or writes still in L2 when
    /// the kernel ended. The declaration holds; the GB/s is not DRAM's.
    ServedByCaches,
    /// The SMs asked neither L1 nor L2 for the declared bytes: the kernel did less than
    /// declared, or the declaration counts too much; its GB/s is inflated.
    Overstated,
    /// DRAM moved more than declared: the declaration leaves traffic out, or the kernel
    /// moves more than it needs (partial sectors, repeated reads that miss).
    MovedMore,
}

impl BytesVerdict {
    /// Whether the declaration is wrong by the counters: a reading to mark.
    pub fn marked(self) -> bool {
        matches!(self, BytesVerdict::Overstated | BytesVerdict::MovedMore)
    }
}

/// One cell's declared bytes against what its counted launches moved, per launch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BytesCheck {
    pub declared: f64,
    /// DRAM bytes read plus written.
    pub dram: f64,
    /// Bytes the SMs' L1s asked of L2 (its sectors from them, 32 bytes each).
    pub l2: f64,
    /// Bytes the SMs asked of L1.
    pub l1: f64,
    pub verdict: BytesVerdict,
}

impl BytesCheck {
    pub fn of(declared: f64, dram: f64, l2: f64, l1: f64) -> BytesCheck {
        let tolerance = 1.0 + BYTES_TOLERANCE;
        let d = dram / declared;
        let verdict = if declared > tolerance * l1.max(l2) {
            BytesVerdict::Overstated
        } else if (d - 1.0).abs() <= BYTES_TOLERANCE {
            BytesVerdict::Agrees
        } else if d > 1.0 {
            BytesVerdict::MovedMore
        } else {
            BytesVerdict::ServedByCaches
        };
        BytesCheck {
            declared,
            dram,
            l2,
            l1,
            verdict,
        }
    }

    /// DRAM bytes over declared bytes.
    pub fn dram_ratio(&self) -> f64 {
        self.dram / self.declared
    }

    /// The most bytes the SMs asked of a cache (L1 or L2) over declared bytes.
    pub fn caches_ratio(&self) -> f64 {
        self.l1.max(self.l2) / self.declared
    }
}

/// A cell's declared reads and writes (`reads`, `writes`) beside the bytes DRAM read and
/// wrote, per launch: which way a declaration that DRAM contradicts is off.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReadsWrites {
    pub reads: f64,
    pub writes: f64,
    pub dram_read: f64,
    pub dram_write: f64,
}

impl ReadsWrites {
    /// DRAM bytes read over declared reads; None where it declares none.
    pub fn read_ratio(&self) -> Option<f64> {
        (self.reads > 0.0).then(|| self.dram_read / self.reads)
    }

    /// DRAM bytes written over declared writes; None where it declares none.
    pub fn write_ratio(&self) -> Option<f64> {
        (self.writes > 0.0).then(|| self.dram_write / self.writes)
    }
}

/// A cell's counters, and its bytes check where it declares bytes and counted them.
#[derive(Debug, Clone)]
pub struct CellCounters<'a> {
    pub cell: &'a Cell,
    pub record: &'a CounterRecord,
    /// The cell's headline median, in ns, to set against the counted launches' time.
    pub reading_ns: Option<f64>,
    pub bytes: Option<BytesCheck>,
    /// Its declared reads and writes beside DRAM's, where it declares them apart and DRAM's
    /// bytes each way were counted.
    pub reads_writes: Option<ReadsWrites>,
}

/// Every cell with counters, in plan order.
pub fn of<'a>(a: &Facts<'a>) -> Vec<CellCounters<'a>> {
    let cells = &a.run.plan.cells;
    (cells.iter())
        .filter_map(|cell| {
            let records = a.records.get(&cell.index)?;
            let record = records.iter().copied().find_map(|r| r.counters.as_ref())?;
            let counted = (
                record.value(DRAM_READ),
                record.value(DRAM_WRITE),
                record.value(L2_SECTORS_FROM_SMS),
                record.value(L1_BYTES),
            );
            let bytes = match (cell.launch.bytes, counted) {
                (Some(declared), (Some(read), Some(write), Some(sectors), Some(l1)))
                    if declared > 0.0 =>
                {
                    Some(BytesCheck::of(
                        declared,
                        read + write,
                        sectors * SECTOR_BYTES,
                        l1,
                    ))
                }
                _ => None,
            };
            let reads_writes = match (cell.launch.reads_writes, counted) {
                (Some((reads, writes)), (Some(dram_read), Some(dram_write), ..)) => {
                    Some(ReadsWrites {
                        reads,
                        writes,
                        dram_read,
                        dram_write,
                    })
                }
                _ => None,
            };
            Some(CellCounters {
                cell,
                record,
                reading_ns: a.headline(cell).map(|s| s.median),
                bytes,
                reads_writes,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_declaration_agrees_is_served_by_the_caches_or_is_wrong() {
        let mb = 1e6;
        let v = |dram: f64, l2: f64, l1: f64| {
            BytesCheck::of(8.0 * mb, dram * mb, l2 * mb, l1 * mb).verdict
        };
        assert_eq!(v(8.2, 8.1, 8.0), BytesVerdict::Agrees);
        assert_eq!(v(7.3, 8.0, 8.0), BytesVerdict::Agrees);
        // Hot: DRAM saw nothing, L2 all of it.
        assert_eq!(v(0.01, 8.0, 8.0), BytesVerdict::ServedByCaches);
        // Reuse in L1: L2 saw a part, L1 all of it.
        assert_eq!(v(0.0, 5.0, 8.6), BytesVerdict::ServedByCaches);
        // Written back after the kernel: half the bytes in DRAM, all through the caches.
        assert_eq!(v(4.0, 8.0, 8.0), BytesVerdict::ServedByCaches);
        // Declared twice what moved, hot or cold: no cache was asked for all of it.
        assert_eq!(v(4.0, 4.0, 4.0), BytesVerdict::Overstated);
        assert_eq!(v(0.0, 4.0, 4.0), BytesVerdict::Overstated);
        assert_eq!(v(9.7, 9.7, 9.7), BytesVerdict::MovedMore);
        assert!(BytesVerdict::Overstated.marked() && BytesVerdict::MovedMore.marked());
        assert!(!BytesVerdict::ServedByCaches.marked() && !BytesVerdict::Agrees.marked());
        let c = BytesCheck::of(8.0, 4.0, 12.0, 6.0);
        assert_eq!((c.dram_ratio(), c.caches_ratio()), (0.5, 1.5));
    }

    #[test]
    fn declared_reads_and_writes_are_set_against_drams_each_way() {
        let rw = ReadsWrites {
            reads: 8.0,
            writes: 0.0,
            dram_read: 6.0,
            dram_write: 1.0,
        };
        // A kernel declaring no writes has no ratio of them, however many DRAM wrote.
        assert_eq!((rw.read_ratio(), rw.write_ratio()), (Some(0.75), None));
    }
}
