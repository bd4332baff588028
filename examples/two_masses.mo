// Two masses and three spring–dampers, horizontal (SPEC §13), flat: a stiff first spring
// (k1 = 500) and a soft coupling (k2 = 1) give two well separated time scales.
model TwoMasses "Two masses between three spring-dampers"
  parameter Real M1 = 1, M2 = 1 "masses (kg)";
  parameter Real k1 = 500, k2 = 1, k3 = 5 "springs (N/m)";
  parameter Real d1 = 5, d2 = 1, d3 = 1 "dampers (N.s/m)";
  Real x1(start = 0.1, fixed = true) "position of mass 1 (m)";
  Real v1(start = 0, fixed = true) "velocity of mass 1 (m/s)";
  Real x2(start = 0, fixed = true) "position of mass 2 (m)";
  Real v2(start = 0, fixed = true) "velocity of mass 2 (m/s)";
equation
  der(x1) = v1;
  M1*der(v1) = -(d1 + d2)*v1 + d2*v2 - (k1 + k2)*x1 + k2*x2;
  der(x2) = v2;
  M2*der(v2) = d2*v1 - (d2 + d3)*v2 + k2*x1 - (k2 + k3)*x2;
end TwoMasses;
