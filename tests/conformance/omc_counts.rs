//! Counts read from OpenModelica's expected flat text (the `// Result:` block of a
//! flattening test): scalar variables by kind, states, scalar equations after unrolling.
//!
//! The flat text is OMC's own print format, so this is a small token scanner, not a
//! Modelica parser: declarations are `prefixes Type name(mods) = binding "desc";`, equation
//! sections hold `lhs = rhs;`, `for … loop … end for;`, `if … then … end if;`,
//! `when … end when;` and call statements such as `assert(…);`.

use std::collections::{BTreeSet, HashMap};

/// What the expected flat model contains, in the units mocca's DAE counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub parameters: usize,
    pub constants: usize,
    /// Every other scalar variable: continuous, discrete, inputs, outputs.
    pub others: usize,
    /// Distinct scalars that appear under `der()`.
    pub states: usize,
    /// Scalar equations of the `equation` sections plus binding equations of
    /// non-parameter variables (`Real y = x;`), which mocca also turns into equations.
    pub equations: usize,
    pub initial_equations: usize,
    /// `assert(…)` statements (mocca keeps these apart from equations).
    pub assertions: usize,
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Num(f64),
    Str,
    /// Punctuation and operators: `( ) [ ] { } , ; = == := . : + - * / ^ < > <= >= <>`.
    Punct(&'static str),
}

const PUNCTS: &[&str] = &[
    "==", ":=", "<=", ">=", "<>", ".+", ".-", ".*", "./", ".^", "(", ")", "[", "]", "{", "}", ",",
    ";", "=", ".", ":", "+", "-", "*", "/", "^", "<", ">",
];

fn tokenize(text: &str) -> Vec<Tok> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if text[i..].starts_with("/*") {
            i = text[i + 2..].find("*/").map_or(b.len(), |k| i + 2 + k + 2);
        } else if text[i..].starts_with("//") {
            i = text[i..].find('\n').map_or(b.len(), |k| i + k);
        } else if c == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push(Tok::Str);
        } else if c == b'\'' {
            let start = i;
            i += 1;
            while i < b.len() && b[i] != b'\'' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(b.len());
            out.push(Tok::Ident(text[start..i].to_string()));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Ident(text[start..i].to_string()));
        } else if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
                i += 1;
            }
            if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
                i += 1;
                if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
                    i += 1;
                }
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            out.push(Tok::Num(text[start..i].parse().unwrap_or(f64::NAN)));
        } else if let Some(p) = PUNCTS.iter().find(|p| text[i..].starts_with(**p)) {
            i += p.len();
            out.push(Tok::Punct(p));
        } else {
            // Any other character (`!`, `#`, non-ASCII) is skipped as a whole UTF-8 character.
            i += text[i..].chars().next().map_or(1, char::len_utf8);
        }
    }
    out
}

fn is_ident(t: Option<&Tok>, word: &str) -> bool {
    matches!(t, Some(Tok::Ident(w)) if w == word)
}

fn is_punct(t: Option<&Tok>, p: &str) -> bool {
    matches!(t, Some(Tok::Punct(q)) if *q == p)
}

/// The body of the flat class: the lines between `class NAME` and `end NAME;` (functions and
/// records OMC prints before it, and warnings after it, are skipped).
fn class_body(expected: &str) -> Option<&str> {
    let mut offset = 0;
    let mut start = None;
    let mut name = String::new();
    for line in expected.split_inclusive('\n') {
        let trimmed = line.trim_end();
        match start {
            None => {
                if let Some(rest) = trimmed.strip_prefix("class ") {
                    name = rest.split_whitespace().next().unwrap_or("").to_string();
                    start = Some(offset + line.len());
                }
            }
            Some(s) => {
                if trimmed == format!("end {name};") {
                    return Some(&expected[s..offset]);
                }
            }
        }
        offset += line.len();
    }
    start.map(|s| &expected[s..])
}

#[derive(Clone, Copy, PartialEq)]
enum Section {
    Declarations,
    Equation,
    InitialEquation,
    Algorithm,
}

/// One declared scalar (or array, when OMC did not scalarise it).
struct Decl {
    name: String,
    size: usize,
}

