package Mocca "mocca's component library: electrical, translational, rotational and thermal"
  annotation(Documentation(info = "Small components written in mocca's Modelica subset, so that examples can be composed with connect."));
end Mocca;
