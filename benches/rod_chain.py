#!/usr/bin/env python3
"""A chain of N masses joined by N - 1 rigid rods (Mocca.Translational), pushed at the first:
index 3, one constraint per rod. Writes the model to stdout.

    python3 benches/rod_chain.py 10000 > target/rod_chain.mo
"""
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
print(f"""model RodChain
  Mocca.Translational.ConstantForce push(f_constant = 6);
  Mocca.Translational.Mass mass[{n}](each m = 1);
  Mocca.Translational.Rod rod[{n - 1}](each L = 0.5);
initial equation
  mass[1].s = 0;
  mass[1].v = 0;
equation
  connect(push.flange, mass[1].flange_a);
  for i in 1:{n - 1} loop
    connect(mass[i].flange_b, rod[i].flange_a);
    connect(rod[i].flange_b, mass[i + 1].flange_a);
  end for;
end RodChain;""")
