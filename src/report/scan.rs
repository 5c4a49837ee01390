//! Numbers in Markdown text, each with the unit of a reading that follows it (or follows
//! the list or range it ends: `20.1-22.9 ns`): what the notes check reads in a person's notes
//! and in the run's report.

/// What a unit measures; quotes match values of the same kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Kind {
    Time,
    Percent,
    Ratio,
    Bandwidth,
    Flops,
    Clock,
    Power,
    Temperature,
    Cycles,
    BytesPerCycle,
}

/// Units of readings, longest first where one begins another, each in its kind's base unit
/// (ns, %, x, B/s, FLOP/s, MHz, W, °C, cycles, B/cycle/SM).
const UNITS: [(&str, Kind, f64); 19] = [
    ("B/cycle/SM", Kind::BytesPerCycle, 1.0),
    ("TFLOP/s", Kind::Flops, 1e12),
    ("GFLOP/s", Kind::Flops, 1e9),
    ("GB/s", Kind::Bandwidth, 1e9),
    ("TB/s", Kind::Bandwidth, 1e12),
    ("MB/s", Kind::Bandwidth, 1e6),
    ("cycles", Kind::Cycles, 1.0),
    ("min", Kind::Time, 60e9),
    ("MHz", Kind::Clock, 1.0),
    ("GHz", Kind::Clock, 1e3),
    ("°C", Kind::Temperature, 1.0),
    ("ns", Kind::Time, 1.0),
    ("µs", Kind::Time, 1e3),
    ("us", Kind::Time, 1e3),
    ("ms", Kind::Time, 1e6),
    ("s", Kind::Time, 1e9),
    ("%", Kind::Percent, 1.0),
    ("x", Kind::Ratio, 1.0),
    ("W", Kind::Power, 1.0),
];

/// A number in a text: its value as written (sign dropped), its decimals, its unit if one
/// follows it (or follows the list or range it ends: `20.1-22.9 ns`), and its line.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Number {
    pub(super) value: f64,
    pub(super) decimals: i32,
    pub(super) unit: Option<(Kind, f64)>,
    /// 1-based.
    pub(super) line: usize,
    /// As written, with its unit.
    pub(super) text: String,
    /// Followed by a footnote reference (`[^label]`: quoted from elsewhere), or a bound.
    pub(super) unchecked: bool,
}

