// Quarter-car suspension with nonlinear springs (SPEC §13), flat: the reduction example.
// States x_s, v_s (body), x_t, v_t (wheel) and the road x_r; a smooth 0.2 m curb between
// t = 1 and t = 1.5. It starts at rest under gravity (steady-state initial equations).
model QuarterCar "Quarter car crossing a curb"
  constant Real pi = 3.141592653589793;
  parameter Real g = 9.81 "gravity (m/s2)";
  parameter Real m_t = 36.6 "wheel mass (kg)";
  parameter Real m_s = 267 "body mass (kg)";
  parameter Real beta_t = 200 "tyre damping (N.s/m)";
  parameter Real beta_s = 700 "suspension damping (N.s/m)";
  parameter Real k1_t = 193.915 "tyre stiffness, linear";
  parameter Real k3_t = 2.0e8 "tyre stiffness, cubic";
  parameter Real k1_s = 18.742 "suspension stiffness, linear";
  parameter Real k3_s = 2.0e5 "suspension stiffness, cubic";
  Real x_s "body position (m)";
  Real v_s(start = 0, fixed = true) "body velocity (m/s)";
  Real x_t "wheel position (m)";
  Real v_t(start = 0, fixed = true) "wheel velocity (m/s)";
  Real x_r(start = 0, fixed = true) "road height (m)";
  Real Fk_t "tyre spring force (N)";
  Real Fk_s "suspension spring force (N)";
equation
  der(x_s) = v_s;
  m_s*der(v_s) = -beta_s*(v_s - v_t) - Fk_s - m_s*g;
  der(x_t) = v_t;
  m_t*der(v_t) = -beta_t*(v_t - der(x_r)) - beta_s*(v_t - v_s) - Fk_t + Fk_s - m_t*g;
  Fk_t = k1_t*(x_t - x_r) + k3_t*(x_t - x_r)^3;
  Fk_s = k1_s*(x_s - x_t) + k3_s*(x_s - x_t)^3;
  der(x_r) = if noEvent(time < 1) then 0 else if noEvent(time > 1.5) then 0
    else 0.4*(1 - cos(4*pi*(time - 1)));
initial equation
  der(v_t) = 0;
  der(v_s) = 0;
  annotation(experiment(StopTime = 3));
end QuarterCar;
