#!/usr/bin/env bash
# Mutation testing gate (docs/proof.md). For each package it runs the pinned
# gremlins over the package's code: every comparison, arithmetic operator,
# increment and sign is flipped in turn and the package's tests are rerun. A
# mutant the tests do not catch "lived". The gate fails when, for a package,
#   - test efficacy, caught / (caught + lived), is below its threshold,
#   - mutator coverage, the share of mutants some test runs, is below its
#     threshold,
#   - a mutant lived that docs/proof.md does not list as equivalent, or
#   - more than a tenth of the mutants timed out: the run proves nothing then.
# A mutant is caught when the tests fail or time out (a hang is a failure, as
# in PIT).
#
#   bash .ci/mutation.sh PKG[:EFFICACY[:COVERAGE[:LATER]]]...
#   bash .ci/mutation.sh checkpoint:97:98 record:95:90:scan.go
#
# PKG is a directory under the module root, taken with its subdirectories as
# gremlins does. Thresholds are percentages (default 90 each). LATER names
# files of PKG (comma-separated, relative to it) whose mutants only the full
# run makes, with WEIR_MUTATION_FULL=1: files that another check in the same
# CI run covers too (record's scanner: FuzzValid and FuzzLookup against
# encoding/json), left out so that a run stays within its time. Files that the
# default build leaves out (other build tags, other systems) are not mutated:
# the tests that run here never compile them. MUTATION_WORKERS sets the number
# of parallel mutants (default: the number of CPUs); a mutant's tests time out
# after MUTATION_TIMEOUT_FACTOR (default 10) times what an unmutated change of
# the package takes to build and test alone (the workers share the CPUs, so a
# mutant takes about twice that).
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
factor="${MUTATION_TIMEOUT_FACTOR:-10}"
full="${WEIR_MUTATION_FULL:-0}"
[ $# -gt 0 ] || { echo "usage: $0 PKG[:EFFICACY[:COVERAGE[:LATER]]]..." >&2; exit 2; }

# -count=1: no test result comes from the cache. -vet=off: a mutant must be
# caught by a test, not by go vet (which go test runs first).
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-count=1 -vet=off"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

millis() { local t0; t0=$(date +%s%N); "$@" >/dev/null 2>&1 || true; echo $((($(date +%s%N) - t0) / 1000000)); }

# exclude FILE: gremlins leaves FILE (relative to the package) unmutated.
exclude() { excludes+=(--exclude-files "^${1//./\\.}\$"); }

failed=0
summary=()
for arg in "$@"; do
  IFS=: read -r pkg eff cov later <<<"$arg"
  pkg="${pkg#./}"; pkg="${pkg%/}"
  eff="${eff:-90}"; cov="${cov:-90}"
  [ "$full" = 1 ] && later=""

  excludes=()
  left=()
  IFS=, read -r -a left <<<"${later:-}"
  for rel in "${left[@]}"; do
    [ -f "$pkg/$rel" ] || { echo "mutation $pkg: $rel, named to leave for the full run, is not a file of $pkg" >&2; exit 2; }
    exclude "$rel"
  done
  [ ${#left[@]} -eq 0 ] || echo "mutation $pkg: ${left[*]} left for the full run (WEIR_MUTATION_FULL=1)"
  for f in $(go list -f '{{$d := .Dir}}{{range .IgnoredGoFiles}}{{$d}}/{{.}} {{end}}' "./$pkg/..."); do
    case "$f" in *_test.go) continue ;; esac
    exclude "${f#"$PWD/$pkg/"}"
  done

  # gremlins times a mutant out after a coefficient times its own coverage run
  # of the unmutated package, which the build cache can make much faster than a
  # mutant (which always compiles and links afresh): with a cached build every
  # mutant would time out. So the coefficient comes from two runs measured
  # here: the coverage run as gremlins will see it (cache warmed the same way),
  # and the package's tests with one file changed, as a mutant has it.
  go test -cover -coverprofile "$work/cover" "./$pkg/..." >/dev/null
  cover_ms=$(millis go test -cover -coverprofile "$work/cover" "./$pkg/...")
  first=$(go list -f '{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}' "./$pkg" | head -1)
  { cat "$first"; echo "// $(date +%s%N)"; } >"$work/changed.go"
  printf '{"Replace":{"%s":"%s"}}' "$first" "$work/changed.go" >"$work/overlay.json"
  change_ms=$(millis go test -overlay "$work/overlay.json" "./$pkg")
  coefficient=$(((factor * change_ms + cover_ms - 1) / cover_ms))
  [ "$coefficient" -ge "$factor" ] || coefficient=$factor
  echo "mutation $pkg: a changed package builds and tests in ${change_ms} ms, the coverage run takes ${cover_ms} ms: timeout coefficient $coefficient"

  out="$work/out"
  "$bin/gremlins" unleash --workers "$workers" --timeout-coefficient "$coefficient" \
    "${excludes[@]}" "./$pkg" | tee "$out"

  # Each mutant prints "<STATUS> <TYPE> at <file>:<line>:<col>".
  read -r killed lived uncovered timedout < <(awk '
    / at [^ ]+:[0-9]+:[0-9]+$/ {
      if ($1 == "KILLED") k++; else if ($1 == "LIVED") l++
      else if ($1 == "NOT" && $2 == "COVERED") n++; else if ($1 == "TIMED") t++
    }
    END { print k+0, l+0, n+0, t+0 }' "$out")
  total=$((killed + timedout + lived + uncovered))
  verdict=$(awk -v k="$((killed + timedout))" -v l="$lived" -v n="$uncovered" -v e="$eff" -v c="$cov" 'BEGIN {
    ef = (k + l) ? 100 * k / (k + l) : 100
    mc = (k + l + n) ? 100 * (k + l) / (k + l + n) : 100
    ok = (ef >= e && mc >= c) ? "ok" : "FAIL"
    printf "%s: efficacy %.2f%% (min %s), mutator coverage %.2f%% (min %s)", ok, ef, e, mc, c }')
  if [ "$total" -eq 0 ]; then
    verdict="FAIL: no mutant found in $pkg"
  elif [ $((timedout * 10)) -gt "$total" ]; then
    verdict="FAIL: $timedout of $total mutants timed out, too many to tell caught from slow (a busy machine? raise MUTATION_TIMEOUT_FACTOR)"
  fi

  unlisted=()
  while read -r line; do
    grep -qF "| \`$pkg\` | \`$line\` |" "$equivalents" || unlisted+=("$line")
  done < <(sed -nE 's/^ *(LIVED [A-Z_]+ at [^ ]+:[0-9]+:[0-9]+)$/\1/p' "$out")
  # Listed mutants that did not live this time: killed by a newer test, moved
  # with an edit, or timed out. Not a failure; the list should be brought up to
  # date.
  while read -r line; do
    file=${line##* at }; file=${file%%:*}
    for rel in "${left[@]}"; do [ "$file" = "$rel" ] && continue 2; done
    awk -v l="$line" '{ sub(/^ +/, "") } $0 == l { f = 1 } END { exit !f }' "$out" ||
      echo "note: $pkg: listed as equivalent in $equivalents but did not live: $line"
  # '#' delimits: a package's path has slashes (pipeline/internal/policy).
  done < <(sed -nE "s#^\| \`$pkg\` \| \`(LIVED [A-Z_]+ at [^\`]+)\` \|.*#\1#p" "$equivalents")

  if [ ${#unlisted[@]} -gt 0 ] && [ "${verdict%%:*}" = ok ]; then
    verdict="FAIL: ${#unlisted[@]} lived mutants not listed as equivalent; ${verdict#ok: }"
  fi
  if [ "${verdict%%:*}" != ok ]; then
    failed=1
  fi
  for line in "${unlisted[@]}"; do
    echo "$pkg: a mutant lived and $equivalents does not list it as equivalent: $line"
    echo "  kill it with a test of the behaviour it changes, or add a row: | \`$pkg\` | \`$line\` | ... |"
  done
  summary+=("mutation $pkg${later:+ (without ${later})}: $verdict; killed $killed, timed out $timedout, lived $lived (${#unlisted[@]} not listed as equivalent), not covered $uncovered")
done

echo
printf '%s\n' "${summary[@]}"
exit "$failed"
