//! `l2_persist`: an L2 access-policy window on one of the kernel's buffers, named: its
//! accesses persist in the L2's set-aside, so that streaming data does not evict it, as a
//! program that sets `cudaAccessPolicyWindow` on its launches keeps a lookup table or a
//! weight matrix in L2. The worker sets aside as much of the L2 as the device allows for
//! the cell (never more than the window), and lets the persisting lines go after it.

use super::rotate::Rotate;
use super::knob::{Aspect, Key, Knob, Layer};
use crate::experiment::ConfigError;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct L2Persist(pub Option<String>);

impl Knob for L2Persist {
    const KEYS: &'static [Key] = &[Key::commented(
        "l2_persist",
        r#""A""#,
        r#"off by default; a buffer argument (here `A`) whose accesses persist in L2 (an
        access-policy window on every launch, hit ratio the set-aside over the window); other
        data streams past it"#,
    )];
    const ASPECT: Aspect = Aspect::Cache;

    fn read(layer: &Layer) -> Result<Self, ConfigError> {
        let name: Option<String> = layer.get("l2_persist")?;
        if name.is_some() && Rotate::read(layer)?.0 > 1 {
            return Err(layer
                .err_at("l2_persist", "l2_persist and rotate exclude each other")
                .with_hint("the window is set on the one set of buffers the launches read"));
        }
        Ok(L2Persist(name))
    }

    fn describe(&self) -> Option<String> {
        let name = self.0.as_ref()?;
        Some(format!(
            "`{name}` persisting in L2 (an access-policy window on each launch, hit ratio the set-aside over the window)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::read;
    use super::*;

    #[test]
    fn no_window_unless_a_buffer_is_named() {
        assert_eq!(read::<L2Persist>("").unwrap(), L2Persist(None));
        assert_eq!(
            read::<L2Persist>("l2_persist = \"table\"").unwrap(),
            L2Persist(Some("table".into()))
        );
        assert!(read::<L2Persist>("l2_persist = \"table\"\nrotate = 2").is_err());
        assert!(read::<L2Persist>("l2_persist = 3").is_err());
    }
}
