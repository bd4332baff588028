//! Text tables: each column padded to its widest cell, so that numbers line up.

use std::io::Write;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// The terminal columns `text` takes: combining marks (the macron of `h̄`) take none.
fn display_width(text: &str) -> usize {
    text.chars()
        .filter(|c| !('\u{300}'..='\u{36f}').contains(c))
        .count()
}

/// Writes the rows (and the header, when given) indented by two spaces, cells two spaces
/// apart, without trailing blanks. Write errors (a closed pipe) end the output quietly.
pub fn write_table(
    w: &mut impl Write,
    header: Option<&[&str]>,
    rows: &[Vec<String>],
    align: &[Align],
) {
    let header: Option<Vec<String>> = header.map(|h| h.iter().map(|s| s.to_string()).collect());
    let all = || header.iter().chain(rows);
    let widths: Vec<usize> = (0..align.len())
        .map(|c| all().map(|r| display_width(&r[c])).max().unwrap_or(0))
        .collect();
    for row in all() {
        let mut line = String::from(" ");
        for ((cell, &width), &side) in row.iter().zip(&widths).zip(align) {
            let pad = " ".repeat(width - display_width(cell));
            line.push(' ');
            match side {
                Align::Left => line.extend([cell.as_str(), &pad]),
                Align::Right => line.extend([pad.as_str(), cell]),
            }
            line.push(' ');
        }
        if writeln!(w, "{}", line.trim_end()).is_err() {
            return;
        }
    }
}

/// [`write_table`] to stdout.
pub fn print_table(header: &[&str], rows: &[Vec<String>], align: &[Align]) {
    let mut w = super::buffered_stdout();
    write_table(&mut w, Some(header), rows, align);
    let _ = w.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up_whatever_the_cell_lengths() {
        let rows = vec![
            vec!["w".to_string(), "0.15".to_string()],
            vec!["phi".to_string(), "1e-7".to_string()],
            vec!["I".to_string(), "12.5".to_string()],
        ];
        let mut out = Vec::new();
        write_table(
            &mut out,
            Some(&["state", "h̄"]),
            &rows,
            &[Align::Left, Align::Right],
        );
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "  state     h̄\n  w      0.15\n  phi    1e-7\n  I      12.5\n"
        );
    }
}
