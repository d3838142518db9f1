#!/usr/bin/env python3
"""Direct vs planned transfers (issue #7): prints the markdown tables of docs/results.md.

Simulated on dgx1-v100 (Llama-7B-dims layer and MoE layer, several placers, and `search` scoring its
candidates with each transfer mode; cp and heft placed with their per-edge EST and with the
planned-aware EST of `doppler place --transfers planned`), measured on the actor runtime: real kernels on cpu:8 (smaller
dims) and emulated V100s on dgx1-v100 (the `emulate` backend holds kernels and link reservations for
their modeled time).

    scripts/transfer_results.py [--doppler build/release/cli/doppler] [--repeat 5] [--skip-measured]
                                [--joint-only]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile


def sh(args):
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(args)}\n{r.stderr}")
    return r.stdout


def link_stats(j):
    b = [l["bytes"] for l in j["links"]]
    return max(b) / 1e9, sum(b) / 1e9


def place(d, g, method, transfers, out, extra=()):
    """Places with `doppler place`; returns (placer seconds, op id -> device)."""
    text = sh([d, "place", "--graph", g, "--cluster", "dgx1-v100", "--method", method, "--transfers", transfers,
               *extra, "-o", out])
    took = float(re.search(r"placed \d+ ops in ([0-9.eE+-]+) s", text).group(1))
    with open(out) as f:
        return took, json.load(f)["assignment"]


def simulate(d, g, p, transfers):
    return json.loads(sh([d, "simulate", "--graph", g, "--cluster", "dgx1-v100", "--placement", p,
                          "--transfers", transfers, "--json"]))


def joint_table(d, tmp, files, names):
    """cp/heft placed with the per-edge EST vs the planned-aware EST, both run with planned transfers."""
    print("\n### Joint placement: cp/heft EST per-edge vs planned-aware, run with planned transfers (dgx1-v100)\n")
    print("| graph | placer | per-edge EST: planned ms | planned-aware EST: planned ms | aware / per-edge | "
          "ops moved | placer ms (per-edge → aware) |")
    print("|---|---|---:|---:|---:|---:|---|")
    for name in names:
        g = files[(name, "big")]
        for method in ("cp", "heft"):
            res = {}
            for t in ("direct", "planned"):
                p = os.path.join(tmp, f"j-{name}-{method}-{t}.json")
                took, assign = place(d, g, method, t, p)
                res[t] = (took, assign, simulate(d, g, p, "planned")["makespan_s"])
            (td, ad, md), (tp, ap, mp) = res["direct"], res["planned"]
            moved = sum(1 for k in ad if ad[k] != ap[k])
            print(f"| {name} | {method} | {md*1e3:.2f} | {mp*1e3:.2f} | {mp/md:.3f} | {moved} / {len(ad)} | "
                  f"{td*1e3:.2f} → {tp*1e3:.2f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--doppler", default="build/release/cli/doppler")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--skip-measured", action="store_true")
    ap.add_argument("--joint-only", action="store_true", help="only the cp/heft joint-placement table")
    a = ap.parse_args()
    d = a.doppler
    tmp = tempfile.mkdtemp(prefix="doppler_transfers_")
    big = {
        "llama-layer": ["--preset", "llama-7b", "--shards", "8"],
        "moe-layer": ["--preset", "llama-7b", "--experts", "8", "--shards", "8"],
    }
    small = {
        "llama-layer": ["--dim", "512", "--heads", "8", "--ffn", "1376", "--seq", "256", "--shards", "8"],
        "moe-layer": ["--dim", "512", "--heads", "8", "--ffn", "1376", "--seq", "256", "--experts", "8", "--shards", "8"],
    }
    files = {}
    for size, table in (("big", big), ("small", small)):
        for name, args in table.items():
            f = os.path.join(tmp, f"{name}-{size}.json")
            sh([d, "workload", name, *args, "-o", f, "-q"])
            files[(name, size)] = f

    if a.joint_only:
        joint_table(d, tmp, files, big)
        return
    print("### Simulated: dgx1-v100, Llama-7B dims (seq 2048), 8 shards\n")
    print("| graph | placement | direct ms | planned ms | planned / direct | busiest link GB (direct → planned) | all links GB (direct → planned) |")
    print("|---|---|---:|---:|---:|---|---|")
    for name in big:
        g = files[(name, "big")]
        for method in ("cp", "heft", "round-robin", "search"):
            res = {}
            for t in ("direct", "planned"):
                p = os.path.join(tmp, f"p-{name}-{method}-{t}.json")
                extra = ["--budget", "300"] if method == "search" else []
                # search scores candidates with the transfer mode it will run with (joint placement)
                sh([d, "place", "--graph", g, "--cluster", "dgx1-v100", "--method", method, "--transfers", t, *extra, "-o", p])
                res[t] = json.loads(sh([d, "simulate", "--graph", g, "--cluster", "dgx1-v100", "--placement", p,
                                        "--transfers", t, "--json"]))
                if method != "search":  # placed with --transfers direct (cp/heft: per-edge EST; see joint_table)
                    res["planned"] = json.loads(sh([d, "simulate", "--graph", g, "--cluster", "dgx1-v100", "--placement", p,
                                                    "--transfers", "planned", "--json"]))
                    break
            md, mp = res["direct"]["makespan_s"], res["planned"]["makespan_s"]
            bd, td = link_stats(res["direct"])
            bp, tp = link_stats(res["planned"])
            label = method + (" (scored with its transfer mode)" if method == "search" else "")
            print(f"| {name} | {label} | {md*1e3:.2f} | {mp*1e3:.2f} | {mp/md:.3f} | {bd:.2f} → {bp:.2f} | {td:.2f} → {tp:.2f} |")
    joint_table(d, tmp, files, big)

    if a.skip_measured:
        return
    print(f"\n### Measured on the actor runtime (heft placement, {a.repeat} runs after 1 warm-up; mean ± std)\n")
    print("| graph | cluster, backend | direct ms | planned ms | planned / direct | tensors by plan | simulated direct → planned ms |")
    print("|---|---|---:|---:|---:|---:|---|")
    for cluster, backend, size in (("cpu:8", "cpu", "small"), ("dgx1-v100", "emulate", "big")):
        for name in big:
            g = files[(name, size)]
            out = {}
            for t in ("direct", "planned"):
                out[t] = json.loads(sh([d, "run", "--graph", g, "--cluster", cluster, "--backend", backend, "--method", "heft",
                                        "--repeat", str(a.repeat), "--transfers", t, "--json"]))
            od, op = out["direct"], out["planned"]
            print(f"| {name} | {cluster}, {backend} | {od['makespan_s']*1e3:.2f} ± {od['makespan_std_s']*1e3:.2f} | "
                  f"{op['makespan_s']*1e3:.2f} ± {op['makespan_std_s']*1e3:.2f} | {op['makespan_s']/od['makespan_s']:.3f} | "
                  f"{op['planned_tensors']} | {od['simulated_s']*1e3:.2f} → {op['simulated_s']*1e3:.2f} |")


if __name__ == "__main__":
    main()
