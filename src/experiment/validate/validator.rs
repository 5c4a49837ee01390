//! The validator: the experiment's file, text and device facts, against which every
//! mistake is located at its file, line and column.

use crate::experiment::error::ConfigError;
use crate::experiment::expr::DeviceFacts;
use crate::experiment::{names, Sources};
use std::path::Path;
use toml::Spanned;

/// What validation reads an experiment against: its file and text (for the places of its
/// mistakes), the device's facts, whether sources are read, and the `--set` clauses.
pub(super) struct Validator<'a> {
    pub(super) path: &'a Path,
    pub(super) text: &'a str,
    pub(super) facts: &'a DeviceFacts,
    pub(super) sources: Sources,
    pub(super) set: &'a [String],
}

impl Validator<'_> {
    pub(super) fn err<T>(&self, spanned: &Spanned<T>, msg: impl Into<String>) -> ConfigError {
        ConfigError::at(self.path, self.text, Some(spanned.span()), msg)
    }

    pub(super) fn nowhere(&self, msg: impl Into<String>) -> ConfigError {
        ConfigError::at(self.path, self.text, None, msg)
    }

    pub(super) fn name<T>(
        &self,
        what: &str,
        at: &Spanned<T>,
        name: &str,
    ) -> Result<(), ConfigError> {
        names::check(what, name).map_err(|(m, h)| self.err(at, m).with_hint(h))
    }
}
