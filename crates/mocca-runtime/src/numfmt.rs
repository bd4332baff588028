//! Numbers as text for people and for files: the shortest decimal that reads back to the same
//! double, in positional form for moderate magnitudes and in exponent form for very small or
//! very large ones, as C's `%g` switches (but never losing digits); and times rounded to the
//! 15 decimal digits they are written and compared with ([`decimal`]). It depends on `std`
//! only: `mocca emit` writes this very file into the crates it emits, whose times are rounded
//! as `simulate`'s are.

/// Below this magnitude a number is written with an exponent: `1e-7`, not `0.0000001`.
const SMALLEST_POSITIONAL: f64 = 1e-4;
/// From this magnitude on a number is written with an exponent: `1e16`, not 17 digits.
const LARGEST_POSITIONAL: f64 = 1e16;

/// The shortest text that parses back to exactly `x`: `0`, `2.999`, `-40`, `1e-7`, `1.5e16`.
/// Zero (of either sign) prints as `0`; non-finite values as `inf`, `-inf` and `NaN`.
pub fn format_number(x: f64) -> String {
    Number(x).to_string()
}

/// [`format_number`] as a `Display`, for writing many numbers without a `String` each.
#[derive(Clone, Copy, Debug)]
pub struct Number(pub f64);

impl std::fmt::Display for Number {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let x = self.0;
        let magnitude = x.abs();
        if x == 0.0 {
            f.write_str("0")
        } else if !x.is_finite() || (SMALLEST_POSITIONAL..LARGEST_POSITIONAL).contains(&magnitude) {
            write!(f, "{x}")
        } else {
            write!(f, "{x:e}")
        }
    }
}

/// `t` rounded to 15 significant decimal digits, when the powers of ten involved are exact:
/// the times of a run (its grid, sample instants, breakpoints) are compared so, and
/// `0.025 + 0.05` is the breakpoint 0.075.
pub fn decimal(t: f64) -> f64 {
    if t == 0.0 || !t.is_finite() {
        return t;
    }
    let shift = 14 - t.abs().log10().floor() as i32;
    if !(-22..=22).contains(&shift) {
        return t;
    }
    // Powers of ten up to 10²² are exact doubles, so the only rounding is the final one.
    let scale = 10f64.powi(shift.abs());
    if shift >= 0 {
        (t * scale).round() / scale
    } else {
        (t / scale).round() * scale
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn moderate_numbers_are_positional_and_short() {
        assert_eq!(format_number(0.0), "0");
        assert_eq!(format_number(-0.0), "0");
        assert_eq!(format_number(2.0), "2");
        assert_eq!(format_number(2.999), "2.999");
        assert_eq!(format_number(-40.0), "-40");
        assert_eq!(format_number(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(format_number(1e-4), "0.0001");
        assert_eq!(format_number(9.5e15), "9500000000000000");
    }

    #[test]
    fn tiny_and_huge_numbers_take_an_exponent() {
        assert_eq!(format_number(1e-7), "1e-7");
        assert_eq!(format_number(-2.5e-5), "-2.5e-5");
        assert_eq!(format_number(1e16), "1e16");
        assert_eq!(format_number(f64::MIN_POSITIVE), "2.2250738585072014e-308");
        assert_eq!(format_number(f64::INFINITY), "inf");
        assert_eq!(format_number(f64::NEG_INFINITY), "-inf");
    }

    proptest! {
        #[test]
        fn every_finite_number_reads_back_exactly(bits in any::<u64>()) {
            let x = f64::from_bits(bits);
            prop_assume!(x.is_finite());
            let text = format_number(x);
            prop_assert_eq!(text.parse::<f64>().unwrap(), x, "{}", text);
        }

        #[test]
        fn numbers_of_every_decade_read_back_exactly(m in -1.0f64..1.0, e in -30i32..30) {
            let x = m * 10f64.powi(e);
            prop_assert_eq!(format_number(x).parse::<f64>().unwrap(), x);
        }
    }
}
