// A sampled PI speed controller at 1 kHz (Modelica 16 clocks) around a continuous plant: a
// motor's inertia with viscous friction and a pendulum-like load torque. The controller sees
// the speed error at each tick of Clock(0.001) (its left limit there), integrates it, and its
// torque is held between ticks.
model ClockedController "A 1 kHz clocked PI speed controller around a motor and its load"
  parameter Real J = 0.01 "Inertia of motor and load";
  parameter Real d = 0.05 "Viscous friction";
  parameter Real m = 0.5 "Amplitude of the load torque";
  parameter Real kp = 2 "Proportional gain";
  parameter Real Ti = 0.05 "Integral time";
  parameter Real w_set = 10 "Speed set point after the step at t = 1";
  Real phi(start = 0, fixed = true) "Angle";
  Real w(start = 0, fixed = true) "Speed";
  Real w_ref "Speed reference";
  Real tau "Motor torque, held between ticks";
  Real e "Sampled speed error";
  Real x(start = 0) "Controller's integral state";
  Real u "Controller output";
equation
  w_ref = if time < 1 then 0 else w_set*(1 + 0.2*sin(0.5*time));
  der(phi) = w;
  J*der(w) = tau - d*w - m*sin(phi);
  e = sample(w_ref - w, Clock(0.001));
  x = previous(x) + e*interval(e)/Ti;
  u = kp*(e + x);
  tau = hold(u);
  annotation(experiment(StopTime = 100));
end ClockedController;
