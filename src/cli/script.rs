//! `mocca script FILE.mos`: an OpenModelica-style script of `loadFile`, `simulate`,
//! `reduceDAE` and `cycles` calls, each run as the matching subcommand and printed as it
//! prints. A statement mocca does not know, or an argument a call does not take, is an error
//! pointing into the script.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser};

use super::Cli;
use crate::diagnostics::Diagnostic;
use crate::numfmt::Number;
use crate::source::{FileId, SourceMap, Span};

#[derive(Args, Debug)]
pub struct ScriptArgs {
    /// The script: statements `loadFile("f.mo")`, `simulate(M, startTime=…, stopTime=…,
    /// method=…, numberOfIntervals=…, tolerance=…)`, `reduceDAE(component, startTime,
    /// stopTime, metric, tolerance, verify)` and `cycles(M, alpha=…)`, each ending with `;`
    pub file: PathBuf,
}

/// A value of a call's argument.
#[derive(Clone, Debug, PartialEq)]
enum Value {
    Name(String),
    Text(String),
    Number(f64),
    Bool(bool),
}

/// One argument: its name when given as `name = value`, the value and where it stands.
struct Argument {
    name: Option<String>,
    value: Value,
    span: Span,
}

/// One statement: `function(arguments);`.
struct Call {
    function: String,
    span: Span,
    arguments: Vec<Argument>,
}

