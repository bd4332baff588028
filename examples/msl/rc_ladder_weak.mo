// The RC ladder of examples/rc_ladder_weak.mo built from the Modelica Standard Library's
// Analog components, with the same weak connection. Needs MSL 4.0.0:
//   mocca simulate examples/msl/rc_ladder_weak.mo --lib ../shared/msl --partition weak
model MSLRCLadderWeak "Two-capacitor RC ladder of MSL components split by a weak connection"
  import Modelica.Electrical.Analog.Basic;
  Modelica.Electrical.Analog.Sources.ConstantVoltage E(V = 1) "source";
  Basic.Resistor R1(R = 0.1);
  Basic.Capacitor C1(C = 1, v(fixed = true));
  Basic.Resistor R2(R = 1);
  Basic.Capacitor C2(C = 1, v(fixed = true));
  Basic.Resistor R3(R = 1);
  Basic.Ground ground;
equation
  connect(E.p, R1.p);
  connect(R1.n, C1.p);
  connect(C1.p, R2.p);
  // Voltage weak on the resistor side, current weak on the capacitor side (SPEC §2.1, §10).
  connect(R2.n(weak v), C2.p(weak i));
  connect(C2.p, R3.p);
  connect(E.n, ground.p);
  connect(C1.n, ground.p);
  connect(C2.n, ground.p);
  connect(R3.n, ground.p);
  annotation(uses(Modelica(version = "4.0.0")), experiment(StopTime = 5));
end MSLRCLadderWeak;
