model StiffRotations
  "Oscillators too fast for their step: implicit Euler's Newton matrix has 2000 off its diagonal of 1"
  parameter Integer N = 35;
  parameter Real w = 2e5;
  Real x[N](each start = 0, each fixed = true);
  Real y[N](each start = 0, each fixed = true);
equation
  for i in 1:N loop
    der(x[i]) = w*y[i] - x[i];
    der(y[i]) = w - w*x[i] - y[i];
  end for;
end StiffRotations;
