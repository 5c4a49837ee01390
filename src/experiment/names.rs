//! Names of kernels, variants and sweep parameters end up in file names, CSV fields and
//! cell ids, so they are identifiers: letters, digits, `_`, `-` and `.`, never `..`.

/// Why `name` cannot be a name, if it cannot.
pub fn check(what: &str, name: &str) -> Result<(), (String, String)> {
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        && !name.contains("..")
        && !name.starts_with(['.', '-']);
    if ok {
        Ok(())
    } else {
        Err((
            format!("{what} name `{name}` is not an identifier"),
            "names hold letters, digits, `_`, `-` and `.` (not first, never `..`): they become file names and CSV fields".into(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_commas_and_spaces_are_not_names() {
        for good in ["matmul", "graph-100", "v1.2", "host_sync"] {
            assert!(check("kernel", good).is_ok(), "{good}");
        }
        for bad in [
            "../../../../tmp/pwned",
            "gemm/v2",
            "a,b",
            "a b",
            "",
            "..",
            ".hidden",
            "-x",
            "a..b",
        ] {
            assert!(check("kernel", bad).is_err(), "{bad}");
        }
    }
}
