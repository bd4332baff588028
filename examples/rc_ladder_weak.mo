// The RC ladder of SPEC §10 with the R2–C2 connection weak: source E, R1 from the source to node B with C1 to
// ground, R2 from B to node C with C2 and R3 to ground. States: C1.v (V_B) and C2.v (V_C).
// Sweep the coupling with `-p R2.R=5 -p C2.C=3`.
model RCLadderWeak "Two-capacitor RC ladder split by a weak connection"
  Mocca.Electrical.ConstantVoltage E(V = 1) "source";
  Mocca.Electrical.Resistor R1(R = 0.1);
  Mocca.Electrical.Capacitor C1(C = 1, v(fixed = true));
  Mocca.Electrical.Resistor R2(R = 1);
  Mocca.Electrical.Capacitor C2(C = 1, v(fixed = true));
  Mocca.Electrical.Resistor R3(R = 1);
  Mocca.Electrical.Ground ground;
equation
  connect(E.p, R1.p);
  connect(R1.n, C1.p);
  connect(C1.p, R2.p);
  // Voltage weak on the resistor side, current weak on the capacitor side (SPEC §2.1, §10):
  // a left subsystem {R1, C1, R2} reading V_C, a right one {C2, R3} fed by the current of R2.
  connect(R2.n(weak v), C2.p(weak i));
  connect(C2.p, R3.p);
  connect(E.n, ground.p);
  connect(C1.n, ground.p);
  connect(C2.n, ground.p);
  connect(R3.n, ground.p);
end RCLadderWeak;
