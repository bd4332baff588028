model HomotopyStart
  Real x(start = -1);
initial equation
  homotopy(actual = sqrt(x), simplified = 0.5*x) = 2;
equation
  der(x) = -x;
end HomotopyStart;
