#!/usr/bin/env python3
"""The product describes itself, not how it was built: this check fails on issue
references and process words in every tracked text file except CHANGELOG.md, the one
place for history.

    python3 scripts/check-words.py                  # check the repository
    python3 scripts/check-words.py --exclude PATH   # also skip PATH (a file or folder)
    python3 scripts/check-words.py --self-test      # check the check on a planted repository

Prints `file:line: matched text (rule)` for each hit and exits 1 if there is any, 0 if
none, 2 on a usage error. Standard library only.
"""

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

# What is refused, one rule a row: (name, pattern). Patterns are case-insensitive.
RULES = [
    # A hash and 1–4 digits after the start of a line, a space, `(` or `[`,
    # not followed by a letter or digit. This leaves alone hex colours (#1f77b4),
    # attributes (#[derive], #![no_std]), Markdown headings and shell comments (`# `),
    # and assembler immediates, which follow a comma (`ldr r0, [r1], #4`).
    ("issue reference", r"(?:^|(?<=[(\[])|(?<!,\s)(?<=\s))#\d{1,4}(?![0-9a-z_])"),
    # The words issue(s), PR(s), pull request(s) or ticket(s) before a number or a list
    # of numbers, with or without a hash.
    ("issue reference", r"\b(?:issues?|PRs?|pull requests?|tickets?)\s+#?\d+"
                        r"(?:\s*(?:,|and|&)\s*#?\d+)*"),
    ("issue reference", r"\b(?:the|this|that)\s+issue\b"),
    ("process word", r"\bwaves?\b"),
    ("process word", r"\bsessions?\b"),
    ("process word", r"\btargets?\s+(?:(?:was|were|is|are|not)\s+)?(?:met|missed|reached)\b"),
    ("process word", r"\b(?:last|this|previous|next|earlier|later|first|second|third)"
                     r"\s+rounds?\b"),
    ("process word", r"\bteam['’]s\b"),
    ("process word", r"\bre-?measured\b"),
    ("process word", r"\blast\s+time\b"),
    ("process word", r"\((?:was|previously|formerly)\s"),
    ("process word", r"\b(?:sprints?|milestones?)\b"),
]

# Legitimate uses, removed from a line before the rules run: (pattern, why).
ALLOW = [
    # pytest's fixture scope is named "session" by pytest's API.
    (r"""scope\s*=\s*["']session["']""", "pytest fixture scope"),
]

# Never checked: the history file, this file (it names the words it looks for), and
# data or generated files.
HISTORY = {"CHANGELOG.md"}
SELF = "scripts/check-words.py"
DATA_SUFFIXES = {
    ".csv", ".arff", ".milm", ".npy", ".npz", ".svg", ".png", ".jpg", ".jpeg", ".gif",
    ".pdf", ".gz", ".zip", ".bin", ".elf", ".whl",
}

COMPILED = [(name, re.compile(p, re.IGNORECASE)) for name, p in RULES]
# One pass over every line with all rules at once; only lines it matches get the rules
# one by one (to name the rule).
ANY = re.compile("|".join(f"(?:{p})" for _, p in RULES), re.IGNORECASE)
ALLOWED = [re.compile(p, re.IGNORECASE) for p, _ in ALLOW]


def tracked_files(root):
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z"],
            check=True, capture_output=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        detail = getattr(e, "stderr", b"") or str(e).encode()
        sys.exit(f"check-words: cannot list the tracked files of {root} with git: "
                 f"{detail.decode(errors='replace').strip()}")
    return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]


def skipped(path, excludes):
    if Path(path).name in HISTORY or path == SELF:
        return True
    if Path(path).suffix.lower() in DATA_SUFFIXES:
        return True
    return any(path == e or path.startswith(e.rstrip("/") + "/") for e in excludes)


def check(root, excludes=()):
    """Every hit in `root`'s tracked text files: (path, line number, matched text, rule)."""
    hits = []
    for path in tracked_files(root):
        if skipped(path, excludes):
            continue
        try:
            data = (Path(root) / path).read_bytes()
        except (FileNotFoundError, IsADirectoryError):
            continue  # deleted in the working tree, or a submodule
        if b"\0" in data[:8192]:
            continue  # binary
        text = data.decode("utf-8", "replace")
        for number, line in enumerate(text.splitlines(), 1):
            if not ANY.search(line):
                continue
            for allowed in ALLOWED:
                line = allowed.sub(" ", line)
            spans = []  # one report per stretch of text (two rules may match one reference)
            for name, rule in COMPILED:
                for m in rule.finditer(line):
                    if all(m.end() <= a or m.start() >= b for a, b in spans):
                        spans.append(m.span())
                        hits.append((path, number, m.group(0), name))
    return hits


