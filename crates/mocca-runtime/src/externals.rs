//! The foreign functions of the Modelica Standard Library that mocca implements in Rust, for
//! `simulate`, the emitted crates and translation-time evaluation alike: the pseudo-random
//! number generators of `Modelica.Math.Random.Generators` (xorshift64*, xorshift128+ and
//! xorshift1024*, as `ModelicaRandom.c` defines them) and the real FFT of
//! `Modelica.Math.FastFourierTransform` (`crate::fft`).
//!
//! A generator's state is a vector of 32-bit Integers (as Modelica holds it, here in `f64`s):
//! pairs of them are the 64-bit words the algorithms work on, the first of a pair the low
//! half (the C code's `union` on a little-endian machine); xorshift1024*'s 33rd Integer is
//! its word index.

/// A foreign function implemented here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Native {
    /// `ModelicaRandom_xorshift64star`: 2 Integers of state.
    Xorshift64star,
    /// `ModelicaRandom_xorshift128plus`: 4 Integers of state.
    Xorshift128plus,
    /// `ModelicaRandom_xorshift1024star`: 33 Integers of state.
    Xorshift1024star,
    /// `ModelicaFFT_kiss_fftr`: a Real signal of even length n to its info flag, n/2 + 1
    /// amplitudes and as many phases.
    RealFft,
    /// The tangents of `RealFft`'s outputs: its inputs are the signal, then the signal's
    /// tangent.
    RealFftTangent,
}

/// 2⁻⁶⁴.
const INV_M64: f64 = 5.421_010_862_427_522e-20;

impl Native {
    /// The implementation of the C function `name`, if there is one.
    pub fn by_name(name: &str) -> Option<Native> {
        Some(match name {
            "ModelicaRandom_xorshift64star" => Native::Xorshift64star,
            "ModelicaRandom_xorshift128plus" => Native::Xorshift128plus,
            "ModelicaRandom_xorshift1024star" => Native::Xorshift1024star,
            "ModelicaFFT_kiss_fftr" => Native::RealFft,
            _ => return None,
        })
    }

    /// The C function's name.
    pub fn name(self) -> &'static str {
        match self {
            Native::Xorshift64star => "ModelicaRandom_xorshift64star",
            Native::Xorshift128plus => "ModelicaRandom_xorshift128plus",
            Native::Xorshift1024star => "ModelicaRandom_xorshift1024star",
            Native::RealFft | Native::RealFftTangent => "ModelicaFFT_kiss_fftr",
        }
    }

    /// The Integers of a generator's state; `None` for a function that is no generator.
    pub fn state_size(self) -> Option<usize> {
        match self {
            Native::Xorshift64star => Some(2),
            Native::Xorshift128plus => Some(4),
            Native::Xorshift1024star => Some(33),
            Native::RealFft | Native::RealFftTangent => None,
        }
    }

    /// The function computing this one's output tangents from its inputs and then their
    /// tangents; `None` where the tangents are zero (a generator's outputs are piecewise
    /// constant).
    pub fn tangent(self) -> Option<Native> {
        match self {
            Native::RealFft => Some(Native::RealFftTangent),
            _ => None,
        }
    }

    /// The function on `inputs`, its outputs in `outputs`.
    pub fn call(self, inputs: &[f64], outputs: &mut [f64]) {
        match self {
            Native::RealFft => crate::fft::real_fft(inputs, outputs),
            Native::RealFftTangent => {
                let (u, du) = inputs.split_at(inputs.len() / 2);
                crate::fft::real_fft_tangent(u, du, outputs)
            }
            generator => generator.draw(inputs, outputs),
        }
    }

    /// A generator on its state `inputs`: the random number in (0, 1), then the next state.
    fn draw(self, inputs: &[f64], outputs: &mut [f64]) {
        let n = self.state_size().unwrap_or(0);
        let mut words = [0u64; 16];
        for (k, w) in words.iter_mut().enumerate().take(n / 2) {
            *w = word(inputs[2 * k], inputs[2 * k + 1]);
        }
        let (result, index) = match self {
            Native::Xorshift64star => (xorshift64star(&mut words[0]), None),
            Native::RealFft | Native::RealFftTangent => return,
            Native::Xorshift128plus => {
                let [s0, s1, ..] = &mut words;
                (xorshift128plus(s0, s1), None)
            }
            Native::Xorshift1024star => {
                let mut p = integer(inputs[32]);
                (xorshift1024star(&mut words, &mut p), Some(p))
            }
        };
        outputs[0] = result;
        for (k, &w) in words.iter().enumerate().take(n / 2) {
            outputs[1 + 2 * k] = f64::from(w as u32 as i32);
            outputs[2 + 2 * k] = f64::from((w >> 32) as u32 as i32);
        }
        if let Some(p) = index {
            outputs[n] = f64::from(p);
        }
    }
}

/// A 32-bit Integer of a state (its value is an integer in `f64`).
fn integer(x: f64) -> i32 {
    x as i64 as i32
}

/// The 64-bit word of two Integers, `low` the low half.
fn word(low: f64, high: f64) -> u64 {
    u64::from(integer(low) as u32) | (u64::from(integer(high) as u32) << 32)
}

/// A 64-bit word as a number in (0, 1): as a signed integer, times 2⁻⁶⁴, plus ½.
fn uniform(x: u64) -> f64 {
    (x as i64) as f64 * INV_M64 + 0.5
}

fn xorshift64star(x: &mut u64) -> f64 {
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    *x = x.wrapping_mul(2_685_821_657_736_338_717);
    uniform(*x)
}

fn xorshift128plus(first: &mut u64, second: &mut u64) -> f64 {
    let mut s1 = *first;
    let s0 = *second;
    *first = s0;
    s1 ^= s1 << 23;
    *second = (s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26)).wrapping_add(s0);
    uniform(*second)
}

fn xorshift1024star(s: &mut [u64; 16], p: &mut i32) -> f64 {
    *p &= 15;
    let s0 = s[*p as usize];
    *p = (*p + 1) & 15;
    let mut s1 = s[*p as usize];
    s1 ^= s1 << 31;
    s1 ^= s1 >> 11;
    let s0 = s0 ^ (s0 >> 30);
    s[*p as usize] = s0 ^ s1;
    uniform(s[*p as usize].wrapping_mul(1_181_783_497_276_652_981))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Integers of a state round-trip through the 64-bit words, negative ones included.
    #[test]
    fn a_state_splits_into_signed_halves_of_its_words() {
        let state = [-5.0, 7.0];
        let mut out = [0.0; 3];
        Native::Xorshift64star.call(&state, &mut out);
        let mut x = (u64::from(7u32) << 32) | u64::from(-5i32 as u32);
        let r = xorshift64star(&mut x);
        assert_eq!(out[0], r);
        assert_eq!(word(out[1], out[2]), x);
        assert!(
            out[1..]
                .iter()
                .all(|v| v.fract() == 0.0 && v.abs() <= 2f64.powi(31))
        );
    }
}
