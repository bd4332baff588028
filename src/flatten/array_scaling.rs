//! Array equations, bindings and attributes cost what their for-loops cost: the elements the
//! flattener handles one by one grow linearly with the arrays' size, not quadratically (each
//! element listing or flattening a whole array again).

use super::tree::element_work;
use crate::frontend::flatten_sources;
use crate::source::SourceMap;

/// Elements handled while flattening `declarations` and `equations` with `N = n`.
fn element_work_of(n: usize, declarations: &str, equations: &str) -> usize {
    let text = format!(
        "model M\n  parameter Integer N = {n};\n{declarations}\nequation\n{equations}\nend M;\n"
    );
    let mut sources = SourceMap::new();
    let id = sources.add("scaling.mo", text);
    element_work::take();
    let flat = flatten_sources(sources, &[id], None, &[]);
    assert!(flat.is_ok(), "{declarations} / {equations} flattens");
    element_work::take()
}

/// Each form's work at sizes 1 000 and 4 000: linear work grows 4 times, quadratic 16 times
/// (and a constant per element of 40 would already be far more than any form needs).
/// `LITERAL` in a declaration stands for `1, 2, …, N`.
#[test]
fn array_forms_handle_each_element_a_bounded_number_of_times() {
    let forms = [
        ("equation", "  Real x[N](each start = 1);", "  der(x) = -x;"),
        ("literal binding", "  parameter Real p[N] = {LITERAL};", ""),
        (
            "binding evaluated by a declaration's size",
            "  parameter Real p[N] = fill(2, N);\n  parameter Real q[size(p, 1)] = p;",
            "",
        ),
        (
            "attributes and a binding equation",
            "  parameter Real p[N] = fill(2, N);\n  Real x[N](start = 2 * p, nominal = p);\n  Real y[N] = 2 * x;",
            "  der(x) = -p .* x;",
        ),
        (
            "slices",
            "  Real x[N](each start = 1);",
            "  der(x[2:N]) = x[1:N-1] - x[2:N];\n  der(x[1]) = -x[1];",
        ),
    ];
    let work = |n: usize, declarations: &str, equations: &str| {
        let literal: Vec<String> = (1..=n).map(|k| k.to_string()).collect();
        let declarations = declarations.replace("LITERAL", &literal.join(", "));
        element_work_of(n, &declarations, equations)
    };
    for (form, declarations, equations) in forms {
        let small = work(1000, declarations, equations);
        let large = work(4000, declarations, equations);
        assert!(
            large <= 40 * 4000 && large <= 5 * small.max(1000),
            "{form}: {small} elements handled at N = 1000, {large} at N = 4000"
        );
    }
}
