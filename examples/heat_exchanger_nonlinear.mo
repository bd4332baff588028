// Counterflow gas-to-water heat exchanger with a temperature-dependent gas-side film
// coefficient: N volumes per stream and wall, 3N states. Stream a (hot gas: small heat
// capacity, 0.04 s transit) flows 1 → N; stream b (water: 5000 s transit, a slow coil) flows
// 1 → N in the opposite direction along the wall, so volume i of stream b faces wall volume
// N − i + 1. The gas-side conductance grows with the film temperature (the mean of gas and
// wall), as a gas's thermal conductivity does, so the Jacobian depends on the state:
//   Q_a,i = G_a/N·(1 + k_G·((T_a,i + T_w,i)/2 − T_ref))·(T_w,i − T_a,i).
// Time scales (mocca cycles, α = 0.5): stream a's h̄ ≈ 1.5/(N/τ_a + G_a/(c_a·M_a)), τ_a =
// M_a/w_a; the wall's and stream b's come from the a–wall 2-cycles (0.056 s) and from the long
// cycles along both streams (≈ sqrt(τ_a·τ_b)/N = 14/N s). Recommended: --step 0.001 --stop 2
// with --fast 'T_a[*]' for N = 100 … 10000 (N = 10: --step 0.01, also right up to N = 1000);
// explicit Euler diverges at those steps. One file for every size: `-p N=1000`.
model HeatExchangerNonlinear "Counterflow heat exchanger, temperature-dependent gas film"
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
  Real T_a[N](each start = 300) "stream a temperatures (K)";
  Real T_w[N](each start = 300) "wall temperatures (K)";
  Real T_b[N](each start = 300) "stream b temperatures (K)";
  Real Q_a[N] "heat flow from wall volume i to stream a volume i (W)";
equation
  for i in 1:N loop
    Q_a[i] = G_a/N*(1 + k_G*((T_a[i] + T_w[i])/2 - T_ref))*(T_w[i] - T_a[i]);
  end for;
  c_a*M_a/N*der(T_a[1]) = w_a*c_a*(T_a_in - T_a[1]) + Q_a[1];
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
end HeatExchangerNonlinear;
