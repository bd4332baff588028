// The nonlinear counterflow heat exchanger (heat_exchanger_nonlinear.mo) with a relay: an
// electric heater of P_heat (+10 K on the gas) in the gas inlet volume, switched on when the
// wall there, T_w[1], falls below T_set − band and off when it rises above T_set + band
// (hysteresis through `pre`, no `when`). The wall starts at the set point; heated it rises
// at about 2.4 K/s, unheated it falls at about 5.6 K/s, so the relay switches every few
// hundredths of a second: a state event every few steps at --step 0.01. It is the model of
// the emitted solver's event benchmarks (BENCHMARKS.md); `-p N=1000` as for the others.
model HeatExchangerRelay "Counterflow heat exchanger with a relay-controlled heater on the gas inlet"
  parameter Integer N = 10 "volumes per stream and wall";
  parameter Real M_a = 0.02 "mass of stream a (gas) in the exchanger (kg)";
  parameter Real M_b = 100 "mass of stream b (water) in the exchanger (kg)";
  parameter Real M_w = 10 "wall mass (kg)";
  parameter Real c_a = 1005 "specific heat of stream a (J/(kg.K))";
  parameter Real c_b = 4200 "specific heat of stream b (J/(kg.K))";
  parameter Real c_w = 500 "specific heat of the wall (J/(kg.K))";
  parameter Real G_a = 4000 "conductance stream a to wall at the film temperature T_ref (W/K)";
  parameter Real k_G = 0.02 "relative growth of G_a with the film temperature (1/K)";
  parameter Real T_ref = 300 "film temperature at which the conductance of stream a is G_a (K)";
  parameter Real G_b = 2000 "conductance wall to stream b (W/K)";
  parameter Real w_a = 0.5 "mass flow of stream a (kg/s)";
  parameter Real w_b = 0.02 "mass flow of stream b (kg/s)";
  parameter Real T_a_in = 323.15 "inlet temperature of stream a (K)";
  parameter Real T_b_in = 288.15 "inlet temperature of stream b (K)";
  parameter Real P_heat = 15000 "heater power (W)";
  parameter Real T_set = 330 "set point of the wall at the gas inlet (K)";
  parameter Real band = 0.2 "half the relay's hysteresis band (K)";
  Boolean heating(start = true, fixed = true) "the heater is on";
  Real T_a[N](each start = 300) "stream a temperatures (K)";
  Real T_w[N](each start = T_set) "wall temperatures (K)";
  Real T_b[N](each start = 300) "stream b temperatures (K)";
  Real Q_a[N] "heat flow from wall volume i to stream a volume i (W)";
equation
  heating = if pre(heating) then T_w[1] < T_set + band else T_w[1] < T_set - band;
  for i in 1:N loop
    Q_a[i] = G_a/N*(1 + k_G*((T_a[i] + T_w[i])/2 - T_ref))*(T_w[i] - T_a[i]);
  end for;
  c_a*M_a/N*der(T_a[1]) = w_a*c_a*(T_a_in - T_a[1]) + Q_a[1] + (if heating then P_heat else 0);
  for i in 2:N loop
    c_a*M_a/N*der(T_a[i]) = w_a*c_a*(T_a[i - 1] - T_a[i]) + Q_a[i];
  end for;
  for i in 1:N loop
    c_w*M_w/N*der(T_w[i]) = -Q_a[i] - G_b/N*(T_w[i] - T_b[N - i + 1]);
  end for;
  c_b*M_b/N*der(T_b[1]) = w_b*c_b*(T_b_in - T_b[1]) + G_b/N*(T_w[N] - T_b[1]);
  for i in 2:N loop
    c_b*M_b/N*der(T_b[i]) = w_b*c_b*(T_b[i - 1] - T_b[i]) + G_b/N*(T_w[N - i + 1] - T_b[i]);
  end for;
end HeatExchangerRelay;
