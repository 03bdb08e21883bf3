#!/usr/bin/env bash
# Mutation testing gate (docs/proof.md). For each package it runs the pinned
# gremlins over the package's code: every comparison, arithmetic operator,
# increment and sign is flipped in turn and the package's tests are rerun. A
# mutant the tests do not catch "lived". The gate fails when, for a package,
#   - test efficacy, caught / (caught + lived), is below its threshold,
#   - mutator coverage, the share of mutants some test runs, is below its
#     threshold, or
#   - a mutant lived that docs/proof.md does not list as equivalent.
# A mutant is caught when the tests fail or time out (a hang is a failure, as
# in PIT); gremlins' own efficacy leaves timeouts out, which on a loaded machine
# turns slow kills into a lower score.
#
#   bash .ci/mutation.sh PKG[:EFFICACY[:COVERAGE]]...
#   bash .ci/mutation.sh checkpoint:97:98 record:90:90
#
# PKG is a directory under the module root, taken with its subdirectories as
# gremlins does. Thresholds are percentages (default 90 each). Files that the
# default build leaves out (other build tags, other systems) are not mutated:
# the tests that run here never compile them. MUTATION_WORKERS sets the number
# of parallel mutants (default: the number of CPUs). A mutant's tests time out
# after MUTATION_TIMEOUT_COEFFICIENT (default 3) times the unmutated tests' run;
# raise it on a machine that is busy with other work.
set -euo pipefail
cd "$(dirname "$0")/.."
export HOME="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"

# v0.6.0 rather than the older v0.5.0: it is the maintained line (the project
# maintains only its latest minor) and it has --exclude-files, without which
# the modelcheck-only files would count as uncovered code.
version=v0.6.0
bin="${XDG_CACHE_HOME:-$HOME/.cache}/weir/gremlins-$version"
if [ ! -x "$bin/gremlins" ]; then
  GOBIN="$bin" go install "github.com/go-gremlins/gremlins/cmd/gremlins@$version"
fi

equivalents=docs/proof.md
workers="${MUTATION_WORKERS:-$(nproc)}"
[ $# -gt 0 ] || { echo "usage: $0 PKG[:EFFICACY[:COVERAGE]]..." >&2; exit 2; }

failed=0
summary=()
for arg in "$@"; do
  IFS=: read -r pkg eff cov <<<"$arg"
  pkg="${pkg#./}"; pkg="${pkg%/}"
  eff="${eff:-90}"; cov="${cov:-90}"

  excludes=()
  for f in $(go list -f '{{$d := .Dir}}{{range .IgnoredGoFiles}}{{$d}}/{{.}} {{end}}' "./$pkg/..."); do
    case "$f" in *_test.go) continue ;; esac
    rel="${f#"$PWD/$pkg/"}"
    excludes+=(--exclude-files "^${rel//./\\.}\$")
  done

  out=$(mktemp)
  # -vet=off: a mutant must be caught by a test, not by go vet (which go test
  # runs first); it also saves a fifth of each mutant's build.
  GOFLAGS="${GOFLAGS:+$GOFLAGS }-vet=off" "$bin/gremlins" unleash --workers "$workers" \
    --timeout-coefficient "${MUTATION_TIMEOUT_COEFFICIENT:-3}" "${excludes[@]}" "./$pkg" | tee "$out"

  # Each mutant prints "<STATUS> <TYPE> at <file>:<line>:<col>".
  read -r killed lived uncovered timedout < <(awk '
    / at [^ ]+:[0-9]+:[0-9]+$/ {
      if ($1 == "KILLED") k++; else if ($1 == "LIVED") l++
      else if ($1 == "NOT" && $2 == "COVERED") n++; else if ($1 == "TIMED") t++
    }
    END { print k+0, l+0, n+0, t+0 }' "$out")
  verdict=$(awk -v k="$((killed + timedout))" -v l="$lived" -v n="$uncovered" -v e="$eff" -v c="$cov" 'BEGIN {
    ef = (k + l) ? 100 * k / (k + l) : 100
    mc = (k + l + n) ? 100 * (k + l) / (k + l + n) : 100
    ok = (ef >= e && mc >= c) ? "ok" : "FAIL"
    printf "%s: efficacy %.2f%% (min %s), mutator coverage %.2f%% (min %s)", ok, ef, e, mc, c }')

  if [ $((killed + timedout + lived + uncovered)) -eq 0 ]; then
    verdict="FAIL: no mutant found in $pkg"
  fi

  unlisted=()
  while read -r line; do
    grep -qF "| \`$pkg\` | \`$line\` |" "$equivalents" || unlisted+=("$line")
  done < <(sed -nE 's/^ *(LIVED [A-Z_]+ at [^ ]+:[0-9]+:[0-9]+)$/\1/p' "$out")
  # Listed mutants that did not live this time: killed by a newer test, moved
  # with an edit, or timed out on a slow machine. Not a failure; the list should
  # be brought up to date.
  while read -r line; do
    awk -v l="$line" '{ sub(/^ +/, "") } $0 == l { f = 1 } END { exit !f }' "$out" || echo "note: $pkg: listed as equivalent in $equivalents but did not live: $line"
  done < <(sed -nE "s/^\| \`$pkg\` \| \`(LIVED [A-Z_]+ at [^\`]+)\` \|.*/\1/p" "$equivalents")
  rm -f "$out"

  if [ "${verdict%%:*}" != ok ] || [ ${#unlisted[@]} -gt 0 ]; then
    failed=1
  fi
  for line in "${unlisted[@]}"; do
    echo "$pkg: a mutant lived and $equivalents does not list it as equivalent: $line"
    echo "  kill it with a test of the behaviour it changes, or add a row: | \`$pkg\` | \`$line\` | ... |"
  done
  summary+=("mutation $pkg: $verdict; killed $killed, timed out $timedout, lived $lived (${#unlisted[@]} not listed as equivalent), not covered $uncovered")
done

echo
printf '%s\n' "${summary[@]}"
exit "$failed"
