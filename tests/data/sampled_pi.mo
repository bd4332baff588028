// A sampled PI controller (sample, pre, discrete Reals and an Integer) and a Boolean with
// hysteresis through elsewhen on state crossings.
model SampledPI
  parameter Real T = 0.05;
  Real x(start = 1, fixed = true);
  discrete Real u(start = 0);
  discrete Real integral(start = 0);
  Integer ticks(start = 0);
  Boolean low(start = false);
equation
  der(x) = -x + u;
  when sample(0, T) then
    integral = pre(integral) + T*(0.5 - x);
    u = 2*(0.5 - x) + integral;
    ticks = pre(ticks) + 1;
  end when;
  when x < 0.6 then
    low = true;
  elsewhen x > 0.7 then
    low = false;
  end when;
end SampledPI;
