"""An RC chain of `stages` resistor–capacitor stages joined by `connect`, as mocca::generate
writes them for the scaling benchmarks (9·stages + 6 equations, `stages` states):

    python3 benches/rc_chain.py 1111 > rc_chain.mo
"""
import sys

n = int(sys.argv[1])
print("""connector Pin Real v; flow Real i; end Pin;
model Resistor Pin p, n; parameter Real R = 1; equation p.v - n.v = R*p.i; p.i + n.i = 0; end Resistor;
model Capacitor Pin p, n; Real v(start = 0); parameter Real C = 1;
equation v = p.v - n.v; C*der(v) = p.i; p.i + n.i = 0; end Capacitor;
model Ground Pin p; equation p.v = 0; end Ground;
model Source Pin p, n; equation p.v - n.v = 1; p.i + n.i = 0; end Source;
model RCChain
  Source source;
  Ground ground;""")
for k in range(1, n + 1):
    print(f"  Resistor R{k}; Capacitor C{k};")
print("equation\n  connect(source.p, R1.p);\n  connect(source.n, ground.p);")
for k in range(1, n + 1):
    print(f"  connect(R{k}.n, C{k}.p);\n  connect(C{k}.n, ground.p);")
    if k < n:
        print(f"  connect(C{k}.p, R{k + 1}.p);")
print("end RCChain;")
