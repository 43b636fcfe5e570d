#!/usr/bin/env bash
# Compile-time benchmark (issue 19, item 6): the same statically shaped model (gen.py: 49 Linear + ReLU blocks of
# distinct widths, a training step and runtime-batch inference) built with typed-tensor and with dfdx 0.13, in
# one run, so the ratios compare like with like. Prints, for release and debug:
#   cold    - a build from an empty target directory (the dependencies included),
#   rebuild - the user crate alone after a change to its source (what a model's author waits for),
# each library's seconds and typed-tensor / dfdx. typed-tensor is built twice: with its default features (`std`:
# what dfdx 0.13's defaults have too, no file format) and with the opt-in `safetensors` as well (`io-s`,
# `io-ratio`), whose serde and serde_json are about 10 s of a cold build.
# Incremental compilation is off (as in release builds by default), so a debug rebuild after `touch` compiles the
# user crate again instead of reusing its cached code. Usage: tools/compile-bench/run.sh [runs] (default 1; with
# more, each figure is the minimum). Build outputs go to target/compile-bench/ of the repository.
set -euo pipefail
shopt -s inherit_errexit
here="$(cd "$(dirname "$0")" && pwd)"
out="$here/../../target/compile-bench"
runs="${1:-1}"
mkdir -p "$out"

seconds() { # seconds <build> <profile flag> <what>; build: typed, typed-io (with `safetensors`) or dfdx
  local build="$1" flag="$2" what="$3" crate="${1%-io}" features="" start end
  [ "$build" = typed-io ] && features="--features io"
  if [ "$what" = cold ]; then
    rm -rf "$out/$build"
  else
    touch "$here/$crate/src/main.rs"
  fi
  start=$(date +%s.%N)
  CARGO_INCREMENTAL=0 CARGO_TARGET_DIR="$out/$build" cargo build -q --manifest-path "$here/$crate/Cargo.toml" $flag $features
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN { print b - a }'
}

best() { # best <build> <flag> <what>: the minimum over the runs
  local b="" t
  for _ in $(seq "$runs"); do
    t=$(seconds "$@")
    if [ -z "$b" ] || awk -v t="$t" -v b="$b" 'BEGIN { exit !(t < b) }'; then b="$t"; fi
  done
  echo "$b"
}

# Fetch first, so that downloads are not timed.
for crate in typed dfdx; do cargo fetch -q --manifest-path "$here/$crate/Cargo.toml"; done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
printf '%-8s %-8s %8s %8s %8s %8s %9s\n' profile build typed-s io-s dfdx-s ratio io-ratio
for profile in release debug; do
  flag=""; [ "$profile" = release ] && flag="--release"
  for what in cold rebuild; do
    # A cold build leaves the target directory that the rebuild then reuses.
    typed=$(best typed "$flag" "$what")
    io=$(best typed-io "$flag" "$what")
    dfdx=$(best dfdx "$flag" "$what")
    printf '%-8s %-8s %8.1f %8.1f %8.1f %8s %9s\n' "$profile" "$what" "$typed" "$io" "$dfdx" \
      "$(ratio "$typed" "$dfdx")" "$(ratio "$io" "$dfdx")"
  done
done
