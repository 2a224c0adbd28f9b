#!/usr/bin/env bash
# Mutation testing of the security-critical modules and the typed-tools layer with Cosmic
# Ray (a maintained mutation tester from PyPI: the `mutation` extra). Each module has its
# config in scripts/mutation/ (<name>.toml): the module, the functions whose mutants run
# (the ones carrying promises, applied by scripts/mutation_scope.py), and the test command
# that runs only the tests covering it, stopping at the first failure (-x). Cosmic Ray
# writes each mutant into the source file in place (the editable install imports it), runs
# the tests, and restores the file; one mutant at a time (one worker).
#
# Usage: scripts/mutation.sh [MODULE...]   (default: every module; names: the .toml files)
#        PYTHON=path/to/python (default .venv/bin/python); OUT=dir (default .mutation)
# Prints, per module, killed / total, the survivors (as diffs) and the time taken; the
# sessions stay in $OUT/<name>.sqlite (`cr-report`, `cr-html` read them). Not run by CI.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
OUT=${OUT:-.mutation}
CONFIGS=scripts/mutation
BIN=$(dirname "$PYTHON")

if ! "$PYTHON" -c 'import cosmic_ray' 2>/dev/null; then
  echo "installing the mutation extra (cosmic-ray)" >&2
  "$PYTHON" -m pip install -q -e '.[mutation]'
fi
# the trees whose modules are mutated: the runtime and the generator (tools_diff)
MUTATED="runtime codegen"
if [ -n "$(git status --porcelain -- $MUTATED)" ]; then
  echo "runtime/ or codegen/ has uncommitted changes: commit or stash them first (mutants are written" >&2
  echo "into its files in place, and a run must start from, and leave, a clean tree)" >&2
  exit 2
fi

if [ $# -eq 0 ]; then
  set -- $(cd "$CONFIGS" && ls *.toml | sed 's/\.toml$//')
fi
for name in "$@"; do
  if [ ! -f "$CONFIGS/$name.toml" ]; then
    echo "no module '$name': choose from $(cd "$CONFIGS" && ls *.toml | sed 's/\.toml$//' | tr '\n' ' ')" >&2
    exit 2
  fi
done
"$PYTHON" scripts/mutation_scope.py --check $(printf "$CONFIGS/%s.toml " "$@")

# the tests' own commands (python -m pytest) run from this venv
export PATH="$PWD/$BIN:$PATH"
mkdir -p "$OUT"
trap 'git checkout -- $MUTATED' EXIT  # an interrupted run leaves no mutant behind
total_start=$(date +%s)
summary=()
for name in "$@"; do
  config="$CONFIGS/$name.toml"
  session="$OUT/$name.sqlite"
  rm -f "$session"
  start=$(date +%s)
  echo "== $name: $(sed -n 's/^module-path = "\(.*\)"/\1/p' "$config")"
  "$BIN/cosmic-ray" init "$config" "$session"
  "$PYTHON" scripts/mutation_scope.py "$config" "$session"
  if ! nice -n 10 "$BIN/cosmic-ray" baseline "$config" > "$OUT/$name.baseline.log" 2>&1; then
    echo "$name: the tests fail without any mutant: see $OUT/$name.baseline.log" >&2
    exit 1
  fi
  # one mutant at a time; the CPU time (user + sys of the test runs) is what the run costs
  # on a machine of its own, whatever else shares this one
  cpu=$( { TIMEFORMAT='%U %S'; time nice -n 10 "$BIN/cosmic-ray" exec "$config" "$session" >&2; } 2>&1 >/dev/null | tail -n 1 )
  cpu_seconds=$(awk '{printf "%.0f", $1 + $2}' <<< "$cpu")
  seconds=$(( $(date +%s) - start ))
  "$PYTHON" scripts/mutation_scope.py --score "$session" > "$OUT/$name.score.txt"
  "$BIN/cr-report" --surviving-only --show-diff "$session" > "$OUT/$name.survivors.txt" || true
  line=$(head -n 1 "$OUT/$name.score.txt")
  echo "$name: $line in ${seconds}s (${cpu_seconds}s CPU)"
  tail -n +2 "$OUT/$name.score.txt"
  echo "  (diffs of the survivors: $OUT/$name.survivors.txt)"
  summary+=("$name: $line in ${seconds}s (${cpu_seconds}s CPU)")
done
echo "== summary ($(( $(date +%s) - total_start ))s, commit $(git rev-parse --short HEAD))"
printf '%s\n' "${summary[@]}"
