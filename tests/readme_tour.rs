//! The README's guide stays true: every `mocca …` command of its tour (the ```sh blocks
//! under `## A tour`) and the command of its first lines run on the bundled examples and
//! succeed. Files the commands write (`--out`, `--svg`, `--png`, `--plot`) go to a folder of
//! this test process instead of the repository.

mod cli_support;

use cli_support::{mocca, temp_path};

/// The README's text.
fn readme() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
    std::fs::read_to_string(path).expect("README.md is readable")
}

/// The lines of the ```sh blocks of `text`, continuation lines (ending in `\`) joined, blank
/// lines and comments dropped, a trailing `# comment` removed.
fn sh_commands(text: &str) -> Vec<String> {
    let mut commands = Vec::new();
    let mut in_sh = false;
    let mut pending = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if !in_sh {
            in_sh = trimmed == "```sh";
            continue;
        }
        if trimmed.starts_with("```") {
            in_sh = false;
            continue;
        }
        let without_comment = strip_comment(trimmed);
        if let Some(start) = without_comment.strip_suffix('\\') {
            pending.push_str(start.trim());
            pending.push(' ');
            continue;
        }
        pending.push_str(without_comment.trim());
        let command = std::mem::take(&mut pending);
        if !command.is_empty() {
            commands.push(command);
        }
    }
    commands
}

/// `line` without a `#` comment that starts outside quotes after a blank.
fn strip_comment(line: &str) -> &str {
    let mut quote = None;
    let mut previous = ' ';
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, '#') if previous.is_whitespace() => return line[..i].trim_end(),
            _ => {}
        }
        previous = c;
    }
    line
}

/// Splits a command line into words as a POSIX shell does for plain words and single- or
/// double-quoted parts (no variables, no escapes inside quotes).
fn words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote = None;
    for c in command.chars() {
        match (quote, c) {
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (Some(q), _) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            _ => {
                word.push(c);
                in_word = true;
            }
        }
    }
    assert!(quote.is_none(), "an unclosed quote in `{command}`");
    if in_word {
        words.push(word);
    }
    words
}

/// The section of `text` under the heading `heading` (up to the next heading of its level).
fn section<'a>(text: &'a str, heading: &str) -> &'a str {
    let start = text
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("the README has a `{heading}` section"));
    let body = &text[start + heading.len() + 2..];
    let end = body.find("\n## ").unwrap_or(body.len());
    &body[..end]
}

/// Runs `mocca ARGS` (the words after `mocca`) with every output path moved to a fresh path
/// of this process, and checks that it succeeds and writes what it was asked to.
fn run_shown(index: usize, args: &[String]) {
    let mut args = args.to_vec();
    let mut written = Vec::new();
    for k in 0..args.len() {
        if matches!(args[k].as_str(), "--out" | "--svg" | "--png" | "--plot") && k + 1 < args.len()
        {
            let name = std::path::Path::new(&args[k + 1])
                .file_name()
                .expect("an output name")
                .to_string_lossy()
                .into_owned();
            let path = temp_path(&format!("tour{index}_{name}"));
            let _ = std::fs::remove_dir_all(&path);
            let _ = std::fs::remove_file(&path);
            args[k + 1] = path.to_str().expect("utf-8").to_string();
            written.push(path);
        }
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let (_, err, code) = mocca(&refs);
    assert_eq!(code, 0, "`mocca {}` failed: {err}", refs.join(" "));
    for path in written {
        assert!(
            path.exists(),
            "`mocca {}` wrote no {path:?}",
            refs.join(" ")
        );
    }
}

#[test]
fn every_command_of_the_readme_tour_succeeds() {
    let text = readme();
    let commands = sh_commands(section(&text, "## A tour"));
    let mut ran = 0;
    for (index, command) in commands.iter().enumerate() {
        let words = words(command);
        assert_eq!(
            words.first().map(String::as_str),
            Some("mocca"),
            "the tour shows only mocca commands: `{command}`"
        );
        run_shown(index, &words[1..]);
        ran += 1;
    }
    assert!(ran >= 6, "the tour shows {ran} commands");
}

#[test]
fn the_tour_shows_each_stage_of_the_guide() {
    let text = readme();
    let commands = sh_commands(section(&text, "## A tour"));
    for subcommand in [
        "check",
        "cycles",
        "separability",
        "simulate",
        "compare",
        "reduce",
        "emit",
    ] {
        assert!(
            commands
                .iter()
                .any(|c| words(c).get(1).map(String::as_str) == Some(subcommand)),
            "the tour runs no `mocca {subcommand}`"
        );
    }
}

#[test]
fn the_readme_first_command_runs_a_bundled_example() {
    let text = readme();
    let first = sh_commands(&text)
        .into_iter()
        .next()
        .expect("the README opens with a command");
    let words = words(&first);
    let prefix = ["cargo", "run", "--release", "--"];
    assert_eq!(words[..prefix.len()], prefix, "first command: `{first}`");
    run_shown(usize::MAX, &words[prefix.len()..]);
    let second = sh_commands(&text)
        .into_iter()
        .nth(1)
        .expect("a second command");
    assert_eq!(second, "cargo test --release", "the README's test command");
}

#[test]
fn shell_words_are_split_as_a_shell_splits_them() {
    assert_eq!(
        words("mocca simulate m.mo --vars 'x_s,der(v_s)' --fast \"T_a[*]\""),
        [
            "mocca",
            "simulate",
            "m.mo",
            "--vars",
            "x_s,der(v_s)",
            "--fast",
            "T_a[*]"
        ]
    );
    assert_eq!(
        sh_commands("```sh\nmocca a \\\n  b   # note\n\n# only a comment\n```\n"),
        ["mocca a b"]
    );
    assert_eq!(strip_comment("mocca x '#not' # yes"), "mocca x '#not'");
}
