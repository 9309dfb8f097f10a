//! What to tell a newcomer about a configuration mistake: pure functions from the mistake (and
//! the file's text) to a message and a fix. No I/O; the loader calls them.
//!
//! - `did_you_mean`: the closest known name to a misspelt one (stage, pipeline, key).
//! - `yaml_problem`: the YAML parser's error turned into the rule broken and its likely cause.
//!   The parser reports where it *noticed* a problem; with YAML that is often a line or two
//!   after a mis-indented key, or the start of the block a key fell out of (or into). So the
//!   text around the position is read to name the indentation when it is the likely cause.
//! - `price_problem`: a price that is not a positive decimal number of dollars, said once.

/// The known name closest to `name`, when it is close enough to be a typo (two edits for short
/// names, a third of the length for long ones; a different case counts as no edit).
pub fn did_you_mean<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = name.to_ascii_lowercase();
    let allowed = (name.chars().count() / 3).max(2);
    known
        .into_iter()
        .filter(|k| *k != name)
        .map(|k| (strsim::levenshtein(&lower, &k.to_ascii_lowercase()), k))
        .filter(|(d, _)| *d <= allowed)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// ", did you mean `x`?" or nothing.
pub fn suggestion<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    did_you_mean(name, known)
        .map(|k| format!(" (did you mean `{k}`?)"))
        .unwrap_or_default()
}

/// A YAML error made actionable: (message, hint). `line` is 1-based, as the parser gives it;
/// `text` is the whole file.
pub fn yaml_problem(text: &str, line: u64, parser_message: &str) -> (String, String) {
    let lines: Vec<&str> = text.lines().collect();
    if let Some(field) = between_backticks(parser_message, "missing field") {
        return missing_field(&lines, line, &field);
    }
    if let Some(field) = between_backticks(parser_message, "unknown field") {
        let expected = expected_names(parser_message);
        return unknown_field(&lines, line, &field, &expected);
    }
    if parser_message.contains("unknown variant") {
        let expected = expected_names(parser_message);
        let given = between_backticks(parser_message, "unknown variant").unwrap_or_default();
        return (
            format!("`{given}` is not one of: {}", expected.join(", ")),
            format!(
                "use one of: {}{}",
                expected.join(", "),
                suggestion(&given, expected.iter().map(String::as_str))
            ),
        );
    }
    if parser_message.contains("invalid type") {
        return (
            parser_message.to_string(),
            indentation_or("write a value of the type named; a mis-indented line can also give a key the wrong value", &lines, line),
        );
    }
    // A syntax error: the structure breaks here. In practice almost always indentation (or a tab).
    let msg = parser_message.to_string();
    if let Some(tab) = lines
        .iter()
        .position(|l| l.starts_with('\t') || l.trim_start_matches(' ').starts_with('\t'))
    {
        return (
            msg,
            format!(
                "line {} is indented with a tab: YAML indents with spaces only",
                tab + 1
            ),
        );
    }
    (
        msg,
        indentation_or("check the quoting of the value on this line", &lines, line),
    )
}

/// "missing field `summary`": when the key is written nearby but at another indentation, it was
/// read as part of the block above (or outside its block): say so, with both lines.
fn missing_field(lines: &[&str], line: u64, field: &str) -> (String, String) {
    let msg = format!("missing key `{field}`");
    match misplaced_key(lines, line, field) {
        Some((at, sibling)) => (
            format!("{msg}: `{field}:` on line {at} is not read as part of this block"),
            format!(
                "likely an indentation mistake: line {at} is indented {} spaces, the block's keys {} (line {}); keys of one mapping start in the same column",
                indent(lines[at - 1]),
                indent(lines[sibling - 1]),
                sibling
            ),
        ),
        None => (msg, format!("add `{field}:` to this block")),
    }
}

fn unknown_field(lines: &[&str], line: u64, field: &str, expected: &[String]) -> (String, String) {
    let msg = format!("unknown key `{field}`");
    if let Some(k) = did_you_mean(field, expected.iter().map(String::as_str)) {
        return (
            format!("{msg} (did you mean `{k}`?)"),
            format!("rename it to `{k}`: unknown keys are refused so typos cannot hide"),
        );
    }
    let known = if expected.is_empty() {
        String::new()
    } else {
        format!(" (this block's keys: {})", expected.join(", "))
    };
    let at = line as usize;
    let hint = if at >= 2 && at <= lines.len() && indent(lines[at - 1]) > 0 {
        format!(
            "if `{field}` belongs to another block, it is likely mis-indented: line {at} is indented {} spaces{known}; otherwise remove the key",
            indent(lines[at - 1])
        )
    } else {
        format!("remove or rename the key{known}")
    };
    (format!("{msg}{known}"), hint)
}

