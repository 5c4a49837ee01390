//! Lists of readings that may hold a NaN (a reading not taken): JSON has none, and serde_json
//! writes it as null, which an f64 does not read back. Read back here as NaN, so that one
//! reading not taken leaves its record readable.

use serde::Deserialize;

/// A list of f64 with nulls read as NaN.
pub(super) fn null_as_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
    let v: Vec<Option<f64>> = Deserialize::deserialize(d)?;
    Ok(v.into_iter().map(|x| x.unwrap_or(f64::NAN)).collect())
}

#[cfg(test)]
mod tests {
    use crate::protocol::{AuditRecord, AuditsAmong, CellRecord, KernelRecords};

    #[test]
    fn readings_not_taken_survive_the_trip_as_nan() {
        let mut r = CellRecord::new(0, "c", 0);
        r.samples_ns = vec![f64::NAN, 1.0];
        let among = AuditsAmong {
            readings_ns: vec![f64::NAN],
            decoys_ns: vec![2.0, f64::NAN],
            pauses_ns: vec![f64::NAN],
            by_cupti: Some(KernelRecords {
                timed_ns: vec![f64::NAN],
                ..KernelRecords::default()
            }),
            ..AuditsAmong::default()
        };
        r.audit = Some(AuditRecord {
            among: Some(among),
            ..AuditRecord::default()
        });
        let back: CellRecord = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert!(back.samples_ns[0].is_nan());
        assert_eq!(back.samples_ns[1], 1.0);
        let among = back.audit.unwrap().among.unwrap();
        assert!(among.readings_ns[0].is_nan() && among.pauses_ns[0].is_nan());
        assert_eq!(among.decoys_ns[0], 2.0);
        assert!(among.decoys_ns[1].is_nan());
        assert!(among.by_cupti.unwrap().timed_ns[0].is_nan());
    }
}
