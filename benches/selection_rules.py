#!/usr/bin/env python3
"""Regenerates the "rules of choice" table of docs/guide/selection.md.

`mil cv DATA --classifier auto --json` reports, for every outer fold, every candidate's
inner score (`chosen[i].inner`). This script runs `auto` and each of its twelve
candidates alone on the same outer folds (10-fold CV, seeds 1 and 2), then scores other
rules of choice on those folds without refitting anything: each rule picks, per outer
fold, one candidate or a vote of several from the inner ranking, and its accuracy is
that of the picked candidates' own out-of-fold labels (a vote: their majority, a tie
going to the best-ranked, as `--vote` does). The rule "best inner score" must reproduce
`auto`'s accuracy bag for bag; the script stops if it does not. `auto` also runs with
its inner CV repeated on three fold assignments (`--inner-repeats 3`), whose ranking the
same rules are applied to.

It also measures how far the best single classifier chosen after the fact is from what
any rule can reach: the classifier best on one seed's folds, scored on the other seed's.

Usage: benches/selection_rules.py [--mil PATH] [--reports DIR] [--jobs N] [--write]
  --reports DIR keeps the runs' reports (default target/selection_rules/) and reuses
  those already there; about 150 CPU minutes from scratch. --write replaces the block
  between the `selection-rules:begin`/`:end` markers of docs/guide/selection.md.
"""

import argparse
import collections
import csv
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

SETS = ["musk1", "musk2", "elephant", "fox", "tiger"]
SEEDS = [1, 2]
# `auto`'s twelve candidates at their defaults: the prefix of the name `auto` reports, a
# file name, the name in the table, and the arguments that fit it alone.
CANDIDATES = [
    ("simple-mi", "simple-mi", "SimpleMI", ["--classifier", "simple-mi"]),
    ("mi-vlad", "mi-vlad", "miVLAD", ["--classifier", "mi-vlad"]),
    ("mi-fv", "mi-fv", "miFV", ["--classifier", "mi-fv"]),
    ("svm (kand kernel", "svm-kand", "SVM k∧", ["--classifier", "svm", "--kernel", "kand"]),
    ("svm (kandor kernel", "svm-kandor", "SVM k∧∨", ["--classifier", "svm", "--kernel", "kandor"]),
    ("svm (nsk kernel", "svm-nsk", "SVM NSK", ["--classifier", "svm", "--kernel", "nsk"]),
    (
        "svm (mi-rbf kernel",
        "svm-mi-rbf",
        "SVM MI kernel",
        ["--classifier", "svm", "--kernel", "mi-rbf", "--scaling", "minmax"],
    ),
    (
        "citation-knn",
        "citation-knn",
        "Citation-kNN",
        ["--classifier", "citation-knn", "--references", "2", "--citers", "4"],
    ),
    ("milr", "milr", "MILR", ["--classifier", "milr"]),
    ("mi-graph", "mi-graph", "mi-Graph", ["--classifier", "mi-graph"]),
    ("attention", "attention", "attention", ["--classifier", "attention"]),
    ("miles", "miles", "MILES", ["--classifier", "miles"]),
]


# `auto`'s runs: a name, the arguments beside `--classifier auto`, and how the rules
# name the ranking they take.
AUTOS = [
    ("auto", [], ""),
    ("auto-r3", ["--inner-repeats", "3"], ", inner CV on 3 fold assignments"),
]


def run(mil, reports, name, data, seed, args):
    out = os.path.join(reports, f"{name}_{data}_{seed}.json")
    if os.path.exists(out) and os.path.getsize(out) > 0:
        return
    command = [mil, "cv", data, *args, "--folds", "10", "--seed", str(seed), "--json"]
    if name == "auto":
        command += ["--save-folds", os.path.join(reports, f"folds_{data}_{seed}.csv")]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{result.stderr}")
    with open(out + ".tmp", "w") as f:
        f.write(result.stdout)
    os.replace(out + ".tmp", out)


