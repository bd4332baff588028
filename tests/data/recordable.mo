// A decay in a 2×2 array, with aliases, a parameter and an input, for recording.
model Recordable
  parameter Real k = 2;
  input Real u;
  Real x[2, 2](each start = 1, each fixed = true);
  Real y;
  Real z;
equation
  for i in 1:2, j in 1:2 loop
    der(x[i, j]) = -k*x[i, j] + u;
  end for;
  y = x[1, 2];
  z = -y;
end Recordable;
