// Two RC stages coupled weakly (as examples/rc_ladder_weak.mo), the source switched by a relay
// with hysteresis through `pre` on the first capacitor, and a counter of `sample` instants.
model Source "A voltage source set by its signal u"
  extends Mocca.Electrical.OnePort;
  Real u;
equation
  v = u;
end Source;

model RelayWeak "Two RC stages coupled weakly, a relay with hysteresis on the first and a sampled counter"
  Mocca.Electrical.Resistor R1(R = 0.1);
  Mocca.Electrical.Capacitor C1(C = 1, v(fixed = true));
  Mocca.Electrical.Resistor R2(R = 1);
  Mocca.Electrical.Capacitor C2(C = 1, v(fixed = true));
  Mocca.Electrical.Resistor R3(R = 1);
  Mocca.Electrical.Ground ground;
  Source E;
  Boolean on(start = true);
  Integer ticks(start = 0);
equation
  on = if pre(on) then C1.v < 0.8 else C1.v < 0.6;
  E.u = if on then 1 else 0;
  when sample(0, 0.25) then
    ticks = pre(ticks) + 1;
  end when;
  connect(E.p, R1.p);
  connect(R1.n, C1.p);
  connect(C1.p, R2.p);
  connect(R2.n(weak v), C2.p(weak i));
  connect(C2.p, R3.p);
  connect(E.n, ground.p);
  connect(C1.n, ground.p);
  connect(C2.n, ground.p);
  connect(R3.n, ground.p);
end RelayWeak;
