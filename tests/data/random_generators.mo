// The generators of Modelica.Math.Random, as Modelica.Math.Random.Examples.GenerateRandomNumbers
// draws from them (its impure generator left out).
model Generate
  import Modelica.Math.Random.Generators;
  parameter Real samplePeriod = 0.05;
  parameter Integer globalSeed = 30020;
  parameter Integer localSeed = 614657;
  output Real r64;
  output Real r128;
  output Real r1024;
  Real drawn(start = 0, fixed = true) "the draws integrated: a state that shows them";
protected
  discrete Integer state64[2](each start = 0, each fixed = true);
  discrete Integer state128[4](each start = 0, each fixed = true);
  discrete Integer state1024[33](each start = 0, each fixed = true);
equation
  der(drawn) = r64 + r128 + r1024;
algorithm
  when initial() then
    state64 := Generators.Xorshift64star.initialState(localSeed, globalSeed);
    state128 := Generators.Xorshift128plus.initialState(localSeed, globalSeed);
    state1024 := Generators.Xorshift1024star.initialState(localSeed, globalSeed);
    r64 := 0;
    r128 := 0;
    r1024 := 0;
  elsewhen sample(0, samplePeriod) then
    (r64, state64) := Generators.Xorshift64star.random(pre(state64));
    (r128, state128) := Generators.Xorshift128plus.random(pre(state128));
    (r1024, state1024) := Generators.Xorshift1024star.random(pre(state1024));
  end when;
end Generate;
