model Slide
  parameter Real m = 1, g = 9.81, mu = 0.3, v0 = 2, F = 1;
  Real x(start = 0, fixed = true);
  Real v(start = v0, fixed = true);
  Boolean sliding(start = true, fixed = true);
equation
  der(x) = v;
  sliding = if pre(sliding) then v > 0 else F > mu*m*g;
  m*der(v) = if sliding then F - mu*m*g else 0;
end Slide;
