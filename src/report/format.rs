//! Numbers as a reader should see them: times with a unit, percentages with a sign.

use crate::analysis::findings::clipped;
use crate::experiment::Unit;

/// Formats nanoseconds in `unit`; `Auto` picks the unit per value. Four significant digits
/// (one decimal in ns), more decimals for a small value in a large unit, and a value of five
/// digits or more before the point rounded to four (`130988 µs` reads `131000 µs`).
pub fn time(ns: f64, unit: Unit) -> String {
    if !ns.is_finite() {
        return "–".into();
    }
    let unit = match unit {
        Unit::Auto => UNITS
            .into_iter()
            .rev()
            .find(|u| ns.abs() >= u.ns_per_unit())
            .unwrap_or(Unit::Ns),
        u => u,
    };
    let v = ns / unit.ns_per_unit();
    if v == 0.0 {
        return format!("0 {}", unit.symbol());
    }
    let magnitude = v.abs().max(1e-9).log10().floor() as i32;
    if magnitude >= 4 {
        let step = 10f64.powi(magnitude - 3);
        return format!("{:.0} {}", (v / step).round() * step, unit.symbol());
    }
    let digits = if unit == Unit::Ns {
        1
    } else {
        (3 - magnitude).clamp(0, 6) as usize
    };
    format!("{v:.digits$} {}", unit.symbol())
}

/// The units a table's times may take, smallest first.
const UNITS: [Unit; 4] = [Unit::Ns, Unit::Us, Unit::Ms, Unit::S];

/// A number with four significant digits (`1234`, `12.34`, `0.001234`).
pub fn number(v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    if v == 0.0 {
        return "0".into();
    }
    let digits = (3 - v.abs().log10().floor() as i32).clamp(0, 9) as usize;
    format!("{v:.digits$}")
}

/// The unit a table shows all its times in: `asked`, or for `Auto` the unit in which the
/// most of the table's values have one to four digits before the point (1 to 9999), the
/// larger unit on a tie. One unit per table, so columns compare at a glance, chosen for the
/// bulk of its values: one far from the bulk keeps its four significant digits in it.
pub fn unit_for(values: impl IntoIterator<Item = f64>, asked: Unit) -> Unit {
    if asked != Unit::Auto {
        return asked;
    }
    let v: Vec<f64> = values
        .into_iter()
        .filter(|x| x.is_finite() && *x != 0.0)
        .map(f64::abs)
        .collect();
    if v.is_empty() {
        return Unit::Us;
    }
    let bulk = |u: &Unit| {
        let range = u.ns_per_unit()..u.ns_per_unit() * 1e4;
        v.iter().filter(|x| range.contains(x)).count()
    };
    // `max_by_key` keeps the last of equals: the larger unit on a tie.
    UNITS.into_iter().max_by_key(bulk).expect("four units")
}

/// The widest line [`wrap`] writes, in characters.
pub const WRAP_WIDTH: usize = 100;

