// An RC load switched by a 10 kHz pulse, written as the standard library's Pulse source is
// (a sample clock holds each period's start; the output is high for its first half): 10⁴ time
// events per simulated second. benches/events.sh runs it.
model PulseRC
  parameter Real period = 1e-4 "of the pulse (s)";
  parameter Real width = 0.5e-4 "high part of a period (s)";
  parameter Real R = 100 "load resistance (Ohm)";
  parameter Real C = 1e-6 "load capacitance (F)";
  discrete Real periodStart(start = 0) "start of the current period (s)";
  Real u "pulse (V)";
  Real v(start = 0, fixed = true) "capacitor voltage (V)";
equation
  when sample(0, period) then
    periodStart = time;
  end when;
  u = if time < periodStart + width then 1 else 0;
  R*C*der(v) = u - v;
end PulseRC;
