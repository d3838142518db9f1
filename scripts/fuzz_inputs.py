#!/usr/bin/env python3
"""Mutation fuzzing of doppler's file readers through the `doppler` command.

Writes one valid file of each format doppler reads (a graph, a cluster, a placement, a cost table, a
demand, a schedule, a paper .txt graph), then N times: picks a format, mutates its file (JSON-aware:
a value replaced by another type, a huge, negative, fractional or non-finite number, a key dropped,
renamed or added, an array element dropped or repeated; or byte-level: truncation, a flipped,
inserted or NUL byte) and runs the commands that read that format on it (a graph also through
`doppler run` on real CPU kernels). doppler must answer every
mutation with exit 0, 1 or 2 and, for 1 and 2, a `doppler:` line on stderr, within the time limit,
with no sanitizer report: a crash (signal), a hang, another exit code, a silent failure or an
ASan/UBSan/TSan report counts as a finding. Findings are written (input, command, output) under
--out and the exit status is 1 when there is any.

  scripts/fuzz_inputs.py [--doppler build/release/cli/doppler] [-n 500] [--seed 0] [--out DIR]
                         [--timeout 30] [--formats graph,cluster,...]

Built with the sanitize preset (build/sanitize/cli/doppler) memory errors are caught too. The run is
deterministic for a seed: the same mutations in the same order.
"""
import argparse
import copy
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

FORMATS = ["graph", "cluster", "placement", "costs", "demand", "schedule", "paper"]
# Opt-in (--formats): they need LibTorch (doppler hands train / place-learned to doppler-learn) and
# each command loads it, so they are slower.
LEARNER_FORMATS = ["curriculum", "policy"]
TINY_TRAIN = ["train", "--graph", "graph.json", "--cluster", "p100x4", "--il-episodes", "2", "--rl-episodes", "2",
              "--hidden", "8", "--steps", "1"]

SPECIAL_NUMBERS = ["0", "-1", "1e308", "-1e308", "1e400", "-1e400", "4294967296", "18446744073709551616",
                   "9007199254740993", "0.5", "-0.0", "1e-320", "NaN", "Infinity", "2147483648"]
SPECIAL_VALUES = [None, True, False, "", "x", "gpu0", [], {}, [1, 2], {"a": 1}, "\u00e9\u0000",
                  "a" * 10000, -1, 0, 1, 0.5, 1e308, -1e308, 2 ** 64, 2 ** 63, 2 ** 53 + 1]


def sh(cmd, cwd, timeout):
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, errors="replace", timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        return None, out, err


def seeds(doppler, work, timeout, fmts):
    """Valid files of every format, written by doppler itself where it can."""
    def must(cmd):
        rc, out, err = sh([doppler] + cmd, work, timeout)
        if rc != 0:
            sys.exit(f"fuzz_inputs.py: seeding failed: doppler {' '.join(cmd)}\n{err}")
        return out

    must(["workload", "llama-block", "--dim", "64", "--heads", "4", "--seq", "16", "-o", "graph.json"])
    must(["cluster", "p100x4", "-o", "cluster.json"])
    must(["place", "--graph", "graph.json", "--cluster", "cluster.json", "--method", "heft", "-o", "placement.json"])
    here = os.path.dirname(os.path.abspath(__file__))
    shutil.copy(os.path.join(here, "..", "examples", "costs", "p100-hbm.json"), os.path.join(work, "costs.json"))
    with open(os.path.join(work, "demand.json"), "w") as f:
        json.dump({"format": "doppler-demand/1", "name": "two-chunks", "chunk_bytes": 1048576,
                   "chunks": [{"id": 0, "source": "gpu0", "destinations": ["gpu1", "gpu2", "gpu3"]},
                              {"id": 1, "source": "gpu3", "destinations": ["gpu0"]}]}, f)
    must(["plan-comm", "--cluster", "p100x4", "--demand", "demand.json", "--method", "greedy", "-o", "schedule.json"])
    shutil.copy(os.path.join(here, "..", "workloads", "doppler-paper", "chain_mm_112nodes.txt"),
                os.path.join(work, "paper.txt"))
    files = {"graph": "graph.json", "cluster": "cluster.json", "placement": "placement.json", "costs": "costs.json",
             "demand": "demand.json", "schedule": "schedule.json", "paper": "paper.txt"}
    if "curriculum" in fmts:  # every section, small numbers (flags bound the episodes anyway)
        with open(os.path.join(work, "curriculum.json"), "w") as f:
            json.dump({"format": "doppler-curriculum/1",
                       "phases": {"il_episodes": 2, "rl_episodes": 2, "batch": 2},
                       "imitation": {"teacher": "cp", "lr": 0.001, "epsilon": 0.1},
                       "reinforce": {"lr": 0.0005, "lr_final": 0.1, "temperature": 0.7, "entropy": 0.01},
                       "policy": {"hidden": 8, "steps": 1}}, f)
        files["curriculum"] = "curriculum.json"
    if "policy" in fmts:
        must(TINY_TRAIN + ["-o", "policy.pt"])
        files["policy"] = "policy.pt"
    return files


