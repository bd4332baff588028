// Half-car suspension, pitch and bounce (SPEC §13), flat. States z, v_z, theta, w_theta.
// The SPEC's spring and damper forces carry no road term; here the 0.15 m road step at t = 2
// enters as a displacement under both axles (front and rear), in the spring terms only (a step
// has no finite velocity, so the dampers see none of it).
model HalfCar "Bounce and pitch of a half car crossing a road step"
  parameter Real M = 1000 "body mass (kg)";
  parameter Real J = 2100 "pitch inertia (kg.m2)";
  parameter Real k_f = 28000 "front spring (N/m)";
  parameter Real k_r = 21000 "rear spring (N/m)";
  parameter Real d_f = 3500 "front damper (N.s/m)";
  parameter Real d_r = 3500 "rear damper (N.s/m)";
  parameter Real L_f = 0.9 "front axle to centre of mass (m)";
  parameter Real L_r = 1.2 "rear axle to centre of mass (m)";
  parameter Real g = 9.81 "gravity (m/s2)";
  parameter Real tau_a = 500 "applied pitch torque (N.m)";
  parameter Real h = 0.15 "road step height (m)";
  parameter Real t_step = 2 "road step time (s)";
  Real z(start = 0) "bounce (m)";
  Real v_z(start = 0) "bounce velocity (m/s)";
  Real theta(start = 0) "pitch (rad)";
  Real w_theta(start = 0) "pitch rate (rad/s)";
  Real z_road "road height (m)";
  Real F_f "front axle force (N)";
  Real F_r "rear axle force (N)";
equation
  z_road = if time >= t_step then h else 0;
  F_f = 2*k_f*(L_f*theta - z + z_road) + 2*d_f*(L_f*w_theta - v_z);
  F_r = -2*k_r*(L_r*theta + z - z_road) - 2*d_r*(L_r*w_theta + v_z);
  der(z) = v_z;
  M*der(v_z) = F_f + F_r - M*g;
  der(theta) = w_theta;
  J*der(w_theta) = -L_f*F_f + L_r*F_r + tau_a;
end HalfCar;
