// DC motor (SPEC §13), flat: armature current I, speed w, angle phi. The angle is on no cycle
// of the dependency graph, so cycle analysis gives it no step-size bound (h = infinity).
model DCMotor "Separately excited DC motor with a voltage step and a load torque"
  parameter Real R = 1 "armature resistance (Ohm)";
  parameter Real L = 0.5 "armature inductance (H)";
  parameter Real k_m = 0.01 "motor constant (N.m/A)";
  parameter Real J = 0.01 "rotor inertia (kg.m2)";
  parameter Real b = 0.1 "viscous friction (N.m.s)";
  parameter Real u0 = 1 "supply voltage after the step (V)";
  parameter Real tau_load = 0.001 "load torque (N.m)";
  Real I(start = 0, fixed = true) "armature current (A)";
  Real w(start = 0, fixed = true) "speed (rad/s)";
  Real phi(start = 0, fixed = true) "angle (rad)";
  Real u "supply voltage (V)";
  Real tau "load torque (N.m)";
equation
  u = if time >= 0.1 then u0 else 0;
  tau = tau_load;
  L*der(I) = -R*I - k_m*w + u;
  J*der(w) = k_m*I - b*w - tau;
  der(phi) = w;
end DCMotor;