def commands(fmt, f):
    """The commands that read a file of format `fmt` at path f (run in the work directory)."""
    sim = ["simulate", "--graph", "graph.json", "--cluster", "cluster.json", "--json"]
    return {
        "graph": [["validate", f], ["simulate", "--graph", f, "--cluster", "cluster.json", "--json"],
                  ["place", "--graph", f, "--cluster", "cluster.json", "--method", "search", "--budget", "20", "-o", "-"],
                  # real kernels on the actor runtime: what validates must also execute, or fail cleanly
                  ["run", "--graph", f, "--cluster", "cpu:2", "--backend", "cpu", "--warmup", "0", "--repeat", "1",
                   "--timeout", "60"]],
        "cluster": [["validate", f], ["simulate", "--graph", "graph.json", "--cluster", f, "--json"],
                    ["plan-comm", "--cluster", f, "--method", "greedy"]],
        "placement": [["validate", f, "--graph", "graph.json", "--cluster", "cluster.json"], sim + ["--placement", f],
                      ["place", "--graph", "graph.json", "--cluster", "cluster.json", "--method", "search",
                       "--budget", "20", "--start", f, "-o", "-"]],
        "costs": [["validate", f], sim + ["--costs", f]],
        "demand": [["validate", f, "--cluster", "p100x4"],
                   ["plan-comm", "--cluster", "p100x4", "--demand", f, "--method", "greedy"],
                   ["plan-comm", "--cluster", "p100x4", "--demand", f, "--method", "lp", "--time-limit", "5"]],
        "schedule": [["validate", f, "--cluster", "p100x4"],
                     ["check-schedule", f, "--cluster", "p100x4", "--demand", "demand.json"]],
        "paper": [["validate", f], ["simulate", "--graph", f, "--cluster", "doppler-paper:4", "--model", "simple"]],
        "curriculum": [TINY_TRAIN + ["--config", f, "-o", "out.pt"]],
        "policy": [["place-learned", "--graph", "graph.json", "--cluster", "p100x4", "--policy", f, "-o", "-"],
                   TINY_TRAIN + ["--init", f, "-o", "out.pt"]],
    }[fmt]


def paths(node, prefix=()):
    """Every (path, value) in a JSON tree, the root included."""
    yield prefix, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from paths(v, prefix + (i,))


def at(root, path):
    for p in path:
        root = root[p]
    return root


