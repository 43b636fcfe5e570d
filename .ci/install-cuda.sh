#!/usr/bin/env bash
# Installs Debian's CUDA toolkit (nvcc 11.8, ptxas, libcuda.so) so that the `cuda` feature builds, links and
# runs its tests on a machine without a GPU. Idempotent: does nothing when nvcc is already on PATH.
# Debian ships the toolkit in its `non-free` component, which the base image does not enable; we add a second
# sources entry copied from the machine's own Debian one (same mirror, suites and key) with that component.
set -euo pipefail
if command -v nvcc >/dev/null 2>&1; then
  echo "install-cuda: nvcc already present: $(command -v nvcc)"
  exit 0
fi
src=/etc/apt/sources.list.d/debian.sources
extra=/etc/apt/sources.list.d/debian-nonfree.sources
if [ ! -f "$extra" ]; then
  if [ -f "$src" ]; then
    # Keep every stanza's URIs/Suites/Signed-By, swap the components.
    sed -e 's/^Components:.*/Components: contrib non-free non-free-firmware/' "$src" > "$extra"
  else
    codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
    echo "deb http://deb.debian.org/debian $codename contrib non-free non-free-firmware" \
      > /etc/apt/sources.list.d/debian-nonfree.list
  fi
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends nvidia-cuda-toolkit
nvcc --version | tail -n 2
