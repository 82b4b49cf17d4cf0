#!/usr/bin/env python3
"""sMIL here and sMIL of PyPI `sawmil` 0.2.1 side by side, on the same bags and folds.

For each data set, one repetition of the 10-fold CV in benches/results/folds/DATA_seed1.csv
is written as a `mil cv --folds-file`, and these runs are timed, each its own child
process:

- ours: `mil cv host/data/DATA.csv --classifier smil --folds-file F --json --quiet` at
  its defaults (features z-scored on the training instances, linear instance kernel,
  the mean of the instance kernels between two points, C = 1 shared as C/L₋ per negative
  instance and C/B₊ per positive bag, SMO, the bias at the training bags' best cut), and
  the same with misvm's bias (`--bias support-mean`);
- the peer at its own defaults: `sawmil.sMIL(kernel=get_kernel("linear"), solver="osqp")`
  on raw features (C = 1, scale_C=True, normalizer="none", tol=1e-8). Two of its
  defaults cannot run as published: the default kernel, the string "linear", is never
  turned into a kernel object (fit fails with "'str' object has no attribute 'fit'"),
  and the default solver is Gurobi (commercial, not installed); the kernel object is
  the package's README usage and OSQP its free solver;
- the peer on our inputs: features z-scored per fold with the training instances' mean
  and population standard deviation (constant features dropped), the same linear
  kernel and C = 1, once with its default normalizer "none" and once with "average",
  the normaliser its docstring names for the mean over instance pairs (--normalizers).

Neither of the peer's normalizers computes the mean kernel of the paper (and of ours):
in `WeightedMeanBagKernel.__call__`, "none" sums the instance kernels over the two bags
(misvm's "linear") and "average" divides their mean once more by |X|·|Y|. For a linear
kernel its decision values come from w = Σ αᵢyᵢφ(Xᵢ) with φ(X) the mean of X under
"none" (not the sum its Gram matrix holds) and the mean over |X| under "average". Its
dual's linear term for a positive bag X is 2/|X| − 1, misvm's −(2/|X| − 1) with the sign
flipped. The peer's code is run as published; an observer wrapped around
`osqp.OSQP.solve` keeps each solve's status and iteration count.

Both sides fit once per fold, with no inner CV. Each run is measured as a child of this
script with os.wait4: CPU time (user + system), peak RSS (ru_maxrss), wall time, and the
1-minute load average just before it. Accuracy is that of the out-of-fold labels,
pooled; AUROC that of the pooled decision values. Thread settings: OMP_NUM_THREADS,
OPENBLAS_NUM_THREADS, MKL_NUM_THREADS and RAYON_NUM_THREADS are removed from both
children's environment, so each side runs at its libraries' defaults (rayon and
OpenBLAS use every core; OSQP is single-threaded); --threads 1 sets all four to 1.

The peer runs in a subprocess of this script under --python (a virtual environment
with numpy, scipy, scikit-learn, osqp and `sawmil` 0.2.1). Set it up with

    python3 -m venv target/smil-peer-venv && target/smil-peer-venv/bin/pip install numpy scipy scikit-learn sawmil==0.2.1 osqp

    python3 benches/smil_peer.py                          # musk1, print the block
    python3 benches/smil_peer.py --data musk1,musk2,elephant --peer-folds musk2=1 --write

--peer-folds N (or DATA=N,…, for some data sets) runs the peer on the first N folds only;
ours always runs all of them, and the ratios are per fold. --write replaces the
`smil-peer` block of docs/methods/smil.md and writes benches/results/smil_peer.csv and
.json. The driver uses the standard library only.
"""

