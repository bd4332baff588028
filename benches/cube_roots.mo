// N states relaxing as der(x) = -cbrt(x) + 1, the cube root found by Newton iterations:
// `CubeRoots` in a `while` loop on the residual (a call kept as code), `CubeRootsUnrolled`
// in six `for` turns (inlined), the same arithmetic for starts in [1, 2].
package CubeRootBench
  function cubeRoot
    input Real a;
    output Real y;
  protected
    Real err;
  algorithm
    y := 1;
    err := y^3 - a;
    while abs(err) > 1e-12 loop
      y := y - err/(3*y^2);
      err := y^3 - a;
    end while;
  end cubeRoot;

  function cubeRootUnrolled
    input Real a;
    output Real y;
  algorithm
    y := 1;
    for k in 1:6 loop
      y := y - (y^3 - a)/(3*y^2);
    end for;
  end cubeRootUnrolled;

  model CubeRoots
    parameter Integer N = 1000;
    Real x[N](start = {1 + i/N for i in 1:N}, each fixed = true);
  equation
    for i in 1:N loop
      der(x[i]) = 1 - cubeRoot(x[i]);
    end for;
  end CubeRoots;

  model CubeRootsUnrolled
    parameter Integer N = 1000;
    Real x[N](start = {1 + i/N for i in 1:N}, each fixed = true);
  equation
    for i in 1:N loop
      der(x[i]) = 1 - cubeRootUnrolled(x[i]);
    end for;
  end CubeRootsUnrolled;
end CubeRootBench;
