//! A small builder for generated Rust: lines at the current indentation, and blocks that
//! open and close with it.

use std::fmt::Write;

#[derive(Default)]
pub struct Code {
    text: String,
    depth: usize,
}

impl Code {
    /// Appends one line at the current indentation.
    pub fn line(&mut self, line: impl std::fmt::Display) -> &mut Code {
        for _ in 0..self.depth {
            self.text.push_str("    ");
        }
        // Writing into a String cannot fail.
        let _ = writeln!(self.text, "{line}");
        self
    }

    /// Appends `head {` and indents what follows.
    pub fn open(&mut self, head: impl std::fmt::Display) -> &mut Code {
        self.line(format_args!("{head} {{"));
        self.depth += 1;
        self
    }

    /// Closes the innermost block with `}` followed by `tail`.
    pub fn close_with(&mut self, tail: &str) -> &mut Code {
        self.depth -= 1;
        self.line(format_args!("}}{tail}"))
    }

    pub fn close(&mut self) -> &mut Code {
        self.close_with("")
    }

    pub fn blank(&mut self) -> &mut Code {
        self.text.push('\n');
        self
    }

    /// A `pub const NAME: &[T] = &[..];` table, several items per line.
    pub fn table<T: std::fmt::Display>(&mut self, name: &str, ty: &str, items: &[T]) -> &mut Code {
        if items.is_empty() {
            return self.line(format_args!("pub const {name}: &[{ty}] = &[];"));
        }
        self.line(format_args!("pub const {name}: &[{ty}] = &["));
        self.depth += 1;
        let mut row = String::new();
        for item in items {
            let text = item.to_string();
            if !row.is_empty() && row.len() + text.len() > 90 {
                self.line(row.trim_end());
                row.clear();
            }
            let _ = write!(row, "{text}, ");
        }
        self.line(row.trim_end());
        self.depth -= 1;
        self.line("];")
    }

    pub fn finish(self) -> String {
        self.text
    }
}