def self_test():
    """Plants each rule's words in a file of a fresh git repository and in its
    CHANGELOG.md; every planted line must be reported, nothing from the CHANGELOG, the
    data file or the clean file, and the repository must pass once the planted file
    is gone."""
    # The planted text names the words only through these pieces, so that this file
    # reads as what it checks, not as history.
    h, i, w = "#", "issue", "wa" + "ve"
    se, ta, ro, te = "ses" + "sion", "tar" + "get", "ro" + "und", "te" + "am"
    planted = [
        f"Fixes {h}12.",
        f"The bound ({h}7) holds.",
        f"{h}19 is the wide-data case.",
        f"see [{h}3]",
        f"as in {i} 12",
        f"{i.capitalize()}s 12 and 13 say so.",
        f"from {i} {h}22",
        "PR 7 added it",
        f"the {i}'s check",
        f"the first {w}'s estimator",
        f"after the second {w}",
        f"in this {se}",
        f"in the previous {se}",
        f"{ta} met",
        f"{ta}s missed: two",
        f"the {ta} was met",
        f"the last {ro} of work",
        f"this {ro} adds",
        f"the {te}'s notes",
        f"the {te.capitalize()}’s architecture notes",
        "re-measured on a quiet machine",
        "remeasured",
        "unlike last time",
        "now 2.1 s (was 6.1 s)",
        "the next sprint",
    ]
    clean = [
        "color: #1f77b4; border: #123456; #fff",
        "#[derive(Debug)]",
        "#![no_std]",
        "# A shell comment with 12 items",
        "## 2. A Markdown heading",
        '"ldr {t0}, [{x}], #4',
        '"subs {0}, #1",',
        '@pytest.fixture(scope="session")',
        "two rounds of Gram-Schmidt; round-off; a round trip",
        "a waveform, a microwave",
        "rounds to nearest; status 2",
        "an issue of scale is not a reference",
        "value#1 and x#12",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        git = ["git", "-C", tmp]
        subprocess.run(git + ["init", "-q"], check=True)
        (root / "notes.md").write_text("\n".join(["intro"] + planted) + "\n")
        (root / "CHANGELOG.md").write_text("\n".join(planted) + "\n")
        (root / "clean.rs").write_text("\n".join(clean) + "\n")
        (root / "data.csv").write_text("\n".join(planted) + "\n")
        (root / "blob").write_bytes(b"\0binary " + "\n".join(planted).encode())
        (root / "untracked.md").write_text("\n".join(planted) + "\n")
        subprocess.run(
            git + ["add", "notes.md", "CHANGELOG.md", "clean.rs", "data.csv", "blob"],
            check=True,
        )

        hits = check(root)
        failures = []
        reported = {n for p, n, _, _ in hits if p == "notes.md"}
        for number, line in enumerate(planted, 2):
            if number not in reported:
                failures.append(f"planted line not reported: {line!r}")
        if 1 in reported:
            failures.append("the clean first line of notes.md was reported")
        for p, n, m, rule in hits:
            if p != "notes.md":
                failures.append(f"reported outside the planted file: {p}:{n}: {m} ({rule})")

        subprocess.run(git + ["rm", "-q", "--cached", "notes.md"], check=True)
        after = check(root)
        if after:
            failures.append(f"a repository without planted words fails: {after}")

    if failures:
        print("check-words self-test FAILED:", *failures, sep="\n  ", file=sys.stderr)
        return 1
    print(f"check-words self-test: {len(planted)} planted lines reported, "
          f"{len(clean)} clean lines and the CHANGELOG passed")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--self-test", action="store_true",
                        help="run the check on a planted temporary repository")
    parser.add_argument("--exclude", action="append", default=[], metavar="PATH",
                        help="also skip this tracked file or folder (repeatable)")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    root = Path(__file__).resolve().parent.parent
    hits = check(root, args.exclude)
    for path, number, text, rule in hits:
        print(f"{path}:{number}: {text} ({rule})")
    if hits:
        print(f"{len(hits)} history words or issue references; history belongs in "
              "CHANGELOG.md (rules: the table at the top of scripts/check-words.py)",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
