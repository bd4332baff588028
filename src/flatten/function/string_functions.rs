//! The functions of `Modelica.Utilities.Strings` on strings known at translation time
//! (mocca computes no strings while simulating): `length`, `substring`, `repeat`, `compare`,
//! `isEqual`, `isEmpty`, `count`, `find`, `findLast` and `replace`, evaluated here as the
//! library defines them (its C functions, `ModelicaStrings_length` and the others, and the
//! Modelica algorithms built on them), indices counted in characters from 1.

use super::{Flattener, FunctionDef, Param, err};
use crate::dae::ScalarType;
use crate::diagnostics::Diagnostic;
use crate::flatten::expr::Ctx;
use crate::source::Span;
use crate::syntax::ast::{Arg, Expr};

/// What a string function gives: a number (an Integer, a Boolean, a `Compare` literal's
/// ordinal) or a string.
pub(crate) enum StringResult {
    Number(f64),
    Text(String),
}

/// The functions evaluated here, by their name in `Modelica.Utilities.Strings`, with how
/// many String inputs and how many others each declares.
const FUNCTIONS: [(&str, usize, usize); 10] = [
    ("length", 1, 0),
    ("substring", 1, 2),
    ("repeat", 1, 1),
    ("compare", 2, 1),
    ("isEqual", 2, 1),
    ("isEmpty", 1, 0),
    ("count", 2, 2),
    ("find", 2, 2),
    ("findLast", 2, 2),
    ("replace", 3, 3),
];

/// An input's expression: the caller's argument, or the declared default (read where the
/// function is declared).
type Bound<'a> = (&'a Expr, bool);

