#!/usr/bin/env bash
# check.sh verifies weir's checkpoint protocol model (weir.pml) with spin:
# the model must have no errors, and each seeded-bug variant must have some,
# which shows the properties are not vacuous. Needs spin and a C compiler.
#
#   spin/check.sh            # the model and its seeded bugs
#   MEMLIM=4096 spin/check.sh -DP1NB=2   # extra -D flags apply to every run
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here/weir.pml" "$work/"
cd "$work"
memlim=${MEMLIM:-2048}

# verify NAME WANT [DEFINES...]: WANT is "none" or "some" errors.
status=0
verify() {
  local name=$1 want=$2
  shift 2
  rm -f pan pan.c weir.pml.trail
  spin "$@" -a weir.pml >/dev/null
  gcc -O2 -w -DSAFETY -DCOLLAPSE -DMEMLIM="$memlim" -o pan pan.c
  local start end out errors
  start=$(date +%s%N)
  out=$(./pan -m100000 2>&1 || true)
  end=$(date +%s%N)
  errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' <<<"$out" | head -1)
  local states
  states=$(sed -n 's/^ *\([0-9e+.]*\) states, stored.*/\1/p' <<<"$out" | head -1)
  printf '%-22s errors=%-3s states=%-10s %dms\n' "$name" "${errors:-?}" "${states:-?}" $(((end - start) / 1000000))
  if [ -z "$errors" ]; then
    echo "$out"; echo "FAIL: $name: pan did not report"; status=1; return
  fi
  if grep -q -e 'reached -DMEMLIM bound' -e 'max search depth too small' <<<"$out"; then
    echo "$out"; echo "FAIL: $name: search incomplete (raise MEMLIM or -m)"; status=1; return
  fi
  if [ "$want" = none ] && [ "$errors" != 0 ]; then
    echo "$out"
    spin -t "$@" -p weir.pml | tail -40 || true
    echo "FAIL: $name: the protocol model violates a property"; status=1
  elif [ "$want" = some ] && [ "$errors" = 0 ]; then
    echo "FAIL: $name: the seeded bug was not caught"; status=1
  else
    grep -m1 'assertion violated' <<<"$out" | sed 's/^/    /' || true
  fi
}

verify "model" none "$@"
verify "BUG_NO_EPOCH_CHECK" some -DBUG_NO_EPOCH_CHECK "$@"
verify "BUG_ADVANCE_FAILED" some -DBUG_ADVANCE_FAILED "$@"
exit $status
