#!/usr/bin/env bash
# Makes sure promtool (Debian package prometheus) is installed: the test suite checks the alert
# rules in ops/prometheus with `promtool check rules`, and scripts/topology.sh can start a
# Prometheus. Never downloads a binary of its own.
# Idempotent: returns at once when promtool is there.
set -euo pipefail

command -v promtool >/dev/null && exit 0
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
echo "promtool: installing prometheus from Debian packages"
as_root apt-get update -qq
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
command -v promtool >/dev/null || { echo "promtool: still missing after apt-get install prometheus" >&2; exit 1; }
