model HomotopyStall
  Real x(start = 0);
  Real y(start = 0);
initial equation
  homotopy(actual = x^3 + y^3, simplified = x^3 + y^3 + 7) = 8;
  x = y;
equation
  der(x) = -x;
  der(y) = -y;
end HomotopyStall;
