"""The Python examples of the README, of the guide's Python page and of this package's
README run as written: each file's ```python blocks are executed in order in one
namespace, as a reader would paste them."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["README.md", "docs/guide/python.md", "python/README.md"]
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def python_blocks(page):
    return BLOCK.findall((ROOT / page).read_text(encoding="utf-8"))


def write_scripts(directory):
    """Each page's examples as one script in `directory` (`README.md` becomes
    `README_md.py`), for a type checker; returns their paths."""
    paths = []
    for page in PAGES:
        path = Path(directory) / (page.replace("/", "_").replace(".", "_") + ".py")
        path.write_text("\n".join(python_blocks(page)), encoding="utf-8")
        paths.append(path)
    return paths


@pytest.mark.parametrize("page", PAGES)
def test_examples_run(page, capsys):
    blocks = python_blocks(page)
    assert blocks, f"{page} has no ```python block"
    namespace = {"__name__": "__example__"}
    for i, code in enumerate(blocks, 1):
        exec(compile(code, f"{page} (python block {i})", "exec"), namespace)
    # Every page's examples print a result; the first block's cross-validated accuracy
    # of Citation-kNN on musk1 is a probability well above chance.
    printed = capsys.readouterr().out.split()
    assert printed
    accuracy = float(printed[0])
    assert 0.5 < accuracy <= 1.0, printed


if __name__ == "__main__":
    import sys

    for written in write_scripts(sys.argv[1]):
        print(written)
