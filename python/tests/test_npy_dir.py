"""A directory of .npy bags (one ``numpy.save`` file per bag and ``labels.csv``) loads
to exactly the bags, labels and values of the same data set written as CSV, and
cross-validates identically."""

import os

import numpy as np
import pytest

import miltk


def _scaled_musk1():
    """musk1 divided by 7: values that float32 cannot hold exactly (musk1's are integers)."""
    bags, y, ids = miltk.load_dataset("musk1", return_ids=True)
    return [b / 7.0 for b in bags], y, ids


def _write_both(tmp_path):
    """Scaled musk1 written twice: as a directory of .npy bags in several dtypes and
    layouts, and as CSV holding the values those files hold (widened to float64)."""
    bags, y, ids = _scaled_musk1()
    directory = tmp_path / "musk1"
    directory.mkdir()
    rows, labels = [], ["bag,label"]
    for i, (bag, label, bag_id) in enumerate(zip(bags, y, ids)):
        layout = i % 4
        if layout == 0:
            array = bag.astype(np.float32)
        elif layout == 1:
            array = np.asfortranarray(bag)
        elif layout == 2:
            array = bag.astype(">f8")
        else:
            array = bag.astype(">f4")
        np.save(directory / f"{bag_id}.npy", array)
        labels.append(f"{bag_id},{label}")
        for instance in np.asarray(array, dtype=np.float64):
            rows.append(",".join([str(label), str(bag_id)] + [repr(float(v)) for v in instance]))
    (directory / "labels.csv").write_text("\n".join(labels) + "\n")
    csv = tmp_path / "musk1.csv"
    csv.write_text("\n".join(rows) + "\n")
    return directory, csv


def test_a_npy_directory_loads_and_cross_validates_as_its_csv(tmp_path):
    directory, csv = _write_both(tmp_path)
    from_dir = miltk.load_dataset(directory)
    from_csv = miltk.load_dataset(str(csv))
    assert len(from_dir.bags) == len(from_csv.bags) == 92
    assert np.array_equal(from_dir.bag_ids, from_csv.bag_ids)
    assert np.array_equal(from_dir.target, from_csv.target)
    assert np.array_equal(from_dir.target_names, from_csv.target_names)
    for a, b in zip(from_dir.bags, from_csv.bags):
        assert a.dtype == b.dtype == np.float64
        assert np.array_equal(a, b)
    # A float32 bag holds its rounded values, a float64 one the values themselves.
    scaled, _, _ = _scaled_musk1()
    assert not np.array_equal(from_dir.bags[0], scaled[0])
    assert np.array_equal(from_dir.bags[0], scaled[0].astype(np.float32))
    assert np.array_equal(from_dir.bags[1], scaled[1])

    results = [
        miltk.cross_validate_native(miltk.CitationKNN(), d.bags, d.target, cv=10)
        for d in (from_dir, from_csv)
    ]
    for key in ("test_score", "predictions", "per_fold"):
        assert np.array_equal(results[0][key], results[1][key]), key
    for key in ("accuracy", "balanced_accuracy", "auroc"):
        assert results[0][key] == results[1][key], key


def test_a_malformed_directory_names_the_file(tmp_path):
    directory, _ = _write_both(tmp_path)
    first = next(p for p in sorted(directory.glob("*.npy")))
    first.write_bytes(first.read_bytes()[:-3])
    with pytest.raises(ValueError, match=f"{first.name}: data: truncated"):
        miltk.load_dataset(directory)


def test_a_large_directory_is_in_memory_once(tmp_path):
    """Loading 80 MB of float64 bags raises the process's peak resident memory by about
    the data's size, not twice it: the values read move into the NumPy array."""
    import subprocess
    import sys

    if not os.path.exists("/proc/self/clear_refs"):
        pytest.skip("needs Linux's /proc/self/clear_refs to reset the peak resident memory")

    directory = tmp_path / "big"
    directory.mkdir()
    n_bags, rows, dim = 100, 500, 200  # 100 x 500 x 200 x 8 B = 80 MB
    rng = np.random.default_rng(1)
    labels = ["bag,label"]
    for b in range(n_bags):
        np.save(directory / f"b{b}.npy", rng.standard_normal((rows, dim)))
        labels.append(f"b{b},{b % 2}")
    (directory / "labels.csv").write_text("\n".join(labels) + "\n")
    size = n_bags * rows * dim * 8
    # The peak resident memory (VmHWM) is reset to the current one just before the load
    # (Linux: `5` written to /proc/self/clear_refs), so its growth is the load's own.
    code = (
        "import miltk\n"
        "def kib(field):\n"
        "    for line in open('/proc/self/status'):\n"
        "        if line.startswith(field + ':'):\n"
        "            return int(line.split()[1])\n"
        "open('/proc/self/clear_refs', 'w').write('5')\n"
        "before = kib('VmRSS')\n"
        f"bags, y = miltk.load_dataset({str(directory)!r}, return_X_y=True)\n"
        "assert len(bags) == 100 and bags[0].shape == (500, 200)\n"
        "print((kib('VmHWM') - before) * 1024)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    grown = int(out.stdout.split()[-1])
    assert size * 0.9 < grown < size * 1.4, f"peak grew by {grown} B for {size} B of data"