/// Text that came from a run folder or a program (a worker's error, a check's account),
/// made inert inside a Markdown table cell: on one line, its `|` escaped, and no HTML tag,
/// link or image it could open (outside code spans `<` and `>` become entities, `[` and `]`
/// are escaped). Its code spans stay, where its backticks pair up (`` `C` ``); an odd one
/// is shown as a backtick.
pub fn inert(text: &str) -> String {
    let spans = text.matches('`').count().is_multiple_of(2);
    let mut out = String::with_capacity(text.len());
    let mut in_code = false;
    for c in text.chars() {
        match c {
            '`' if spans => {
                in_code = !in_code;
                out.push(c);
            }
            '`' => out.push_str("\\`"),
            '|' => out.push_str("\\|"),
            '\n' | '\r' => out.push(' '),
            c if c.is_control() => out.push(' '),
            _ if in_code => out.push(c),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '[' | ']' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// `text` cut so that it holds at most `room` characters once the template makes it inert
/// ([`inert`] escapes brackets and bars, and writes angle brackets as entities): a
/// check's account of `y[101037]` had grown a row two characters past the line.
pub fn fitted(text: &str, room: usize) -> String {
    let mut take = room;
    loop {
        let cut = clipped(text, take);
        let over = inert(&cut).chars().count().saturating_sub(room);
        if over == 0 || take == 0 {
            return cut;
        }
        take = take.saturating_sub(over);
    }
}

/// Text from a run folder as a Markdown code span, whatever it holds: fenced by one
/// backtick more than its longest run of them (so none closes the span early), on one line.
/// Inside a code span neither HTML nor a link is read.
pub fn code(text: &str) -> String {
    let text = text.replace(['\n', '\r'], " ");
    let longest = (text.split(|c| c != '`')).map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = match text.starts_with('`') || text.ends_with('`') {
        true => " ",
        false => "",
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// Prose wrapped at spaces into lines of at most [`WRAP_WIDTH`] characters (a longer word
/// keeps a line of its own), so that a report's lines stay short however long a sentence its
/// data makes. Markdown reads the line breaks as spaces.
pub fn wrap(text: &str) -> String {
    let mut out = String::new();
    let mut width = 0;
    for word in text.split_whitespace() {
        let n = word.chars().count();
        if width > 0 && width + 1 + n > WRAP_WIDTH {
            out.push('\n');
            width = 0;
        } else if width > 0 {
            out.push(' ');
            width += 1;
        }
        out.push_str(word);
        width += n;
    }
    out
}

/// The longest line a report writes where it can choose, in characters: longer prose is
/// wrapped, a wider table split by its columns.
pub const MAX_LINE: usize = 300;

/// Markdown a person wrote (notes, findings) with each line longer than [`MAX_LINE`] wrapped
/// at [`WRAP_WIDTH`] (a list item's or quote's lines kept in it); tables and code as written.
pub fn wrap_long_lines(text: &str) -> String {
    let mut out = Vec::new();
    let mut code = false;
    for line in text.lines() {
        code ^= line.trim_start().starts_with("```");
        let table = line.trim_start().starts_with('|');
        if code || table || line.chars().count() <= MAX_LINE {
            out.push(line.to_string());
            continue;
        }
        let body = line.trim_start();
        let indent = line.len() - body.len();
        let marker = ["- ", "* ", "+ ", "> "]
            .into_iter()
            .find(|m| body.starts_with(m))
            .map(str::len)
            .or_else(|| {
                let digits = body.chars().take_while(char::is_ascii_digit).count();
                (digits > 0 && body[digits..].starts_with(". ")).then_some(digits + 2)
            })
            .unwrap_or(0);
        let (head, rest) = line.split_at(indent + marker);
        let more = match body.starts_with("> ") {
            true => format!("{}> ", &line[..indent]),
            false => " ".repeat(head.chars().count()),
        };
        for (i, l) in wrap(rest).lines().enumerate() {
            out.push(format!("{}{l}", if i == 0 { head } else { &more }));
        }
    }
    let mut text = out.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    text
}

/// An experiment file as the report shows it: each line longer than [`MAX_LINE`] that sets a
/// key to a one-line string folded into a multi-line one whose lines end in a backslash, which
/// TOML trims with the line break and the next line's indent, so the value is the same (a
/// description a person wrote on one line); a comment line longer than that wrapped into
/// comment lines of the same indent; any other line as written.
pub fn fold_long_toml_lines(text: &str) -> String {
    let comment = |line: &str| -> Option<String> {
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        let body = body.strip_prefix('#')?.trim_start();
        (line.chars().count() > MAX_LINE).then(|| {
            let lines: Vec<String> = (wrap(body).lines())
                .map(|l| format!("{indent}# {l}"))
                .collect();
            lines.join("\n")
        })
    };
    let fold = |line: &str| -> Option<String> {
        let (key, value) = line.split_once(" = \"")?;
        let body = value.strip_suffix('"')?;
        // One basic string, whole: no quote in it but escaped ones (a comment after it, or
        // a second string, would read otherwise inside triple quotes).
        let one = !body.replace("\\\"", "").contains('"');
        let plain = !key.contains('"') && one && !body.ends_with('\\');
        let single = !body.contains("  ") && !body.starts_with(' ') && !body.ends_with(' ');
        (line.chars().count() > MAX_LINE && plain && single).then(|| {
            let folded = wrap(body).replace('\n', " \\\n  ");
            format!("{key} = \"\"\"{folded}\"\"\"")
        })
    };
    let lines: Vec<String> = (text.lines())
        .map(|l| (fold(l).or_else(|| comment(l))).unwrap_or_else(|| l.to_string()))
        .collect();
    lines.join("\n")
}

/// `+38.90%`
pub fn percent(p: f64) -> String {
    if !p.is_finite() {
        return "–".into();
    }
    format!("{p:+.2}%")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_fits_its_room_once_its_brackets_are_escaped() {
        let reason = "audit on a probe: the worst y[101037] = 31.1 against 33.2 | z[8] ".repeat(5);
        for room in [40, 120, 250] {
            let cut = fitted(&reason, room);
            assert!(inert(&cut).chars().count() <= room, "{room}: {cut}");
            assert!(cut.ends_with('…'), "{cut}");
        }
        assert_eq!(fitted("short [a]", 40), "short [a]");
    }

    #[test]
    fn a_long_comment_wraps_into_comment_lines_of_its_indent() {
        let long = format!("  # {}", "a share drawn anew each launch, ".repeat(12));
        let text = format!("[x]\n{long}\nk = 1");
        let folded = fold_long_toml_lines(&text);
        let lines: Vec<&str> = folded.lines().collect();
        assert!(lines.len() > 3, "{folded}");
        assert!(lines.iter().all(|l| l.chars().count() <= MAX_LINE));
        assert!(lines[1..lines.len() - 1]
            .iter()
            .all(|l| l.starts_with("  # ")));
        let table: toml::Table = toml::from_str(&folded).unwrap();
        assert_eq!(table["x"]["k"].as_integer(), Some(1));
    }

    #[test]
    fn a_long_one_line_string_folds_into_lines_toml_reads_as_the_same_value() {
        let words = vec!["word"; 80].join(" ");
        let text = format!("[experiment]\ndescription = \"{words}\"\nname = \"x\"");
        let folded = fold_long_toml_lines(&text);
        assert!(
            folded.lines().all(|l| l.chars().count() <= MAX_LINE),
            "{folded}"
        );
        let parsed: toml::Table = toml::from_str(&folded).unwrap();
        assert_eq!(
            parsed["experiment"]["description"].as_str(),
            Some(words.as_str())
        );
        // Short lines, and strings it could not fold alike, as written.
        assert_eq!(fold_long_toml_lines("a = \"b\"\nc = 1"), "a = \"b\"\nc = 1");
        let spaced = format!("d = \"{}\"", vec!["w"; 200].join("  "));
        assert_eq!(fold_long_toml_lines(&spaced), spaced);
        let commented = format!("e = \"{words}\" # a \"note\"");
        assert_eq!(fold_long_toml_lines(&commented), commented);
    }

    #[test]
    fn text_from_a_run_folder_cannot_open_markdown_or_html() {
        assert_eq!(code("../events-run1"), "`../events-run1`");
        assert_eq!(code("a`b ``c"), "```a`b ``c```");
        assert_eq!(code("`x"), "`` `x ``");
        assert_eq!(
            inert("<img onerror=x> [a](javascript:b) `c|d\n# e"),
            "&lt;img onerror=x&gt; \\[a\\](javascript:b) \\`c\\|d # e"
        );
        // Paired backticks keep their code spans, inside which nothing is read.
        assert_eq!(
            inert("output `C` was not written, the first C[6] `<b>`"),
            "output `C` was not written, the first C\\[6\\] `<b>`"
        );
    }

    #[test]
    fn auto_unit_keeps_four_significant_digits() {
        assert_eq!(time(238_412.0, Unit::Auto), "238.4 µs");
        assert_eq!(time(15_518_000.0, Unit::Auto), "15.52 ms");
        assert_eq!(time(1_953_000.0, Unit::Auto), "1.953 ms");
        assert_eq!(time(5_800.0, Unit::Auto), "5.800 µs");
        assert_eq!(time(904.4, Unit::Auto), "904.4 ns");
        assert_eq!(time(2.5e9, Unit::Auto), "2.500 s");
    }

    #[test]
    fn a_table_takes_the_unit_of_its_bulk() {
        let u = unit_for([12_900.0, 46_400.0, 2_750_000.0], Unit::Auto);
        assert_eq!(u, Unit::Us);
        assert_eq!(time(2_750_000.0, u), "2750 µs");
        assert_eq!(time(864.0, u), "0.8640 µs");
        assert_eq!(unit_for([1.0], Unit::Ms), Unit::Ms);
        assert_eq!(
            time(300.0, Unit::Ms),
            "0.000300 ms",
            "a small value keeps its digits"
        );
        // Values between 1 and 10 ms fit both µs and ms: the larger unit reads shorter.
        assert_eq!(unit_for([2.95e6, 2.77e6, 5e6], Unit::Auto), Unit::Ms);
        // The post's cold start: 49 µs to 131 ms, most of it in µs; the largest value keeps
        // four significant digits, not six.
        let cold = [
            48_990.0,
            225_200.0,
            352_700.0,
            2_748_000.0,
            21_646_000.0,
            130_988_000.0,
        ];
        let u = unit_for(cold, Unit::Auto);
        assert_eq!(u, Unit::Us);
        assert_eq!(time(130_988_000.0, u), "131000 µs");
        assert_eq!(time(21_646_000.0, u), "21650 µs");
        assert_eq!(time(48_990.0, u), "48.99 µs");
        // The post's async table: 8.2 µs to 904 ms, most of it in µs (no `0.008219 ms`).
        let asynchronous = [
            189e3, 2.95e6, 8_219.0, 2.767e6, 218.5e3, 213.2e3, 13_730.0, 244e3,
        ];
        assert_eq!(
            time(8_219.0, unit_for(asynchronous, Unit::Auto)),
            "8.219 µs"
        );
        assert_eq!(time(15_424.0, Unit::Ns), "15420 ns");
    }

    #[test]
    fn prose_wraps_at_spaces() {
        let text = "word ".repeat(60);
        let wrapped = wrap(&text);
        assert!(wrapped.lines().all(|l| l.chars().count() <= WRAP_WIDTH));
        assert_eq!(wrapped.split_whitespace().count(), 60);
        assert_eq!(wrap("a  b"), "a b");
    }

    #[test]
    fn a_persons_long_lines_wrap_inside_their_list_items() {
        let item = format!("- **Finding**: {}", "a number 1.5 µs ".repeat(30));
        let text = format!(
            "{item}\n  1. {}\n| a | {} |\nshort\n",
            "x ".repeat(200),
            "b".repeat(400)
        );
        let wrapped = wrap_long_lines(&text);
        let lines: Vec<&str> = wrapped.lines().collect();
        assert!(lines[0].starts_with("- **Finding**: a number"));
        let item: Vec<&str> = lines
            .iter()
            .take_while(|l| !l.contains("1. "))
            .copied()
            .collect();
        assert!(
            item.len() > 3
                && item[1..]
                    .iter()
                    .all(|l| l.starts_with("  ") && l.len() < 110)
        );
        assert!(
            wrapped.contains("\n     x x"),
            "a numbered item's lines under its text"
        );
        assert!(
            wrapped.contains(&"b".repeat(400)),
            "a table row stays whole"
        );
        assert!(wrapped.ends_with("short\n"));
        assert_eq!(wrap_long_lines("a\n\nb\n"), "a\n\nb\n");
    }

    #[test]
    fn fixed_unit_and_percent() {
        assert_eq!(time(293_000.0, Unit::Ms), "0.2930 ms");
        assert_eq!(percent(38.9), "+38.90%");
        assert_eq!(percent(-0.5), "-0.50%");
        assert_eq!(time(f64::NAN, Unit::Auto), "–");
    }
}
