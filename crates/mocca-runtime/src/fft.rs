//! The real FFT behind `Modelica.Math.FastFourierTransform` (`ModelicaFFT_kiss_fftr` in
//! `ModelicaFFT.c`): the discrete Fourier transform `X[k] = Σ u[j]·e^(−2πi·jk/n)` of a real
//! signal of even length `n`, its amplitudes `|X[k]|/nf` and phases `atan2(Im X[k], Re X[k])`
//! for `k = 0 … n/2` (`nf = n/2 + 1` of them), as the C function returns them.
//!
//! The transform is a mixed-radix Cooley–Tukey recursion on the smallest prime factor of the
//! length: n·(sum of n's prime factors) operations, so fast for the 2ᵃ·3ᵇ·5ᶜ lengths the
//! library chooses and exact (a plain sum) for any other.

/// A complex number as (real, imaginary).
type Complex = (f64, f64);

/// The amplitudes and phases of `u` into `outputs` = [info, amplitudes…, phases…]: info 0,
/// or 1 (and nothing else written) when the length is odd.
pub fn real_fft(u: &[f64], outputs: &mut [f64]) {
    let nf = u.len() / 2 + 1;
    if !u.len().is_multiple_of(2) {
        outputs[0] = 1.0;
        return;
    }
    outputs[0] = 0.0;
    let x = real_transform(u);
    for (k, &(re, im)) in x.iter().take(nf).enumerate() {
        outputs[1 + k] = re.hypot(im) / nf as f64;
        outputs[1 + nf + k] = im.atan2(re);
    }
}

/// The tangents of [`real_fft`]'s outputs along `du` at `u`: the transform is linear, so
/// `dX` is the transform of `du`; an amplitude or phase at `X[k] = 0` has tangent 0.
pub fn real_fft_tangent(u: &[f64], du: &[f64], tangents: &mut [f64]) {
    let nf = u.len() / 2 + 1;
    tangents.iter_mut().for_each(|t| *t = 0.0);
    if !u.len().is_multiple_of(2) {
        return;
    }
    let (x, dx) = (real_transform(u), real_transform(du));
    for k in 0..nf {
        let ((re, im), (dre, dim)) = (x[k], dx[k]);
        let square = re * re + im * im;
        if square > 0.0 {
            tangents[1 + k] = (re * dre + im * dim) / square.sqrt() / nf as f64;
            tangents[1 + nf + k] = (re * dim - im * dre) / square;
        }
    }
}

/// The transform of a real signal of even length: X[0] and X[n/2] are real, their
/// imaginary parts exactly 0 (as kiss_fftr sets them, so that a negative one's phase is +π).
fn real_transform(u: &[f64]) -> Vec<Complex> {
    let mut x = transform(&u.iter().map(|&v| (v, 0.0)).collect::<Vec<_>>());
    let n = u.len();
    for k in [0, n / 2] {
        if let Some(z) = x.get_mut(k) {
            z.1 = 0.0;
        }
    }
    x
}

/// The discrete Fourier transform of `x`.
fn transform(x: &[Complex]) -> Vec<Complex> {
    let n = x.len();
    let p = smallest_factor(n);
    if p == n {
        return direct(x);
    }
    let m = n / p;
    let parts: Vec<Vec<Complex>> = (0..p)
        .map(|r| transform(&x.iter().skip(r).step_by(p).copied().collect::<Vec<_>>()))
        .collect();
    (0..n)
        .map(|k| {
            parts.iter().enumerate().fold((0.0, 0.0), |sum, (r, part)| {
                add(sum, mul(part[k % m], twiddle(r * k, n)))
            })
        })
        .collect()
}

/// The transform by its definition (for a prime length, or 1).
fn direct(x: &[Complex]) -> Vec<Complex> {
    let n = x.len();
    (0..n)
        .map(|k| {
            x.iter().enumerate().fold((0.0, 0.0), |sum, (j, &v)| {
                add(sum, mul(v, twiddle(j * k, n)))
            })
        })
        .collect()
}

