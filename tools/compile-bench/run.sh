#!/usr/bin/env bash
# Compile-time benchmark (issue 19, item 6): the same statically shaped model (gen.py: 49 Linear + ReLU blocks of
# distinct widths, a training step and runtime-batch inference) built with typed-tensor and with dfdx 0.13, in
# one run, so the ratios compare like with like. Prints, for release and debug:
#   cold    - a build from an empty target directory (the dependencies included),
#   rebuild - the user crate alone after a change to its source (what a model's author waits for),
# each library's seconds and typed-tensor / dfdx. Incremental compilation is off (as in release builds by default),
# so a debug rebuild after `touch` compiles the user crate again instead of reusing its cached code. Usage: tools/compile-bench/run.sh [runs] (default 1; with more,
# each figure is the minimum). Build outputs go to target/compile-bench/ of the repository.
set -euo pipefail
shopt -s inherit_errexit
here="$(cd "$(dirname "$0")" && pwd)"
out="$here/../../target/compile-bench"
runs="${1:-1}"
mkdir -p "$out"

seconds() { # seconds <crate> <profile flag> <what>
  local crate="$1" flag="$2" what="$3" start end
  if [ "$what" = cold ]; then
    rm -rf "$out/$crate"
  else
    touch "$here/$crate/src/main.rs"
  fi
  start=$(date +%s.%N)
  CARGO_INCREMENTAL=0 CARGO_TARGET_DIR="$out/$crate" cargo build -q --manifest-path "$here/$crate/Cargo.toml" $flag
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN { print b - a }'
}

best() { # best <crate> <flag> <what>: the minimum over the runs
  local b="" t
  for _ in $(seq "$runs"); do
    t=$(seconds "$@")
    if [ -z "$b" ] || awk -v t="$t" -v b="$b" 'BEGIN { exit !(t < b) }'; then b="$t"; fi
  done
  echo "$b"
}

# Fetch first, so that downloads are not timed.
for crate in typed dfdx; do cargo fetch -q --manifest-path "$here/$crate/Cargo.toml"; done

printf '%-8s %-8s %10s %10s %8s\n' profile build typed-s dfdx-s ratio
for profile in release debug; do
  flag=""; [ "$profile" = release ] && flag="--release"
  for what in cold rebuild; do
    # A cold build leaves the target directory that the rebuild then reuses.
    typed=$(best typed "$flag" "$what")
    dfdx=$(best dfdx "$flag" "$what")
    printf '%-8s %-8s %10.1f %10.1f %8.2f\n' "$profile" "$what" "$typed" "$dfdx" "$(awk -v a="$typed" -v b="$dfdx" 'BEGIN { print a / b }')"
  done
done
