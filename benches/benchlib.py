"""What the generated-page scripts of benches/ share: atomic writes, the machine and the
commit that a page's numbers were measured on, and the peer benches' timed child runs,
folds files and AUROC."""

import csv
import io
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def atomic_write(path, text):
    """Writes the file whole or not at all (temporary file, fsync, rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def machine():
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": model, "cores": os.cpu_count()}


def commit(generated):
    """HEAD, marked `-dirty` when a tracked file other than the generated outputs
    (`generated`: git pathspecs relative to the root) differs from it: a rerun of part of
    a table is still at HEAD."""
    def git(*args):
        return subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=False
        ).stdout.strip()

    head = git("rev-parse", "--short=12", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".",
                *(f":!{g}" for g in generated))
    return head + ("-dirty" if dirty else "")


def auroc(labels, scores):
    """Mann-Whitney AUROC of the scores of the positive (1) against the negative bags."""
    pos = [s for y, s in zip(labels, scores) if y == 1]
    neg = [s for y, s in zip(labels, scores) if y != 1]
    if not pos or not neg:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def measure(cmd, env, out_path):
    """Runs cmd as a child with stdout to out_path: its CPU, peak RSS, wall and status."""
    load = os.getloadavg()[0]
    with open(out_path, "w") as out, open(out_path + ".err", "w") as err:
        t0 = time.perf_counter()
        child = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=ROOT)
        _, status, ru = os.wait4(child.pid, 0)
        wall = time.perf_counter() - t0
        child.returncode = os.waitstatus_to_exitcode(status)
    return {"cpu": ru.ru_utime + ru.ru_stime, "user": ru.ru_utime, "sys": ru.ru_stime,
            "peak_mib": ru.ru_maxrss / 1024, "wall": wall, "load": load,
            "status": child.returncode}


def folds_file(data, repetition, path):
    """Writes repetition `repetition` of benches/results/folds/DATA_seed1.csv as a
    --folds-file; returns the number of folds."""
    src = ROOT / f"benches/results/folds/{data}_seed1.csv"
    with open(src, newline="") as f, open(path, "w", newline="") as out:
        w = csv.writer(out)
        w.writerow(["bag_id", "label", "fold"])
        folds = set()
        for r in csv.DictReader(f):
            if int(r["repetition"]) == repetition:
                w.writerow([r["bag_id"], r["label"], r["fold"]])
                folds.add(r["fold"])
    if not folds:
        raise SystemExit(f"{src}: no repetition {repetition}")
    return len(folds)


PEER_FIELDS = ["data", "side", "settings", "folds", "bags", "accuracy", "auroc", "cpu",
               "user", "sys", "setup_cpu", "wall", "peak_mib", "load", "status"]


def publish(text, rows, meta, page_path, block_name, results, atomic_write):
    """Puts `text` between the page's `<!-- block_name:begin/end -->` markers (the rule of
    benches/replace_block.py) and writes the rows to `results`.csv and .json, each file
    replaced atomically."""
    page = page_path.read_text(encoding="utf-8")
    begin, end = f"<!-- {block_name}:begin -->", f"<!-- {block_name}:end -->"
    if page.count(begin) != 1 or page.count(end) != 1:
        raise SystemExit(f"{page_path}: expected one `{begin}` and one `{end}`")
    i, j = page.index(begin) + len(begin), page.index(end)
    atomic_write(page_path, page[:i] + "\n" + text + "\n" + page[j:])
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(PEER_FIELDS)
    for r in rows:
        w.writerow(["" if r.get(f) is None else r[f] for f in PEER_FIELDS])
    atomic_write(f"{results}.csv", buf.getvalue())
    atomic_write(f"{results}.json",
                 json.dumps({"meta": meta, "rows": rows}, indent=1, ensure_ascii=False)
                 + "\n")
