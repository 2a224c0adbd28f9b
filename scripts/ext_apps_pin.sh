#!/usr/bin/env bash
# Check (or, with --update, refresh) the pinned MCP Apps schema against the npm package:
# installs @modelcontextprotocol/ext-apps at the version schema/extensions/pins.json names into
# $PEERS/ext-apps (default .peers, git-ignored; Node >= 20 and npm on PATH, e.g. after
# scripts/peers.sh) and compares the sha256 of its dist/src/generated/schema.json and LICENSE
# with the pins. Prints what differs and exits 1 on a mismatch; --update copies the files
# over and rewrites the pins (then run tests/test_mcp_apps.py).
set -euo pipefail
cd "$(dirname "$0")/.."
PEERS=${PEERS:-$PWD/.peers}
PINS=schema/extensions/pins.json
VERSION=$(python3 -c "import json; print(next(e['version'] for e in json.load(open('$PINS'))['extensions'] if e['identifier'] == 'io.modelcontextprotocol/ui'))")
DIR="$PEERS/ext-apps"
mkdir -p "$DIR"
[ -f "$DIR/package.json" ] || echo '{"name": "ext-apps-pin", "private": true}' > "$DIR/package.json"
PACKAGE="$DIR/node_modules/@modelcontextprotocol/ext-apps"
if [ "$(python3 -c "import json; print(json.load(open('$PACKAGE/package.json'))['version'])" 2>/dev/null)" != "$VERSION" ]; then
  (cd "$DIR" && npm install --no-audit --no-fund --loglevel=error "@modelcontextprotocol/ext-apps@$VERSION" >/dev/null)
fi
python3 - "$PACKAGE" "$PINS" "${1:-}" <<'PY'
import hashlib, json, shutil, sys
from pathlib import Path

package, pins_path, mode = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
pins = json.loads(pins_path.read_text())
entry = next(e for e in pins["extensions"] if e["identifier"] == "io.modelcontextprotocol/ui")
here = pins_path.parent
pairs = [("schema", "sha256", package / "dist/src/generated/schema.json"), ("license", "license_sha256", package / "LICENSE")]
wrong = 0
for file_key, sha_key, upstream in pairs:
    digest = hashlib.sha256(upstream.read_bytes()).hexdigest()
    if digest != entry[sha_key]:
        wrong += 1
        print(f"{entry[file_key]}: npm {entry['version']} has sha256 {digest}, pinned {entry[sha_key]}")
        if mode == "--update":
            shutil.copyfile(upstream, here / entry[file_key])
            entry[sha_key] = digest
if mode == "--update" and wrong:
    pins_path.write_text(json.dumps(pins, indent=2) + "\n")
    print("updated; run tests/test_mcp_apps.py")
elif wrong:
    sys.exit(1)
else:
    print(f"ext-apps {entry['version']}: schema and LICENSE match the pins")
PY