struct Scanner {
    toks: Vec<Tok>,
    pos: usize,
    decls: Vec<Decl>,
    /// Literal values of parameters and constants, for loop ranges such as `1:n`.
    values: HashMap<String, f64>,
    ders: BTreeSet<String>,
    counts: Counts,
}

/// Counts the expected flat model of an OMC flattening test.
pub fn count(expected: &str) -> Option<Counts> {
    let body = class_body(expected)?;
    let mut s = Scanner {
        toks: tokenize(body),
        pos: 0,
        decls: Vec::new(),
        values: HashMap::new(),
        ders: BTreeSet::new(),
        counts: Counts::default(),
    };
    s.run();
    Some(s.counts)
}

impl Scanner {
    fn peek(&self, k: usize) -> Option<&Tok> {
        self.toks.get(self.pos + k)
    }

    fn run(&mut self) {
        let mut section = Section::Declarations;
        let mut equation_spans = Vec::new();
        while self.pos < self.toks.len() {
            if let Some(next) = self.section_marker() {
                section = next;
                continue;
            }
            match section {
                Section::Declarations => self.declaration(),
                Section::Equation | Section::InitialEquation => {
                    let start = self.pos;
                    let n = self.equation();
                    equation_spans.push((start, self.pos));
                    if section == Section::Equation {
                        self.counts.equations += n;
                    } else {
                        self.counts.initial_equations += n;
                    }
                }
                Section::Algorithm => {
                    self.skip_statement();
                }
            }
        }
        // `der()` is collected after all declarations are known, so array names expand.
        for (start, end) in equation_spans {
            self.collect_ders(start, end);
        }
        let states: BTreeSet<String> = self
            .ders
            .iter()
            .flat_map(|name| self.scalars_of(name))
            .collect();
        self.counts.states = states.len();
    }

    fn section_marker(&mut self) -> Option<Section> {
        let (a, b) = (self.peek(0), self.peek(1));
        let (section, len) = if is_ident(a, "equation") {
            (Section::Equation, 1)
        } else if is_ident(a, "algorithm") {
            (Section::Algorithm, 1)
        } else if is_ident(a, "initial") && is_ident(b, "equation") {
            (Section::InitialEquation, 2)
        } else if is_ident(a, "initial") && is_ident(b, "algorithm") {
            (Section::Algorithm, 2)
        } else if is_ident(a, "public") || is_ident(a, "protected") {
            self.pos += 1;
            return self.section_marker().or(Some(Section::Declarations));
        } else {
            return None;
        };
        self.pos += len;
        Some(section)
    }

    /// The tokens of one `;`-terminated statement (without the `;`), skipping nested groups.
    fn statement(&mut self) -> Vec<Tok> {
        let mut depth = 0usize;
        let mut out = Vec::new();
        while let Some(t) = self.toks.get(self.pos).cloned() {
            self.pos += 1;
            match &t {
                Tok::Punct("(" | "[" | "{") => depth += 1,
                Tok::Punct(")" | "]" | "}") => depth = depth.saturating_sub(1),
                Tok::Punct(";") if depth == 0 => return out,
                _ => {}
            }
            out.push(t);
        }
        out
    }

    fn skip_statement(&mut self) {
        self.statement();
    }