/// The hint for a structural error: the nearest line above whose indentation jumps in a way a
/// mapping cannot, named; else `otherwise`.
fn indentation_or(otherwise: &str, lines: &[&str], line: u64) -> String {
    if lines.is_empty() {
        return otherwise.to_string();
    }
    let at = (line as usize).clamp(1, lines.len());
    // The reported line and the two before it, earliest first: the parser often notices a line
    // or two late, and the line after a mis-indented one looks odd too.
    for l in at.saturating_sub(2).max(1)..=at {
        let Some(prev) = previous_content_line(lines, l) else {
            continue;
        };
        let (cur, before) = (lines[l - 1], lines[prev - 1]);
        if is_content(cur) && odd_indent(cur, before) {
            return format!(
                "likely an indentation mistake: line {l} is indented {} spaces after line {prev} at {}; keys of one mapping start in the same column, a nested block is indented further (YAML indents with spaces)",
                indent(cur),
                indent(before)
            );
        }
    }
    format!("likely an indentation mistake near line {at} (keys of one mapping start in the same column); else {otherwise}")
}

/// A line indented deeper than the line before when that line opens no block, or between two
/// levels of the enclosing blocks.
fn odd_indent(cur: &str, before: &str) -> bool {
    let (c, b) = (indent(cur), indent(before));
    let opens_block = before.trim_end().ends_with(':')
        || before.trim_end().ends_with('|')
        || before.trim_end().ends_with(">-")
        || before.trim_end().ends_with('>')
        || before.trim_start().starts_with("- ");
    (c > b && !opens_block)
        || (c < b && c % 2 == 1)
        || (c > b && (c - b) % 2 == 1 && !before.trim_start().starts_with("- "))
}

/// Where `field:` is written near `line` at an indentation that makes it fall out of the block
/// the parser was reading: (its line, a sibling key's line).
fn misplaced_key(lines: &[&str], line: u64, field: &str) -> Option<(usize, usize)> {
    if lines.is_empty() {
        return None;
    }
    let at = (line as usize).clamp(1, lines.len());
    // The block the parser was reading: the key line at or above the reported position (the
    // parser points at the block's first key, or at the line that ended it).
    let block_indent = (1..=at)
        .rev()
        .find(|&l| key_of(lines[l - 1]).is_some())
        .map(|l| indent(lines[l - 1]))?;
    // `field:` written nearby at another indentation (correctly placed ones, in the blocks
    // around, are at the block's own indentation); search the 80 lines around.
    let lo = at.saturating_sub(80).max(1);
    let hi = (at + 80).min(lines.len());
    let found = (lo..=hi)
        .filter(|&l| key_of(lines[l - 1]) == Some(field) && indent(lines[l - 1]) != block_indent)
        .min_by_key(|&l| l.abs_diff(at))?;
    let sibling = (lo..=hi)
        .filter(|&l| key_of(lines[l - 1]).is_some() && indent(lines[l - 1]) == block_indent)
        .min_by_key(|&l| l.abs_diff(at))?;
    Some((found, sibling))
}

