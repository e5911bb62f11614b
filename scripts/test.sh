#!/usr/bin/env bash
# The whole test suite against real Redis and MariaDB (started or installed if missing).
# Extra arguments go to Vitest, e.g. `scripts/test.sh test/modules/user`.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/services.sh
bash scripts/deps.sh
npm run --silent typecheck

results=$(mktemp -t hmdp-vitest-XXXXXX.json)
trap 'rm -f "$results"' EXIT
status=0
npm test -- --reporter=default --reporter=json --outputFile.json="$results" "$@" || status=$?

# One plain closing line that any CI can read, after Vitest's own summary.
node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped`);
' "$results" 2>/dev/null || true
exit "$status"
