#!/usr/bin/env python3
"""MILES here and MILES of PyPI `mil` 1.0.5 side by side, on the same bags and folds.

For each data set, one repetition of the 10-fold CV in benches/results/folds/DATA_seed1.csv
is written as a `mil cv --folds-file`, and these runs are timed, each its own child
process:

- ours: `mil cv host/data/DATA.csv --classifier miles --folds-file F --json --quiet` at
  its defaults (z-scored features, γ = 1/(non-constant features), C = 10, μ = 0.5, the
  1-norm SVM as a linear program);
- the peer at its own defaults: `mil.models.MILES(sigma2=4.5**2, C=0.5)` on raw features;
- the peer on our inputs: features z-scored per fold with the training instances' mean
  and population standard deviation (constant features dropped), σ² = the number of
  non-constant features (our 1/γ), once at C = 0.5 (the peer's default) and once at
  C = 10 (ours; the losses differ, so the same C is not the same fit: --peer-cost).

Both sides embed every bag by its similarities to all training instances and fit once
per fold, with no inner CV. Each run is measured as a child of this script with
os.wait4: CPU time (user + system), peak RSS (ru_maxrss), wall time, and the 1-minute
load average just before it. Accuracy is that of the out-of-fold labels, pooled.
Thread settings: OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS and
RAYON_NUM_THREADS are removed from both children's environment, so each side runs at its
libraries' defaults (rayon uses every core; the peer's loop is numpy element-wise
arithmetic and liblinear, single-threaded); --threads 1 sets all four to 1 instead.

The peer runs in a subprocess of this script under --python (a virtual environment
with numpy, scipy, scikit-learn and `mil` 1.0.5). Set it up with

    python3 -m venv target/peer-venv && target/peer-venv/bin/pip install numpy scipy scikit-learn && target/peer-venv/bin/pip install --no-deps mil==1.0.5

Importing `mil.models` imports `mil/models/bag_level/deep_attention.py`, which imports
TensorFlow and `tensorflow.keras.wrappers.scikit_learn`; that module was removed after
TensorFlow 2.11, which has no wheel for current Pythons. MILES itself uses only numpy and
scikit-learn, so the peer process first puts stub modules `tensorflow`,
`tensorflow.keras`, `tensorflow.keras.wrappers`, `tensorflow.keras.wrappers.scikit_learn`
and `tensorflow.keras.layers` in sys.modules: empty classes for the names that module
subclasses or imports at import time. Nothing of TensorFlow runs. The peer's code is
otherwise called as published; an observer wrapped around
`MILESMapping.similarity_measure` only counts the embedding's non-zero entries and keeps
the test embedding for the decision values (AUROC).

    python3 benches/miles_peer.py                          # musk1 and musk2, print the block
    python3 benches/miles_peer.py --data musk1,musk2,elephant --write

--write replaces the `miles-peer` block of docs/methods/miles.md and writes
benches/results/miles_peer.csv and .json. The driver uses the standard library only.
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
PAGE = ROOT / "docs/methods/miles.md"
RESULTS = ROOT / "benches/results/miles_peer"
BLOCK = "miles-peer"
THREAD_VARS = ["OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "RAYON_NUM_THREADS"]
PEER_SIGMA2 = 4.5 ** 2
PEER_COST = 0.5


# ---------------------------------------------------------------------------------------
# The peer's side: runs under --python, in its own process.

def stub_tensorflow():
    """Stub modules for the names `mil.models.bag_level.deep_attention` needs at import
    time (it subclasses tf.keras.layers.Layer, tf.keras.Model and KerasClassifier)."""
    import types

    names = ["tensorflow", "tensorflow.keras", "tensorflow.keras.wrappers",
             "tensorflow.keras.wrappers.scikit_learn", "tensorflow.keras.layers"]
    mods = {n: types.ModuleType(n) for n in names}
    layers = mods["tensorflow.keras.layers"]
    for cls in ["Layer", "Conv1D", "Conv2D", "Conv3D", "MaxPool1D", "MaxPool2D",
                "MaxPool3D", "Dense", "Flatten", "Dropout", "Embedding"]:
        setattr(layers, cls, type(cls, (), {}))
    keras = mods["tensorflow.keras"]
    keras.layers = layers
    keras.Model = type("Model", (), {})
    keras.wrappers = mods["tensorflow.keras.wrappers"]
    keras.wrappers.scikit_learn = mods["tensorflow.keras.wrappers.scikit_learn"]
    keras.wrappers.scikit_learn.KerasClassifier = type("KerasClassifier", (), {})
    mods["tensorflow"].keras = keras
    for n, m in mods.items():
        if n in sys.modules:
            raise SystemExit(f"{n} is importable here: the stub would hide it")
        sys.modules[n] = m


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
    stub_tensorflow()
    import warnings

    import numpy as np
    import sklearn
    from mil.bag_representation.mapping import MILESMapping
    from mil.models import MILES

    embeddings = []
    similarity_measure = MILESMapping.similarity_measure

    def observed(self, dist):
        s = similarity_measure(self, dist)
        embeddings.append(s)
        return s

    MILESMapping.similarity_measure = observed

    raw = read_bags(args.data)
    folds = read_folds(args.folds)
    ids = list(raw)
    bags = {b: np.asarray(rows, dtype=float) for b, (_, rows) in raw.items()}
    labels = {b: int(lab) for b, (lab, _) in raw.items()}
    for b, lab, _ in folds:
        if labels[b] != int(lab):
            raise SystemExit(f"bag {b}: label {lab} in the folds, {labels[b]} in the data")
    if sorted(b for b, _, _ in folds) != sorted(ids):
        raise SystemExit("the folds do not hold every bag once")
    setup = (time.process_time() - start_cpu, time.perf_counter() - start_wall)

    fold_ids = sorted({k for _, _, k in folds})[: args.max_folds or None]
    predictions, per_fold = [], []
    for k in fold_ids:
        c0, w0 = time.process_time(), time.perf_counter()
        test = [b for b, _, f in folds if f == k]
        train = [b for b, _, f in folds if f != k]
        xtr, xte = [bags[b] for b in train], [bags[b] for b in test]
        ytr = np.array([labels[b] for b in train])
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
            sigma2 = float(active) if args.sigma2 is None else args.sigma2
        else:
            sigma2 = PEER_SIGMA2 if args.sigma2 is None else args.sigma2
        model = MILES(sigma2=sigma2, C=args.cost)
        del embeddings[:]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.fit(xtr, ytr)
            pred = model.predict(xte)
        emb_train, emb_test = embeddings[0], embeddings[-1]
        score = model.model.decision_function(emb_test)
        for b, p, s in zip(test, pred, score):
            predictions.append({"bag": b, "label": labels[b], "predicted": int(p),
                                "score": float(s)})
        per_fold.append({
            "fold": k,
            "train_bags": len(train),
            "prototypes": int(emb_train.shape[1]),
            "features": active,
            "sigma2": sigma2,
            "selected": int(np.count_nonzero(model.coef_)),
            "train_nonzero": float(np.count_nonzero(emb_train) / emb_train.size),
            "test_nonzero": float(np.count_nonzero(emb_test) / emb_test.size),
            "test_max": float(emb_test.max()),
            "warnings": sorted({type(w.message).__name__ for w in caught}),
            "cpu": time.process_time() - c0,
            "wall": time.perf_counter() - w0,
        })
        print(f"fold {k}: {per_fold[-1]['cpu']:.1f} CPU s", file=sys.stderr, flush=True)
    json.dump({
        "setup_cpu": setup[0], "setup_wall": setup[1],
        "versions": {"python": sys.version.split()[0], "numpy": np.__version__,
                     "scikit-learn": sklearn.__version__,
                     "mil": __import__("importlib.metadata").metadata.version("mil")},
        "folds": per_fold, "predictions": predictions,
    }, sys.stdout)


# ---------------------------------------------------------------------------------------
# The driver: standard library only.

def run_ours(args, data, folds, env, tmp):
    cmd = [str(args.mil), "cv", str(ROOT / f"host/data/{data}.csv"), "--classifier",
           "miles", "--folds-file", folds, "--json", "--quiet"]
    out = os.path.join(tmp, f"{data}-ours.json")
    m = measure(cmd, env, out)
    if m["status"] != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {Path(out + '.err').read_text()}")
    report = json.loads(Path(out).read_text())
    m.update(side="ours", settings="z-score, γ = 1/D, C = 10, μ = 0.5 (defaults)",
             setup_cpu=None,
             folds=report["folds"], bags=len(report["predictions"]),
             accuracy=report["accuracy"], auroc=report["auroc"])
    return m


def run_peer(args, data, folds, env, tmp, mode, cost):
    cmd = [str(args.python), str(Path(__file__).resolve()), "--peer-worker",
           "--data", str(ROOT / f"host/data/{data}.csv"), "--folds", folds,
           "--mode", mode, "--cost", repr(cost)]
    if args.peer_folds:
        cmd += ["--max-folds", str(args.peer_folds)]
    out = os.path.join(tmp, f"{data}-peer-{mode}-{cost}.json")
    m = measure(cmd, env, out)
    if m["status"] != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {Path(out + '.err').read_text()}")
    report = json.loads(Path(out).read_text())
    preds = report["predictions"]
    fs = report["folds"]
    features = sorted({f["features"] for f in fs})
    if mode == "zscore":
        settings = f"z-score, σ² = D = {'/'.join(map(str, features))}, C = {cost:g}"
        tag = f"z-scored, C = {cost:g}"
    else:
        settings = f"raw, σ² = 4.5², C = {cost:g} (defaults)"
        tag = "its defaults"
    m.update(side="PyPI mil", settings=settings, tag=tag, folds=len(fs), bags=len(preds),
             accuracy=sum(p["label"] == p["predicted"] for p in preds) / len(preds),
             auroc=auroc([p["label"] for p in preds], [p["score"] for p in preds]),
             setup_cpu=report["setup_cpu"], fold_cpu=[f["cpu"] for f in fs],
             selected=[f["selected"] for f in fs],
             test_nonzero=[f["test_nonzero"] for f in fs],
             train_nonzero=[f["train_nonzero"] for f in fs],
             warnings=sorted({w for f in fs for w in f["warnings"]}),
             versions=report["versions"])
    return m


def block(rows, meta):
    lines = [
        f"Machine: {meta['machine']['cpu']} × {meta['machine']['cores']}; "
        f"{meta['date']}, commit {meta['commit']}; repetition {meta['repetition']} of "
        f"`benches/results/folds/DATA_seed1.csv`; the peer: Python {meta['versions']['python']}, "
        f"`mil` {meta['versions']['mil']}, numpy {meta['versions']['numpy']}, "
        f"scikit-learn {meta['versions']['scikit-learn']}; threads: {meta['threads']}.",
        "",
        "| data | side | settings | folds | accuracy % | AUROC | CPU s | of which start-up | wall s | peak MiB | load |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        au = "—" if r["auroc"] is None else f"{r['auroc']:.3f}"
        up = "—" if r["setup_cpu"] is None else f"{r['setup_cpu']:.1f}"
        lines.append(
            f"| {r['data']} | {r['side']} | {r['settings']} | {r['folds']} | "
            f"{100 * r['accuracy']:.1f} | {au} | {r['cpu']:.1f} | {up} | {r['wall']:.1f} | "
            f"{r['peak_mib']:.0f} | {r['load']:.2f} |")
    lines.append("")
    for data in dict.fromkeys(r["data"] for r in rows):
        ours = next(r for r in rows if r["data"] == data and r["side"] == "ours")
        parts = []
        for p in (r for r in rows if r["data"] == data and r["side"] != "ours"):
            # Per fold, so that a peer run on fewer folds than ours compares fairly; the
            # second figure leaves out the peer's interpreter start and imports.
            whole = (p["cpu"] / p["folds"]) / (ours["cpu"] / ours["folds"])
            loop = (sum(p["fold_cpu"]) / p["folds"]) / (ours["cpu"] / ours["folds"])
            nz = sum(p["test_nonzero"]) / len(p["test_nonzero"])
            parts.append(f"{p['tag']} {whole:.2f} ({loop:.2f} without its start-up; "
                         f"{min(p['selected'])}–{max(p['selected'])} prototypes selected "
                         f"per fold, {100 * nz:.1f}% of test similarities non-zero)")
        lines.append(f"- {data}: the peer's CPU time per fold over ours is "
                     + "; ".join(parts) + ".")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--peer-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--folds", help=argparse.SUPPRESS)
    ap.add_argument("--mode", choices=["defaults", "zscore"], help=argparse.SUPPRESS)
    ap.add_argument("--sigma2", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--cost", type=float, default=PEER_COST, help=argparse.SUPPRESS)
    ap.add_argument("--max-folds", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--data", default="musk1,musk2",
                    help="built-in data sets, comma-separated (default musk1,musk2)")
    ap.add_argument("--mil", default=ROOT / "target/release/mil", type=Path,
                    help="the mil binary (default target/release/mil)")
    ap.add_argument("--python", default=ROOT / "target/peer-venv/bin/python", type=Path,
                    help="Python with numpy, scikit-learn and mil 1.0.5 "
                         "(default target/peer-venv/bin/python)")
    ap.add_argument("--repetition", type=int, default=0,
                    help="which repetition of the folds file (default 0, the first)")
    ap.add_argument("--peer-cost", default="0.5,10",
                    help="the z-scored peer's C, one run each (default 0.5,10: the peer's "
                         "own default and ours); the peer at its defaults uses 0.5")
    ap.add_argument("--peer-folds", type=int, default=0,
                    help="run the peer on the first N folds only (default all)")
    ap.add_argument("--modes", default="defaults,zscore",
                    help="the peer's runs: defaults, zscore or both (default both)")
    ap.add_argument("--threads", choices=["default", "1"], default="default",
                    help="thread variables of both children: unset (default) or 1")
    ap.add_argument("--write", action="store_true",
                    help="replace the page block and write benches/results/miles_peer.*")
    ap.add_argument("--from-json", action="store_true",
                    help="run nothing: print (with --write, write) the block of the "
                         "measurements in benches/results/miles_peer.json")
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
            runs = [("ours", None, None)]
            for mode in args.modes.split(","):
                costs = ([PEER_COST] if mode == "defaults"
                         else [float(c) for c in args.peer_cost.split(",")])
                runs += [("peer", mode, c) for c in costs]
            for side, mode, cost in runs:
                print(f"{data}: {side} {mode or ''} {cost or ''}", file=sys.stderr,
                      flush=True)
                r = (run_ours(args, data, folds, env, tmp) if side == "ours"
                     else run_peer(args, data, folds, env, tmp, mode, cost))
                r["data"] = data
                rows.append(r)
                print(f"  accuracy {r['accuracy']:.3f}, {r['cpu']:.1f} CPU s, "
                      f"{r['wall']:.1f} s wall, {r['peak_mib']:.0f} MiB",
                      file=sys.stderr, flush=True)
    versions = next(r["versions"] for r in rows if "versions" in r)
    generated = ["docs/methods/miles.md", "benches/results/miles_peer.csv",
                 "benches/results/miles_peer.json"]
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
