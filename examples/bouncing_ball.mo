// A ball dropped from 1 m onto a floor that returns 80 % of its speed: a state event at each
// impact (when h < 0), a reinit of the speed and an Integer counting the bounces.
// mocca simulate examples/bouncing_ball.mo --method bdf --stop 3 --step 0.01 --vars h,v,bounces
model BouncingBall
  parameter Real g = 9.81 "gravity";
  parameter Real e = 0.8 "coefficient of restitution";
  Real h(start = 1, fixed = true) "height above the floor";
  Real v(start = 0, fixed = true) "upward speed";
  Integer bounces(start = 0);
equation
  der(h) = v;
  der(v) = -g;
  when h < 0 then
    reinit(v, -e*pre(v));
    bounces = pre(bounces) + 1;
  end when;
end BouncingBall;
