// The quarter car of quarter_car.mo composed from components: stdlib masses and dampers, and
// the nonlinear spring, road and gravity defined here, joined by connect.

model NonlinearSpring "Spring with a cubic term"
  extends Mocca.Translational.Compliant;
  parameter Real k1 = 1 "linear stiffness";
  parameter Real k3 = 0 "cubic stiffness";
equation
  f = k1*s_rel + k3*s_rel^3;
end NonlinearSpring;

model Road "A smooth 0.2 m curb between t = 1 and t = 1.5"
  constant Real pi = 3.141592653589793;
  Mocca.Translational.Flange flange;
  Real x_r(start = 0, fixed = true) "road height (m)";
equation
  flange.s = x_r;
  der(x_r) = if noEvent(time < 1) then 0 else if noEvent(time > 1.5) then 0
    else 0.4*(1 - cos(4*pi*(time - 1)));
end Road;

model Gravity "Weight of a mass"
  parameter Real m = 1 "mass (kg)";
  parameter Real g = 9.81 "gravity (m/s2)";
  Mocca.Translational.Flange flange;
equation
  flange.f = m*g;
end Gravity;

model QuarterCarComponents "Quarter car crossing a curb, from components"
  Road road;
  Mocca.Translational.Mass wheel(m = 36.6, v(fixed = true));
  Mocca.Translational.Mass body(m = 267, v(fixed = true));
  NonlinearSpring tyre(k1 = 193.915, k3 = 2.0e8);
  Mocca.Translational.Damper tyreDamper(d = 200);
  NonlinearSpring suspension(k1 = 18.742, k3 = 2.0e5);
  Mocca.Translational.Damper suspensionDamper(d = 700);
  Gravity wheelWeight(m = 36.6);
  Gravity bodyWeight(m = 267);
equation
  connect(road.flange, tyre.flange_a);
  connect(road.flange, tyreDamper.flange_a);
  connect(tyre.flange_b, wheel.flange_a);
  connect(tyreDamper.flange_b, wheel.flange_a);
  connect(wheel.flange_b, suspension.flange_a);
  connect(wheel.flange_b, suspensionDamper.flange_a);
  connect(suspension.flange_b, body.flange_a);
  connect(suspensionDamper.flange_b, body.flange_a);
  connect(wheelWeight.flange, wheel.flange_a);
  connect(bodyWeight.flange, body.flange_b);
initial equation
  der(wheel.v) = 0;
  der(body.v) = 0;
end QuarterCarComponents;