def mutate_json(text, rng):
    doc = json.loads(text)
    nodes = list(paths(doc))
    path, value = rng.choice(nodes[1:] if len(nodes) > 1 else nodes)
    parent = at(doc, path[:-1]) if path else None
    key = path[-1] if path else None
    what = rng.randrange(8)
    raw = None  # a number JSON's dump cannot write (1e400, NaN): substituted as text
    if parent is None:
        return json.dumps(rng.choice(SPECIAL_VALUES)), "root replaced"
    if what == 1:
        raw = rng.choice(SPECIAL_NUMBERS)
        parent[key] = "@@RAW@@"
        desc = f"{path} = {raw}"
    elif what == 2 and isinstance(parent, dict):
        del parent[key]
        desc = f"{path} dropped"
    elif what == 3 and isinstance(parent, dict):
        parent[key + rng.choice(["_", "s", "x"])] = parent.pop(key)
        desc = f"{path} renamed"
    elif what == 4 and isinstance(parent, list):
        parent.insert(key, copy.deepcopy(parent[key]))
        desc = f"{path} repeated"
    elif what == 5 and isinstance(parent, list):
        del parent[key]
        desc = f"{path} dropped"
    elif what == 6 and isinstance(value, (int, float)) and not isinstance(value, bool):
        new = rng.choice([-value, value * 1e300, value + 0.5, value * 2 ** 40, 0, -1])
        parent[key] = new
        desc = f"{path} = {new}"
    elif what == 7 and isinstance(value, str):
        new = rng.choice([value + "x", value.upper(), "", value * 3, value[:-1]])
        parent[key] = new
        desc = f"{path} = {new[:40]!r}"
    else:  # 0, or a mutation that does not apply here: a value of another type
        new = rng.choice(SPECIAL_VALUES)
        parent[key] = new
        desc = f"{path} = {json.dumps(new)[:40]}"
    out = json.dumps(doc)
    if raw is not None:
        out = out.replace('"@@RAW@@"', raw, 1)
    return out, desc


def mutate_bytes(data, rng):
    what = rng.randrange(4)
    i = rng.randrange(max(1, len(data)))
    if what == 0:
        return data[:i], f"truncated at {i}"
    if what == 1 and data:
        b = bytearray(data)
        b[i] ^= 1 << rng.randrange(8)
        return bytes(b), f"bit flip at {i}"
    if what == 2:
        return data[:i] + b"\x00" + data[i:], f"NUL at {i}"
    junk = bytes(rng.choice(b'{}[]",:0123456789-eE.\\ntrue') for _ in range(rng.randrange(1, 8)))
    return data[:i] + junk + data[i:], f"{junk!r} inserted at {i}"


def mutate_paper(text, rng):
    lines = text.split("\n")
    i = rng.randrange(len(lines))
    what = rng.randrange(4)
    if what == 0:
        del lines[i]
        return "\n".join(lines), f"line {i + 1} dropped"
    if what == 1:
        lines.insert(i, lines[i])
        return "\n".join(lines), f"line {i + 1} repeated"
    toks = lines[i].split()
    if not toks:
        return text + "\n" + rng.choice(SPECIAL_NUMBERS), "number appended"
    j = rng.randrange(len(toks))
    toks[j] = rng.choice(SPECIAL_NUMBERS + ["", "x", "-", "999999", "0"])
    lines[i] = " ".join(toks)
    return "\n".join(lines), f"line {i + 1} token {j + 1} = {toks[j]!r}"


def mutate(fmt, data, rng):
    """One mutation of a file of format `fmt`: (new bytes, description). JSON files get a JSON-aware
    mutation three times in four, paper graphs a line-aware one seven in ten, checkpoints (zip
    archives) only byte-level ones."""
    if fmt == "paper" and rng.random() < 0.7:
        text, desc = mutate_paper(data.decode(), rng)
        return text.encode(), desc
    if fmt not in ("paper", "policy") and rng.random() < 0.75:
        text, desc = mutate_json(data.decode(), rng)
        return text.encode(), desc
    return mutate_bytes(data, rng)