def candidate_of(name):
    for prefix, slug, _, _ in CANDIDATES:
        if name.startswith(prefix):
            return slug
    sys.exit(f"no candidate of auto is named like {name!r}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mil", default="target/release/mil")
    parser.add_argument("--reports", default="target/selection_rules")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--write", action="store_true")
    a = parser.parse_args()
    os.makedirs(a.reports, exist_ok=True)
    jobs = [(name, d, s, ["--classifier", "auto", *extra]) for s in SEEDS for d in SETS for name, extra, _ in AUTOS]
    jobs += [(slug, d, s, args) for s in SEEDS for d in SETS for _, slug, _, args in CANDIDATES]
    with ThreadPoolExecutor(a.jobs) as pool:
        for f in [pool.submit(run, a.mil, a.reports, *j) for j in jobs]:
            f.result()

    def report(name, data, seed):
        with open(os.path.join(a.reports, f"{name}_{data}_{seed}.json")) as f:
            return json.load(f)

    names = [slug for _, slug, _, _ in CANDIDATES]
    shown = {slug: name for _, slug, name, _ in CANDIDATES}
    # rule -> data -> [hits, bags]
    tally = collections.defaultdict(lambda: collections.defaultdict(lambda: [0, 0]))
    for data in SETS:
        for seed in SEEDS:
            labels = {
                n: {p["bag"]: p["label"] for p in report(n, data, seed)["predictions"]}
                for n in names
            }
            folds = collections.defaultdict(list)
            truth = {}
            with open(os.path.join(a.reports, f"folds_{data}_{seed}.csv")) as f:
                for row in csv.DictReader(f):
                    folds[int(row["fold"])].append(row["bag_id"])
                    truth[row["bag_id"]] = row["label"]
            for name, extra, how in AUTOS:
                auto = report(name, data, seed)
                labels[name] = {p["bag"]: p["label"] for p in auto["predictions"]}
                for i, fold in enumerate(sorted(folds)):
                    bags = folds[fold]
                    inner = [(candidate_of(c["candidate"]), c["score"]) for c in auto["chosen"][i]["inner"]]

                    def count(rule, members, suffix=how):
                        hits = 0
                        for b in bags:
                            votes = collections.Counter()
                            for rank, m in enumerate(members):
                                votes[labels[m][b]] += 1.5 if rank == 0 else 1
                            hits += votes.most_common(1)[0][0] == truth[b]
                        tally[rule + suffix][data][0] += hits
                        tally[rule + suffix][data][1] += len(bags)
                        return hits

                    best = [m for m, _ in inner]
                    itself = f"`{name}` itself"
                    shown_auto = " ".join(["auto", *extra])
                    if count(f"best inner score (`{shown_auto}`)", best[:1], "") != count(itself, [name]):
                        sys.exit(f"{data} seed {seed} fold {fold}: the best inner candidate's labels are not {name}'s")
                    for k in (3, 5, 7, 12):
                        count(f"vote of the best {k} (`--vote {k}`)", best[:k])
                    top = inner[0][1]
                    for d in (0.01, 0.03, 0.05):
                        within = [m for m, s in inner if s is not None and s >= top - d]
                        count(f"vote of all within {d} of the best inner AUROC", within)
                    close = inner[1][1] is not None and top - inner[1][1] < 0.02
                    count("vote of 3 if the first two are within 0.02, else the best", best[:3] if close else best[:1])
            for n in names:
                r = report(n, data, seed)
                tally[f"single: {n}"][data][0] += round(r["accuracy"] * len(truth))
                tally[f"single: {n}"][data][1] += len(truth)

    def accuracy(rule, data):
        hits, bags = tally[rule][data]
        return 100 * hits / bags

    best_single = {d: max(accuracy(f"single: {n}", d) for n in names) for d in SETS}
    version = subprocess.run([a.mil, "--version"], capture_output=True, text=True).stdout.strip()
    lines = [
        f"{version}; {os.cpu_count()} cores; 10-fold CV, seeds {' and '.join(map(str, SEEDS))} (accuracy %, pooled)",
        "",
        "| rule of choice per outer fold | " + " | ".join(SETS) + " | mean gap to the best single | worst gap |",
        "|---|" + "---:|" * (len(SETS) + 2),
    ]
    rules = [r for r in tally if not r.startswith("single: ") and " itself" not in r]
    # The repeated inner CV's ranking: the rules that differ most in kind.
    repeated = [how for _, _, how in AUTOS if how]
    kept = ("best inner score", "vote of the best 3 ", "vote of the best 7 ", "vote of all within 0.05")
    rules = [r for r in rules if not any(r.endswith(h) for h in repeated) or r.startswith(kept)]
    for rule in rules + [f"single: {n}" for n in names]:
        gaps = [accuracy(rule, d) - best_single[d] for d in SETS]
        cells = " | ".join(f"{accuracy(rule, d):.1f}" for d in SETS)
        name = f"{shown[rule[8:]]} alone" if rule.startswith("single: ") else rule
        lines.append(f"| {name} | {cells} | {sum(gaps) / len(gaps):+.1f} | {min(gaps):+.1f} |")
    lines += ["", "The best single classifier on one seed's folds, scored on the other seed's:", ""]
    lines += ["| data | chosen on seed 1 → its accuracy on seed 2 (best there) | chosen on seed 2 → on seed 1 (best there) | mean loss |", "|---|---|---|---:|"]
    for data in SETS:
        acc = {s: {n: 100 * report(n, data, s)["accuracy"] for n in names} for s in SEEDS}
        cells, losses = [], []
        for seed, other in ((1, 2), (2, 1)):
            pick = max(acc[seed], key=acc[seed].get)
            there = max(acc[other].values())
            cells.append(f"{shown[pick]} → {acc[other][pick]:.1f} ({there:.1f})")
            losses.append(there - acc[other][pick])
        lines.append(f"| {data} | {cells[0]} | {cells[1]} | {sum(losses) / 2:.1f} |")
    block = "\n".join(lines)
    print(block)
    if a.write:
        subprocess.run(
            [sys.executable, "benches/replace_block.py", "docs/guide/selection.md", "selection-rules"],
            input=block,
            text=True,
            check=True,
        )


if __name__ == "__main__":
    main()
