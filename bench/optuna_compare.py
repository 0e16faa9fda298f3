#!/usr/bin/env python3
"""Side-by-side benchmark of spoc's NSGA-II and Optuna's NSGAIISampler.

For each problem (ZDT1, ZDT2, ZDT3 with 30 variables; DTLZ2 with 3 objectives
and 12 variables) and each seed, both samplers get the same budget
(--evaluations, --population). The front is the non-dominated set of all
evaluated trials; its hypervolume uses the reference point 1.1 per objective
and is divided by the true front's hypervolume (reported by spoc). The
script computes every hypervolume itself (exact 2-D sweep, 3-D slicing), for
spoc's fronts too, so both columns use one implementation, and checks that
it agrees with spoc's own number.

Optuna comes from Debian's python3-optuna (run with /usr/bin/python3).
Usage:
  go build -o /tmp/spoc ./cmd/spoc
  /usr/bin/python3 bench/optuna_compare.py --spoc /tmp/spoc --seeds 10 --jobs 2 --out /tmp/optuna_compare.md
"""

import argparse
import json
import math
import multiprocessing
import statistics
import subprocess
import sys
import time

PROBLEMS = ["zdt1", "zdt2", "zdt3", "dtlz2"]
THRESHOLD = {"zdt1": 0.90, "zdt2": 0.80, "zdt3": 0.80, "dtlz2": 0.80}


def zdt(shape):
    def f(trial):
        x = [trial.suggest_float(f"x{i:02d}", 0.0, 1.0) for i in range(30)]
        g = 1 + 9 * sum(x[1:]) / 29
        return x[0], g * shape(x[0], g)
    return f


def dtlz2(trial):
    x = [trial.suggest_float(f"x{i:02d}", 0.0, 1.0) for i in range(12)]
    g = sum((xi - 0.5) ** 2 for xi in x[2:])
    c = lambda v: math.cos(v * math.pi / 2)
    s = lambda v: math.sin(v * math.pi / 2)
    return ((1 + g) * c(x[0]) * c(x[1]), (1 + g) * c(x[0]) * s(x[1]), (1 + g) * s(x[0]))


OBJECTIVES = {
    "zdt1": (zdt(lambda f1, g: 1 - math.sqrt(f1 / g)), 2),
    "zdt2": (zdt(lambda f1, g: 1 - (f1 / g) ** 2), 2),
    "zdt3": (zdt(lambda f1, g: 1 - math.sqrt(f1 / g) - (f1 / g) * math.sin(10 * math.pi * f1)), 2),
    "dtlz2": (dtlz2, 3),
}


def non_dominated(points):
    out = []
    for i, p in enumerate(points):
        dominated = False
        for j, q in enumerate(points):
            if j == i:
                continue
            if all(a <= b for a, b in zip(q, p)) and (any(a < b for a, b in zip(q, p)) or j < i):
                dominated = True
                break
        if not dominated:
            out.append(p)
    return out


def hypervolume(points, ref):
    pts = [p for p in points if all(v < r for v, r in zip(p, ref))]
    pts = non_dominated(pts)
    return _hv(pts, ref)


def _hv(pts, ref):
    if not pts:
        return 0.0
    d = len(ref)
    if d == 2:
        vol, y_min = 0.0, ref[1]
        for x, y in sorted(pts):
            if y < y_min:
                vol += (ref[0] - x) * (y_min - y)
                y_min = y
        return vol
    pts = sorted(pts, key=lambda p: p[-1])
    vol = 0.0
    for i, p in enumerate(pts):
        nxt = pts[i + 1][-1] if i + 1 < len(pts) else ref[-1]
        if nxt > p[-1]:
            proj = non_dominated([q[:-1] for q in pts[: i + 1]])
            vol += _hv(proj, ref[:-1]) * (nxt - p[-1])
    return vol


