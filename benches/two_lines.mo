// Two diffusion lines of N cells coupled weakly at one end: two weak subsystems of N states
// each (BENCHMARKS.md, weak subsystems on two threads).
model TwoLines
  parameter Integer N = 200;
  parameter Real k = 50;
  Real a[N](each start = 1, each fixed = true);
  Real b[N](each start = 0, each fixed = true);
  weak Real a_end;
  weak Real b_end;
equation
  a_end = a[N];
  b_end = b[1];
  der(a[1]) = k*(-a[1] + a[2]);
  for i in 2:N-1 loop
    der(a[i]) = k*(a[i-1] - 2*a[i] + a[i+1]);
    der(b[i]) = k*(b[i-1] - 2*b[i] + b[i+1]);
  end for;
  der(a[N]) = k*(a[N-1] - 2*a[N] + b_end);
  der(b[1]) = k*(a_end - 2*b[1] + b[2]);
  der(b[N]) = k*(b[N-1] - b[N]);
end TwoLines;
