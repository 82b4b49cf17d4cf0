#!/usr/bin/env bash
# Checks the guide site: builds it with `mkdocs build --strict` (mkdocs.yml makes broken
# links, unknown anchors and pages missing from the nav warnings, so errors), checks that
# the Python API page documents every name of `miltk.__all__`, then serves the built site
# from 127.0.0.1 with `python -m http.server` and loads every page in headless Chromium
# through Selenium: any SEVERE browser console entry, any request the server answers
# with an error and any request to another host fails the check, naming page and message.
#
# Usage: scripts/check-docs.sh              check docs/ (the site goes to target/site)
#        scripts/check-docs.sh --self-test  show that the check fails: a copy of the site
#                                           with a broken link, a broken anchor, a missing
#                                           image and a script error must be reported,
#                                           each by name
#
# Needs Python ≥ 3.9 with venv, and Chromium with its driver (Debian: chromium,
# chromium-driver; installed with apt-get when run as root).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# The build environment: target/docsenv with docs/requirements.txt, reinstalled only
# when the requirements change.
venv=target/docsenv
if ! [ -x "$venv/bin/python" ] && ! python3 -m venv "$venv"; then
    # Debian's own python3 keeps venv in a separate package.
    [ "$(id -u)" = 0 ] && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv "$venv"
fi
if ! cmp -s docs/requirements.txt "$venv/requirements.txt"; then
    "$venv/bin/pip" install -q --upgrade pip
    "$venv/bin/pip" install -q -r docs/requirements.txt
    cp docs/requirements.txt "$venv/requirements.txt"
fi
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
    else
        echo "chromium and chromedriver are missing: install them (Debian: apt-get install chromium chromium-driver)" >&2
        exit 1
    fi
fi
export NO_MKDOCS_2_WARNING=1 # Material's notice about its successor, on every build

# Builds the site of the mkdocs.yml in $1 (strictly unless $2 is "lenient"), printing
# MkDocs' warnings and errors. (Not `--quiet`: it hides the warnings from the count that
# `--strict` fails on.)
build() {
    local strict=--strict
    if [ "${2:-}" = lenient ]; then strict=--no-strict; fi
    (cd "$1" && "$root/$venv/bin/mkdocs" build $strict 2>&1) | { grep -v '^INFO ' || true; }
}

# Every name of miltk.__all__ has its entry (an element with id "miltk.NAME") on the API page.
api_complete() {
    "$venv/bin/python" - "$1/api/python/index.html" <<'PY'
import ast, pathlib, re, sys
init = pathlib.Path("python/miltk/__init__.py").read_text()
names = ast.literal_eval(re.search(r"^__all__ = (\[.*?\])", init, re.M | re.S).group(1))
page = pathlib.Path(sys.argv[1]).read_text()
missing = [n for n in names if f'id="miltk.{n}"' not in page]
if missing:
    sys.exit(f"{sys.argv[1]}: no entry for miltk.{', miltk.'.join(missing)}")
print(f"api/python: all {len(names)} names of miltk.__all__ documented")
PY
}

# Loads every page of the built site in $1 in headless Chromium; prints one line per
# problem ("page: message") and exits 1 if there is any.
browse() {
    "$venv/bin/python" - "$1" <<'PY'
import re, socket, subprocess, sys, tempfile, threading, time
from pathlib import Path
from urllib.parse import urlsplit

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

site = Path(sys.argv[1]).resolve()
pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html"))

with socket.socket() as s:  # a free port
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
server = subprocess.Popen(
    [sys.executable, "-u", "-m", "http.server", str(port), "--bind", "127.0.0.1",
     "--directory", str(site)],
    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
requests = []  # (path, status) as the server logs them
def read_log():
    for line in server.stderr:
        m = re.search(r'"[A-Z]+ (\S+) HTTP/[\d.]+" (\d{3})', line)
        if m:
            requests.append((m.group(1), int(m.group(2))))
threading.Thread(target=read_log, daemon=True).start()
for _ in range(100):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        break
    except OSError:
        time.sleep(0.1)

profile = tempfile.TemporaryDirectory(prefix="check-docs-chromium-")
options = webdriver.ChromeOptions()
options.binary_location = "/usr/bin/chromium"
for arg in ["--headless=new", "--no-sandbox", "--disable-gpu",
            "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
            f"--user-data-dir={profile.name}"]:
    options.add_argument(arg)
options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
driver = webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))

