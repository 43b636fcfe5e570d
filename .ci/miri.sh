#!/usr/bin/env bash
# Miri over the unit tests of the code around the crate's `unsafe`: layouts and their extents, the CPU storage
# (inline buffers, outputs handed to kernels), the matmul kernel (the pointers handed to gemm), the
# buffer cache (raw allocations re-adopted as vectors), the compiled f32 kernels' table (uninitialised
# outputs written through it, in place and strided) and the byte casts (`dtype::plain`, through zerocopy).
# Needs a nightly toolchain with the miri component; where there is none and it cannot be installed, it says
# why and skips (the library itself builds on stable).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  echo "miri: skipped: no nightly toolchain here (rustup toolchain install nightly --component miri,rust-src)"
  exit 0
fi
if ! rustup component list --toolchain nightly --installed 2>/dev/null | grep -q '^miri'; then
  if ! rustup component add miri rust-src --toolchain nightly; then
    echo "miri: skipped: the nightly toolchain has no miri component and it could not be installed"
    exit 0
  fi
fi
cargo +nightly miri setup
# Test names are module paths; these filters select the modules above.
cargo +nightly miri test --lib -- \
  layout:: shape::dims:: device::cpu::storage:: ops::matmul::cpu:: device::cpu::pool:: ops::compiled:: \
  dtype::plain::
