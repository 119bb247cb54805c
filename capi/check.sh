#!/usr/bin/env bash
# The link-level proof that the core needs neither std nor an allocator:
# build the no_std staticlib, link a C program against it, run it, and inspect its imports.
set -euo pipefail
cd "$(dirname "$0")"
cargo build --release --quiet
mkdir -p target/c
gcc -std=c11 -O2 -Wall -Wextra -Werror -Iinclude tests/check.c target/release/libunmix_capi.a -lm -o target/c/check
./target/c/check
if nm -u target/c/check | grep -E '\b(malloc|calloc|realloc|free|__rust_alloc|__rust_dealloc|__rust_realloc|__rg_alloc)\b'; then
  echo "capi: FAIL: the linked program imports an allocator symbol (above)" >&2
  exit 1
fi
if nm target/release/libunmix_capi.a 2>/dev/null | grep -E ' U (__rust_alloc|__rust_dealloc|malloc|free)$'; then
  echo "capi: FAIL: the static library references an allocator (above)" >&2
  exit 1
fi
echo "capi: no allocator symbols imported (nm -u): ok"
