#!/usr/bin/env bash
# Debian's Chromium for the MLflow UI tests (tests/ui, pytest -m ui); needs root (or sudo) and apt.
set -euo pipefail
command -v chromium >/dev/null && exit 0
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
command -v chromium
