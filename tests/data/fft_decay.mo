model FFTDecay
  import Modelica.Math.FastFourierTransform.realFFT;
  Real x(start = 1, fixed = true);
  Real u[20] = {x*sin(0.3*i) + 0.1*i for i in 1:20};
  Integer info;
  Real A[11];
  Real Phi[11];
equation
  (info, A, Phi) = realFFT(u, 11);
  der(x) = -A[3];
end FFTDecay;
