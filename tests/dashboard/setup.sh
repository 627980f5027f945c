#!/usr/bin/env bash
# Prepares what the dashboard test needs and prints the folder whose node_modules holds
# playwright-core:
#   - Debian's chromium (/usr/bin/chromium) through hack/deps.sh;
#   - playwright-core, pinned in tests/dashboard/package-lock.json, installed with `npm ci` from the
#     npm registry into ${BERTH_CACHE:-~/.cache/berth}/dashboard-node (again only when the lock
#     file changes). playwright-core never downloads a browser; the driver launches Debian's.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
CACHE="${BERTH_CACHE:-$HOME/.cache/berth}/dashboard-node"

"$ROOT/hack/deps.sh"
if [ ! -x /usr/bin/chromium ]; then
  echo "tests/dashboard/setup.sh: /usr/bin/chromium is missing after hack/deps.sh" >&2; exit 1
fi
for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "tests/dashboard/setup.sh: $tool is not installed (Node.js >= 20 with npm is needed)" >&2; exit 1; }
done
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "tests/dashboard/setup.sh: Node.js $(node --version) is too old; playwright-core needs >= 20" >&2; exit 1
fi

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9
want=$(sha256sum "$HERE/package-lock.json" | cut -d' ' -f1)
have=$(cat "$CACHE/.installed" 2>/dev/null || true)
if [ "$want" != "$have" ] || [ ! -f "$CACHE/node_modules/playwright-core/package.json" ]; then
  echo "tests/dashboard/setup.sh: npm ci of playwright-core into $CACHE" >&2
  cp "$HERE/package.json" "$HERE/package-lock.json" "$CACHE/"
  rm -rf "$CACHE/node_modules"
  (cd "$CACHE" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >&2)
  echo "$want" > "$CACHE/.installed"
fi
echo "$CACHE"
