//! Trajectories as CSV (`time` plus one column per variable) and their comparison with a
//! reference run (SPEC §6): our values interpolated linearly onto the reference times, and
//! `RMSE = max_i sqrt(Σ_k (x̂_ik − x_ik)² / K)` over the `K` reference times inside the run.

use std::io::Write;

use crate::numfmt::Number;

/// Writes `time,name,...` and one row per time.
pub fn write_csv(
    out: &mut dyn Write,
    names: &[String],
    times: &[f64],
    columns: &[Vec<f64>],
) -> std::io::Result<()> {
    write!(out, "time")?;
    for n in names {
        write!(out, ",{}", csv_field(n))?;
    }
    writeln!(out)?;
    for (k, t) in times.iter().enumerate() {
        write!(out, "{}", Number(*t))?;
        for c in columns {
            write!(out, ",{}", Number(c[k]))?;
        }
        writeln!(out)?;
    }
    Ok(())
}

fn csv_field(name: &str) -> String {
    if name.contains([',', '"']) {
        format!("\"{}\"", name.replace('"', "\"\""))
    } else {
        name.to_string()
    }
}

/// A reference run read from CSV.
#[derive(Clone, Debug, PartialEq)]
pub struct Reference {
    pub names: Vec<String>,
    pub times: Vec<f64>,
    /// One column per name.
    pub columns: Vec<Vec<f64>>,
}

/// Parses a CSV whose first column is time; quoted names (`"der(x[1])"`) are unquoted.
pub fn read_csv(text: &str) -> Result<Reference, String> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header = lines.next().ok_or("the file is empty")?;
    let mut names = header_fields(header);
    if names.first().map(String::as_str) != Some("time") {
        return Err("the first column must be `time`".to_string());
    }
    names.remove(0);
    let mut times = Vec::new();
    let mut columns = vec![Vec::new(); names.len()];
    for (row, line) in lines.enumerate() {
        let values: Vec<&str> = line.split(',').collect();
        if values.len() != names.len() + 1 {
            return Err(format!(
                "row {} has {} fields, the header {}",
                row + 2,
                values.len(),
                names.len() + 1
            ));
        }
        let parse = |s: &str| {
            s.trim()
                .parse::<f64>()
                .map_err(|_| format!("row {}: `{}` is not a number", row + 2, s.trim()))
        };
        times.push(parse(values[0])?);
        for (c, v) in columns.iter_mut().zip(&values[1..]) {
            c.push(parse(v)?);
        }
    }
    Ok(Reference {
        names,
        times,
        columns,
    })
}

/// The fields of a CSV header: a quoted field may hold commas (`"x[1,2]"`) and doubled
/// quotes; blanks around a field are dropped.
fn header_fields(header: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = header.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(std::mem::take(&mut field).trim().to_string()),
            c => field.push(c),
        }
    }
    fields.push(field.trim().to_string());
    fields
}

/// `values` (on `times`, increasing) linearly interpolated at `t`; `None` outside the range.
pub fn interpolate(times: &[f64], values: &[f64], t: f64) -> Option<f64> {
    let (first, last) = (*times.first()?, *times.last()?);
    if t < first || t > last {
        return None;
    }
    let k = times.partition_point(|&s| s <= t);
    if k == 0 {
        return Some(values[0]);
    }
    if k >= times.len() {
        return Some(values[times.len() - 1]);
    }
    let (t0, t1) = (times[k - 1], times[k]);
    let w = if t1 > t0 { (t - t0) / (t1 - t0) } else { 0.0 };
    Some(values[k - 1] + w * (values[k] - values[k - 1]))
}

/// The error of one variable against the reference.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct VariableError {
    pub name: String,
    /// `sqrt(Σ_k (x̂_k − x_k)² / K)`.
    pub rmse: f64,
    pub max_abs: f64,
}

/// Per variable present in both runs (in our order), the error; `K` is the number of
/// reference times inside our time range.
pub fn compare(
    names: &[String],
    times: &[f64],
    columns: &[Vec<f64>],
    reference: &Reference,
) -> Vec<VariableError> {
    let mut errors = Vec::new();
    for (name, ours) in names.iter().zip(columns) {
        let Some(r) = reference.names.iter().position(|n| n == name) else {
            continue;
        };
        let (mut sum, mut count, mut max_abs) = (0.0, 0usize, 0.0f64);
        for (&t, &want) in reference.times.iter().zip(&reference.columns[r]) {
            if let Some(got) = interpolate(times, ours, t) {
                let d = got - want;
                sum += d * d;
                max_abs = max_abs.max(d.abs());
                count += 1;
            }
        }
        let rmse = if count == 0 {
            f64::NAN
        } else {
            (sum / count as f64).sqrt()
        };
        errors.push(VariableError {
            name: name.clone(),
            rmse,
            max_abs,
        });
    }
    errors
}

/// SPEC §6's RMSE: the largest per-variable RMSE.
pub fn rmse(errors: &[VariableError]) -> Option<f64> {
    errors.iter().map(|e| e.rmse).reduce(f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolation_is_linear_between_samples_and_none_outside() {
        let t = [0.0, 1.0, 3.0];
        let v = [0.0, 2.0, 6.0];
        assert_eq!(interpolate(&t, &v, 0.5), Some(1.0));
        assert_eq!(interpolate(&t, &v, 2.0), Some(4.0));
        assert_eq!(interpolate(&t, &v, 3.0), Some(6.0));
        assert_eq!(interpolate(&t, &v, 3.5), None);
    }

    /// What `write_csv` writes, `read_csv` reads back: names with commas and quotes too.
    #[test]
    fn a_written_csv_reads_back() {
        let names = [
            "x[1,2]".to_string(),
            "say \"hi\"".to_string(),
            "y".to_string(),
        ];
        let mut text = Vec::new();
        write_csv(
            &mut text,
            &names,
            &[0.0, 0.5],
            &[vec![1.0, 2.0], vec![3.0, 4.0], vec![5.0, 1e-7]],
        )
        .expect("written");
        let back = read_csv(std::str::from_utf8(&text).expect("utf-8")).expect("parses");
        assert_eq!(back.names, names);
        assert_eq!(back.times, [0.0, 0.5]);
        assert_eq!(
            back.columns,
            [vec![1.0, 2.0], vec![3.0, 4.0], vec![5.0, 1e-7]]
        );
    }

    #[test]
    fn rmse_by_hand() {
        let reference = read_csv("time,\"der(x[1])\",y\n0,0,1\n1,1,1\n2,2,1\n").expect("parses");
        assert_eq!(reference.names, ["der(x[1])", "y"]);
        // Ours: der(x[1]) off by 0, 0, 3 → sqrt(9/3); y off by 1 everywhere → 1.
        let names = vec!["der(x[1])".to_string(), "y".to_string()];
        let columns = vec![vec![0.0, 1.0, 5.0], vec![2.0, 2.0, 2.0]];
        let errors = compare(&names, &[0.0, 1.0, 2.0], &columns, &reference);
        assert_eq!(errors[0].rmse, 3.0f64.sqrt());
        assert_eq!(errors[1].rmse, 1.0);
        assert_eq!(rmse(&errors), Some(3.0f64.sqrt()));
    }
}
