#!/usr/bin/env bash
# The system packages the tests need, installed with apt-get (as root) where missing:
# QEMU (tests/firmware.rs runs the firmware on an emulated Cortex-M4), a single-node Slurm
# cluster's packages (tests/slurm.rs) and Chromium with its driver (scripts/check-docs.sh
# loads the guide site in it). Without root or apt-get, a missing package is an error that
# names it. scripts/test-all.sh runs it; .ci/run runs it early, in the background.
set -euo pipefail

as_root=false
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    as_root=true
    apt-get update -qq
fi

# need WHAT CHECK [APT-OPTION] PACKAGE...: installs the packages unless CHECK succeeds.
need() {
    local what=$1 check=$2
    shift 2
    if eval "$check" >/dev/null 2>&1; then
        return
    fi
    if ! $as_root; then
        echo "$what is missing: install ${*#--*} (Debian's packages, as root)" >&2
        exit 1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

need QEMU "command -v qemu-system-arm" qemu-system-arm
# The Slurm daemons need root; munge authenticates them.
need Slurm "command -v sbatch && [ -x /usr/sbin/munged ]" --no-install-recommends \
    slurm-wlm slurmctld slurmd slurm-client munge
need Chromium "command -v chromium && command -v chromedriver" chromium chromium-driver