import argparse
import csv
import datetime
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from benchlib import auroc, folds_file, measure, publish  # noqa: E402
PAGE = ROOT / "docs/methods/smil.md"
RESULTS = ROOT / "benches/results/smil_peer"
BLOCK = "smil-peer"
THREAD_VARS = ["OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "RAYON_NUM_THREADS"]
COST = 1.0


# ---------------------------------------------------------------------------------------
# The peer's side: runs under --python, in its own process.

def read_bags(path):
    """The `label,bag_id,f1..fd` CSV as {bag_id: (label, rows)}, in file order."""
    bags = {}
    with open(path, newline="") as f:
        for row in csv.reader(f):
            if not row:
                continue
            label, bag = row[0], row[1]
            if bag not in bags:
                bags[bag] = (label, [])
            bags[bag][1].append([float(v) for v in row[2:]])
    return bags


def read_folds(path):
    """[(bag_id, label, fold)] of a --folds-file, in file order."""
    with open(path, newline="") as f:
        return [(r["bag_id"], r["label"], int(r["fold"])) for r in csv.DictReader(f)]


def peer_worker(args):
    start_cpu, start_wall = time.process_time(), time.perf_counter()
    import logging
    import warnings
    from importlib.metadata import version

    import numpy as np
    import osqp
    from sawmil import sMIL
    from sawmil.kernels import get_kernel

    # Linear.fit logs a warning on every fit ("no parameters to fit"): not a fault.
    logging.getLogger("sparse_mil.kernels").setLevel(logging.ERROR)
    solves = []
    solve = osqp.OSQP.solve

    def observed(self, *a, **kw):
        res = solve(self, *a, **kw)
        solves.append({"status": res.info.status, "iterations": int(res.info.iter),
                       "variables": int(self.n)})
        return res

    osqp.OSQP.solve = observed

    raw = read_bags(args.data)
    folds = read_folds(args.folds)
    bags = {b: np.asarray(rows, dtype=float) for b, (_, rows) in raw.items()}
    labels = {b: int(lab) for b, (lab, _) in raw.items()}
    for b, lab, _ in folds:
        if labels[b] != int(lab):
            raise SystemExit(f"bag {b}: label {lab} in the folds, {labels[b]} in the data")
    if sorted(b for b, _, _ in folds) != sorted(raw):
        raise SystemExit("the folds do not hold every bag once")
    setup = (time.process_time() - start_cpu, time.perf_counter() - start_wall)

    fold_ids = sorted({k for _, _, k in folds})[: args.max_folds or None]
    predictions, per_fold = [], []
    for k in fold_ids:
        c0, w0 = time.process_time(), time.perf_counter()
        test = [b for b, _, f in folds if f == k]
        train = [b for b, _, f in folds if f != k]
        xtr, xte = [bags[b] for b in train], [bags[b] for b in test]
        ytr = np.array([labels[b] for b in train], dtype=float)
        active = xtr[0].shape[1]
        if args.mode == "zscore":
            inst = np.vstack(xtr)
            mean = inst.mean(axis=0)
            var = ((inst - mean) ** 2).mean(axis=0)
            keep = var > 0
            active = int(keep.sum())
            sd = np.sqrt(var[keep])
            xtr = [(x[:, keep] - mean[keep]) / sd for x in xtr]
            xte = [(x[:, keep] - mean[keep]) / sd for x in xte]
        model = sMIL(C=args.cost, kernel=get_kernel("linear"), solver="osqp",
                     normalizer=args.normalizer)
        del solves[:]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.fit(xtr, ytr)
            score = model.decision_function(xte)
            pred = model.predict(xte)
        for b, p, s in zip(test, pred, score):
            predictions.append({"bag": b, "label": labels[b], "predicted": int(p),
                                "score": float(s)})
        per_fold.append({
            "fold": k,
            "train_bags": len(train),
            "features": active,
            "variables": solves[0]["variables"],
            "support": int(len(model.support_)),
            "osqp_status": solves[0]["status"],
            "osqp_iterations": solves[0]["iterations"],
            "warnings": sorted({type(w.message).__name__ for w in caught}),
            "cpu": time.process_time() - c0,
            "wall": time.perf_counter() - w0,
        })
        print(f"fold {k}: {per_fold[-1]['cpu']:.1f} CPU s, OSQP {solves[0]['status']} "
              f"in {solves[0]['iterations']} iterations", file=sys.stderr, flush=True)
    json.dump({
        "setup_cpu": setup[0], "setup_wall": setup[1],
        "versions": {"python": sys.version.split()[0], "numpy": np.__version__,
                     "scipy": version("scipy"), "osqp": version("osqp"),
                     "sawmil": version("sawmil")},
        "folds": per_fold, "predictions": predictions,
    }, sys.stdout)


# ---------------------------------------------------------------------------------------
# The driver: standard library only.

def run_ours(args, data, folds, env, tmp, bias):
    """Ours at its defaults (`bias` None) or with `--bias BIAS`."""
    cmd = [str(args.mil), "cv", str(ROOT / f"host/data/{data}.csv"), "--classifier",
           "smil", "--folds-file", folds, "--json", "--quiet"]
    if bias:
        cmd += ["--bias", bias]
    out = os.path.join(tmp, f"{data}-ours-{bias or 'defaults'}.json")
    m = measure(cmd, env, out)
    if m["status"] != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {Path(out + '.err').read_text()}")
    report = json.loads(Path(out).read_text())
    # A prediction's `label` is the predicted one; the true labels are the folds file's.
    truth = {r[0]: int(r[1]) for r in read_folds(folds)}
    scores = [(p["bag"], truth[p["bag"]], int(p["label"]), p["score"])
              for p in report["predictions"]]
    settings = ("z-score, linear, mean kernel, C = 1, training cut (defaults)" if not bias
                else f"z-score, linear, mean kernel, C = 1, `--bias {bias}` (misvm's bias)")
    m.update(side="ours", settings=settings,
             setup_cpu=None, folds=report["folds"], bags=len(scores),
             accuracy=report["accuracy"], auroc=report["auroc"], scores=scores)
    return m


def peer_folds(spec, data):
    """The peer's number of folds on `data` by --peer-folds (`N` or `DATA=N,…`); 0 for
    all."""
    for part in filter(None, spec.split(",")):
        name, _, n = part.rpartition("=")
        if name in ("", data):
            return int(n)
    return 0


def run_peer(args, data, folds, env, tmp, mode, normalizer):
    cmd = [str(args.python), str(Path(__file__).resolve()), "--peer-worker",
           "--data", str(ROOT / f"host/data/{data}.csv"), "--folds", folds,
           "--mode", mode, "--normalizer", normalizer, "--cost", repr(COST)]
    if peer_folds(args.peer_folds, data):
        cmd += ["--max-folds", str(peer_folds(args.peer_folds, data))]
    out = os.path.join(tmp, f"{data}-peer-{mode}-{normalizer}.json")
    m = measure(cmd, env, out)
    if m["status"] != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {Path(out + '.err').read_text()}")
    report = json.loads(Path(out).read_text())
    preds = report["predictions"]
    fs = report["folds"]
    scaling = "z-score" if mode == "zscore" else "raw"
    settings = f"{scaling}, linear, normalizer \"{normalizer}\", C = {COST:g}, OSQP"
    if mode == "defaults":
        settings += " (defaults)"
    m.update(side="sawmil", settings=settings, tag=f"{scaling}, \"{normalizer}\"",
             folds=len(fs), bags=len(preds),
             accuracy=sum(p["label"] == p["predicted"] for p in preds) / len(preds),
             auroc=auroc([p["label"] for p in preds], [p["score"] for p in preds]),
             bag_ids=[p["bag"] for p in preds],
             setup_cpu=report["setup_cpu"], fold_cpu=[f["cpu"] for f in fs],
             variables=[f["variables"] for f in fs], support=[f["support"] for f in fs],
             osqp_status=sorted({f["osqp_status"] for f in fs}),
             osqp_iterations=[f["osqp_iterations"] for f in fs],
             warnings=sorted({w for f in fs for w in f["warnings"]}),
             versions=report["versions"])
    return m


def times(ratio):
    return f"{ratio:.0f}×" if ratio >= 10 else f"{ratio:.1f}×"


def span(values):
    lo, hi = min(values), max(values)
    return f"{lo}" if lo == hi else f"{lo}–{hi}"


def block(rows, meta):
    v = meta["versions"]
    lines = [
        f"Machine: {meta['machine']['cpu']} × {meta['machine']['cores']}; "
        f"{meta['date']}, commit {meta['commit']}; repetition {meta['repetition']} of "
        f"`benches/results/folds/DATA_seed1.csv`; the peer: Python {v['python']}, "
        f"`sawmil` {v['sawmil']}, osqp {v['osqp']}, numpy {v['numpy']}, "
        f"scipy {v['scipy']}; threads: {meta['threads']}.",
        "",
        "| data | side | settings | folds | accuracy % | AUROC | CPU s | of which start-up | wall s | peak MiB | load |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        au = "—" if r["auroc"] is None else f"{r['auroc']:.3f}"
        up = "—" if r["setup_cpu"] is None else f"{r['setup_cpu']:.1f}"
        lines.append(
            f"| {r['data']} | {r['side']} | {r['settings']} | {r['folds']} | "
            f"{100 * r['accuracy']:.1f} | {au} | {r['cpu']:.2f} | {up} | {r['wall']:.2f} | "
            f"{r['peak_mib']:.0f} | {r['load']:.2f} |")
    lines.append("")
    for data in dict.fromkeys(r["data"] for r in rows):
        ours = next(r for r in rows if r["data"] == data and r["side"] == "ours")
        per_fold = ours["cpu"] / ours["folds"]
        peers = [r for r in rows if r["data"] == data and r["side"] != "ours"]
        parts = []
        for p in peers:
            # Per fold, so that a peer run on fewer folds than ours compares fairly; the
            # second figure leaves out the peer's interpreter start and imports.
            whole = (p["cpu"] / p["folds"]) / per_fold
            loop = (sum(p["fold_cpu"]) / p["folds"]) / per_fold
            parts.append(f"{p['tag']} {times(whole)} ({times(loop)} without its start-up; "
                         f"{span(p['variables'])} dual variables, OSQP "
                         f"{' or '.join(p['osqp_status'])} in "
                         f"{span(p['osqp_iterations'])} iterations)")
        line = (f"- {data}: the peer's CPU time per fold over ours is "
                + "; ".join(parts) + ".")
        fewer = {p["folds"]: p["bag_ids"] for p in peers if p["folds"] < ours["folds"]}
        for n, ids in sorted(fewer.items()):
            # Ours on the bags of the peer's folds, for a like-for-like accuracy.
            kept = set(ids)
            sub = [s for s in ours["scores"] if s[0] in kept]
            acc = sum(y == yhat for _, y, yhat, _ in sub) / len(sub)
            au = auroc([y for _, y, _, _ in sub], [v for _, _, _, v in sub])
            au = "—" if au is None else f"{au:.3f}"
            which = "first fold" if n == 1 else f"first {n} folds"
            line += (f" On the {len(sub)} bags of the peer's {which} ours has "
                     f"accuracy {100 * acc:.1f} % and AUROC {au}.")
        lines.append(line)
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--peer-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--folds", help=argparse.SUPPRESS)
    ap.add_argument("--mode", choices=["defaults", "zscore"], help=argparse.SUPPRESS)
    ap.add_argument("--normalizer", default="none", help=argparse.SUPPRESS)
    ap.add_argument("--cost", type=float, default=COST, help=argparse.SUPPRESS)
    ap.add_argument("--max-folds", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--data", default="musk1",
                    help="built-in data sets, comma-separated (default musk1)")
    ap.add_argument("--mil", default=ROOT / "target/release/mil", type=Path,
                    help="the mil binary (default target/release/mil)")
    ap.add_argument("--python", default=ROOT / "target/smil-peer-venv/bin/python",
                    type=Path,
                    help="Python with numpy, scipy, osqp and sawmil 0.2.1 "
                         "(default target/smil-peer-venv/bin/python)")
    ap.add_argument("--repetition", type=int, default=0,
                    help="which repetition of the folds file (default 0, the first)")
    ap.add_argument("--normalizers", default="none,average",
                    help="the z-scored peer's bag-kernel normalizers, one run each "
                         "(default none,average); the peer at its defaults uses none")
    ap.add_argument("--peer-folds", default="",
                    help="run the peer on the first N folds only: N for every data set "
                         "or DATA=N,… for some (e.g. musk2=3; default all)")
    ap.add_argument("--modes", default="defaults,zscore",
                    help="the peer's runs: defaults, zscore or both (default both)")
    ap.add_argument("--threads", choices=["default", "1"], default="default",
                    help="thread variables of both children: unset (default) or 1")
    ap.add_argument("--write", action="store_true",
                    help="replace the page block and write benches/results/smil_peer.*")
    ap.add_argument("--from-json", action="store_true",
                    help="run nothing: print (with --write, write) the block of the "
                         "measurements in benches/results/smil_peer.json")
    args = ap.parse_args()
    if args.peer_worker:
        peer_worker(args)
        return

    sys.path.insert(0, str(ROOT / "benches"))
    from benchlib import atomic_write, commit, machine

    if args.from_json:
        saved = json.loads(Path(f"{RESULTS}.json").read_text(encoding="utf-8"))
        write(saved["rows"], saved["meta"], args.write, atomic_write)
        return

    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
    if args.threads == "1":
        env.update({k: "1" for k in THREAD_VARS})
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for data in args.data.split(","):
            folds = os.path.join(tmp, f"{data}_folds.csv")
            folds_file(data, args.repetition, folds)
            runs = [("ours", None, None), ("ours", "support-mean", None)]
            for mode in args.modes.split(","):
                normalizers = (["none"] if mode == "defaults"
                               else args.normalizers.split(","))
                runs += [("peer", mode, n) for n in normalizers]
            for side, mode, normalizer in runs:
                print(f"{data}: {side} {mode or ''} {normalizer or ''}", file=sys.stderr,
                      flush=True)
                r = (run_ours(args, data, folds, env, tmp, mode) if side == "ours"
                     else run_peer(args, data, folds, env, tmp, mode, normalizer))
                r["data"] = data
                rows.append(r)
                print(f"  accuracy {r['accuracy']:.3f}, {r['cpu']:.2f} CPU s, "
                      f"{r['wall']:.2f} s wall, {r['peak_mib']:.0f} MiB",
                      file=sys.stderr, flush=True)
    versions = next(r["versions"] for r in rows if "versions" in r)
    generated = ["docs/methods/smil.md", "benches/results/smil_peer.csv",
                 "benches/results/smil_peer.json"]
    meta = {
        "machine": machine(), "commit": commit(generated),
        "date": datetime.date.today().isoformat(), "repetition": args.repetition,
        "versions": versions,
        "threads": ("OMP/OPENBLAS/MKL/RAYON_NUM_THREADS unset (library defaults)"
                    if args.threads == "default" else "OMP/OPENBLAS/MKL/RAYON_NUM_THREADS=1"),
    }
    write(rows, meta, args.write, atomic_write)


def write(rows, meta, to_files, atomic_write):
    """Prints the block; with to_files, also puts it in the page and writes the CSV and
    JSON."""
    text = block(rows, meta)
    print(text)
    if to_files:
        publish(text, rows, meta, PAGE, BLOCK, RESULTS, atomic_write)


if __name__ == "__main__":
    main()