/// Each column of each table in `text` whose cells hold a value with a unit: its kind, its
/// smallest and its largest value (the first value of each cell, in base units).
pub(super) fn column_spreads(text: &str) -> Vec<(Kind, f64, f64)> {
    let mut out = Vec::new();
    let mut columns: Vec<Vec<(Kind, f64)>> = Vec::new();
    let mut flush = |columns: &mut Vec<Vec<(Kind, f64)>>| {
        for c in columns.drain(..) {
            let Some(&(kind, _)) = c.first() else {
                continue;
            };
            let values = c.iter().filter(|(k, _)| *k == kind).map(|(_, v)| *v);
            let (lo, hi) = values.fold((f64::INFINITY, 0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
            if c.len() > 1 && lo > 0.0 && hi > lo {
                out.push((kind, lo, hi));
            }
        }
    };
    for line in text.lines() {
        if !line.starts_with('|') {
            flush(&mut columns);
            continue;
        }
        let cells: Vec<&str> = line.split('|').collect();
        columns.resize_with(columns.len().max(cells.len()), Vec::new);
        for (c, cell) in cells.iter().enumerate() {
            let first = numbers(cell, false, "").into_iter().next();
            if let Some((kind, scale, value)) =
                first.and_then(|n| Some((n.unit?.0, n.unit?.1, n.value)))
            {
                columns[c].push((kind, value * scale));
            }
        }
    }
    flush(&mut columns);
    out
}

/// Every number in `text` with its unit, if any. In notes (`quotes`), numbers in code spans
/// and footnote definitions are left out; `footnotes`: the text that defines the footnotes
/// a number may cite (all of a run's notes), where a reference to any other cites nothing.
pub(super) fn numbers(text: &str, quotes: bool, footnotes: &str) -> Vec<Number> {
    let mut out = Vec::new();
    // A definition says where the number comes from: one with nothing after its colon
    // says nothing, and cites nothing.
    let defined: Vec<&str> = (footnotes.lines())
        .filter_map(|l| l.trim_start().strip_prefix("[^")?.split_once("]:"))
        .filter(|(label, says)| !label.is_empty() && !says.trim().is_empty())
        .map(|(label, _)| label)
        .collect();
    for (i, line) in text.lines().enumerate() {
        if quotes && line.trim_start().starts_with("[^") {
            continue;
        }
        let chars: Vec<char> = line.chars().collect();
        // A backtick that closes no span is a character, not a code span to the line's end.
        let ticks: Vec<usize> = (0..chars.len()).filter(|&k| chars[k] == '`').collect();
        let stray = (ticks.len() % 2 == 1).then(|| ticks[ticks.len() - 1]);
        let mut pending: Vec<Number> = Vec::new();
        // Quotes with a unit each in one list so far (`1.1 µs, 2.2 µs`).
        let mut listed: Vec<usize> = Vec::new();
        let mut code = false;
        let mut at = 0;
        while at < chars.len() {
            let c = chars[at];
            if c == '`' && Some(at) != stray {
                code = !code;
                pending.clear();
                listed.clear();
                at += 1;
                continue;
            }
            let starts = c.is_ascii_digit()
                && (at == 0 || !(chars[at - 1].is_alphanumeric() || "_.^".contains(chars[at - 1])));
            if !starts || (code && quotes) {
                at += 1;
                continue;
            }
            let (mut n, end) = number(&chars, at, i + 1);
            let (unit, after) = unit(&chars, end);
            n.text = chars[at..after].iter().collect();
            n.unchecked = cites(&chars[after..], &defined) || bound(&chars, at);
            at = after;
            match unit {
                Some(u) => {
                    let symbol: String = chars[end..after].iter().collect();
                    let unchecked = n.unchecked;
                    for mut p in pending.drain(..) {
                        p.unit = Some(u);
                        p.text += &symbol;
                        listed.push(out.len());
                        out.push(p);
                    }
                    n.unit = Some(u);
                    listed.push(out.len());
                    out.push(n);
                    // A footnote at the end of a list (`+38.90%, +4.56%, +0.60%[^post]`)
                    // cites the whole list.
                    if unchecked {
                        listed.drain(..).for_each(|k| out[k].unchecked = true);
                    } else if separator(&chars, at) == 0 && !list_goes_on(&chars, at) {
                        listed.clear();
                    }
                }
                None => {
                    let sep = separator(&chars, at);
                    if sep > 0 {
                        pending.push(n);
                        at += sep;
                    } else {
                        out.append(&mut pending);
                        out.push(n);
                    }
                }
            }
        }
        out.extend(pending);
    }
    out
}

/// Whether `rest` opens with a reference to a footnote the text defines (`[^label]`).
fn cites(rest: &[char], defined: &[&str]) -> bool {
    let Some(tail) = rest.strip_prefix(&['[', '^']) else {
        return false;
    };
    let label: String = tail.iter().take_while(|&&c| c != ']').collect();
    defined.contains(&label.as_str())
}

/// How far before a number `bound` looks for its word or an open `max(`, in characters.
const BOUND_WINDOW: usize = 48;

/// Words before a number that make it a bound, not a reading: `within 1%`, `under 0.5 µs`.
const BOUNDS: [&str; 8] = [
    "within", "under", "below", "above", "beyond", "than", "most", "least",
];

/// Whether the number at `at` is a bound (`within 0.3%`, `more than 2x`, inside `max(1%,
/// 0.5 µs)`), which claims no value and is not checked.
fn bound(chars: &[char], at: usize) -> bool {
    // The few words before it: a line of thousands of numbers is read in linear time.
    let before: String = chars[at.saturating_sub(BOUND_WINDOW)..at].iter().collect();
    let word = before.trim_end_matches(['+', '-', '−', '±', '~', ' ']);
    let word = word
        .rsplit(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or("");
    let tolerance = (before.rfind("max(").or_else(|| before.rfind("min(")))
        .is_some_and(|open| !before[open..].contains(')'));
    BOUNDS.contains(&word) || tolerance
}

/// The number starting at `at`: digits with `,` thousands and a decimal part.
fn number(chars: &[char], at: usize, line: usize) -> (Number, usize) {
    let mut end = at;
    let mut text = String::new();
    let mut decimals = 0;
    let mut fraction = false;
    while end < chars.len() {
        let c = chars[end];
        let digit_after = |k: usize| chars.get(end + k).is_some_and(char::is_ascii_digit);
        if c.is_ascii_digit() {
            text.push(c);
            decimals += i32::from(fraction);
        } else if c == '.' && !fraction && digit_after(1) {
            fraction = true;
            text.push(c);
        } else if c == ',' && !fraction && (1..=3).all(digit_after) && !digit_after(4) {
            // A thousands separator: `17,283`.
        } else {
            break;
        }
        end += 1;
    }
    let n = Number {
        value: text.parse().unwrap_or(f64::NAN),
        decimals,
        unit: None,
        line,
        text: String::new(),
        unchecked: false,
    };
    (n, end)
}

/// The unit right after a number (`5.2 ms`, `83%`, `4.0x`) and where it ends.
fn unit(chars: &[char], at: usize) -> (Option<(Kind, f64)>, usize) {
    let spaced = chars.get(at) == Some(&' ');
    let from = at + usize::from(spaced);
    for (symbol, kind, scale) in UNITS {
        // A ratio's `x` sticks to its number: `132 SMs x 1980 MHz` is a product.
        if spaced && kind == Kind::Ratio {
            continue;
        }
        let s: Vec<char> = symbol.chars().collect();
        let end = from + s.len();
        let ends_word = chars.get(end).is_none_or(|c| !c.is_alphanumeric());
        if chars.get(from..end) == Some(&s[..]) && ends_word {
            return (Some((kind, scale)), end);
        }
    }
    (None, at)
}

/// The length of a separator between numbers of one list or range (`20.1-22.9 ns`,
/// `16.96 vs 23.92 µs`, `225.2 / 215.4 µs`), where a number follows it; else 0.
fn separator(chars: &[char], at: usize) -> usize {
    let rest: String = chars[at..].iter().take(6).collect();
    for sep in [" vs. ", " vs ", " to ", " / ", "/", "-", "–", " – "] {
        if let Some(after) = rest.strip_prefix(sep) {
            let after = after.trim_start_matches(['+', '-', '−']);
            if after.starts_with(|c: char| c.is_ascii_digit()) {
                let signs = rest[sep.len()..].len() - after.len();
                return sep.chars().count() + signs;
            }
        }
    }
    0
}

/// Whether a list of quotes goes on after `at`: `, ` and then a number.
fn list_goes_on(chars: &[char], at: usize) -> bool {
    let rest = chars.get(at..at + 2) == Some(&[',', ' ']);
    let next = chars.get(at + 2..).unwrap_or_default();
    let next = next.iter().skip_while(|c| matches!(c, '+' | '-' | '−'));
    rest && next.take(1).any(char::is_ascii_digit)
}

/// Durations as `humantime` writes them (`9m 42s 312ms`, the Run table's wall time), each
/// as one time.
pub(super) fn durations(text: &str) -> Vec<Number> {
    let part = |w: &str| -> Option<f64> {
        let digits = w.trim_end_matches(|c: char| c.is_ascii_alphabetic() || c == 'µ');
        let unit = &w[digits.len()..];
        let scale = match unit {
            "h" => 3600e9,
            "m" => 60e9,
            "s" => 1e9,
            "ms" => 1e6,
            "us" | "µs" => 1e3,
            "ns" => 1.0,
            _ => return None,
        };
        Some(digits.parse::<u64>().ok()? as f64 * scale)
    };
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let words: Vec<&str> = line.split([' ', '(', ')', '|']).collect();
        let mut k = 0;
        while k < words.len() {
            let run: Vec<f64> = words[k..].iter().map_while(|w| part(w)).collect();
            if run.len() >= 2 {
                out.push(Number {
                    value: run.iter().sum(),
                    decimals: 0,
                    unit: Some((Kind::Time, 1.0)),
                    line: i + 1,
                    text: words[k..k + run.len()].join(" "),
                    unchecked: false,
                });
            }
            k += run.len().max(1);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quoted(text: &str) -> Vec<String> {
        numbers(text, true, text)
            .into_iter()
            .filter(|n| n.unit.is_some())
            .map(|n| n.text)
            .collect()
    }

    #[test]
    fn only_a_defined_footnote_and_a_closed_code_span_take_a_number_out() {
        let checked = |text: &str| -> Vec<String> {
            (numbers(text, true, text).into_iter())
                .filter(|n| n.unit.is_some() && !n.unchecked)
                .map(|n| n.text)
                .collect()
        };
        // A footnote the notes define cites its number; one they do not define, nothing.
        assert!(checked("read 1.5 µs[^a]\n\n[^a]: an earlier run").is_empty());
        assert_eq!(checked("read 1.5 µs[^missing]"), ["1.5 µs"]);
        assert_eq!(checked("read 1.5 µs[^a]\n\n[^a]:  "), ["1.5 µs"]);
        // A backtick that closes no span does not hide the rest of its line.
        assert_eq!(
            checked("the `n` axis: 2.5 µs, a stray ` and 3.5 µs"),
            ["2.5 µs", "3.5 µs"]
        );
        assert!(checked("inside `4.5 µs` code").is_empty());
    }

    #[test]
    fn quotes_are_numbers_with_a_unit_of_a_reading() {
        assert_eq!(
            quoted("16.96 vs 23.92 µs at n = 256, 7-10 µs of misses, 41-46% above; 4.0x"),
            [
                "16.96 µs",
                "23.92 µs",
                "7 µs",
                "10 µs",
                "41%",
                "46%",
                "4.0x"
            ]
        );
        // Sizes, counts, settings in code and products are not readings.
        assert!(quoted("at 1.6 MiB, 144 blocks, `wait_us = 50` µs, 132 SMs x 2").is_empty());
        assert_eq!(
            quoted("5 samples, 3 s, H100 at 1980 MHz"),
            ["3 s", "1980 MHz"]
        );
        assert_eq!(quoted("17,283 readings over 176 s"), ["176 s"]);
    }
}
