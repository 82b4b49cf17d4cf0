"""Replaces the generated block NAME in a Markdown page with standard input.

Usage: python3 benches/replace_block.py PAGE NAME < block

The block sits between the lines `<!-- NAME:begin -->` and `<!-- NAME:end -->`; both
markers must be present once. The page is rewritten through a temporary file and a
rename, so an interrupted run leaves the old page.
"""

import os
import sys


def main():
    page, name = sys.argv[1], sys.argv[2]
    block = sys.stdin.read().rstrip("\n")
    text = open(page, encoding="utf-8").read()
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    if text.count(begin) != 1 or text.count(end) != 1:
        sys.exit(f"{page}: expected one `{begin}` and one `{end}`")
    i, j = text.index(begin) + len(begin), text.index(end)
    if j < i:
        sys.exit(f"{page}: `{end}` comes before `{begin}`")
    text = text[:i] + "\n" + block + "\n" + text[j:]
    tmp = page + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, page)
    print(f"{page} updated ({name})", file=sys.stderr)


if __name__ == "__main__":
    main()
