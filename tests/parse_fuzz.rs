//! The lexer and parser never panic: random bytes, random token soup, and randomly mutated real
//! models always give a tree or diagnostics, whose spans lie inside the text on character
//! boundaries and render without panicking.

use std::path::Path;

use mocca::diagnostics::render_plain;
use mocca::source::SourceMap;
use mocca::syntax::parse_file;
use proptest::prelude::*;

fn check(text: &str) -> Result<(), TestCaseError> {
    let mut sources = SourceMap::new();
    let id = sources.add("fuzz.mo", text.to_string());
    let parsed = parse_file(&sources, id);
    prop_assert!(
        parsed.ast.is_some() || !parsed.diagnostics.is_empty(),
        "no tree and no diagnostic"
    );
    for d in &parsed.diagnostics {
        for (span, _) in d.primary.iter().chain(&d.secondary) {
            let (start, end) = (span.start as usize, span.end as usize);
            prop_assert!(
                start <= end && end <= text.len(),
                "span {start}..{end} outside {}",
                text.len()
            );
            prop_assert!(
                text.is_char_boundary(start) && text.is_char_boundary(end),
                "span not on char boundaries"
            );
        }
    }
    let _ = render_plain(&sources, &parsed.diagnostics);
    Ok(())
}

const TOKENS: &[&str] = &[
    "model",
    "end",
    "M",
    "x",
    "Real",
    "parameter",
    "equation",
    "initial equation",
    "connect",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ";",
    ",",
    ".",
    ":",
    "=",
    ":=",
    "+",
    "-",
    "*",
    "/",
    "^",
    "==",
    "<>",
    "<",
    ">=",
    "if",
    "then",
    "else",
    "elseif",
    "for",
    "in",
    "loop",
    "when",
    "weak",
    "flow",
    "der",
    "1",
    "2.5e-3",
    "\"s\"",
    "'q x'",
    "/* c */",
    "// c\n",
    "extends",
    "connector",
    "package",
    "within",
    "annotation",
    "each",
    "final",
    "and",
    "or",
    "not",
    "true",
    "algorithm",
    "import",
    "1e",
    "12ab",
    "\"open",
    "/*",
    "é",
    "\u{1F600}",
    "\n",
    " ",
];

/// The bundled examples and stdlib, plus corpus files when present: seeds for mutation.
fn seeds() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in [
        "examples",
        "stdlib/Mocca",
        "../shared/conformance/omc-flattening/connectors",
    ] {
        if let Ok(entries) = std::fs::read_dir(root.join(dir)) {
            let mut paths: Vec<_> = entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "mo"))
                .collect();
            paths.sort();
            files.extend(
                paths
                    .into_iter()
                    .filter_map(|p| std::fs::read_to_string(p).ok()),
            );
        }
    }
    files
}

#[derive(Clone, Debug)]
enum Mutation {
    Delete(usize, usize),
    Duplicate(usize, usize),
    Insert(usize, usize),
    Swap(usize, usize, usize),
}

fn apply(text: &str, m: &Mutation) -> String {
    let bytes = text.as_bytes();
    let n = bytes.len().max(1);
    let at = |x: usize| x % n;
    let mut out: Vec<u8> = match *m {
        Mutation::Delete(a, len) => {
            let (a, b) = (at(a), (at(a) + len % 64).min(bytes.len()));
            [&bytes[..a], &bytes[b..]].concat()
        }
        Mutation::Duplicate(a, len) => {
            let (a, b) = (at(a), (at(a) + len % 64).min(bytes.len()));
            [&bytes[..b], &bytes[a..b], &bytes[b..]].concat()
        }
        Mutation::Insert(a, token) => {
            let a = at(a).min(bytes.len());
            [
                &bytes[..a],
                TOKENS[token % TOKENS.len()].as_bytes(),
                &bytes[a..],
            ]
            .concat()
        }
        Mutation::Swap(a, b, len) => {
            let (mut a, mut b) = (at(a), at(b));
            if a > b {
                std::mem::swap(&mut a, &mut b);
            }
            let len = (len % 32).min(b - a).min(bytes.len() - b);
            [
                &bytes[..a],
                &bytes[b..b + len],
                &bytes[a + len..b],
                &bytes[a..a + len],
                &bytes[b + len..],
            ]
            .concat()
        }
    };
    out.truncate(out.len());
    String::from_utf8_lossy(&out).into_owned()
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<usize>()).prop_map(|(a, l)| Mutation::Delete(a, l)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, l)| Mutation::Duplicate(a, l)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, t)| Mutation::Insert(a, t)),
        (any::<usize>(), any::<usize>(), any::<usize>())
            .prop_map(|(a, b, l)| Mutation::Swap(a, b, l)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        check(&String::from_utf8_lossy(&bytes))?;
    }

    #[test]
    fn token_soup_never_panics(tokens in proptest::collection::vec(0..TOKENS.len(), 0..80)) {
        let text: Vec<&str> = tokens.iter().map(|&t| TOKENS[t]).collect();
        check(&text.join(" "))?;
    }

    #[test]
    fn mutated_models_never_panic(seed in any::<usize>(), mutations in proptest::collection::vec(mutation(), 1..6)) {
        let seeds = seeds();
        prop_assume!(!seeds.is_empty());
        let mut text = seeds[seed % seeds.len()].clone();
        for m in &mutations {
            text = apply(&text, m);
        }
        check(&text)?;
    }
}
