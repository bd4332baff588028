within Mocca;
package Rotational "1-D rotational mechanics (flow positive into the component)"
  connector Flange "Rotational flange"
    Real phi "angle (rad)";
    flow Real tau "torque into the flange (N.m)";
  end Flange;

  partial model Compliant "Two flanges with a relative angle"
    Flange flange_a;
    Flange flange_b;
    Real phi_rel "relative angle (rad)";
    Real tau "torque between the flanges (N.m)";
  equation
    phi_rel = flange_b.phi - flange_a.phi;
    flange_b.tau = tau;
    flange_a.tau = -tau;
  end Compliant;

  model Inertia "Rotating inertia"
    parameter Real J = 1 "moment of inertia (kg.m2)";
    Flange flange_a;
    Flange flange_b;
    Real phi(start = 0) "angle (rad)";
    Real w(start = 0) "angular velocity (rad/s)";
  equation
    flange_a.phi = phi;
    flange_b.phi = phi;
    w = der(phi);
    J*der(w) = flange_a.tau + flange_b.tau;
  end Inertia;

  model Spring "Linear torsion spring"
    extends Compliant;
    parameter Real c = 1 "stiffness (N.m/rad)";
  equation
    tau = c*phi_rel;
  end Spring;

  model Damper "Linear torsion damper"
    extends Compliant;
    parameter Real d = 1 "damping (N.m.s/rad)";
  equation
    tau = d*der(phi_rel);
  end Damper;

  model Fixed "Fixed flange"
    parameter Real phi0 = 0 "angle (rad)";
    Flange flange;
  equation
    flange.phi = phi0;
  end Fixed;

  model ConstantTorque "Constant torque driving the flange"
    parameter Real tau_constant = 1 "torque (N.m)";
    Flange flange;
  equation
    flange.tau = -tau_constant;
  end ConstantTorque;

  model Torque "Torque given by an equation of the using model"
    Real tau_drive "torque (N.m)";
    Flange flange;
  equation
    flange.tau = -tau_drive;
  end Torque;
end Rotational;
