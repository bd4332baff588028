model CubicAtRest
  parameter Real m = 2, g = 9.81, k3 = 500, d = 3;
  Real s(start = 0);
  Real v(start = 0, fixed = true);
initial equation
  der(v) = 0;
equation
  der(s) = v;
  m*der(v) = -k3*s^3 - d*v - m*g;
end CubicAtRest;
