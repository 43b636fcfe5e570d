#!/usr/bin/env bash
# Where each compile-fail case of the gallery (tests/ui/fail/*.rs) is rejected (issue 44's measure): by
# `cargo check` (a trait bound: an editor shows it while typing) or only by `cargo build` (a `const` check,
# evaluated when the generic code is instantiated), and how many lines its error has (the `.stderr` file).
# Prints one line per case, then the totals and the median. Usage: tools/shape-errors/measure.sh [pattern]
# (default: every case). Builds go to target/shape-errors/ of the repository.
set -euo pipefail
shopt -s inherit_errexit
here="$(cd "$(dirname "$0")" && pwd)"
repo="$here/../.."
work="$repo/target/shape-errors"
mkdir -p "$work/src/bin"
rm -f "$work"/src/bin/*.rs
cat > "$work/Cargo.toml" <<TOML
[package]
name = "shape-errors"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
typed-tensor = { path = "$repo" }

[workspace]
TOML
echo 'fn main() {}' > "$work/src/main.rs"
cases=("$repo"/tests/ui/fail/${1:-*}.rs)
for case in "${cases[@]}"; do
  name="$(basename "$case" .rs)"
  cp "$case" "$work/src/bin/$name.rs"
done
# The dependency graph once, so each case below compiles only itself.
cargo build -q --manifest-path "$work/Cargo.toml" --bin "$(basename "${cases[0]}" .rs)" 2>/dev/null || true

check=0 build=0 passes=0
lines=()
for case in "${cases[@]}"; do
  name="$(basename "$case" .rs)"
  stderr="${case%.rs}.stderr"
  n=$(wc -l < "$stderr")
  lines+=("$n")
  if ! cargo check -q --manifest-path "$work/Cargo.toml" --bin "$name" 2>/dev/null; then
    where=check; check=$((check + 1))
  elif ! cargo build -q --manifest-path "$work/Cargo.toml" --bin "$name" 2>/dev/null; then
    where=build; build=$((build + 1))
  else
    where=COMPILES; passes=$((passes + 1))
  fi
  printf '%-45s %-8s %3s lines\n' "$name" "$where" "$n"
done
total=${#cases[@]}
median=$(printf '%s\n' "${lines[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
echo "cases $total: at cargo check $check ($((100 * check / total))%), only at cargo build $build, compiling $passes; median error $median lines"