def judge(rc, out, err):
    """None when the answer is acceptable, else why not."""
    for marker in ("ERROR: AddressSanitizer", "runtime error:", "WARNING: ThreadSanitizer", "ERROR: LeakSanitizer"):
        if marker in err:
            return f"sanitizer: {marker}"
    if rc is None:
        return "timed out"
    if rc < 0:
        return f"killed by signal {-rc}"
    if rc not in (0, 1, 2):
        return f"exit code {rc}"
    if rc != 0 and "doppler:" not in err:
        return f"exit {rc} without a doppler: message"
    if "internal error" in err:  # errc::internal
        return "internal error"
    if "terminate called" in err or "what():" in err:
        return "uncaught exception"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--doppler", default="build/release/cli/doppler")
    ap.add_argument("-n", type=int, default=500, help="mutations (default 500)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="", help="directory for findings (default: a temporary one, kept if any)")
    ap.add_argument("--timeout", type=float, default=30, help="seconds per command (default 30)")
    ap.add_argument("--formats", default=",".join(FORMATS),
                    help="comma-separated subset of " + ",".join(FORMATS + LEARNER_FORMATS) + " (default: all but " +
                    " and ".join(LEARNER_FORMATS) + ", which need LibTorch)")
    ap.add_argument("--log", default="", help="also write every command's mutation, exit code and first stderr line "
                    "here (TSV), e.g. to review what was accepted")
    a = ap.parse_args()
    doppler = os.path.abspath(a.doppler)
    if not os.access(doppler, os.X_OK):
        sys.exit(f"fuzz_inputs.py: no doppler binary at {a.doppler}")
    fmts = [f for f in a.formats.split(",") if f]
    bad = [f for f in fmts if f not in FORMATS + LEARNER_FORMATS]
    if bad or not fmts:
        sys.exit(f"fuzz_inputs.py: unknown format(s) {bad}; known: {','.join(FORMATS + LEARNER_FORMATS)}")
    if a.n < 0:
        sys.exit("fuzz_inputs.py: -n must be >= 0")
    rng = random.Random(a.seed)
    work = tempfile.mkdtemp(prefix="doppler_fuzz_")
    out_dir = a.out or os.path.join(work, "findings")
    try:
        files = seeds(doppler, work, a.timeout, fmts)
        originals = {k: open(os.path.join(work, v), "rb").read() for k, v in files.items()}
        findings = 0
        runs = 0
        codes = {0: 0, 1: 0, 2: 0}
        log = open(a.log, "w") if a.log else None
        for i in range(a.n):
            fmt = rng.choice(fmts)
            mutated, desc = mutate(fmt, originals[fmt], rng)
            name = f"m{i}" + os.path.splitext(files[fmt])[1]
            with open(os.path.join(work, name), "wb") as f:
                f.write(mutated)
            for cmd in commands(fmt, name):
                rc, out, err = sh([doppler] + cmd, work, a.timeout)
                runs += 1
                if rc in codes:
                    codes[rc] += 1
                if log:
                    first = (err.strip().splitlines() or [""])[0][:300]
                    log.write(f"{i}\t{fmt}\t{desc}\t{' '.join(cmd)}\t{rc}\t{first}\n")
                why = judge(rc, out, err)
                if why:
                    findings += 1
                    os.makedirs(out_dir, exist_ok=True)
                    base = os.path.join(out_dir, f"finding{findings}")
                    shutil.copy(os.path.join(work, name), base + os.path.splitext(name)[1])
                    with open(base + ".txt", "w") as f:
                        f.write(f"{why}\nformat: {fmt}\nmutation: {desc}\ncommand: doppler {' '.join(cmd)}\n"
                                f"exit: {rc}\n--- stdout\n{out[-4000:]}\n--- stderr\n{err[-8000:]}\n")
                    print(f"finding {findings}: {why}: {fmt} ({desc}): doppler {' '.join(cmd)}", flush=True)
            os.remove(os.path.join(work, name))
            if (i + 1) % 50 == 0:
                print(f"{i + 1}/{a.n} mutations, {runs} commands, {findings} finding(s)", flush=True)
        if log:
            log.close()
        print(f"fuzz_inputs.py: {a.n} mutations (seed {a.seed}), {runs} commands: exit 0 x{codes[0]}, "
              f"1 x{codes[1]}, 2 x{codes[2]}; {findings} finding(s)" + (f" in {out_dir}" if findings else ""))
        return 1 if findings else 0
    finally:
        if not (out_dir == os.path.join(work, "findings") and os.path.isdir(out_dir)):  # findings in work: kept
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
