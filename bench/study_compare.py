#!/usr/bin/env python3
"""Samplers compared on spoc's own default study, at the budgets a live study can afford.

The study is the default one (reference deployment in the simulator, default
search space, SLA as constraints, tuning load = the ceiling of engine.params
found by spoc's baseline sweep) with the capacity objective: maximise the
largest user count the flags serve within the SLA (a short inner sweep),
minimise TTFT p95 and ITL p95 at the tuning load.

Each sampler runs --seeds seeds of --trials trials:
  spoc tpe, spoc nsga2, spoc random  through `spoc tune` (the real study path:
                                     trial 0 = engine.params, pruned space,
                                     canonical duplicates reused),
  optuna-tpe, optuna-nsga2            Optuna's TPESampler / NSGAIISampler with
                                     constraints_func = the SLA constraints,
                                     asking `spoc search objective` (the same
                                     objective, space and load) for each trial.
NSGA-II runs use population 12 (spoc's default) on both sides. A proposal
Optuna makes that breaks one of the space's rules (vLLM would refuse to start)
is a FAIL trial: Optuna has no rules, and on a real deployment that trial is
spent.

For each budget in --budgets, a run's front is the feasible non-dominated set
of its first `budget` trials; its hypervolume (reference point: 0 users, the
SLA's TTFT and ITL limits) is divided by the hypervolume of the union of all
runs' fronts at that budget. Hypervolumes come from bench/optuna_compare.py.

Usage (Optuna from Debian: apt-get install -y python3-optuna):
  go build -o /tmp/spoc ./cmd/spoc
  /usr/bin/python3 bench/study_compare.py --spoc /tmp/spoc --seeds 5 --jobs 2 \\
      --out /tmp/study_compare.md --json /tmp/study_compare.json
Exit status 1 when spoc's default sampler (tpe) has a lower median relative
hypervolume than Optuna's TPE at any budget.
"""

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from optuna_compare import hypervolume  # noqa: E402

SPOC_SAMPLERS = ["tpe", "nsga2", "random"]
OPTUNA_SAMPLERS = ["optuna-tpe", "optuna-nsga2"]
POPULATION = 12

CONFIG = """search:
  sampler: {sampler}
  seed: {seed}
  trials: {trials}
  users: {users}
  population: {population}
  objectives:
    - {{metric: capacity, direction: maximize}}
    - {{metric: ttft_p95, direction: minimize}}
    - {{metric: itl_p95, direction: minimize}}
"""


def write_config(workdir, name, sampler="auto", seed=1, trials=60, users=0):
    path = os.path.join(workdir, name + ".yaml")
    with open(path, "w") as f:
        f.write(CONFIG.format(sampler=sampler, seed=seed, trials=trials, users=users, population=POPULATION))
    return path


def run_spoc(args):
    spoc, workdir, sampler, seed, trials, users = args
    cfg = write_config(workdir, f"{sampler}-{seed}", sampler, seed, trials, users)
    out = os.path.join(workdir, f"{sampler}-{seed}")
    t0 = time.time()
    res = subprocess.run([spoc, "tune", "-c", cfg, "--out", out, "--json", "--quiet"],
                         check=True, capture_output=True, text=True)
    doc = json.loads(res.stdout)
    trials_out = []
    for t in doc["trials"]:
        trials_out.append({"number": t["number"], "state": t["state"], "values": t.get("values"),
                           "constraints": t.get("constraints"),
                           "reused": "duplicate_of" in (t.get("system_attrs") or {})})
    return "spoc-" + sampler, seed, trials_out, time.time() - t0


def suggest(trial, p):
    name = p["name"]
    if p["type"] == "categorical":
        return trial.suggest_categorical(name, p["choices"])
    if p["type"] == "int":
        step = int(p.get("step") or 1)
        if p.get("log"):
            return trial.suggest_int(name, int(p["low"]), int(p["high"]), log=True)
        return trial.suggest_int(name, int(p["low"]), int(p["high"]), step=step)
    if p.get("log"):
        return trial.suggest_float(name, p["low"], p["high"], log=True)
    return trial.suggest_float(name, p["low"], p["high"], step=p.get("step") or None)