impl<'a> Flattener<'a> {
    /// A call of one of the string functions of `Modelica.Utilities.Strings`, evaluated;
    /// `None` when `def` is none of them.
    pub(crate) fn string_function(
        &mut self,
        def: &FunctionDef<'a>,
        args: &'a [Arg],
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<Option<StringResult>, Diagnostic> {
        // The library's function, or any declared external as its C function.
        let external = (def.external)
            .and_then(|x| x.function.as_deref())
            .and_then(|c| c.strip_prefix("ModelicaStrings_"));
        let Some(&(name, texts, others)) = (def.path.strip_prefix("Modelica.Utilities.Strings."))
            .or(external)
            .and_then(|name| FUNCTIONS.iter().find(|f| f.0 == name))
        else {
            return Ok(None);
        };
        let inputs: Vec<&Param<'a>> = def.inputs().collect();
        let declared = inputs.iter().filter(|p| p.ty == ScalarType::String).count();
        if (declared, inputs.len() - declared) != (texts, others) {
            return Err(err(
                span,
                format!(
                    "`{}` is evaluated as `Modelica.Utilities.Strings.{name}`, which has {texts} String inputs and {others} others, unlike this declaration",
                    def.path
                ),
                "declared otherwise",
            ));
        }
        let bound = self.string_arguments(def, &inputs, args, span)?;
        let text = |f: &mut Self, k: usize| -> Result<String, Diagnostic> {
            let (e, caller) = bound[k];
            match caller {
                true => f.string_value(e, ctx, 0),
                false => f.string_value(e, &Ctx::of_class(inputs[k].scope), 0),
            }
        };
        let strings: Vec<String> = (0..inputs.len())
            .filter(|&k| inputs[k].ty == ScalarType::String)
            .map(|k| text(self, k))
            .collect::<Result<_, _>>()?;
        let mut numbers = Vec::new();
        for (k, p) in inputs.iter().enumerate() {
            if p.ty != ScalarType::String {
                let (e, caller) = bound[k];
                let at = if caller { *ctx } else { Ctx::of_class(p.scope) };
                numbers.push(self.eval_scalar(e, &at)?);
            }
        }
        Ok(Some(
            evaluate(name, &strings, &numbers)
                .map_err(|message| err(span, message, "out of range"))?,
        ))
    }

    /// Each input's expression, by declaration order: positional arguments, then named, then
    /// defaults.
    pub(super) fn string_arguments(
        &self,
        def: &FunctionDef<'a>,
        inputs: &[&Param<'a>],
        args: &'a [Arg],
        span: Span,
    ) -> Result<Vec<Bound<'a>>, Diagnostic> {
        let mut bound: Vec<Option<Bound<'a>>> = vec![None; inputs.len()];
        for (position, arg) in args.iter().enumerate() {
            let k = match &arg.name {
                None => position,
                Some(name) => inputs
                    .iter()
                    .position(|p| p.name == name.name)
                    .unwrap_or(usize::MAX),
            };
            let Some(slot) = bound.get_mut(k) else {
                return Err(err(
                    arg.value.span,
                    format!("`{}` takes no such argument", def.path),
                    "not an input",
                ));
            };
            *slot = Some((&arg.value, true));
        }
        (bound.into_iter().zip(inputs))
            .map(|(b, p)| {
                b.or(p.default.map(|d| (d, false))).ok_or_else(|| {
                    err(
                        span,
                        format!("input `{}` of `{}` is not given", p.name, def.path),
                        "missing argument",
                    )
                })
            })
            .collect()
    }
}

/// `name` on its String inputs and its other inputs (in declaration order each).
fn evaluate(name: &str, strings: &[String], numbers: &[f64]) -> Result<StringResult, String> {
    let flag = |k: usize| numbers.get(k).is_some_and(|&x| x != 0.0);
    let index = |k: usize| numbers.get(k).map_or(0, |&x| x as i64);
    let boolean = |b: bool| StringResult::Number(f64::from(u8::from(b)));
    let count = |x: usize| StringResult::Number(x as f64);
    Ok(match name {
        "length" => count(strings[0].chars().count()),
        "substring" => {
            let (first, last) = (index(0), index(1));
            let chars: Vec<char> = strings[0].chars().collect();
            if first < 1 || last < first || last as usize > chars.len() {
                return Err(format!(
                    "characters {first} to {last} of \"{}\" do not exist",
                    strings[0]
                ));
            }
            StringResult::Text(chars[first as usize - 1..last as usize].iter().collect())
        }
        "repeat" => StringResult::Text(strings[0].repeat(index(0).max(0) as usize)),
        "compare" => {
            let order = folded(&strings[0], flag(0)).cmp(&folded(&strings[1], flag(0)));
            StringResult::Number(match order {
                std::cmp::Ordering::Less => 1.0,
                std::cmp::Ordering::Equal => 2.0,
                std::cmp::Ordering::Greater => 3.0,
            })
        }
        "isEqual" => boolean(folded(&strings[0], flag(0)) == folded(&strings[1], flag(0))),
        "isEmpty" => boolean(strings[0].chars().all(char::is_whitespace)),
        "count" => count(occurrences(strings, index(0), flag(1)).len()),
        "find" => count(
            occurrences(strings, index(0), flag(1))
                .first()
                .map_or(0, |&i| i),
        ),
        "findLast" => count(last_occurrence(strings, index(0), flag(1))),
        "replace" => {
            let (start, all, case) = (index(0), flag(1), flag(2));
            let found = occurrences(&strings[..2], start, case);
            let chars: Vec<char> = strings[0].chars().collect();
            let width = strings[1].chars().count();
            let mut out = String::new();
            let mut at = 1;
            for &i in found.iter().take(if all { found.len() } else { 1 }) {
                out.extend(&chars[at - 1..i - 1]);
                out.push_str(&strings[2]);
                at = i + width;
            }
            out.extend(&chars[at - 1..]);
            StringResult::Text(out)
        }
        _ => unreachable!("only FUNCTIONS are evaluated"),
    })
}

/// `text` as compared: itself, or lowercased where the comparison ignores case.
fn folded(text: &str, case_sensitive: bool) -> Vec<char> {
    match case_sensitive {
        true => text.chars().collect(),
        false => text.chars().flat_map(char::to_lowercase).collect(),
    }
}

/// The 1-based indices of the non-overlapping occurrences of `strings[1]` in `strings[0]`
/// from index `start` on, left to right (none of an empty search string).
fn occurrences(strings: &[String], start: i64, case_sensitive: bool) -> Vec<usize> {
    let (text, search) = (
        folded(&strings[0], case_sensitive),
        folded(&strings[1], case_sensitive),
    );
    let mut found = Vec::new();
    if search.is_empty() {
        return found;
    }
    let mut i = start.max(1) as usize;
    while i + search.len() <= text.len() + 1 {
        if text[i - 1..i - 1 + search.len()] == search[..] {
            found.push(i);
            i += search.len();
        } else {
            i += 1;
        }
    }
    found
}

/// The 1-based index of the last occurrence of `strings[1]` in `strings[0]` beginning at or
/// before `start` (0: the end of the string), or 0.
fn last_occurrence(strings: &[String], start: i64, case_sensitive: bool) -> usize {
    let (text, search) = (
        folded(&strings[0], case_sensitive),
        folded(&strings[1], case_sensitive),
    );
    if search.is_empty() || search.len() > text.len() {
        return 0;
    }
    let latest = text.len() - search.len() + 1;
    let from = if start <= 0 {
        latest
    } else {
        (start as usize).min(latest)
    };
    (1..=from)
        .rev()
        .find(|&i| text[i - 1..i - 1 + search.len()] == search[..])
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(r: StringResult) -> String {
        match r {
            StringResult::Text(s) => s,
            StringResult::Number(x) => panic!("a number {x}"),
        }
    }

    fn number(r: StringResult) -> f64 {
        match r {
            StringResult::Number(x) => x,
            StringResult::Text(s) => panic!("a string {s}"),
        }
    }

    fn s(items: &[&str]) -> Vec<String> {
        items.iter().map(|x| x.to_string()).collect()
    }

    /// The library's own examples of each function (its documentation's).
    #[test]
    fn the_string_functions_give_the_librarys_examples() {
        let e = |name, strings: &[&str], numbers: &[f64]| {
            evaluate(name, &s(strings), numbers).expect("evaluates")
        };
        assert_eq!(number(e("length", &["abcä"], &[])), 4.0);
        assert_eq!(
            text(e("substring", &["this is a test"], &[6.0, 9.0])),
            "is a"
        );
        assert_eq!(text(e("repeat", &["-="], &[3.0])), "-=-=-=");
        assert_eq!(number(e("compare", &["abc", "abd"], &[1.0])), 1.0);
        assert_eq!(number(e("compare", &["ABC", "abc"], &[0.0])), 2.0);
        assert_eq!(number(e("isEqual", &["ABC", "abc"], &[1.0])), 0.0);
        assert_eq!(number(e("isEmpty", &[" \t\n"], &[])), 1.0);
        assert_eq!(number(e("isEmpty", &[" a "], &[])), 0.0);
        assert_eq!(number(e("count", &["aaaa", "aa"], &[1.0, 1.0])), 2.0);
        assert_eq!(number(e("find", &["abcabc", "bc"], &[3.0, 1.0])), 5.0);
        assert_eq!(number(e("find", &["abc", "BC"], &[1.0, 1.0])), 0.0);
        assert_eq!(number(e("find", &["abc", "BC"], &[1.0, 0.0])), 2.0);
        assert_eq!(number(e("findLast", &["abcabc", "bc"], &[0.0, 1.0])), 5.0);
        assert_eq!(number(e("findLast", &["abcabc", "bc"], &[4.0, 1.0])), 2.0);
        let replaced = e("replace", &["aXbXc", "X", "--"], &[1.0, 1.0, 1.0]);
        assert_eq!(text(replaced), "a--b--c");
        let first = e("replace", &["aXbXc", "X", "--"], &[1.0, 0.0, 1.0]);
        assert_eq!(text(first), "a--bXc");
        assert!(evaluate("substring", &s(&["abc"]), &[2.0, 5.0]).is_err());
    }
}