    fn declaration(&mut self) {
        let toks = self.statement();
        let mut i = 0;
        let mut kind = "other";
        const PREFIXES: &[&str] = &[
            "final",
            "parameter",
            "constant",
            "discrete",
            "input",
            "output",
            "flow",
            "stream",
            "inner",
            "outer",
            "replaceable",
            "redeclare",
            "each",
        ];
        while let Some(Tok::Ident(w)) = toks.get(i) {
            if !PREFIXES.contains(&w.as_str()) {
                break;
            }
            if w == "parameter" || w == "constant" {
                kind = if w == "parameter" {
                    "parameter"
                } else {
                    "constant"
                };
            }
            i += 1;
        }
        // The type: a dotted name, `enumeration(…)`, optionally with dimensions.
        i = skip_name(&toks, i);
        let mut size = 1;
        if is_punct(toks.get(i), "(") {
            i = skip_group(&toks, i);
        }
        if is_punct(toks.get(i), "[") {
            let end = skip_group(&toks, i);
            size = dims_product(&toks[i + 1..end - 1]);
            i = end;
        }
        let name_start = i;
        i = skip_component_name(&toks, i);
        let name = join(&toks[name_start..i]);
        if name.is_empty() {
            return;
        }
        if is_punct(toks.get(i), "(") {
            i = skip_group(&toks, i);
        }
        let has_binding = is_punct(toks.get(i), "=");
        match kind {
            "parameter" => self.counts.parameters += size,
            "constant" => self.counts.constants += size,
            _ => {
                self.counts.others += size;
                if has_binding {
                    self.counts.equations += size;
                }
            }
        }
        if has_binding && kind != "other" {
            let value = match &toks[i + 1..] {
                [Tok::Num(v), ..] => Some(*v),
                [Tok::Punct("-"), Tok::Num(v), ..] => Some(-v),
                _ => None,
            };
            if let Some(v) = value {
                self.values.insert(name.clone(), v);
            }
        }
        self.decls.push(Decl { name, size });
    }

    /// One equation (possibly a for/if/when block): its number of scalar equations.
    fn equation(&mut self) -> usize {
        match self.peek(0) {
            Some(Tok::Ident(w)) if w == "for" => self.for_equation(),
            Some(Tok::Ident(w)) if w == "if" || w == "when" => self.branching_equation(),
            _ => {
                let toks = self.statement();
                self.simple_equation(&toks)
            }
        }
    }

    /// Equations until one of `stops` begins a statement.
    fn equations_until(&mut self, stops: &[&str]) -> usize {
        let mut n = 0;
        while let Some(t) = self.peek(0) {
            if let Tok::Ident(w) = t
                && stops.contains(&w.as_str())
            {
                break;
            }
            n += self.equation();
        }
        n
    }

    fn for_equation(&mut self) -> usize {
        self.pos += 1;
        let mut header = Vec::new();
        let mut depth = 0usize;
        while let Some(t) = self.toks.get(self.pos).cloned() {
            self.pos += 1;
            match &t {
                Tok::Punct("(" | "[" | "{") => depth += 1,
                Tok::Punct(")" | "]" | "}") => depth = depth.saturating_sub(1),
                Tok::Ident(w) if w == "loop" && depth == 0 => break,
                _ => {}
            }
            header.push(t);
        }
        let iterations: usize = split_top(&header, ",")
            .iter()
            .map(|it| self.iterations(it))
            .product();
        let body = self.equations_until(&["end"]);
        self.statement(); // `end for;`
        iterations * body
    }

    /// `i in a:b`, `i in a:s:b` or `i in {…}`.
    fn iterations(&self, iterator: &[Tok]) -> usize {
        let Some(k) = iterator.iter().position(|t| is_ident(Some(t), "in")) else {
            return 1;
        };
        let range = &iterator[k + 1..];
        if is_punct(range.first(), "{") {
            return split_top(&range[1..range.len().saturating_sub(1)], ",").len();
        }
        let parts: Vec<Option<f64>> = split_top(range, ":")
            .iter()
            .map(|p| self.value_of(p))
            .collect();
        let (start, step, stop) = match parts.as_slice() {
            [Some(a), Some(b)] => (*a, 1.0, *b),
            [Some(a), Some(s), Some(b)] => (*a, *s, *b),
            _ => return 1,
        };
        if step == 0.0 {
            return 0;
        }
        (((stop - start) / step).floor() + 1.0).max(0.0) as usize
    }

    fn value_of(&self, toks: &[Tok]) -> Option<f64> {
        match toks {
            [Tok::Num(v)] => Some(*v),
            [Tok::Punct("-"), Tok::Num(v)] => Some(-v),
            _ => self.values.get(&join(toks)).copied(),
        }
    }

