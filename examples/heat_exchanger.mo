// Counterflow heat exchanger (SPEC §13): N volumes per stream and wall, 3N states. Stream a
// flows 1 → N, stream b flows 1 → N in the opposite direction along the wall, so volume i of
// stream b faces wall volume N − i + 1. One file for every size: `-p N=30`.
model HeatExchanger "Counterflow heat exchanger"
  parameter Integer N = 10 "volumes per stream and wall";
  parameter Real M_a = 0.1 "mass of stream a in the exchanger (kg)";
  parameter Real M_b = 1 "mass of stream b in the exchanger (kg)";
  parameter Real M_w = 10 "wall mass (kg)";
  parameter Real c_a = 4200 "specific heat of stream a (J/(kg.K))";
  parameter Real c_b = 3500 "specific heat of stream b (J/(kg.K))";
  parameter Real c_w = 3500 "specific heat of the wall (J/(kg.K))";
  parameter Real G_a = 8000 "conductance stream a to wall (W/K)";
  parameter Real G_b = 8000 "conductance wall to stream b (W/K)";
  parameter Real w_a = 1 "mass flow of stream a (kg/s)";
  parameter Real w_b = 1 "mass flow of stream b (kg/s)";
  parameter Real T_a_in = 323.15 "inlet temperature of stream a (K)";
  parameter Real T_b_in = 288.15 "inlet temperature of stream b (K)";
  Real T_a[N](each start = 300) "stream a temperatures (K)";
  Real T_w[N](each start = 300) "wall temperatures (K)";
  Real T_b[N](each start = 300) "stream b temperatures (K)";
equation
  c_a*M_a/N*der(T_a[1]) = w_a*c_a*(T_a_in - T_a[1]) + G_a/N*(T_w[1] - T_a[1]);
  for i in 2:N loop
    c_a*M_a/N*der(T_a[i]) = w_a*c_a*(T_a[i - 1] - T_a[i]) + G_a/N*(T_w[i] - T_a[i]);
  end for;
  for i in 1:N loop
    c_w*M_w/N*der(T_w[i]) = -G_a/N*(T_w[i] - T_a[i]) - G_b/N*(T_w[i] - T_b[N - i + 1]);
  end for;
  c_b*M_b/N*der(T_b[1]) = w_b*c_b*(T_b_in - T_b[1]) + G_b/N*(T_w[N] - T_b[1]);
  for i in 2:N loop
    c_b*M_b/N*der(T_b[i]) = w_b*c_b*(T_b[i - 1] - T_b[i]) + G_b/N*(T_w[N - i + 1] - T_b[i]);
  end for;
end HeatExchanger;