pub fn run(args: &ScriptArgs) -> ExitCode {
    let mut sources = SourceMap::new();
    let text = match std::fs::read_to_string(&args.file) {
        Ok(t) => t,
        Err(e) => {
            let message = format!("cannot read `{}`: {e}", args.file.display());
            return super::failure_without_source(message, ExitCode::from(1));
        }
    };
    let file = sources.add(args.file.display().to_string(), text.clone());
    let calls = match parse(&text, file) {
        Ok(calls) => calls,
        Err(d) => return fail(&sources, d),
    };
    let folder = args.file.parent().unwrap_or(Path::new(".")).to_path_buf();
    let mut session = Session {
        folder,
        files: Vec::new(),
        model: None,
    };
    let mut failed = false;
    for call in &calls {
        if call.function == "loadFile" {
            if let Err(diags) = session.load(call, &mut sources) {
                super::report(&sources, &diags);
                failed = true;
            }
            continue;
        }
        let argv = match session.argv(call) {
            Ok(argv) => argv,
            Err(d) => return fail(&sources, d),
        };
        let cli = match Cli::try_parse_from(&argv) {
            Ok(cli) => cli,
            Err(e) => {
                let d = Diagnostic::error(format!("`{}`: {}", call.function, first_line(&e)))
                    .at(call.span, "in this call");
                return fail(&sources, d);
            }
        };
        let code = super::run(cli);
        if code != ExitCode::SUCCESS {
            return code;
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn first_line(e: &clap::Error) -> String {
    let text = e.to_string();
    let line = text
        .lines()
        .next()
        .unwrap_or("")
        .trim_start_matches("error: ");
    line.to_string()
}

fn fail(sources: &SourceMap, d: Diagnostic) -> ExitCode {
    super::report(sources, &[d]);
    ExitCode::from(1)
}

/// What the script has loaded and which model it last named.
struct Session {
    folder: PathBuf,
    files: Vec<String>,
    model: Option<String>,
}

impl Session {
    /// `loadFile("f.mo")`: the file, relative to the script, is read and parsed now, and
    /// the calls after it use it. One that cannot be read or has syntax errors is reported
    /// at the call (with its own errors) and not loaded; the script goes on, and ends with
    /// exit code 1.
    fn load(&mut self, call: &Call, sources: &mut SourceMap) -> Result<(), Vec<Diagnostic>> {
        let path = match call.arguments.as_slice() {
            [
                Argument {
                    name: None,
                    value: Value::Text(path),
                    ..
                },
            ] => path,
            _ => {
                return Err(vec![
                    Diagnostic::error("`loadFile` takes one file name")
                        .at(call.span, "as `loadFile(\"model.mo\")`"),
                ]);
            }
        };
        let full = self.folder.join(path).display().to_string();
        let text = std::fs::read_to_string(&full).map_err(|e| {
            vec![
                Diagnostic::error(format!("`loadFile`: cannot read `{full}`: {e}"))
                    .at(call.span, "this file is not loaded"),
            ]
        })?;
        let file = sources.add(full.clone(), text);
        let parsed = crate::syntax::parse_file(sources, file);
        if !parsed.is_ok() {
            let mut diags = vec![
                Diagnostic::error(format!("`loadFile`: `{full}` has syntax errors"))
                    .at(call.span, "this file is not loaded"),
            ];
            diags.extend(parsed.diagnostics);
            return Err(diags);
        }
        self.files.push(full);
        Ok(())
    }

    /// The command line a call stands for.
    fn argv(&mut self, call: &Call) -> Result<Vec<String>, Diagnostic> {
        match call.function.as_str() {
            "simulate" => self.simulate(call),
            "reduceDAE" => self.reduce(call),
            "cycles" => self.cycles(call),
            other => Err(Diagnostic::error(format!("unknown command `{other}`"))
                .at(call.span, "not a command mocca's scripts know")
                .with_note("the commands: loadFile, simulate, reduceDAE, cycles")),
        }
    }

    /// `mocca SUBCOMMAND FILES… [--model M]` for the files loaded so far.
    fn base(&self, subcommand: &str, call: &Call) -> Result<Vec<String>, Diagnostic> {
        if self.files.is_empty() {
            return Err(Diagnostic::error("no file is loaded")
                .at(call.span, "before this call")
                .with_note("load one first: `loadFile(\"model.mo\");`"));
        }
        let mut argv = vec!["mocca".to_string(), subcommand.to_string()];
        argv.extend(self.files.iter().cloned());
        if let Some(model) = &self.model {
            argv.extend(["--model".to_string(), model.clone()]);
        }
        Ok(argv)
    }

    /// The model a call names as its first argument (a class name), which later calls reuse.
    fn take_model<'c>(&mut self, call: &'c Call) -> &'c [Argument] {
        match call.arguments.first() {
            Some(Argument {
                name: None,
                value: Value::Name(model),
                ..
            }) => {
                self.model = Some(model.clone());
                &call.arguments[1..]
            }
            _ => &call.arguments,
        }
    }

    fn simulate(&mut self, call: &Call) -> Result<Vec<String>, Diagnostic> {
        let rest = self.take_model(call);
        let mut argv = self.base("simulate", call)?;
        let (mut start, mut stop, mut intervals) = (0.0, 1.0, 500.0);
        for a in rest {
            match (named(a)?, &a.value) {
                ("startTime", _) => start = number(a)?,
                ("stopTime", _) => stop = number(a)?,
                ("numberOfIntervals", _) => intervals = number(a)?,
                ("tolerance", _) => argv.extend(["--tol".into(), Number(number(a)?).to_string()]),
                ("method", _) => argv.extend(["--method".into(), method(a)?]),
                (other, _) => return Err(unknown_argument(a, other, "simulate")),
            }
        }
        if intervals.is_nan() || intervals < 1.0 {
            return Err(Diagnostic::error("`numberOfIntervals` must be at least 1")
                .at(call.span, "in this call"));
        }
        let step = (stop - start) / intervals;
        for (flag, x) in [("--start", start), ("--stop", stop), ("--step", step)] {
            argv.extend([flag.to_string(), Number(x).to_string()]);
        }
        Ok(argv)
    }

    fn reduce(&mut self, call: &Call) -> Result<Vec<String>, Diagnostic> {
        let mut argv = self.base("reduce", call)?;
        let positions = [
            "component",
            "startTime",
            "stopTime",
            "metric",
            "tolerance",
            "verify",
        ];
        // The component may be left out: then the positional arguments start at the times.
        let skip = match call.arguments.first() {
            Some(Argument {
                name: None,
                value: Value::Number(_),
                ..
            }) => 1,
            _ => 0,
        };
        for (k, a) in call.arguments.iter().enumerate() {
            let name = match &a.name {
                Some(n) => n.as_str(),
                None => positions.get(k + skip).copied().ok_or_else(|| {
                    Diagnostic::error("`reduceDAE` takes at most six arguments")
                        .at(a.span, "one too many")
                })?,
            };
            let option = match name {
                "component" => ["--component".to_string(), word(a)?],
                "startTime" => ["--start".to_string(), Number(number(a)?).to_string()],
                "stopTime" => ["--stop".to_string(), Number(number(a)?).to_string()],
                "metric" => ["--metric".to_string(), word(a)?],
                "tolerance" => ["--tol".to_string(), Number(number(a)?).to_string()],
                "verify" => match a.value {
                    Value::Bool(true) => {
                        argv.push("--verify".into());
                        continue;
                    }
                    Value::Bool(false) => continue,
                    _ => return Err(expected(a, "true or false")),
                },
                other => return Err(unknown_argument(a, other, "reduceDAE")),
            };
            argv.extend(option);
        }
        Ok(argv)
    }

    fn cycles(&mut self, call: &Call) -> Result<Vec<String>, Diagnostic> {
        let rest = self.take_model(call);
        let mut argv = self.base("cycles", call)?;
        for a in rest {
            match named(a)? {
                "alpha" => argv.extend(["--alpha".into(), Number(number(a)?).to_string()]),
                other => return Err(unknown_argument(a, other, "cycles")),
            }
        }
        Ok(argv)
    }
}

fn named(a: &Argument) -> Result<&str, Diagnostic> {
    a.name.as_deref().ok_or_else(|| {
        Diagnostic::error("this argument needs its name").at(a.span, "as `name = value`")
    })
}

fn unknown_argument(a: &Argument, name: &str, function: &str) -> Diagnostic {
    Diagnostic::error(format!("`{function}` takes no argument `{name}`"))
        .at(a.span, "unknown argument")
}

fn expected(a: &Argument, what: &str) -> Diagnostic {
    Diagnostic::error(format!("expected {what}")).at(a.span, "this value")
}

fn number(a: &Argument) -> Result<f64, Diagnostic> {
    match a.value {
        Value::Number(x) => Ok(x),
        _ => Err(expected(a, "a number")),
    }
}

/// A name or a string, as the value of an option that takes a word.
fn word(a: &Argument) -> Result<String, Diagnostic> {
    match &a.value {
        Value::Name(s) | Value::Text(s) => Ok(s.clone()),
        _ => Err(expected(a, "a name or a string")),
    }
}

/// `simulate`'s method: mocca's names, or OpenModelica's for the same methods.
fn method(a: &Argument) -> Result<String, Diagnostic> {
    let name = word(a)?;
    let mocca = match name.as_str() {
        "dassl" | "ida" | "cvode" => "bdf",
        "impeuler" => "implicit-euler",
        "trapezoid" => "trapezoidal",
        "heun" | "euler" | "midpoint" | "bdf" | "implicit-euler" | "implicit-midpoint"
        | "trapezoidal" => name.as_str(),
        _ => {
            return Err(expected(
                a,
                "a method (euler, heun, impeuler, trapezoid, dassl, …)",
            ));
        }
    };
    Ok(mocca.to_string())
}

/// The statements of a script; comments (`//`, `/* */`) and blanks between tokens.
fn parse(text: &str, file: FileId) -> Result<Vec<Call>, Diagnostic> {
    let tokens = lex(text, file)?;
    let mut calls = Vec::new();
    let mut k = 0;
    let at = |k: usize| tokens.get(k);
    let end_span = Span::new(file, text.len(), text.len());
    let want = |k: usize, what: &str| -> Diagnostic {
        let span = tokens.get(k).map_or(end_span, |t| t.span);
        Diagnostic::error(format!("expected {what}")).at(span, "here")
    };
    while k < tokens.len() {
        let Some(Token {
            kind: Tok::Name(function),
            span,
        }) = at(k)
        else {
            return Err(want(k, "a command, such as `simulate(…);`"));
        };
        let (function, start) = (function.clone(), *span);
        if !matches!(at(k + 1).map(|t| &t.kind), Some(Tok::Punct('('))) {
            return Err(want(k + 1, "`(`"));
        }
        k += 2;
        let mut arguments = Vec::new();
        while !matches!(at(k).map(|t| &t.kind), Some(Tok::Punct(')'))) {
            if !arguments.is_empty() {
                if !matches!(at(k).map(|t| &t.kind), Some(Tok::Punct(','))) {
                    return Err(want(k, "`,` or `)`"));
                }
                k += 1;
            }
            let named = matches!(
                (at(k).map(|t| &t.kind), at(k + 1).map(|t| &t.kind)),
                (Some(Tok::Name(_)), Some(Tok::Punct('=')))
            );
            let first = at(k).map(|t| t.span);
            let name = match (named, at(k)) {
                (
                    true,
                    Some(Token {
                        kind: Tok::Name(n), ..
                    }),
                ) => {
                    k += 2;
                    Some(n.clone())
                }
                _ => None,
            };
            let Some(token) = at(k) else {
                return Err(want(k, "a value"));
            };
            // The whole `name = value`.
            let span = first.map_or(token.span, |f| f.to(token.span));
            let value = match &token.kind {
                Tok::Name(n) if n == "true" => Value::Bool(true),
                Tok::Name(n) if n == "false" => Value::Bool(false),
                Tok::Name(n) => Value::Name(n.clone()),
                Tok::Text(s) => Value::Text(s.clone()),
                Tok::Number(x) => Value::Number(*x),
                Tok::Punct(_) => return Err(want(k, "a value")),
            };
            arguments.push(Argument { name, value, span });
            k += 1;
        }
        let close = tokens[k].span;
        if !matches!(at(k + 1).map(|t| &t.kind), Some(Tok::Punct(';'))) {
            return Err(want(k + 1, "`;` after the call"));
        }
        k += 2;
        calls.push(Call {
            function,
            span: start.to(close),
            arguments,
        });
    }
    Ok(calls)
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Name(String),
    Text(String),
    Number(f64),
    Punct(char),
}

struct Token {
    kind: Tok,
    span: Span,
}

fn lex(text: &str, file: FileId) -> Result<Vec<Token>, Diagnostic> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = text[i..].chars().next().unwrap_or(' ');
        let start = i;
        if c.is_whitespace() {
            i += c.len_utf8();
            continue;
        }
        if text[i..].starts_with("//") {
            i = text[i..].find('\n').map_or(bytes.len(), |n| i + n);
            continue;
        }
        if text[i..].starts_with("/*") {
            i = text[i + 2..].find("*/").map_or(bytes.len(), |n| i + n + 4);
            continue;
        }
        let kind = if c.is_ascii_alphabetic() || c == '_' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || b"_.".contains(&bytes[i]))
            {
                i += 1;
            }
            Tok::Name(text[start..i].to_string())
        } else if c.is_ascii_digit() || ((c == '-' || c == '.') && i + 1 < bytes.len()) {
            i += 1;
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric()
                    || b".".contains(&bytes[i])
                    || (b"+-".contains(&bytes[i]) && matches!(bytes[i - 1], b'e' | b'E')))
            {
                i += 1;
            }
            match text[start..i].parse::<f64>() {
                Ok(x) => Tok::Number(x),
                Err(_) => {
                    let span = Span::new(file, start, i);
                    return Err(Diagnostic::error("not a number").at(span, "here"));
                }
            }
        } else if c == '"' {
            let Some(n) = text[i + 1..].find('"') else {
                let span = Span::new(file, start, bytes.len());
                return Err(Diagnostic::error("unterminated string").at(span, "it starts here"));
            };
            i += n + 2;
            Tok::Text(text[start + 1..i - 1].to_string())
        } else if "(),=;".contains(c) {
            i += 1;
            Tok::Punct(c)
        } else {
            let width = c.len_utf8();
            let span = Span::new(file, start, start + width);
            return Err(Diagnostic::error(format!("unexpected `{c}`")).at(span, "here"));
        };
        tokens.push(Token {
            kind,
            span: Span::new(file, start, i),
        });
    }
    Ok(tokens)
}
