#!/usr/bin/env bash
# Runs the hand-written unsafe and lock-free code's unit tests under Miri,
# which reports undefined behaviour and data races (an atomic ordering too
# weak shows up as a race on a ring entry). Today: the AF_XDP ring index
# arithmetic (crates/sluice-sys/src/xdp/index.rs: producer and consumer
# on two threads, indices wrapping at u32::MAX) and the TX/completion rings
# over ordinary memory against a simulated kernel (xdp/ring.rs).
#
#   bench/miri.sh [FILTER]        default FILTER: xdp::
#
# Needs the nightly toolchain with Miri:
#   rustup +nightly component add miri rust-src
# Takes about a minute the first time (Miri builds its own std), seconds
# after. MIRIFLAGS may add e.g. -Zmiri-many-seeds=0..8 to try more thread
# schedules.
set -euo pipefail
cd "$(dirname "$0")/.."
filter=${1:-xdp::}
if ! cargo +nightly miri --version >/dev/null 2>&1; then
  echo "miri.sh: no Miri on the nightly toolchain; install it with" >&2
  echo "  rustup +nightly component add miri rust-src" >&2
  exit 2
fi
exec cargo +nightly miri test -p sluice-sys --lib "$filter"
