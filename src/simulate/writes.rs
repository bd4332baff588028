//! A `when` clause's writes performed at an event: the values they read evaluated, then
//! handed to the runtime's file functions (`mocca_runtime::files`), which the emitted crates
//! call alike.

use mocca_runtime::files::{self, Matrix, Piece};

use crate::dae::hybrid::{TextPiece, Write};
use crate::expr::ExprId;

/// Performs `write`, evaluating what it reads with `values`; the error says what failed.
pub fn perform(write: &Write, values: impl Fn(&[ExprId]) -> Vec<f64>) -> Result<(), String> {
    match write {
        Write::Print { text, file } => {
            let read = values(&text.exprs().collect::<Vec<_>>());
            let mut read = read.into_iter();
            let mut next = || read.next().expect("a value per piece");
            // Literals keep their escapes as written: resolved here, as the emitter does.
            let literals: Vec<String> = (text.0.iter())
                .map(|piece| match piece {
                    TextPiece::Literal(s) => crate::dae::unescape(s),
                    _ => String::new(),
                })
                .collect();
            let pieces: Vec<Piece<'_>> = (text.0.iter().zip(&literals))
                .map(|(piece, literal)| match piece {
                    TextPiece::Literal(_) => Piece::Literal(literal),
                    &TextPiece::Real {
                        significant,
                        min_length,
                        left,
                        ..
                    } => Piece::Real {
                        value: next(),
                        significant,
                        min_length,
                        left,
                    },
                    &TextPiece::Integer {
                        min_length, left, ..
                    } => Piece::Integer {
                        value: next(),
                        min_length,
                        left,
                    },
                    TextPiece::Boolean(_) => Piece::Boolean(next()),
                    TextPiece::FullPath(name) => Piece::FullPath(name),
                })
                .collect();
            files::print(&files::text(&pieces), file)
        }
        Write::Matrix {
            file,
            name,
            rows,
            cols,
            values: cells,
            append,
            format,
        } => {
            let values = values(cells);
            let matrix = Matrix {
                name,
                rows: *rows,
                cols: *cols,
                values: &values,
            };
            files::write_real_matrix(file, &matrix, *append, *format)
        }
        Write::Remove { file } => files::remove_file(file),
    }
}
