within Mocca;
package Electrical "Analog electrical components (flow positive into the component)"
  type Voltage = Real(unit = "V");
  type Current = Real(unit = "A");

  connector Pin "Electrical pin"
    Voltage v "potential";
    flow Current i "current into the pin";
  end Pin;

  partial model OnePort "Two pins, one current through them"
    Pin p "positive pin";
    Pin n "negative pin";
    Voltage v "voltage drop p.v - n.v";
    Current i "current from p to n";
  equation
    v = p.v - n.v;
    0 = p.i + n.i;
    i = p.i;
  end OnePort;

  model Resistor "Ideal resistor"
    extends OnePort;
    parameter Real R = 1 "resistance (Ohm)";
  equation
    v = R*i;
  end Resistor;

  model Capacitor "Ideal capacitor"
    extends OnePort(v(start = 0));
    parameter Real C = 1 "capacitance (F)";
  equation
    C*der(v) = i;
  end Capacitor;

  model Inductor "Ideal inductor"
    extends OnePort(i(start = 0));
    parameter Real L = 1 "inductance (H)";
  equation
    L*der(i) = v;
  end Inductor;

  model Ground "Zero potential"
    Pin p;
  equation
    p.v = 0;
  end Ground;

  model ConstantVoltage "Constant voltage source"
    extends OnePort;
    parameter Real V = 1 "voltage (V)";
  equation
    v = V;
  end ConstantVoltage;

  model StepVoltage "Voltage step at startTime"
    extends OnePort;
    parameter Real V = 1 "height of the step (V)";
    parameter Real offset = 0 "voltage before the step (V)";
    parameter Real startTime = 0 "time of the step (s)";
  equation
    v = offset + (if time < startTime then 0 else V);
  end StepVoltage;

  model SineVoltage "Sinusoidal voltage source"
    extends OnePort;
    parameter Real V = 1 "amplitude (V)";
    parameter Real f = 1 "frequency (Hz)";
    parameter Real phase = 0 "phase (rad)";
    parameter Real offset = 0 "offset (V)";
  equation
    v = offset + V*sin(2*3.141592653589793*f*time + phase);
  end SineVoltage;

  model ConstantCurrent "Constant current source"
    extends OnePort;
    parameter Real I = 1 "current (A)";
  equation
    i = I;
  end ConstantCurrent;
end Electrical;
