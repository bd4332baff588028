//! What a model writes at its events, as `Modelica.Utilities` does it: text printed to the
//! terminal or appended to a file (`Streams.print`), Real matrices stored in MATLAB MAT files
//! (`Streams.writeRealMatrix`, formats 4, 6 and 7) and files removed (`Files.removeFile`).
//! Shared by `mocca simulate` and the crates `mocca emit` writes (this very file, std only).
//!
//! A MAT file of format 4 is a sequence of matrices, each a header of five little-endian
//! 32-bit integers (type 0: IEEE little-endian doubles, full; rows; columns; no imaginary
//! part; the name's length with its NUL), the name and the values column by column. Formats
//! 6 and 7 are level 5 files: a 128-byte header, then one `miMATRIX` element per matrix;
//! format 7 wraps each element in `miCOMPRESSED`, a zlib stream (written here in stored
//! blocks, which every zlib reader inflates).

use std::fs::OpenOptions;
use std::io::Write;

/// One piece of a text computed at an event.
#[derive(Clone, Debug, PartialEq)]
pub enum Piece<'a> {
    Literal(&'a str),
    /// `String(x, significantDigits, minimumLength, leftJustified)` of a Real: C's `%g`.
    Real {
        value: f64,
        significant: usize,
        min_length: usize,
        left: bool,
    },
    /// `String(i, minimumLength, leftJustified)` of an Integer.
    Integer {
        value: f64,
        min_length: usize,
        left: bool,
    },
    /// `String(b)`: `true` or `false`.
    Boolean(f64),
    /// `Files.fullPathName(name)`: the absolute path of `name` where the run is.
    FullPath(&'a str),
}

/// The text the pieces make.
pub fn text(pieces: &[Piece<'_>]) -> String {
    let mut out = String::new();
    for piece in pieces {
        match *piece {
            Piece::Literal(s) => out.push_str(s),
            Piece::Real {
                value,
                significant,
                min_length,
                left,
            } => padded(&mut out, &general(value, significant), min_length, left),
            Piece::Integer {
                value,
                min_length,
                left,
            } => padded(&mut out, &format!("{}", value as i64), min_length, left),
            Piece::Boolean(b) => out.push_str(if b != 0.0 { "true" } else { "false" }),
            Piece::FullPath(name) => out.push_str(&full_path(name)),
        }
    }
    out
}

fn padded(out: &mut String, s: &str, min_length: usize, left: bool) {
    let fill = " ".repeat(min_length.saturating_sub(s.chars().count()));
    if left {
        out.push_str(s);
        out.push_str(&fill);
    } else {
        out.push_str(&fill);
        out.push_str(s);
    }
}

/// C's `%.{significant}g`: positional when the exponent is in `-4..significant`, else
/// `d.ddde±XX`; trailing zeros removed.
pub fn general(x: f64, significant: usize) -> String {
    if !x.is_finite() {
        return if x.is_nan() {
            "nan".into()
        } else if x > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    let p = significant.max(1);
    if x == 0.0 {
        return if x.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    // The exponent after rounding to `p` digits.
    let scientific = format!("{:.*e}", p - 1, x);
    let (mantissa, exponent) = scientific.split_once('e').expect("an exponent");
    let exponent: i32 = exponent.parse().expect("an integer exponent");
    if exponent < -4 || exponent >= p as i32 {
        let mantissa = trimmed(mantissa);
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    } else {
        let decimals = (p as i32 - 1 - exponent).max(0) as usize;
        trimmed(&format!("{x:.decimals$}")).to_string()
    }
}

fn trimmed(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// The absolute path of `name`, from the working directory when it is relative.
pub fn full_path(name: &str) -> String {
    let path = std::path::Path::new(name);
    if path.is_absolute() {
        return name.to_string();
    }
    match std::env::current_dir() {
        Ok(dir) => dir.join(path).display().to_string(),
        Err(_) => name.to_string(),
    }
}

/// `Streams.print(text, file)`: a line on the terminal, or appended to `file`. The terminal
/// is standard error, so that results written to standard output (CSV, JSON) stay whole.
pub fn print(text: &str, file: &str) -> Result<(), String> {
    if file.is_empty() {
        eprintln!("{text}");
        return Ok(());
    }
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
        .map_err(|e| format!("cannot open `{file}` to print to it: {e}"))?;
    writeln!(f, "{text}").map_err(|e| format!("cannot print to `{file}`: {e}"))
}

/// `Files.removeFile(file)`: removed if it is a file, nothing if it does not exist.
pub fn remove_file(file: &str) -> Result<(), String> {
    match std::fs::metadata(file) {
        Err(_) => Ok(()),
        Ok(m) if m.is_file() => {
            std::fs::remove_file(file).map_err(|e| format!("cannot remove `{file}`: {e}"))
        }
        Ok(_) => Err(format!(
            "`{file}` should be removed, but it is a directory or a special file"
        )),
    }
}

/// The MAT file formats `writeRealMatrix` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatFormat {
    V4,
    V6,
    V7,
}

impl MatFormat {
    /// The format a `format` argument names: "4", "6" or "7".
    pub fn named(format: &str) -> Option<MatFormat> {
        match format {
            "4" => Some(MatFormat::V4),
            "6" => Some(MatFormat::V6),
            "7" => Some(MatFormat::V7),
            _ => None,
        }
    }
}

/// A Real matrix to store: `values` row by row.
pub struct Matrix<'a> {
    pub name: &'a str,
    pub rows: usize,
    pub cols: usize,
    pub values: &'a [f64],
}

/// Bytes 124..128 of a level 5 header: version 0x0100, then `IM` (little-endian).
const LEVEL5_MARK: [u8; 4] = [0x00, 0x01, b'I', b'M'];

/// `Streams.writeRealMatrix`: `matrix` stored in `file` in `format`, after the matrices
/// already there when `append` is set and the file exists (in the same format), else in a
/// new file.
pub fn write_real_matrix(
    file: &str,
    matrix: &Matrix<'_>,
    append: bool,
    format: MatFormat,
) -> Result<(), String> {
    let failed =
        |e: std::io::Error| format!("cannot write the matrix `{}` to `{file}`: {e}", matrix.name);
    let existing = if append {
        std::fs::read(file).ok()
    } else {
        None
    };
    let mut bytes = Vec::new();
    match (&existing, format) {
        (Some(old), MatFormat::V4) if level5(old) => {
            return Err(format!(
                "`{file}` is a MAT file of format 6 or 7: a matrix of format 4 cannot be appended to it"
            ));
        }
        (Some(old), MatFormat::V6 | MatFormat::V7) if !level5(old) => {
            return Err(format!(
                "`{file}` is not a MAT file of format 6 or 7: the matrix cannot be appended to it"
            ));
        }
        (Some(_), _) => {}
        (None, MatFormat::V4) => {}
        (None, MatFormat::V6 | MatFormat::V7) => bytes.extend(level5_header()),
    }
    match format {
        MatFormat::V4 => bytes.extend(v4_matrix(matrix)),
        MatFormat::V6 => bytes.extend(level5_matrix(matrix)),
        MatFormat::V7 => {
            let stream = zlib_stored(&level5_matrix(matrix));
            bytes.extend(15u32.to_le_bytes());
            bytes.extend((stream.len() as u32).to_le_bytes());
            bytes.extend(stream);
        }
    }
    let mut f = OpenOptions::new()
        .create(true)
        .write(true)
        .append(existing.is_some())
        .truncate(existing.is_none())
        .open(file)
        .map_err(failed)?;
    f.write_all(&bytes).map_err(failed)
}

fn level5(bytes: &[u8]) -> bool {
    bytes.len() >= 128 && bytes[124..128] == LEVEL5_MARK
}

fn v4_matrix(m: &Matrix<'_>) -> Vec<u8> {
    let mut out = Vec::with_capacity(20 + m.name.len() + 1 + 8 * m.values.len());
    for field in [0, m.rows as i32, m.cols as i32, 0, m.name.len() as i32 + 1] {
        out.extend(field.to_le_bytes());
    }
    out.extend(m.name.as_bytes());
    out.push(0);
    column_major(m, &mut out);
    out
}

fn column_major(m: &Matrix<'_>, out: &mut Vec<u8>) {
    for j in 0..m.cols {
        for i in 0..m.rows {
            out.extend(m.values[i * m.cols + j].to_le_bytes());
        }
    }
}

fn level5_header() -> Vec<u8> {
    let mut text =
        b"MATLAB 5.0 MAT-file, written by Modelica.Utilities.Streams.writeRealMatrix".to_vec();
    text.resize(116, b' ');
    text.extend([0u8; 8]);
    text.extend(LEVEL5_MARK);
    text
}

/// A data element: its type, byte count and bytes, padded to 8 bytes.
fn element(out: &mut Vec<u8>, kind: u32, data: &[u8]) {
    out.extend(kind.to_le_bytes());
    out.extend((data.len() as u32).to_le_bytes());
    out.extend(data);
    out.resize(out.len().next_multiple_of(8), 0);
}

fn level5_matrix(m: &Matrix<'_>) -> Vec<u8> {
    const MI_INT8: u32 = 1;
    const MI_INT32: u32 = 5;
    const MI_UINT32: u32 = 6;
    const MI_DOUBLE: u32 = 9;
    const MI_MATRIX: u32 = 14;
    const MX_DOUBLE_CLASS: u32 = 6;
    let mut body = Vec::new();
    let flags: Vec<u8> = [MX_DOUBLE_CLASS, 0]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    element(&mut body, MI_UINT32, &flags);
    let dims: Vec<u8> = [m.rows as i32, m.cols as i32]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    element(&mut body, MI_INT32, &dims);
    element(&mut body, MI_INT8, m.name.as_bytes());
    let mut values = Vec::with_capacity(8 * m.values.len());
    column_major(m, &mut values);
    element(&mut body, MI_DOUBLE, &values);
    let mut out = Vec::with_capacity(body.len() + 8);
    element(&mut out, MI_MATRIX, &body);
    out
}

/// `data` as a zlib stream of stored (uncompressed) deflate blocks.
fn zlib_stored(data: &[u8]) -> Vec<u8> {
    const MOST: usize = 65_535;
    let mut out = vec![0x78, 0x01];
    let chunks: Vec<&[u8]> = if data.is_empty() {
        vec![&[]]
    } else {
        data.chunks(MOST).collect()
    };
    for (k, chunk) in chunks.iter().enumerate() {
        out.push(u8::from(k + 1 == chunks.len()));
        let n = chunk.len() as u16;
        out.extend(n.to_le_bytes());
        out.extend((!n).to_le_bytes());
        out.extend(*chunk);
    }
    out.extend(adler32(data).to_be_bytes());
    out
}

fn adler32(data: &[u8]) -> u32 {
    const MOD: u32 = 65_521;
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in data {
        a = (a + u32::from(byte)) % MOD;
        b = (b + a) % MOD;
    }
    (b << 16) | a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn general_is_c_percent_g() {
        // Values printed by C's printf("%.6g") and printf("%.3g").
        assert_eq!(general(2.0, 6), "2");
        assert_eq!(general(0.1, 6), "0.1");
        assert_eq!(general(1234567.0, 6), "1.23457e+06");
        assert_eq!(general(0.0001, 6), "0.0001");
        assert_eq!(general(0.00001234, 6), "1.234e-05");
        assert_eq!(general(-1.23456, 3), "-1.23");
        assert_eq!(general(999999.5, 6), "1e+06");
        assert_eq!(general(100.0, 3), "100");
        assert_eq!(general(1000.0, 3), "1e+03");
    }

    #[test]
    fn adler32_of_wikipedia() {
        // The checksum of "Wikipedia" given by the algorithm's article.
        assert_eq!(adler32(b"Wikipedia"), 0x11E6_0398);
    }

    #[test]
    fn padded_pieces() {
        let pieces = [
            Piece::Literal("x = "),
            Piece::Integer {
                value: 7.0,
                min_length: 3,
                left: false,
            },
            Piece::Literal("|"),
            Piece::Boolean(1.0),
        ];
        assert_eq!(text(&pieces), "x =   7|true");
    }
}
