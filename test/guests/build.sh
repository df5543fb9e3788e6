#!/usr/bin/env bash
# Builds the test guest programs into test/guests/build/*.elf. The built ELFs are
# committed, so CI needs no RISC-V toolchain; rerun this after changing a source.
# Needs Debian's clang and lld (apt-get install -y clang lld); any clang >= 14 with the
# RISC-V target should do.
set -euo pipefail
cd "$(dirname "$0")"
CC=${CC:-clang}
CFLAGS=(
  --target=riscv32-unknown-elf -march=rv32im -mabi=ilp32
  # lld 14 cannot relax; and no gp-relative addressing, since _start leaves gp zero.
  -mno-relax
  -O2 -ffreestanding -fno-builtin -nostdlib -static -fno-pic
  -Wall -Wextra -Werror
  -fuse-ld=lld -Wl,-T,src/link.ld -Wl,--build-id=none
  -Isrc
)
mkdir -p build

build() {
  local name=$1
  shift
  "$CC" "${CFLAGS[@]}" -o "build/$name.elf" src/start.S src/runtime.c "$@"
  echo "built build/$name.elf ($(stat -c %s "build/$name.elf") bytes)"
}

build hello src/hello.c
build panic src/panic.c
build loop src/loop.c
build big src/big.c src/big_blob.S
build bench src/bench.c
build conformance src/conformance.c
build faults src/faults.c
build io src/io.c
build hash src/hash.c
