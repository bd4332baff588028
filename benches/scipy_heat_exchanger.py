#!/usr/bin/env python3
"""SciPy's BDF on the SPEC §13 counterflow heat exchanger, the reference for mocca's speed.

    pip install scipy numpy
    python3 benches/scipy_heat_exchanger.py [N ...] [--rtol 1e-6] [--atol 1e-6] [--stop 100]

The model is examples/heat_exchanger.mo written out by hand (same parameters, all
temperatures starting at 300 K), integrated by solve_ivp(method="BDF") with its analytic
sparse Jacobian. Prints one JSON line per N: wall seconds, steps, f and Jacobian evaluations,
and a few final temperatures to compare with `mocca simulate --method bdf`.
"""
import argparse
import json
import time

import numpy as np
from scipy.integrate import solve_ivp
from scipy.sparse import lil_matrix

M_A, M_B, M_W = 0.1, 1.0, 10.0
C_A, C_B, C_W = 4200.0, 3500.0, 3500.0
G_A, G_B = 8000.0, 8000.0
W_A, W_B = 1.0, 1.0
T_A_IN, T_B_IN = 323.15, 288.15


def model(n):
    """Right-hand side and Jacobian; states are [T_a (n), T_w (n), T_b (n)]."""
    ca, cw, cb = C_A * M_A / n, C_W * M_W / n, C_B * M_B / n
    ga, gb = G_A / n, G_B / n
    rev = np.arange(n)[::-1]  # volume i of stream b faces wall volume n - i + 1

    def rhs(_t, x):
        ta, tw, tb = x[:n], x[n:2 * n], x[2 * n:]
        ta_up = np.concatenate(([T_A_IN], ta[:-1]))
        tb_up = np.concatenate(([T_B_IN], tb[:-1]))
        dta = (W_A * C_A * (ta_up - ta) + ga * (tw - ta)) / ca
        dtw = (-ga * (tw - ta) - gb * (tw - tb[rev])) / cw
        dtb = (W_B * C_B * (tb_up - tb) + gb * (tw[rev] - tb)) / cb
        return np.concatenate((dta, dtw, dtb))

    jac = lil_matrix((3 * n, 3 * n))
    for i in range(n):
        a, w, b = i, n + i, 2 * n + i
        jac[a, a] = (-W_A * C_A - ga) / ca
        jac[a, w] = ga / ca
        if i > 0:
            jac[a, a - 1] = W_A * C_A / ca
        jac[w, w] = (-ga - gb) / cw
        jac[w, a] = ga / cw
        jac[w, 2 * n + rev[i]] = gb / cw
        jac[b, b] = (-W_B * C_B - gb) / cb
        jac[b, n + rev[i]] = gb / cb
        if i > 0:
            jac[b, b - 1] = W_B * C_B / cb
    return rhs, jac.tocsc()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("sizes", nargs="*", type=int, default=[30, 300, 3000])
    parser.add_argument("--rtol", type=float, default=1e-6)
    parser.add_argument("--atol", type=float, default=1e-6)
    parser.add_argument("--stop", type=float, default=100.0)
    args = parser.parse_args()
    for n in args.sizes:
        rhs, jac = model(n)
        x0 = np.full(3 * n, 300.0)
        start = time.perf_counter()
        sol = solve_ivp(rhs, (0.0, args.stop), x0, method="BDF", jac=jac,
                        rtol=args.rtol, atol=args.atol, t_eval=[args.stop])
        wall = time.perf_counter() - start
        x = sol.y[:, -1]
        print(json.dumps({
            "N": n, "states": 3 * n, "rtol": args.rtol, "atol": args.atol,
            "stop": args.stop, "wall_s": wall,
            "f_evals": int(sol.nfev), "jac_evals": int(sol.njev), "lu": int(sol.nlu),
            "T_a[N]": x[n - 1], "T_w[1]": x[n], "T_b[N]": x[3 * n - 1],
            "status": sol.message,
        }))


if __name__ == "__main__":
    main()
