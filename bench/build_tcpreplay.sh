#!/usr/bin/env bash
# Builds tcpreplay, tcprewrite and tcpprep from a checkout of tcpreplay's
# repository (https://github.com/appneta/tcpreplay, tag v4.5.5) into
# PREFIX, for bench/tcpreplay_suite.py --real and bench/tcpreplay_diff.py.
# No code of tcpreplay is kept in this repository.
#
#   bench/build_tcpreplay.sh SRC [PREFIX]     (default /opt/tcpreplay-4.5.5)
#
# Needs: autogen autoconf automake libtool libpcap-dev pkg-config make gcc
# (Debian's packages; add libxdp-dev libbpf-dev for --xdp).
set -euo pipefail
src=$(cd "$1" && pwd)
prefix=${2:-/opt/tcpreplay-4.5.5}
cd "$src"
./autogen.sh >/dev/null 2>&1
./configure --prefix="$prefix" >/dev/null
make -j"$(nproc)" >/dev/null
make install >/dev/null
"$prefix/bin/tcprewrite" -V 2>&1 | head -1
