//! Names of experiments, kernels, variants and sweep parameters end up in file and folder
//! names, CSV fields and cell ids, so they are identifiers: letters, digits, `_`, `-` and
//! `.`, never `..`, and short enough that a plot's file name made of two of them fits.

/// The longest name, in characters: a file name holds 255 bytes, a plot's holds two names.
pub const MAX_NAME_CHARS: usize = 100;

/// Why `name` cannot be a name, if it cannot.
pub fn check(what: &str, name: &str) -> Result<(), (String, String)> {
    if name.chars().count() > MAX_NAME_CHARS {
        return Err((
            format!(
                "{what} name `{}…` has {} characters, more than the {MAX_NAME_CHARS} a name may have",
                name.chars().take(20).collect::<String>(),
                name.chars().count()
            ),
            "shorten it: names become file names, and a plot's file name holds two of them".into(),
        ));
    }
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
            "x$(touch F)",
            "a\nb",
        ] {
            assert!(check("kernel", bad).is_err(), "{bad}");
        }
        assert!(check("kernel", &"k".repeat(MAX_NAME_CHARS)).is_ok());
        let e = check("kernel", &"k".repeat(MAX_NAME_CHARS + 1)).unwrap_err();
        assert!(
            e.0.contains("101 characters") && e.0.contains("100"),
            "{e:?}"
        );
    }
}
