#!/usr/bin/env bash
# Usage: scripts/debian-command.sh COMMAND PACKAGE
# Makes sure COMMAND is on the PATH, installing Debian's PACKAGE with apt-get when it is missing
# (wrk for the bench, promtool for the alert tests). Never downloads a binary of its own.
# Idempotent: returns at once when COMMAND is there. Needs root or sudo and a Debian mirror.
set -euo pipefail

command=${1:?usage: debian-command.sh COMMAND PACKAGE}
package=${2:?usage: debian-command.sh COMMAND PACKAGE}
command -v "$command" >/dev/null && exit 0
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
echo "$command: installing $package from Debian packages" >&2
as_root apt-get update -qq
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$package" >/dev/null
command -v "$command" >/dev/null || { echo "$command: still missing after apt-get install $package" >&2; exit 1; }
