//! The key reference, made from every knob's `KEYS`: what `runner keys` prints and what
//! docs/keys.md holds below its heading (`tests/docs.rs` keeps the two alike).

use super::knob::Key;
use super::Knobs;

/// The column a key's comment starts at, as in the docs' other TOML blocks.
const COMMENT_COLUMN: usize = 31;
/// The longest line the reference writes, in characters.
const WIDTH: usize = 96;

/// What the reference is, as a Markdown paragraph wrapped as the docs' prose is.
const INTRO: &str = "\
`[defaults]` sets the methodology knobs for every variant, and a `[[variant]]` may set any of
them again for itself. A key set below shows its default unless its comment says otherwise; a
key commented out is unset unless an experiment sets it, and shows an example. `runner keys`
prints this reference from the knobs' own files (`src/experiment/knobs/`).
";

/// The reference in Markdown: a paragraph, then a `[defaults]` table with every knob's keys,
/// each followed by its documentation as a comment.
pub fn markdown() -> String {
    let mut out = format!("{INTRO}\n```toml\n");
    out += &commented("[defaults]", "every knob; a variant overrides any of them");
    for key in Knobs::documented_keys() {
        out += &entry(key);
    }
    out += "```\n";
    out
}

/// One key's lines: `name = example`, commented out unless the reference sets it, and its
/// documentation.
fn entry(key: &Key) -> String {
    let mark = if key.set { "" } else { "# " };
    commented(&format!("{mark}{} = {}", key.name, key.example), key.doc)
}

/// `head` with `doc` as a comment beside it, rewrapped onto comment lines below it at the
/// same column, so that a knob's file may break its documentation anywhere.
fn commented(head: &str, doc: &str) -> String {
    let mut out = String::new();
    let mut line = format!("{head:<0$} #", COMMENT_COLUMN - 1);
    let mut first_word = true;
    for word in words(doc) {
        if !first_word && line.chars().count() + 1 + word.chars().count() > WIDTH {
            out += &line;
            out.push('\n');
            line = format!("{:1$}#", "", COMMENT_COLUMN);
        }
        line.push(' ');
        line += &word;
        first_word = false;
    }
    out += &line;
    out.push('\n');
    out
}

/// The words of `doc`, a quoted value with a space in it (`"2 min"`) kept as one, so that
/// no line ends inside a value.
fn words(doc: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let mut in_quotes = false;
    for word in doc.split_whitespace() {
        match words.last_mut() {
            Some(last) if in_quotes => {
                last.push(' ');
                last.push_str(word);
            }
            _ => words.push(word.to_string()),
        }
        in_quotes ^= word.matches('"').count() % 2 == 1;
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::knobs::Layer;
    use crate::experiment::schema::RawTable;
    use crate::experiment::DeviceFacts;
    use std::path::Path;

    /// The reference's TOML block.
    fn toml_block(markdown: &str) -> &str {
        let start = markdown.find("```toml\n").expect("a TOML block") + "```toml\n".len();
        let len = markdown[start..].find("```").expect("the block ends");
        &markdown[start..start + len]
    }

    #[test]
    fn the_keys_set_in_the_reference_read_as_valid_defaults() {
        #[derive(serde::Deserialize)]
        struct Reference {
            defaults: RawTable,
        }
        let text = toml_block(&markdown()).to_string();
        let Reference { defaults } = toml::from_str(&text).expect("the reference is TOML");
        let point = vec![("n".to_string(), 512.into())];
        let layer = Layer {
            variant: &RawTable::new(),
            defaults: &defaults,
            path: Path::new("docs/keys.md"),
            text: &text,
            point: &point,
            facts: &DeviceFacts::nominal(),
        };
        let set = Knobs::documented_keys().into_iter().filter(|k| k.set);
        assert_eq!(defaults.len(), set.count(), "{text}");
        if let Err(e) = Knobs::read(&layer) {
            panic!("{e}");
        }
    }

    #[test]
    fn every_example_is_a_toml_value_and_every_key_documented() {
        for key in Knobs::documented_keys() {
            let line = format!("{} = {}", key.name, key.example);
            assert!(toml::from_str::<toml::Table>(&line).is_ok(), "{line}");
            assert!(
                !key.doc.trim().is_empty(),
                "{} has no documentation",
                key.name
            );
            let quotes = key.doc.matches('"').count();
            assert!(quotes % 2 == 0, "{}: a quote left open", key.name);
        }
    }

    #[test]
    fn a_quoted_value_stays_on_one_line() {
        assert_eq!(words(r#"a "2 min" b"#), ["a", r#""2 min""#, "b"]);
    }

    #[test]
    fn long_documentation_wraps_at_the_comment_column() {
        let text = commented("x = 1", &"word ".repeat(40));
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.len() > 1, "{text}");
        assert!(lines[0].starts_with("x = 1                          # word"));
        for l in &lines[1..] {
            assert!(l.starts_with(&format!("{:31}# word", "")), "{l}");
        }
        assert!(lines.iter().all(|l| l.chars().count() <= WIDTH), "{text}");
    }
}
