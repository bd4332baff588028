//! Golden tests of the parser: the AST of inputs covering every production, expression
//! precedence and associativity, and the diagnostics of typical mistakes.

use mocca::diagnostics::render_plain;
use mocca::source::SourceMap;
use mocca::syntax::ast::{Expr, ExprKind, Subscript, UnOp};
use mocca::syntax::{parse_expression, parse_file};

fn ast(text: &str) -> mocca::syntax::ast::StoredDefinition {
    let mut sources = SourceMap::new();
    let id = sources.add("t.mo", text);
    let parsed = parse_file(&sources, id);
    assert!(
        parsed.diagnostics.is_empty(),
        "{}",
        render_plain(&sources, &parsed.diagnostics)
    );
    parsed.ast.expect("parses")
}

fn diagnostics(text: &str) -> String {
    let mut sources = SourceMap::new();
    let id = sources.add("bad.mo", text);
    render_plain(&sources, &parse_file(&sources, id).diagnostics)
}

/// Fully parenthesised rendering, to show how an expression grouped.
fn grouped(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Integer(v) => v.to_string(),
        ExprKind::Real(v) => format!("{v:?}"),
        ExprKind::Bool(b) => b.to_string(),
        ExprKind::Str(s) => format!("{s:?}"),
        ExprKind::Ref(c) => {
            let parts: Vec<String> = c
                .parts
                .iter()
                .map(|p| {
                    if p.subscripts.is_empty() {
                        p.ident.name.clone()
                    } else {
                        let subs: Vec<String> = p
                            .subscripts
                            .iter()
                            .map(|s| match s {
                                Subscript::Colon(_) => ":".to_string(),
                                Subscript::Expr(e) => grouped(e),
                            })
                            .collect();
                        format!("{}[{}]", p.ident.name, subs.join(","))
                    }
                })
                .collect();
            parts.join(".")
        }
        ExprKind::End => "end".to_string(),
        ExprKind::Call { func, args } => {
            let args: Vec<String> = args
                .iter()
                .map(|a| match &a.name {
                    Some(n) => format!("{}={}", n.name, grouped(&a.value)),
                    None => grouped(&a.value),
                })
                .collect();
            format!("{}({})", func.dotted(), args.join(", "))
        }
        ExprKind::Binary { op, lhs, rhs } => {
            format!("({} {} {})", grouped(lhs), op.symbol(), grouped(rhs))
        }
        ExprKind::Unary { op, operand } => {
            let sym = match op {
                UnOp::Neg => "-",
                UnOp::Plus => "+",
                UnOp::Not => "not ",
            };
            format!("({sym}{})", grouped(operand))
        }
        ExprKind::If {
            branches,
            else_branch,
        } => {
            let b: Vec<String> = branches
                .iter()
                .map(|(c, v)| format!("if {} then {}", grouped(c), grouped(v)))
                .collect();
            format!("({} else {})", b.join(" else"), grouped(else_branch))
        }
        ExprKind::Range { start, step, stop } => match step {
            Some(s) => format!("({}:{}:{})", grouped(start), grouped(s), grouped(stop)),
            None => format!("({}:{})", grouped(start), grouped(stop)),
        },
        ExprKind::Array(items) => format!(
            "{{{}}}",
            items.iter().map(grouped).collect::<Vec<_>>().join(", ")
        ),
        ExprKind::Matrix(rows) => format!(
            "[{}]",
            rows.iter()
                .map(|r| r.iter().map(grouped).collect::<Vec<_>>().join(", "))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        ExprKind::Tuple(items) => format!(
            "({})",
            items
                .iter()
                .map(|i| i.as_ref().map(grouped).unwrap_or_default())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        ExprKind::Comprehension { body, indices } => {
            let indices: Vec<String> = indices
                .iter()
                .map(|i| match &i.range {
                    Some(r) => format!("{} in {}", i.name.name, grouped(r)),
                    None => i.name.name.clone(),
                })
                .collect();
            format!("{{{} for {}}}", grouped(body), indices.join(", "))
        }
        ExprKind::Unsupported => "<unsupported>".to_string(),
    }
}

#[test]
fn expression_precedence_and_associativity() {
    let inputs = [
        "-a^2",
        "-a*b",
        "-a + b",
        "a - b - c",
        "a / b / c",
        "a + b * c ^ d",
        "(a^b)^c",
        "a .* b .+ c ./ d .^ e",
        "a < b and c >= d or not e == f",
        "not a and b",
        "if a then b elseif c then d else e + 1",
        "1:3",
        "1:2:9",
        "x[end - 1, :, 2:3]",
        "f(1, g(x), y = 2 + 3)",
        "{1, {2, 3}}",
        "[1, 2; 3, 4]",
        "der(x) + sin(time)",
        "a.b[1].c",
        "2.5e-3 + 1. + 1E+2",
        ".5",
        "\"s\" + 'q x'",
        "(a, , b)",
        "weak + 1",
        "{i - j for i in 1:3, j in 1:2}",
        "sum(x[i]^2 for i in 1:n)",
    ];
    let mut out = String::new();
    for input in inputs {
        let mut sources = SourceMap::new();
        let id = sources.add("e", input);
        let line = match parse_expression(&sources, id) {
            Ok(e) => grouped(&e),
            Err(d) => format!("error: {}", d[0].message),
        };
        out.push_str(&format!("{input:<40} => {line}\n"));
    }
    insta::assert_snapshot!(out);
}

#[test]
fn class_kinds_and_short_definitions() {
    insta::assert_json_snapshot!(ast(r#"within Lib.Sub;
partial model M "a model" end M;
record R end R;
block B end B;
connector C Real v; flow Real i; end C;
expandable connector EC end EC;
type Voltage = Real(unit = "V") "a voltage";
type Vec3 = input Real[3];
type E = enumeration(a "first", b);
package P
  model Inner end Inner;
  annotation(Documentation(info = "x"));
end P;
operator record OR end OR;
final class K end K;
"#));
}

#[test]
fn declarations_and_modifications() {
    insta::assert_json_snapshot!(ast(r#"model D
  extends Base(k = 2, final m(start = 1)) annotation(x = 1);
  parameter Real a = 1, b[2](each start = 0) = {1, 2} "two";
  constant Integer n = 3;
  discrete Boolean flag;
  input Real u;
  output Real y;
  flow Real f;
  weak Real w;
  Pin p(weak i);
  Lib.Comp c(x(start = 1, fixed = true), y = 2.5) "component" annotation(Placement());
  Real weak;
protected
  Real hidden := 1;
public
  Real[2] v;
end D;
"#));
}

#[test]
fn imports_of_every_form() {
    insta::assert_json_snapshot!(ast(r#"package P
  import SI = Modelica.Units.SI;
  import Modelica.Constants;
  import Lib.Parts.*;
  import Lib.Parts.{A, B};
end P;
"#));
}

#[test]
fn equations_of_every_kind() {
    insta::assert_json_snapshot!(ast(r#"model Q
equation
  x = 1 "desc";
  connect(a.p, b.n);
  connect(a.p(weak v), b.n(weak i));
  if c then x = 1; elseif d then x = 2; else x = 3; end if;
  for i in 1:3, j in {1, 2} loop y[i, j] = i*j; end for;
  assert(x > 0, "positive");
  annotation(experiment(StopTime = 1));
initial equation
  der(x) = 0;
end Q;
"#));
}

#[test]
fn typical_mistakes() {
    let cases = [
        (
            "missing semicolon",
            "model M\n  Real x\n  Real y;\nend M;\n",
        ),
        ("wrong end name", "model M\n  Real x;\nend N;\n"),
        ("missing end", "model M\n  Real x;\n"),
        (
            "bad number",
            "model M\n  Real x = 1e;\n  Real y = 12abc;\nend M;\n",
        ),
        ("unterminated string", "model M\n  Real x \"oops;\nend M;\n"),
        ("unterminated comment", "model M /* never closed\nend M;\n"),
        (
            "unexpected character",
            "model M\n  Real x = 1 $ 2;\nend M;\n",
        ),
        (
            "sign after an operator",
            "model M\n  Real x = a * -b;\nend M;\n",
        ),
        ("chained power", "model M\n  Real x = a^b^c;\nend M;\n"),
        (
            "not supported",
            "model M\n  inner Real x;\nequation\n  when x > 1 then y = 2; end when;\nalgorithm\n  y := 1;\nend M;\n",
        ),
    ];
    let mut out = String::new();
    for (name, text) in cases {
        out.push_str(&format!("=== {name}\n{}\n", diagnostics(text)));
    }
    insta::assert_snapshot!(out);
}

/// Puts blanks around every `.` that joins two identifiers (`a.b` → `a . b`), leaving numbers,
/// global names (`.A`) and element-wise operators (`.*`) alone.
fn spaced_dots(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    for (i, &c) in chars.iter().enumerate() {
        let joins = c == '.'
            && i > 0
            && (chars[i - 1].is_ascii_alphanumeric() || chars[i - 1] == '_')
            && chars
                .get(i + 1)
                .is_some_and(|n| n.is_ascii_alphabetic() || *n == '_');
        if joins {
            out.push_str(" . ");
        } else {
            out.push(c);
        }
    }
    out
}

/// Every identifier in a composition's connect equations, with the text its span covers.
fn connect_parts(def: &mocca::syntax::ast::StoredDefinition, text: &str) -> Vec<(String, String)> {
    use mocca::syntax::ast::{ClassBody, EquationKind};
    let mut out = Vec::new();
    for class in &def.classes {
        let ClassBody::Long(comp) = &class.body else {
            continue;
        };
        for eq in &comp.equations {
            if let EquationKind::Connect { a, b } = &eq.kind {
                for part in a.cref.parts.iter().chain(&b.cref.parts) {
                    let span = part.ident.span;
                    let covered = text[span.start as usize..span.end as usize].to_string();
                    out.push((part.ident.name.clone(), covered));
                }
            }
        }
    }
    out
}

/// `a.b.c` without blanks is one token (most references are written so, and the parse is
/// faster for it); the tree must be the one the spaced form gives, every part spanning its
/// own text.
#[test]
fn dotted_names_without_blanks_parse_as_spaced_ones() {
    let compact = r#"package P
  import A.B.{c, d};
  import A.B.*;
  import E = A.B.C;
  model M "uses pins"
    extends Lib.Base(p.start = 1, q.r.s(fixed = true));
    Lib.Pin p, n;
    .Lib.Real x = a.b.c[1, 2] + Lib.f(a.b[1].c, weak.x, 1.5, y.z.*2);
    Real w[2] = {a.b, c.d[end]};
  equation
    der(x.y) = Lib.Math.sin(time) + a.'q r'.s.t;
  end M;
end P;
model Q
  Lib.Pin a, b;
equation
  connect(a.pin, b.inner_2.p);
  connect(a.p[2].q.r, b._x(weak v));
  connect(a.weak, b.c(weak tau));
end Q;
"#;
    let spaced = spaced_dots(compact);
    assert_ne!(compact, spaced, "the test exercises the dotted token");
    let compact_ast = ast(compact);
    let spaced_ast = ast(&spaced);
    assert_eq!(
        serde_json::to_value(&compact_ast).unwrap(),
        serde_json::to_value(&spaced_ast).unwrap()
    );
    for (ast, text) in [(&compact_ast, compact), (&spaced_ast, spaced.as_str())] {
        let parts = connect_parts(ast, text);
        assert_eq!(parts.len(), 15, "{parts:?}");
        for (name, covered) in parts {
            assert_eq!(name, covered);
        }
    }
}

#[test]
fn a_keyword_inside_a_dotted_name_is_reported_at_its_part() {
    let reference = diagnostics("model M\n  Real x = a.end.b;\nend M;\n");
    assert!(
        reference.contains("`end` is a keyword, not a name") && reference.contains("bad.mo:2:14"),
        "{reference}"
    );
    let class_name = diagnostics("model M\n  extends Lib.weak;\nend M;\n");
    assert!(
        class_name.contains("`weak` is a keyword, not a name"),
        "{class_name}"
    );
    // `weak` may name a component, so it may be part of a reference.
    assert_eq!(diagnostics("model M\n  Real x = a.weak;\nend M;\n"), "");
}
