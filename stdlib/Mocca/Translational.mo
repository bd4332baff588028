within Mocca;
package Translational "1-D mechanics (flow positive into the component)"
  connector Flange "Translational flange"
    Real s "position (m)";
    flow Real f "force into the flange (N)";
  end Flange;

  partial model Compliant "Two flanges with a relative displacement"
    Flange flange_a;
    Flange flange_b;
    Real s_rel "relative displacement (m)";
    Real f "force between the flanges (N)";
  equation
    s_rel = flange_b.s - flange_a.s;
    flange_b.f = f;
    flange_a.f = -f;
  end Compliant;

  model Mass "Sliding mass"
    parameter Real m = 1 "mass (kg)";
    Flange flange_a;
    Flange flange_b;
    Real s(start = 0) "position (m)";
    Real v(start = 0) "velocity (m/s)";
  equation
    flange_a.s = s;
    flange_b.s = s;
    v = der(s);
    m*der(v) = flange_a.f + flange_b.f;
  end Mass;

  model Spring "Linear spring"
    extends Compliant;
    parameter Real c = 1 "stiffness (N/m)";
    parameter Real s_rel0 = 0 "unstretched length (m)";
  equation
    f = c*(s_rel - s_rel0);
  end Spring;

  model Damper "Linear damper"
    extends Compliant;
    parameter Real d = 1 "damping (N.s/m)";
  equation
    f = d*der(s_rel);
  end Damper;

  model Rod "Rigid rod: the flanges a fixed distance apart"
    extends Compliant;
    parameter Real L = 1 "length (m)";
  equation
    s_rel = L;
  end Rod;

  model Fixed "Fixed flange"
    parameter Real s0 = 0 "position (m)";
    Flange flange;
  equation
    flange.s = s0;
  end Fixed;

  model ConstantForce "Constant force pushing the flange"
    parameter Real f_constant = 1 "force (N)";
    Flange flange;
  equation
    flange.f = -f_constant;
  end ConstantForce;

  model Force "Force given by an equation of the using model"
    Real f "force (N)";
    Flange flange;
  equation
    flange.f = -f;
  end Force;
end Translational;