def run_optuna(args):
    spoc, workdir, sampler, seed, trials, users = args
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    cfg = write_config(workdir, f"{sampler}-{seed}", "auto", seed, trials, users)
    proc = subprocess.Popen([spoc, "search", "objective", "-c", cfg, "--users", str(users)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    header = json.loads(proc.stdout.readline())
    cons = lambda t: t.user_attrs["constraints"]  # noqa: E731
    if sampler == "optuna-tpe":
        smp = optuna.samplers.TPESampler(seed=seed, constraints_func=cons)
    else:
        smp = optuna.samplers.NSGAIISampler(population_size=POPULATION, seed=seed, constraints_func=cons)
    study = optuna.create_study(directions=header["directions"], sampler=smp)
    t0 = time.time()
    out = []
    for i in range(trials):
        trial = study.ask()
        params = {p["name"]: suggest(trial, p) for p in header["space"]["params"]}
        proc.stdin.write(json.dumps({"params": params}) + "\n")
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())
        if reply["state"] == "COMPLETE":
            trial.set_user_attr("constraints", reply["constraints"])
            study.tell(trial, reply["values"])
        else:
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
        out.append({"number": i, "state": reply["state"], "values": reply.get("values"),
                    "constraints": reply.get("constraints"), "reused": False})
    proc.stdin.close()
    proc.wait()
    return sampler, seed, out, time.time() - t0


def front_points(trials, budget, directions):
    pts = []
    for t in trials:
        if t["number"] >= budget or t["state"] != "COMPLETE" or not t["values"]:
            continue
        if any(c > 0 for c in (t["constraints"] or [])):
            continue
        pts.append([-v if d == "maximize" else v for v, d in zip(t["values"], directions)])
    return pts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spoc", default="spoc", help="spoc binary")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--trials", type=int, default=60)
    ap.add_argument("--budgets", default="30,60")
    ap.add_argument("--samplers", default=",".join(["spoc-" + s for s in SPOC_SAMPLERS] + OPTUNA_SAMPLERS))
    ap.add_argument("--users", type=int, default=0, help="tuning load (0: spoc's baseline sweep finds it)")
    ap.add_argument("--jobs", type=int, default=1, help="parallel runs")
    ap.add_argument("--out", help="write the Markdown table here (default stdout)")
    ap.add_argument("--json", help="write per-run trials here")
    a = ap.parse_args()
    budgets = [int(b) for b in a.budgets.split(",")]
    samplers = a.samplers.split(",")
    workdir = tempfile.mkdtemp(prefix="spoc-study-compare-")

    # The tuning load and the study's shape, as spoc tune would resolve them.
    cfg = write_config(workdir, "header", users=a.users)
    proc = subprocess.Popen([a.spoc, "search", "objective", "-c", cfg, "--users", str(a.users)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    header = json.loads(proc.stdout.readline())
    proc.stdin.close()
    proc.wait()
    users, directions = header["users"], header["directions"]
    print(f"tuning load {users} users; space {[p['name'] for p in header['space']['params']]}; "
          f"dropped {[d['name'] for d in header.get('dropped') or []]}", file=sys.stderr)

    jobs = []
    for s in samplers:
        for seed in range(1, a.seeds + 1):
            if s.startswith("spoc-"):
                jobs.append((run_spoc, (a.spoc, workdir, s[len("spoc-"):], seed, a.trials, users)))
            else:
                jobs.append((run_optuna, (a.spoc, workdir, s, seed, a.trials, users)))
    runs = []
    with multiprocessing.Pool(a.jobs) as pool:
        pending = [pool.apply_async(f, (arg,)) for f, arg in jobs]
        for r in pending:
            who, seed, trials, secs = r.get()
            runs.append({"sampler": who, "seed": seed, "trials": trials, "seconds": secs})
            print(f"{who} seed {seed}: {len(trials)} trials in {secs:.0f}s", file=sys.stderr)

    # SLA limits from the defaults: ttft p95 2 s, itl p95 100 ms.
    ref = [0.0, 2000.0, 100.0]
    table = {}
    for b in budgets:
        union = []
        for r in runs:
            union += front_points(r["trials"], b, directions)
        hv_union = hypervolume(union, ref)
        for r in runs:
            hv = hypervolume(front_points(r["trials"], b, directions), ref)
            r.setdefault("relative", {})[b] = hv / hv_union if hv_union > 0 else 0.0
            r.setdefault("evaluated", {})[b] = sum(
                1 for t in r["trials"] if t["number"] < b and not t["reused"] and t["state"] != "FAIL")
        table[b] = hv_union

    lines = [
        f"Default study, capacity objective (capacity max, TTFT p95 min, ITL p95 min; SLA as constraints), "
        f"{users} users per trial, {a.seeds} seeds; relative hypervolume of each run's feasible front "
        f"against the union of all runs' fronts at the same budget (reference point 0 users, 2000 ms, 100 ms).",
        "",
        "| sampler | " + " | ".join(f"{b} trials median | {b} min–max | {b} evaluated" for b in budgets) + " | s/run |",
        "|---|" + "---|---|---|" * len(budgets) + "---|",
    ]
    medians = {}
    for s in samplers:
        rs = [r for r in runs if r["sampler"] == s]
        cells = []
        for b in budgets:
            rel = [r["relative"][b] for r in rs]
            ev = [r["evaluated"][b] for r in rs]
            medians[(s, b)] = statistics.median(rel)
            cells.append(f"{statistics.median(rel):.3f} | {min(rel):.3f}–{max(rel):.3f} | {statistics.median(ev):.0f}")
        lines.append(f"| {s} | " + " | ".join(cells) + f" | {statistics.mean(r['seconds'] for r in rs):.0f} |")
    ok = True
    if "spoc-tpe" in samplers and "optuna-tpe" in samplers:
        for b in budgets:
            ok = ok and medians[("spoc-tpe", b)] >= medians[("optuna-tpe", b)]
        lines += ["", f"spoc tpe median ≥ Optuna TPE median at every budget: {'yes' if ok else 'NO'}"]
    text = "\n".join(lines) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    sys.stdout.write(text)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"users": users, "header": header, "union_hypervolume": table, "runs": runs}, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
