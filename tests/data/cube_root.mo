function cubeRoot
  input Real a;
  output Real y;
protected
  Real err;
algorithm
  y := 1;
  err := y^3 - a;
  while abs(err) > 1e-12 loop
    y := y - err/(3*y^2);
    err := y^3 - a;
  end while;
end cubeRoot;
