//! Runs one file of the Modelica compliance suite without its package: the text is rewritten
//! in memory (the file itself is never touched).
//!
//! - the leading `within A.B;` becomes `package A package B` on the same line, closed after the
//!   text, so the test sits in its package as in the suite (global names such as
//!   `.A.B.M.x` resolve) and is flattened by its qualified name;
//! - `extends Icons.TestCase;` goes (an icon and documentation only);
//! - `assert(Util.compareReal(a, b), msg);` calls a user function of the suite, which mocca
//!   does not support; it becomes the same check written with builtins,
//!   `assert(abs((a) - (b)) <= max(1e-10, 1e-5 * max(abs(a), abs(b))), msg);`, so the
//!   names it reads are still resolved by the flattener (checking its value at run time is
//!   a later step).

/// The rewritten text and the number of `compareReal` checks rewritten.
pub fn prepare(text: &str) -> (String, usize) {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let text = wrap_in_within_packages(text);
    let text = blank_all(&text, "extends Icons.TestCase;");
    rewrite_compare_real(&text)
}

/// Declares the packages named by `within …;` around the text, on the `within` line itself so
/// that line numbers are kept.
fn wrap_in_within_packages(text: &str) -> String {
    let trimmed = text.trim_start();
    let Some(after) = trimmed.strip_prefix("within") else {
        return text.to_string();
    };
    let Some(semi) = after.find(';') else {
        return text.to_string();
    };
    let packages: Vec<&str> = after[..semi]
        .split('.')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    let start = text.len() - trimmed.len();
    let mut out = text[..start].to_string();
    for package in &packages {
        out.push_str(&format!("package {package} "));
    }
    out.push_str(&after[semi + 1..]);
    for package in packages.iter().rev() {
        out.push_str(&format!("\nend {package};"));
    }
    out
}

fn blank_all(text: &str, what: &str) -> String {
    text.replace(what, &" ".repeat(what.len()))
}

const CALL: &str = "Util.compareReal(";

fn rewrite_compare_real(text: &str) -> (String, usize) {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut rewritten = 0;
    while let Some(at) = rest.find(CALL) {
        let args_start = at + CALL.len();
        let Some(close) = matching_paren(&rest[args_start..]) else {
            break;
        };
        let args = split_args(&rest[args_start..args_start + close]);
        out.push_str(&rest[..at]);
        match args.as_slice() {
            [a, b] => {
                let (a, b) = (a.trim(), b.trim());
                out.push_str(&format!(
                    "abs(({a}) - ({b})) <= max(1e-10, 1e-5 * max(abs({a}), abs({b})))"
                ));
                rewritten += 1;
            }
            // Tolerances given explicitly: keep the call (mocca will reject it honestly).
            _ => out.push_str(&rest[at..args_start + close + 1]),
        }
        rest = &rest[args_start + close + 1..];
    }
    out.push_str(rest);
    (out, rewritten)
}

/// The byte offset of the `)` closing an already opened `(`, skipping strings.
fn matching_paren(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '(' | '[' | '{' => depth += 1,
            ')' if depth == 0 => return Some(i),
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// Top-level comma-separated arguments.
fn split_args(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start, mut in_string) = (0usize, 0, false);
    for (i, c) in text.char_indices() {
        match c {
            '"' => in_string = !in_string,
            _ if in_string => {}
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_icon_and_compare_real_are_rewritten() {
        let text = "\u{feff}within A.B;\n\nmodel M\n  extends Icons.TestCase;\n  Real x[2] = {1, 2};\nequation\n  assert(Util.compareReal(x[1], f(1, 2)), \"x, wrong\");\nend M;\n";
        let (out, n) = prepare(text);
        assert_eq!(n, 1);
        assert!(!out.contains("within") && !out.contains("Icons"));
        assert!(out.starts_with("package A package B \n"));
        assert!(out.ends_with("end M;\n\nend B;\nend A;"));
        assert!(out.contains(
            "assert(abs((x[1]) - (f(1, 2))) <= max(1e-10, 1e-5 * max(abs(x[1]), abs(f(1, 2)))), \"x, wrong\");"
        ));
        let model_line = |t: &str| t.lines().position(|l| l.starts_with("model M"));
        assert_eq!(model_line(&out), model_line(text));
    }
}
