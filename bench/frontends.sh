#!/usr/bin/env bash
# The drop-in front ends against the real tools, same machine, same traces,
# alternated run by run (medians of RUNS):
#
#   bench/frontends.sh rewrite   sluice tcprewrite vs tcprewrite, file to
#                                file in /dev/shm (64 B x 1 M, 1500 B x 300 k)
#   bench/frontends.sh replay    sluice tcpreplay -i va -t vs tcpreplay -t
#                                (64 B, 1500 B; frames counted by the sink vb)
#
# REAL=/opt/tcpreplay-4.5.5/bin (bench/build_tcpreplay.sh) RUNS=5.
# Prints one line per case: each tool's median and sluice's ratio (>1:
# sluice faster), with the spread (min-max) of each.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
sluice=${SLUICE:-$root/target/release/sluice}
real=${REAL:-/opt/tcpreplay-4.5.5/bin}
runs=${RUNS:-5}
work=${WORK:-/dev/shm/sluice-frontends}
mkdir -p "$work"
[ -x "$sluice" ] || { echo "build first: cargo build --release" >&2; exit 1; }
[ -x "$real/tcprewrite" ] || { echo "no $real/tcprewrite: bench/build_tcpreplay.sh SRC" >&2; exit 1; }

trace() { # NAME COUNT LEN
  [ -s "$work/$1.pcap" ] || python3 "$here/mktrace.py" "$work/$1.pcap" "$2" "$3" 1000
}
# median, min and max of numbers on stdin
stats() { sort -g | awk '{a[NR]=$1} END {printf "%s %s %s\n", a[int((NR+1)/2)], a[1], a[NR]}'; }
secs() { # the wall time of a command, in seconds
  local t0 t1
  t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}

rewrite() {
  trace r64 1000000 64
  trace r1500 300000 1500
  for t in r64 r1500; do
    : >"$work/s.txt"; : >"$work/p.txt"
    for _ in $(seq "$runs"); do
      rm -f "$work/out.pcap"
      secs "$sluice" tcprewrite -i "$work/$t.pcap" -o "$work/out.pcap" --portmap=9:99 --fixcsum >>"$work/s.txt"
      rm -f "$work/out.pcap"
      secs "$real/tcprewrite" -i "$work/$t.pcap" -o "$work/out.pcap" --portmap=9:99 --fixcsum >>"$work/p.txt"
    done
    read -r s smin smax < <(stats <"$work/s.txt")
    read -r p pmin pmax < <(stats <"$work/p.txt")
    bytes=$(stat -c %s "$work/$t.pcap")
    printf 'rewrite %-6s sluice %.3f s (%.3f-%.3f, %.0f MB/s)  tcprewrite %.3f s (%.3f-%.3f, %.0f MB/s)  ratio x%.2f\n' \
      "$t" "$s" "$smin" "$smax" "$(echo "$bytes / $s / 1000000" | bc -l)" \
      "$p" "$pmin" "$pmax" "$(echo "$bytes / $p / 1000000" | bc -l)" "$(echo "$p / $s" | bc -l)"
  done
  rm -f "$work/out.pcap"
}

replay() {
  [ "$(id -u)" = 0 ] || { echo "replay needs root (veth pair)" >&2; exit 1; }
  # shellcheck source=bench/subnet.sh
  . "$here/subnet.sh"
  SUBNET=10.99.0 free_subnet netns_net || exit 1
  names_free va vb sink || exit 1
  "$here/netns.sh" up
  trap '"$here/netns.sh" down' EXIT
  sysctl -qw net.ipv6.conf.va.disable_ipv6=1 || true
  trace t64 1000000 64
  trace t1500 300000 1500
  rx() { ip netns exec sink cat /sys/class/net/vb/statistics/rx_packets; }
  for t in t64 t1500; do
    : >"$work/s.txt"; : >"$work/p.txt"
    for _ in $(seq "$runs"); do
      for who in sluice real; do
        if [ $who = sluice ]; then cmd=("$sluice" tcpreplay); else cmd=("$real/tcpreplay"); fi
        out=$("${cmd[@]}" -i va -t -K "$work/$t.pcap" 2>&1)
        pps=$(echo "$out" | sed -n 's/.*Mbps, \([0-9.]*\) pps.*/\1/p')
        if [ $who = sluice ]; then echo "$pps" >>"$work/s.txt"; else echo "$pps" >>"$work/p.txt"; fi
      done
    done
    read -r s smin smax < <(stats <"$work/s.txt")
    read -r p pmin pmax < <(stats <"$work/p.txt")
    printf 'replay  %-6s sluice %.0f pps (%.0f-%.0f)  tcpreplay %.0f pps (%.0f-%.0f)  ratio x%.2f\n' \
      "$t" "$s" "$smin" "$smax" "$p" "$pmin" "$pmax" "$(echo "$s / $p" | bc -l)"
  done
}

case "${1:-}" in
rewrite) rewrite ;;
replay) replay ;;
*) echo "usage: $0 rewrite|replay" >&2; exit 2 ;;
esac