    /// `if`/`when` blocks: the count of the first branch (branches of a run-time if-equation
    /// have equal counts; evaluated ones were already resolved by OMC).
    fn branching_equation(&mut self) -> usize {
        let mut first = None;
        loop {
            // Skip the keyword and the condition up to `then` (or `else`, which has none).
            let else_branch = is_ident(self.peek(0), "else");
            self.pos += 1;
            if !else_branch {
                let mut depth = 0usize;
                while let Some(t) = self.toks.get(self.pos) {
                    self.pos += 1;
                    match t {
                        Tok::Punct("(" | "[" | "{") => depth += 1,
                        Tok::Punct(")" | "]" | "}") => depth = depth.saturating_sub(1),
                        Tok::Ident(w) if depth == 0 && w == "then" => break,
                        _ => {}
                    }
                }
            }
            let n = self.equations_until(&["elseif", "elsewhen", "else", "end"]);
            first.get_or_insert(n);
            match self.peek(0) {
                Some(Tok::Ident(w)) if w == "end" => {
                    self.statement(); // `end if;` / `end when;`
                    break;
                }
                None => break,
                _ => {}
            }
        }
        first.unwrap_or(0)
    }

    fn simple_equation(&mut self, toks: &[Tok]) -> usize {
        if let [Tok::Ident(w), Tok::Punct("("), ..] = toks
            && (w == "assert" || w == "terminate")
        {
            self.counts.assertions += 1;
            return 0;
        }
        let lhs = match toks.iter().position(|t| is_punct(Some(t), "=")) {
            Some(k) => &toks[..k],
            None => return 1,
        };
        let name = match lhs {
            [Tok::Ident(d), Tok::Punct("("), inner @ .., Tok::Punct(")")] if d == "der" => {
                join(inner)
            }
            _ if skip_component_name(lhs, 0) == lhs.len() => join(lhs),
            _ => return 1,
        };
        self.size_of(&name).max(1)
    }

    /// The number of declared scalars a name denotes (`x` → all of `x[1]`, `x[2]`, …).
    fn size_of(&self, name: &str) -> usize {
        self.decls
            .iter()
            .filter(|d| covers(name, &d.name))
            .map(|d| d.size)
            .sum()
    }

    fn scalars_of(&self, name: &str) -> Vec<String> {
        let matching: Vec<String> = self
            .decls
            .iter()
            .filter(|d| covers(name, &d.name))
            .map(|d| d.name.clone())
            .collect();
        if matching.is_empty() {
            vec![name.to_string()]
        } else {
            matching
        }
    }

    fn collect_ders(&mut self, start: usize, end: usize) {
        let toks = &self.toks[start..end];
        for k in 0..toks.len() {
            if is_ident(toks.get(k), "der") && is_punct(toks.get(k + 1), "(") {
                let close = skip_group(toks, k + 1);
                let inner = &toks[k + 2..close.saturating_sub(1).max(k + 2)];
                if !inner.is_empty() && skip_component_name(inner, 0) == inner.len() {
                    self.ders.insert(join(inner));
                }
            }
        }
    }
}

/// Whether the declared scalar `decl` is part of `name` (itself, an element, or a field).
fn covers(name: &str, decl: &str) -> bool {
    decl == name
        || decl
            .strip_prefix(name)
            .is_some_and(|rest| rest.starts_with('[') || rest.starts_with('.'))
}

/// Past a dotted name `a.b.c` starting at `i`.
fn skip_name(toks: &[Tok], mut i: usize) -> usize {
    if !matches!(toks.get(i), Some(Tok::Ident(_))) {
        return i;
    }
    i += 1;
    while is_punct(toks.get(i), ".") && matches!(toks.get(i + 1), Some(Tok::Ident(_))) {
        i += 2;
    }
    i
}

/// Past a component reference `a[1].b[2,3].c`.
fn skip_component_name(toks: &[Tok], mut i: usize) -> usize {
    loop {
        if !matches!(toks.get(i), Some(Tok::Ident(_))) {
            return i;
        }
        i += 1;
        if is_punct(toks.get(i), "[") {
            i = skip_group(toks, i);
        }
        if is_punct(toks.get(i), ".") && matches!(toks.get(i + 1), Some(Tok::Ident(_))) {
            i += 1;
        } else {
            return i;
        }
    }
}

