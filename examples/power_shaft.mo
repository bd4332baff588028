// Power generation shaft (SPEC §13): a mechanical unit (shaft inertia, turbine torque with a
// first-order speed governor) and an electrical generator (rotor angle against the grid,
// electrical torque from the angle, a first-order field state), joined by a flange that is
// weak in the torque on the mechanical side and weak in the angle on the electrical side.
// The inertia is on the mechanical side only: inertia on both sides of a weak shaft is known
// to go unstable (mocca warns about it).

model MechanicalUnit "Shaft inertia driven by a governed turbine"
  parameter Real J = 2 "shaft inertia (kg.m2)";
  parameter Real w_ref = 314.159 "reference speed (rad/s)";
  parameter Real tau_ref = 100 "torque set point (N.m)";
  parameter Real K_g = 20 "governor gain (N.m.s/rad)";
  parameter Real T_g = 0.5 "governor time constant (s)";
  Mocca.Rotational.Inertia inertia(J = J, w(start = 314.159));
  Mocca.Rotational.Torque turbine;
  Mocca.Rotational.Flange shaft "to the generator";
  Real tau_t(start = 100) "turbine torque (N.m)";
equation
  T_g*der(tau_t) = -tau_t + tau_ref - K_g*(inertia.w - w_ref);
  turbine.tau_drive = tau_t;
  connect(turbine.flange, inertia.flange_a);
  connect(inertia.flange_b, shaft);
end MechanicalUnit;

model ElectricalGenerator "Synchronous generator seen from its shaft"
  parameter Real w_s = 314.159 "grid angular frequency (rad/s)";
  parameter Real V = 1 "grid voltage (pu)";
  parameter Real X = 0.5 "reactance (pu)";
  parameter Real P_base = 100 "power scale (W)";
  parameter Real E_f = 1.2 "field voltage (pu)";
  parameter Real T_d = 2 "field time constant (s)";
  Mocca.Rotational.Flange shaft "from the turbine";
  Real delta "rotor angle against the grid (rad)";
  Real E(start = 1.2) "internal voltage (pu)";
  Real tau_e "electrical torque (N.m)";
equation
  delta = shaft.phi - w_s*time;
  T_d*der(E) = E_f - E;
  tau_e = P_base*E*V/X*sin(delta);
  shaft.tau = tau_e;
end ElectricalGenerator;

model PowerShaft "Turbine and generator joined by a weak shaft"
  MechanicalUnit mech;
  ElectricalGenerator elec;
equation
  connect(mech.shaft(weak tau), elec.shaft(weak phi));
end PowerShaft;
