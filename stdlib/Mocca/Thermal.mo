within Mocca;
package Thermal "Lumped heat transfer (heat flow positive into the component)"
  connector HeatPort "Thermal port"
    Real T "temperature (K)";
    flow Real Q_flow "heat flow into the port (W)";
  end HeatPort;

  model HeatCapacitor "Lumped heat capacity"
    parameter Real C = 1 "heat capacity (J/K)";
    HeatPort port;
    Real T(start = 293.15) "temperature (K)";
  equation
    T = port.T;
    C*der(T) = port.Q_flow;
  end HeatCapacitor;

  model ThermalConductor "Lumped conduction"
    parameter Real G = 1 "thermal conductance (W/K)";
    HeatPort port_a;
    HeatPort port_b;
    Real Q_flow "heat flow from a to b (W)";
  equation
    Q_flow = G*(port_a.T - port_b.T);
    port_a.Q_flow = Q_flow;
    port_b.Q_flow = -Q_flow;
  end ThermalConductor;

  model FixedTemperature "Fixed temperature boundary"
    parameter Real T = 293.15 "temperature (K)";
    HeatPort port;
  equation
    port.T = T;
  end FixedTemperature;

  model FixedHeatFlow "Fixed heat flow into the connected component"
    parameter Real Q_flow = 0 "heat flow (W)";
    HeatPort port;
  equation
    port.Q_flow = -Q_flow;
  end FixedHeatFlow;
end Thermal;
