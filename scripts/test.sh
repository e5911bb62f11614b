#!/usr/bin/env bash
# The whole test suite: services, dependencies, static checks (types, lint, format), then the
# three test tiers (unit, integration, system; docs/testing.md) against real Redis and MariaDB
# (started or installed if missing); it ends with Vitest's own summary. Extra arguments go to
# Vitest, e.g. `scripts/test.sh --project unit` or `scripts/test.sh test/integration/modules/users`.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/services.sh
bash scripts/deps.sh

# The static checks (tsc and vue-tsc, ESLint, Prettier: what `npm run check` runs one after the
# other) and what the system tier needs (Debian's Chromium, web/dist) run side by side: each of the
# checks uses one core and the browser's install mostly waits on the network. The system tier's
# global setup finds both ready and returns at once.
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
steps=(typecheck lint format browser web)
step() {
  case $1 in
    typecheck) npm run --silent typecheck ;;
    lint) npm run --silent lint ;;
    format) npm run --silent format:check ;;
    browser) bash scripts/browser.sh ;;
    web) node scripts/build-web.mjs ;;
  esac
}
for name in "${steps[@]}"; do
  (if step "$name" >"$logs/$name.log" 2>&1; then echo 0; else echo 1; fi >"$logs/$name.rc") &
done
wait
failed=()
for name in "${steps[@]}"; do
  cat "$logs/$name.log"
  [ "$(cat "$logs/$name.rc")" = 0 ] || failed+=("$name")
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "test: failed before any test ran: ${failed[*]}" >&2
  exit 1
fi

exec npm test -- "$@"