def run_optuna(args):
    problem, seed, evaluations, population = args
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    objective, m = OBJECTIVES[problem]
    study = optuna.create_study(
        directions=["minimize"] * m,
        sampler=optuna.samplers.NSGAIISampler(population_size=population, seed=seed),
    )
    t0 = time.time()
    study.optimize(objective, n_trials=evaluations)
    front = [list(t.values) for t in study.best_trials]
    return problem, seed, "optuna", front, time.time() - t0, None


def run_spoc(args):
    problem, seed, evaluations, population, spoc = args
    t0 = time.time()
    out = subprocess.run(
        [spoc, "search", "bench", "--problem", problem, "--evaluations", str(evaluations),
         "--population", str(population), "--seed", str(seed), "--sampler", "nsga2", "--json"],
        check=True, capture_output=True, text=True).stdout
    res = json.loads(out)
    return problem, seed, "spoc", res["front"], time.time() - t0, res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spoc", default="spoc", help="spoc binary")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--evaluations", type=int, default=4000)
    ap.add_argument("--population", type=int, default=40)
    ap.add_argument("--problems", default=",".join(PROBLEMS))
    ap.add_argument("--jobs", type=int, default=1, help="parallel runs")
    ap.add_argument("--out", help="write the Markdown table here (default stdout)")
    ap.add_argument("--json", help="write per-run results here")
    a = ap.parse_args()
    problems = a.problems.split(",")
    ref_cache = {}
    for p in problems:
        res = run_spoc((p, 0, 2, 2, a.spoc))[5]
        ref_cache[p] = (res["reference_point"], res["true_hypervolume"])

    jobs = []
    for p in problems:
        for s in range(a.seeds):
            jobs.append((run_spoc, (p, s, a.evaluations, a.population, a.spoc)))
            jobs.append((run_optuna, (p, s, a.evaluations, a.population)))
    results = []
    with multiprocessing.Pool(a.jobs) as pool:
        pending = [pool.apply_async(f, (arg,)) for f, arg in jobs]
        for r in pending:
            problem, seed, who, front, secs, raw = r.get()
            ref, true_hv = ref_cache[problem]
            hv = hypervolume(front, ref)
            if raw is not None and abs(hv - raw["hypervolume"]) > 1e-9 * max(1.0, hv):
                sys.exit(f"hypervolume mismatch on {problem} seed {seed}: script {hv}, spoc {raw['hypervolume']}")
            results.append({"problem": problem, "seed": seed, "sampler": who, "hypervolume": hv,
                            "relative": hv / true_hv, "seconds": secs, "front_size": len(front)})
            print(f"{problem} seed {seed} {who}: relative HV {hv / true_hv:.4f} ({secs:.1f}s)", file=sys.stderr)

    lines = [
        f"NSGA-II: spoc vs Optuna {__import__('optuna').__version__} NSGAIISampler; {a.evaluations} evaluations, "
        f"population {a.population}, {a.seeds} seeds, reference point 1.1 per objective; "
        "relative hypervolume = HV(front of all trials) / HV(true front).",
        "",
        "| problem | spoc median | spoc min–max | Optuna median | Optuna min–max | target | spoc s/run | Optuna s/run |",
        "|---|---|---|---|---|---|---|---|",
    ]
    ok = True
    for p in problems:
        row = {}
        for who in ("spoc", "optuna"):
            rs = [r for r in results if r["problem"] == p and r["sampler"] == who]
            rel = [r["relative"] for r in rs]
            row[who] = (statistics.median(rel), min(rel), max(rel), statistics.mean(r["seconds"] for r in rs))
        sp, op = row["spoc"], row["optuna"]
        ok = ok and sp[0] >= THRESHOLD[p] and sp[0] >= op[0]
        lines.append(f"| {p} | {sp[0]:.4f} | {sp[1]:.4f}–{sp[2]:.4f} | {op[0]:.4f} | {op[1]:.4f}–{op[2]:.4f} | "
                     f"≥ {THRESHOLD[p]:.2f} | {sp[3]:.1f} | {op[3]:.1f} |")
    table = "\n".join(lines) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(table)
    else:
        sys.stdout.write(table)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