/// The smallest prime factor of `n` (`n` itself for a prime, 1 or 0).
fn smallest_factor(n: usize) -> usize {
    (2..)
        .take_while(|p| p * p <= n)
        .find(|p| n.is_multiple_of(*p))
        .unwrap_or(n)
}

/// `e^(−2πi·jk/n)`, the exponent taken modulo `n` so that large products stay exact.
fn twiddle(jk: usize, n: usize) -> Complex {
    let angle = -2.0 * std::f64::consts::PI * (jk % n) as f64 / n as f64;
    (angle.cos(), angle.sin())
}

fn add(a: Complex, b: Complex) -> Complex {
    (a.0 + b.0, a.1 + b.1)
}

fn mul(a: Complex, b: Complex) -> Complex {
    (a.0 * b.0 - a.1 * b.1, a.0 * b.1 + a.1 * b.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The recursion agrees with the definition on lengths with factors 2, 3, 5 and 7.
    #[test]
    fn the_mixed_radix_transform_is_the_definition() {
        for n in [1, 2, 6, 12, 30, 60, 14, 7] {
            let x: Vec<Complex> = (0..n)
                .map(|j| ((j as f64 * 0.7).sin() + 0.1 * j as f64, (j as f64).cos()))
                .collect();
            let (fast, slow) = (transform(&x), direct(&x));
            for (a, b) in fast.iter().zip(&slow) {
                assert!(
                    (a.0 - b.0).abs() < 1e-12 && (a.1 - b.1).abs() < 1e-12,
                    "{n}"
                );
            }
        }
    }

    /// `5 + 3 sin(2π·2t) + 1.5 cos(2π·3t)` sampled over one second: the mean, the sine's
    /// and the cosine's amplitudes (times n/(2·nf)) and phases (−90° and 0°).
    #[test]
    fn a_sampled_signal_shows_its_frequencies() {
        let n = 20;
        let u: Vec<f64> = (0..n)
            .map(|j| {
                let t = j as f64 / n as f64;
                5.0 + 3.0 * (4.0 * std::f64::consts::PI * t).sin()
                    + 1.5 * (6.0 * std::f64::consts::PI * t).cos()
            })
            .collect();
        let nf = n / 2 + 1;
        let mut out = vec![0.0; 1 + 2 * nf];
        real_fft(&u, &mut out);
        let scale = n as f64 / nf as f64;
        assert_eq!(out[0], 0.0);
        assert!((out[1] - 5.0 * scale).abs() < 1e-12);
        assert!((out[1 + 2] - 1.5 * scale).abs() < 1e-12);
        assert!((out[1 + 3] - 0.75 * scale).abs() < 1e-12);
        assert!((out[1 + nf + 2] + std::f64::consts::FRAC_PI_2).abs() < 1e-12);
        assert!(out[1 + nf + 3].abs() < 1e-12);
        let mut odd = vec![0.0; 1 + 2 * 3];
        real_fft(&u[..5], &mut odd);
        assert_eq!(odd[0], 1.0);
    }

    /// The tangents are the central differences of the outputs.
    #[test]
    fn tangents_are_the_differences_of_the_outputs() {
        let u = [1.0, 0.3, -2.0, 0.5, 4.0, 1.5];
        let du = [0.2, -1.0, 0.4, 0.0, 0.7, -0.3];
        let mut tangents = [0.0; 9];
        real_fft_tangent(&u, &du, &mut tangents);
        let h = 1e-6;
        let at = |s: f64| {
            let v: Vec<f64> = u.iter().zip(&du).map(|(a, b)| a + s * b).collect();
            let mut out = [0.0; 9];
            real_fft(&v, &mut out);
            out
        };
        let (plus, minus) = (at(h), at(-h));
        for k in 1..9 {
            let difference = (plus[k] - minus[k]) / (2.0 * h);
            assert!((tangents[k] - difference).abs() < 1e-6, "{k}");
        }
    }
}
