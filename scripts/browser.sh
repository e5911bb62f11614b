#!/usr/bin/env bash
# Makes sure Debian's Chromium (/usr/bin/chromium) and a Chinese font (fonts-wqy-zenhei, so the
# screenshots are readable) are installed for the browser tests (test/system/web, driven by
# playwright-core). Never downloads a browser of its own.
# Idempotent: returns at once when both are there.
set -euo pipefail

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ -e /usr/share/fonts/truetype/wqy/wqy-zenhei.ttc ] || missing+=(fonts-wqy-zenhei)
[ "${#missing[@]}" -eq 0 ] && exit 0

echo "browser: installing ${missing[*]} from Debian packages"
as_root apt-get update -qq
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
[ -x /usr/bin/chromium ] || { echo "browser: /usr/bin/chromium is still missing" >&2; exit 1; }
