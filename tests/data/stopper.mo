// Every kind of event action: a `when` statement, edge and change of a Boolean computed from
// a relation, initial(), a warning-level assert, terminate on a time event and terminal().
model Stopper
  Real x(start = 0, fixed = true);
  Integer crossings(start = 0);
  Boolean up;
  discrete Real peak(start = 0);
  discrete Real first(start = 0);
  Integer changes(start = 0);
  discrete Real last(start = 0);
algorithm
  when x > 0.25 then
    crossings := pre(crossings) + 1;
  end when;
equation
  der(x) = cos(3*time) + 0.1*crossings;
  up = x > 0.2;
  when edge(up) then
    peak = x + pre(peak);
  end when;
  when change(up) then
    changes = pre(changes) + 1;
  end when;
  when initial() then
    first = x + 1;
  end when;
  when x > 0.3 then
    assert(x < 0.25, "x is past 0.25", AssertionLevel.warning);
  end when;
  when time >= 1.7 then
    terminate("done at 1.7");
  end when;
  when terminal() then
    last = 2*x;
  end when;
end Stopper;
