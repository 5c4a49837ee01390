//! A kernel's roles: timed unchecked, wrong on purpose, or a reference that is not timed;
//! refused where they contradict each other or its check.

use super::validator::Validator;
use crate::experiment::error::ConfigError;
use crate::experiment::schema::RawKernel;

/// What a kernel is there for, from `unchecked`, `expect` and `timed`.
pub(super) struct Roles {
    /// Timed without a check (every table says so).
    pub(super) unchecked: bool,
    /// Wrong on purpose: its cells must fail or be suspect.
    pub(super) expect_caught: bool,
    /// Not timed: it runs only as another kernel's reference.
    pub(super) check_only: bool,
}

impl Validator<'_> {
    /// The kernel's roles, refused where they contradict each other or its check.
    pub(super) fn roles(
        &self,
        rk: &RawKernel,
        has_kernel_check: bool,
    ) -> Result<Roles, ConfigError> {
        let unchecked = rk.unchecked.as_ref().is_some_and(|u| *u.get_ref());
        let expect_caught = match &rk.expect {
            None => false,
            Some(e) if e.get_ref() == "caught" => true,
            Some(e) if e.get_ref() == "ok" => false,
            Some(e) => {
                return Err(self
                    .err(e, format!("unknown expect `{}`", e.get_ref()))
                    .with_hint("expect = \"caught\" for a kernel wrong on purpose (its cells must fail or be suspect), or leave it out"))
            }
        };
        let check_only = rk.timed.as_ref().is_some_and(|t| !*t.get_ref());
        if let (Some(t), true) = (
            &rk.timed,
            check_only && (expect_caught || rk.check.is_some() || has_kernel_check),
        ) {
            return Err(self
                .err(t, "a kernel that is not timed is neither checked nor caught: it runs only as another kernel's reference")
                .with_hint("remove `check` or `expect` from it (a reference kernel needs neither), or remove timed = false"));
        }
        if let (Some(e), true) = (&rk.expect, expect_caught && unchecked) {
            return Err(self
                .err(e, "an unchecked kernel cannot be expected to be caught")
                .with_hint("give the kernel a check, so that there is something to catch it"));
        }
        if let (Some(u), true) = (
            &rk.unchecked,
            unchecked && (rk.check.is_some() || has_kernel_check),
        ) {
            return Err(self
                .err(u, "a kernel with a check cannot be unchecked")
                .with_hint("keep either a check or unchecked = true"));
        }
        if let (Some(c), true) = (&rk.check, has_kernel_check) {
            return Err(self
                .err(
                    c,
                    "a kernel is checked by a reference or by a kernel, not both",
                )
                .with_hint("keep check = { reference = ... } or check_kernel = { kernel = ... }"));
        }
        Ok(Roles {
            unchecked,
            expect_caught,
            check_only,
        })
    }
}
