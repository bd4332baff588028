model Tables2D
  parameter Real g1[3] = {0, 1, 3};
  parameter Real g2[4] = {-1, 0, 2, 5};
  function f input Real a; input Real b; output Real y; algorithm y := 1 + 2*a - b + 0.5*a*b; end f;
  parameter Real tab[4, 5] = [0, g2[1], g2[2], g2[3], g2[4];
    g1[1], f(g1[1], g2[1]), f(g1[1], g2[2]), f(g1[1], g2[3]), f(g1[1], g2[4]);
    g1[2], f(g1[2], g2[1]), f(g1[2], g2[2]), f(g1[2], g2[3]), f(g1[2], g2[4]);
    g1[3], f(g1[3], g2[1]), f(g1[3], g2[2]), f(g1[3], g2[3]), f(g1[3], g2[4])];
  Modelica.Blocks.Tables.CombiTable2Ds lin(table = tab);
  Modelica.Blocks.Tables.CombiTable2Ds hold(table = tab, extrapolation = Modelica.Blocks.Types.Extrapolation.HoldLastPoint);
  Modelica.Blocks.Tables.CombiTable2Ds steps(table = tab, smoothness = Modelica.Blocks.Types.Smoothness.ConstantSegments);
  Modelica.Blocks.Tables.CombiTable2Ds wrap(table = tab, extrapolation = Modelica.Blocks.Types.Extrapolation.Periodic);
  Modelica.Blocks.Tables.CombiTable2Dv vec(n = 2, table = tab);
  Real x(start = -1, fixed = true);
equation
  der(x) = 1;
  lin.u1 = x; lin.u2 = 2*x - 1;
  hold.u1 = x; hold.u2 = 2*x - 1;
  steps.u1 = x; steps.u2 = 2*x - 1;
  wrap.u1 = x; wrap.u2 = 2*x - 1;
  vec.u1 = {x, 0.5}; vec.u2 = {2*x - 1, 4};
  annotation(experiment(StopTime = 5));
end Tables2D;