/// Past a bracketed group opening at `i` (the index after its closing bracket).
fn skip_group(toks: &[Tok], mut i: usize) -> usize {
    let mut depth = 0usize;
    while let Some(t) = toks.get(i) {
        i += 1;
        match t {
            Tok::Punct("(" | "[" | "{") => depth += 1,
            Tok::Punct(")" | "]" | "}") => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    i
}

/// Splits tokens at a top-level separator.
fn split_top<'t>(toks: &'t [Tok], sep: &str) -> Vec<&'t [Tok]> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (k, t) in toks.iter().enumerate() {
        match t {
            Tok::Punct("(" | "[" | "{") => depth += 1,
            Tok::Punct(")" | "]" | "}") => depth = depth.saturating_sub(1),
            Tok::Punct(p) if *p == sep && depth == 0 => {
                out.push(&toks[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    out.push(&toks[start..]);
    out
}

/// `3, 2` → 6 (non-literal dimensions count as 1).
fn dims_product(toks: &[Tok]) -> usize {
    split_top(toks, ",")
        .iter()
        .map(|d| match d {
            [Tok::Num(v)] if *v >= 0.0 => *v as usize,
            _ => 1,
        })
        .product()
}

/// The tokens of a name as text without spaces (`a [ 1 ] . b` → `a[1].b`).
fn join(toks: &[Tok]) -> String {
    toks.iter()
        .map(|t| match t {
            Tok::Ident(s) => s.clone(),
            Tok::Num(v) => format!("{v}"),
            Tok::Str => "\"\"".to_string(),
            Tok::Punct(p) => p.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declarations_by_kind_and_connection_equations() {
        let text = "class IfConnect4\n  final parameter Boolean b(start = true) = true;\n  Real c1.e;\n  Real c1.f;\n  Real c2.e;\n  Real c2.f;\nequation\n  c1.e = c2.e;\n  -(c1.f + c2.f) = 0.0;\n  c1.f = 0.0;\n  c2.f = 0.0;\nend IfConnect4;\n[x.mo:13:3-13:36:writable] Warning: Parameter b has no value; end X;\n";
        let c = count(text).expect("a class");
        assert_eq!((c.parameters, c.constants, c.others), (1, 0, 4));
        assert_eq!((c.states, c.equations, c.initial_equations), (0, 4, 0));
    }

    #[test]
    fn for_loops_unroll_and_array_equations_count_their_size() {
        let text = "class F\n  constant Integer n = 3;\n  Real x[1];\n  Real x[2];\n  Real x[3];\n  Real a[1].b(start = 1.0) \"desc; with a semicolon\";\n  Real a[2].b;\n  Real y = 2.0;\nequation\n  for i in 1:n loop\n    for j in {1, 2} loop\n      x[i] = j;\n    end for;\n  end for;\n  x = /*Real[3]*/(array(i1 for i1 in 1:3));\n  der(x) = {1.0, 2.0, 3.0};\n  assert(y > 0.0, \"y; positive\");\ninitial equation\n  a[1].b = 0.0;\nend F;\n";
        let c = count(text).expect("a class");
        assert_eq!((c.parameters, c.constants, c.others), (0, 1, 6));
        // 3*2 unrolled + 3 (array x) + 3 (der of the array x) + 1 binding of y.
        assert_eq!(c.equations, 13);
        assert_eq!((c.states, c.initial_equations, c.assertions), (3, 1, 1));
    }

    #[test]
    fn if_equations_count_one_branch() {
        let text = "class IfEquation7\n  Real x;\n  Real y;\nequation\n  if time > 1.0 then\n    x = 1.0;\n    y = 2.0;\n  elseif time > 2.0 then\n    x = 2.0;\n    y = 3.0;\n  else\n    x = 3.0;\n    y = 4.0;\n  end if;\n  der(x) = if y > 0.0 then 1.0 else der(y);\nend IfEquation7;\n";
        let c = count(text).expect("a class");
        assert_eq!((c.others, c.equations, c.states), (2, 3, 2));
    }

    #[test]
    fn functions_before_the_class_are_skipped() {
        let text = "function f\n  input Real x;\n  output Real y;\nalgorithm\n  y := x;\nend f;\n\nclass M\n  parameter Real p = 1.0;\n  Real[2] z;\nalgorithm\n  z := {p, p};\nend M;\n";
        let c = count(text).expect("a class");
        assert_eq!((c.parameters, c.others, c.equations), (1, 2, 0));
    }
}