problems = []
try:
    for page in pages:
        seen = len(requests)
        driver.get(f"http://127.0.0.1:{port}/{page}")
        # Loaded, and no new resource for 0.3 s (the search worker fetches its index).
        count, quiet_since, deadline = -1, time.time(), time.time() + 10
        while time.time() < deadline:
            state = driver.execute_script("return document.readyState")
            n = driver.execute_script("return performance.getEntriesByType('resource').length")
            if n != count:
                count, quiet_since = n, time.time()
            elif state == "complete" and time.time() - quiet_since > 0.3:
                break
            time.sleep(0.05)
        for entry in driver.get_log("browser"):
            if entry["level"] == "SEVERE":
                problems.append(f"{page}: console: {entry['message']}")
        for url in driver.execute_script(
                "return performance.getEntriesByType('resource').map(e => e.name)"):
            host = urlsplit(url).hostname
            if host not in (None, "127.0.0.1"):
                problems.append(f"{page}: external request: {url}")
        time.sleep(0.1)  # the server logs a request after answering it
        for path, status in requests[seen:]:
            if status >= 400:
                problems.append(f"{page}: failed load: {path} (HTTP {status})")
finally:
    driver.quit()
    server.terminate()
    profile.cleanup()

for p in problems:
    print(p)
print(f"browser: {len(pages)} pages loaded, {len(problems)} problems")
sys.exit(1 if problems else 0)
PY
}

if [ "${1:-}" = --self-test ]; then
    # A copy of the sources with a planted page: a link to a page that does not exist and
    # one to a heading that does not exist (MkDocs must refuse both), and an image that does not exist and a script error (raw
    # HTML, which MkDocs does not check: the browser must report them).
    copy=target/docs-self-test
    rm -rf "$copy" && mkdir -p "$copy"
    cp -r docs mkdocs.yml "$copy/"
    ln -s "$root/python" "$copy/python" # mkdocstrings reads the package's sources
    sed -i "s#^site_dir: .*#site_dir: site#" "$copy/mkdocs.yml"
    cat > "$copy/docs/planted.md" <<'EOF'
# Planted

See [a page that is not there](no-such-page.md) and
[a section that is not there](index.md#no-such-section).

<img src="img/no-such-figure.svg" alt="a figure that is not there">

<script>notDefinedAnywhere();</script>
EOF
    sed -i 's#^  - Home: index.md#  - Home: index.md\n  - Planted: planted.md#' "$copy/mkdocs.yml"
    fail=0
    if out=$(build "$copy" 2>&1); then
        echo "self-test: mkdocs build --strict accepted a broken link" >&2
        fail=1
    else
        for link in no-such-page.md index.md#no-such-section; do
            if grep -q "planted.md.*$link" <<<"$out"; then
                echo "self-test: reported: $(grep -m1 -- "$link" <<<"$out")"
            else
                echo "self-test: the strict build failed without naming $link:" >&2
                echo "$out" >&2
                fail=1
            fi
        done
    fi
    build "$copy" lenient >/dev/null 2>&1
    if out=$(browse "$copy/site" 2>&1); then
        echo "self-test: the browser check passed a page with a missing image" >&2
        fail=1
    fi
    for expected in "planted/index.html: failed load: /planted/img/no-such-figure.svg" \
        "planted/index.html: console: .*no-such-figure.svg" \
        "planted/index.html: console: .*notDefinedAnywhere"; do
        if grep -q -- "$expected" <<<"$out"; then
            echo "self-test: reported: $(grep -m1 -- "$expected" <<<"$out")"
        else
            echo "self-test: not reported: $expected" >&2
            fail=1
        fi
    done
    if grep -v '^planted/' <<<"$out" | grep -q '^[^ ]*\.html: '; then
        echo "self-test: problems reported on pages without planted faults:" >&2
        grep -v '^planted/' <<<"$out" >&2
        fail=1
    fi
    rm -rf "$copy"
    [ "$fail" = 0 ] && echo "self-test: passed"
    exit "$fail"
fi

build .
api_complete target/site
browse target/site