/// The key a line defines (`  - name: x` → name), if any.
fn key_of(line: &str) -> Option<&str> {
    let t = line.trim_start();
    let t = t.strip_prefix("- ").unwrap_or(t).trim_start();
    if t.starts_with('#') {
        return None;
    }
    let (k, _) = t.split_once(':')?;
    (!k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'))
    .then_some(k)
}

/// Columns before the first key on the line (a `- ` list marker counts as indentation).
fn indent(line: &str) -> usize {
    let spaces = line.len() - line.trim_start().len();
    let rest = line.trim_start();
    if let Some(after) = rest.strip_prefix("- ") {
        spaces + 2 + (after.len() - after.trim_start().len())
    } else {
        spaces
    }
}

fn is_content(line: &str) -> bool {
    let t = line.trim();
    !t.is_empty() && !t.starts_with('#')
}

fn previous_content_line(lines: &[&str], l: usize) -> Option<usize> {
    (1..l).rev().find(|&p| is_content(lines[p - 1]))
}

/// `missing field \`summary\`` → summary
fn between_backticks(message: &str, after: &str) -> Option<String> {
    let rest = &message[message.find(after)? + after.len()..];
    let start = rest.find('`')? + 1;
    let len = rest[start..].find('`')?;
    Some(rest[start..start + len].to_string())
}

/// "…, expected one of a, b" (the YAML library's form; serde's own quotes them in backticks,
/// "expected one of `a`, `b`") → [a, b]
fn expected_names(message: &str) -> Vec<String> {
    let Some(at) = message.find("expected") else {
        return Vec::new();
    };
    let list = message[at + "expected".len()..]
        .trim_start()
        .trim_start_matches("one of")
        .trim();
    list.split(',')
        .map(|n| n.trim().trim_matches('`').to_string())
        .filter(|n| !n.is_empty() && !n.contains(' '))
        .collect()
}

/// Why a price as written is not a price, before any conversion: one message per mistake, the
/// rule stated. `None` when it is a positive decimal number of dollars.
pub fn price_problem(written: &str) -> Option<String> {
    let s = written.trim();
    let digits = s.strip_prefix('$').unwrap_or(s).trim();
    if let Some(rest) = digits.strip_prefix('-') {
        if plain_decimal(rest.trim()) {
            return Some(format!(
                "price_usd `{written}` is negative: a price must be positive"
            ));
        }
    }
    if !plain_decimal(digits) {
        return Some(format!(
            "price_usd `{written}` is not a decimal number of dollars: write digits with an optional decimal point, e.g. \"0.01\""
        ));
    }
    if digits.chars().all(|c| c == '0' || c == '.') {
        return Some(format!(
            "price_usd `{written}` is zero: a price must be positive (remove price_usd for a free route)"
        ));
    }
    None
}

fn plain_decimal(s: &str) -> bool {
    let (i, f) = s.split_once('.').unwrap_or((s, ""));
    !i.is_empty()
        && i.chars().all(|c| c.is_ascii_digit())
        && f.chars().all(|c| c.is_ascii_digit())
        && !s.ends_with('.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_names_are_suggested_and_far_ones_are_not() {
        let stages = [
            "payment_gate",
            "url_guard",
            "fetch",
            "markdown",
            "bill",
            "settle",
        ];
        assert_eq!(did_you_mean("fecth", stages), Some("fetch"));
        assert_eq!(did_you_mean("url_gaurd", stages), Some("url_guard"));
        assert_eq!(did_you_mean("Markdown", stages), Some("markdown"));
        assert_eq!(did_you_mean("screenshot", stages), None);
        assert_eq!(
            suggestion("htp", ["http", "fetch"]),
            " (did you mean `http`?)"
        );
        assert_eq!(suggestion("zzz", ["http", "fetch"]), "");
    }

    #[test]
    fn a_price_states_the_rule_it_breaks() {
        assert_eq!(price_problem("0.01"), None);
        assert_eq!(price_problem("$1"), None);
        assert!(price_problem("-0.01").unwrap().contains("must be positive"));
        assert!(price_problem("0").unwrap().contains("must be positive"));
        assert!(price_problem("0.00").unwrap().contains("must be positive"));
        assert!(price_problem("one cent")
            .unwrap()
            .contains("not a decimal number"));
        assert!(price_problem("1.")
            .unwrap()
            .contains("not a decimal number"));
        assert!(price_problem("1e-2")
            .unwrap()
            .contains("not a decimal number"));
    }

    #[test]
    fn a_key_indented_into_the_block_above_is_named_with_its_line() {
        let text = "routes:\n  - path: /api/x\n    methods: [GET]\n    output_example:\n      ok: true\n      summary: hi\n    pipeline: x\n";
        let (msg, hint) = yaml_problem(text, 2, "missing field `summary`");
        assert!(msg.contains("`summary:` on line 6"), "{msg}");
        assert!(hint.contains("indentation"), "{hint}");
        assert!(hint.contains("line 6 is indented 6 spaces"), "{hint}");
    }

    #[test]
    fn a_missing_key_not_written_anywhere_asks_to_add_it() {
        let text = "routes:\n  - path: /api/x\n    methods: [GET]\n";
        let (msg, hint) = yaml_problem(text, 2, "missing field `summary`");
        assert_eq!(msg, "missing key `summary`");
        assert_eq!(hint, "add `summary:` to this block");
    }

    #[test]
    fn an_unknown_key_gets_the_closest_known_one() {
        let (msg, hint) = yaml_problem(
            "a: 1\n",
            1,
            "unknown field `sumary`, expected one of path, methods, summary",
        );
        assert!(msg.contains("did you mean `summary`?"), "{msg}");
        assert!(hint.contains("rename it to `summary`"), "{hint}");
    }

    #[test]
    fn a_syntax_error_after_an_odd_indentation_names_it() {
        let text = "service:\n  name: x\n   base_url: y\n";
        let (_, hint) = yaml_problem(text, 3, "did not find expected key");
        assert!(hint.contains("line 3 is indented 3 spaces"), "{hint}");
        let tabs = "service:\n\tname: x\n";
        let (_, hint) = yaml_problem(tabs, 2, "found character that cannot start any token");
        assert!(hint.contains("tab"), "{hint}");
    }
}
