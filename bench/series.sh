#!/usr/bin/env bash
# Time-series play benchmark (paper: timeseries-traffic-generation §VI):
# IO throughput, records/s against record size (Fig. 8/10), the
# time-violation table (Table II), and real seismic data judged by arrival
# time, with tcpreplay replaying the very same datagrams side by side.
#
#   bench/series.sh [all|io|throughput|sweep|drift|real|day|nics]   (default: all;
#   sweep: Fig. 10's records/s against TX threads, THREADS="1 2 3 4" RUNS=3;
#   readers: Fig. 9's mmap against double-buffered reads, warm and cold;
#   day: Table III at scale, SENSORS=1399 PERIOD=10 FF=1440;
#   nics: Fig. 11, records/s through 1 and 2 NICs (--also-to), RUNS=3)
#
# Needs root, tcpdump, tcpreplay, python3. Uses bench/netns.sh (vendored from shared/bench)
# (veth va <-> vb in namespace "sink"); frames to 02:00:00:00:00:99 are
# counted by vb and dropped before its IP stack. Results go to stdout and
# $WORK/series-results.txt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
judges=$root/bench  # vendored copies of shared/bench, kept identical
testdata=${TESTDATA:-$root/testdata/timeseries}
work=${WORK:-/tmp/sluice-bench}; mkdir -p "$work"
results=$work/series-results.txt
sluice=${SLUICE:-$root/target/release/sluice}
sink_mac=02:00:00:00:00:99

# SLUICE=PATH runs a build of your own (then `io` needs the release example).
[ -n "${SLUICE:-}" ] || (cd "$root" && cargo build --release -q && cargo build --release -q -p sluice-source --example archive_read)
"$judges/netns.sh" up
trap '"$judges/netns.sh" down' EXIT
sysctl -qw net.ipv6.conf.va.disable_ipv6=1 || true
ip netns exec sink sysctl -qw net.ipv6.conf.vb.disable_ipv6=1 || true

rx() { ip netns exec sink cat /sys/class/net/vb/statistics/rx_packets; }
say() { echo "$*" | tee -a "$results"; }
json() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))$2)" "$1"; }
arc() { # name records seconds devices [record bytes]
  [ -f "$work/$1" ] || python3 "$here/mkseries.py" "$work/$1" "${@:2}"
  cat "$work/$1" > /dev/null # into the page cache
}
play() { # archive sink summary-json extra...
  "$sluice" series play "$work/$1" --to "$2" --dst-mac "$sink_mac" -q --summary-json "$3" "${@:4}" 2>/dev/null
}

io() {
  say "== IO thread: archive read from the page cache (64 MiB buffers) =="
  arc s5m.arc 5000000 5 1
  arc r1472.arc 200000 1 1 1502
  for a in s5m.arc r1472.arc; do
    "$root/target/release/examples/archive_read" "$work/$a" > /dev/null
    say "$a: $("$root/target/release/examples/archive_read" "$work/$a")"
  done
}

throughput() {
  say "== records/s against record data size, --tight-loop 0 (as fast as possible) =="
  say "data_B  null_1tx  null_2tx  veth_1tx  veth_2tx  tcpreplay_veth  veth_1tx/tcpreplay"
  for size in 4 28 512 1472; do
    local n=$(( size > 100 ? 300000 : 2000000 ))
    arc "r$size.arc" "$n" 1 16 $(( 30 + size ))
    local out=()
    for to in null afpacket:va; do
      for t in 1 2; do
        local a b
        a=$(rx)
        play "r$size.arc" "$to" "$work/t.json" --tight-loop 0 --threads "$t"
        b=$(rx)
        if [ "$to" = null ]; then
          out+=("$(json "$work/t.json" "['pps']" | cut -d. -f1)")
        else # frames counted by the sink over sluice's send phase
          out+=("$(python3 -c "import json; s=json.load(open('$work/t.json')); print(round(($b-$a)/s['duration_s']))")")
        fi
      done
    done
    # The peer: tcpreplay sends the same datagrams (a pcap of this archive).
    "$sluice" series play "$work/r$size.arc" --to "pcap:$work/r$size.pcap" --dst-mac "$sink_mac" \
      --tight-loop 1us --clock virtual -q 2>/dev/null
    local tr
    tr=$(tcpreplay -i va --topspeed --preload-pcap "$work/r$size.pcap" 2>&1 | sed -n 's/.*Mbps, \([0-9.]*\) pps.*/\1/p' | cut -d. -f1)
    local ratio
    ratio=$(python3 -c "print(f'{${out[2]}/${tr:-1}:.2f}')")
    say "$size  ${out[0]}  ${out[1]}  ${out[2]}  ${out[3]}  $tr  x$ratio"
  done
}

drift() {
  say "== time violations (paper Table II): records dropped at drift window T_d, 70-byte records =="
  say "(2 cores: streamed, the IO thread and the worker share the CPUs with the TX threads; _pre: --preload,"
  say " the archive read and indexed before the clock starts, so only the TX threads run while sending;"
  say " 2tx: rescue on (a record its thread leaves unsent 2 us past its time is sent by the other), _norescue: off)"
  arc d1m1.arc 1000000 1 1
  arc d5m5.arc 5000000 5 1
  arc d5m5x100.arc 5000000 5 100
  arc d5m2.arc 5000000 2.5 2
  arc d1m2.arc 1000000 2 1
  # column name, sink, options
  local cols=(
    "null_1tx|null|"
    "null_2tx|null|--threads 2"
    "null_2tx_pre|null|--threads 2 --preload"
    "null_2tx_pre_norescue|null|--threads 2 --preload --no-rescue"
    "veth_1tx|afpacket:va|"
    "veth_1tx_pre|afpacket:va|--preload"
    "veth_2tx_pre|afpacket:va|--threads 2 --preload"
  )
  local head="set                      T_d" c
  for c in "${cols[@]}"; do head+="  ${c%%|*}"; [[ $c == veth* ]] && head+=" (%)"; done
  say "$head"
  for set in "d1m1.arc 1M/1s/1" "d5m5.arc 5M/5s/1" "d5m5x100.arc 5M/5s/100" "d5m2.arc 5M/2.5s/2" "d1m2.arc 1M/2s/1(500k/s)"; do
    local f=${set%% *} label=${set#* }
    for td in 0 5 10 20 25; do
      local line
      line=$(printf '%-24s %3s' "$label" "$td")
      for c in "${cols[@]}"; do
        local rest=${c#*|}
        local to=${rest%%|*} opts=${rest#*|}
        # shellcheck disable=SC2086
        play "$f" "$to" "$work/d.json" --drift "${td}us" $opts
        local d
        d=$(json "$work/d.json" "['dropped']")
        if [[ $c == veth* ]]; then
          d+=" ($(python3 -c "print(f'{100*$d/($d+$(json "$work/d.json" "['packets']")):.3f}')"))"
        fi
        line+="  $d"
      done
      say "$line"
    done
  done
}

real() {
  say "== real seismic data (obspy RJOB, 3 channels, 100 Hz, 30 s), time-conforming, through veth =="
  say "judged by bench/arrival.py: arrival time against record time, frames matched by content"
  say "(gaperr.py matches by mktrace's sequence signature, which these datagrams do not carry)"
  "$sluice" series convert "$testdata/obspy_example_BW.RJOB_3ch_100Hz.csv" "$work/rjob.arc" 2>/dev/null
  # The reference: every datagram stamped with its record's time.
  # --payload record: every datagram unique (values repeat), so matching
  # by content is unambiguous.
  "$sluice" series play "$work/rjob.arc" --to "pcap:$work/rjob_ref.pcap" --dst-mac "$sink_mac" \
    --payload record --clock virtual -q 2>/dev/null
  local who
  for who in sluice tcpreplay; do
    ip netns exec sink tcpdump -i vb -j adapter_unsynced --time-stamp-precision=nano -B 65536 \
      -w "$work/rjob_$who.pcap" -q 2>/dev/null &
    local pid=$!; sleep 1
    if [ "$who" = sluice ]; then
      "$sluice" series play "$work/rjob.arc" --to afpacket:va --dst-mac "$sink_mac" --payload record \
        -q --summary-json "$work/rjob.json" 2>/dev/null
    else
      tcpreplay -i va --preload-pcap "$work/rjob_ref.pcap" > /dev/null 2>&1
    fi
    sleep 1; kill $pid; wait $pid 2>/dev/null || true
    say "peer=$who arrival: $(python3 "$here/arrival.py" "$work/rjob_$who.pcap" "$work/rjob_ref.pcap")"
    [ "$who" = sluice ] && say "peer=sluice sender ε: $(json "$work/rjob.json" "['eps']")"
  done
}

: > "$results"
say "# sluice series benchmark $(date -u +%FT%TZ) on $(nproc) cores, kernel $(uname -r)"
readers() {
  # Fig. 9: the IO thread's double-buffered reads (64 MiB buffers) against
  # mapping the archive and walking it in place; every record touched once
  # either way. Warm: from the page cache; cold: the file's pages dropped
  # first (POSIX_FADV_DONTNEED). Median of $RUNS, alternated.
  local runs=${RUNS:-3}
  arc r28.arc 2000000 1 16 58
  arc r1472.arc 200000 1 1 1502
  say "== archive readers: double-buffered read against mmap, GB/s, median of $runs =="
  say "archive  cache  double_buffered  mmap  mmap/double"
  local a cache
  for a in r28.arc r1472.arc; do
    for cache in warm cold; do
      local db="" mm="" r
      local flag=(); [ "$cache" = cold ] && flag=(--cold)
      cat "$work/$a" > /dev/null
      for r in $(seq "$runs"); do
        db="$db $("$root/target/release/examples/archive_read" "$work/$a" 64 "${flag[@]}" | sed -n 's/.*: \([0-9.]*\) GB\/s.*/\1/p')"
        mm="$mm $("$root/target/release/examples/archive_read" "$work/$a" 64 --mmap "${flag[@]}" | sed -n 's/.*: \([0-9.]*\) GB\/s.*/\1/p')"
      done
      local m1 m2
      m1=$(echo $db | tr ' ' '\n' | sort -n | sed -n "$(( (runs + 1) / 2 ))p")
      m2=$(echo $mm | tr ' ' '\n' | sort -n | sed -n "$(( (runs + 1) / 2 ))p")
      say "$a  $cache  $m1  $m2  x$(python3 -c "print(f'{$m2/$m1:.2f}')")   (runs:$db |$mm)"
    done
  done
}

sweep() {
  # Fig. 10: records/s against TX threads (28-byte records, 16 devices,
  # --tight-loop 0), to null and through veth, median of $RUNS, alternated.
  local runs=${RUNS:-3} list=${THREADS:-1 2 3 4}
  say "== records/s against TX threads ($(nproc) cores), 28-byte records, median of $runs =="
  arc r28.arc 2000000 1 16 58
  declare -A got
  for r in $(seq "$runs"); do
    for t in $list; do
      for to in null afpacket:va; do
        local a b
        a=$(rx)
        play r28.arc "$to" "$work/w.json" --tight-loop 0 --threads "$t"
        b=$(rx)
        if [ "$to" = null ]; then
          got[$to/$t]="${got[$to/$t]:-} $(json "$work/w.json" "['pps']" | cut -d. -f1)"
        else
          got[$to/$t]="${got[$to/$t]:-} $(python3 -c "import json; s=json.load(open('$work/w.json')); print(round(($b-$a)/s['duration_s']))")"
        fi
      done
    done
  done
  med() { echo $1 | tr ' ' '\n' | sort -n | sed -n "$(( (runs + 1) / 2 ))p"; }
  say "tx_threads  null_rps  veth_rps  (runs null | veth)"
  for t in $list; do
    say "$t  $(med "${got[null/$t]}")  $(med "${got[afpacket:va/$t]}")  (${got[null/$t]} |${got[afpacket:va/$t]})"
  done
}

day() {
  # Table III at scale (paper §VI-F.2): SENSORS sensors (1399, the seismic
  # set's count), each sampling every PERIOD s on its own phase, for a day;
  # the day compressed FF times (--fast-forward), so the rows' durations
  # are the paper's record time, played in 1/FF of it. T_d 100 us as in the
  # paper. Each row plays the first N records of the day's archive.
  local sensors=${SENSORS:-1399} period=${PERIOD:-10} ff=${FF:-1440}
  local total=$(( sensors * 86400 / period ))
  say "== Table III at scale: $sensors sensors every ${period} s, a day = $total records of 40 B, --fast-forward $ff, T_d 100 us =="
  arc "day$sensors.arc" "$total" 86400 "$sensors" 40 --sensors
  say "duration  records  played_s  null_dropped  null_late  veth_dropped  veth_sent  veth_rx"
  for secs in 30 153 306 1533 3066 86400; do
    local n=$(( sensors * secs / period )) line
    line=$(printf '%02d:%02d:%02d %8s' $((secs / 3600)) $((secs % 3600 / 60)) $((secs % 60)) "$n")
    play "day$sensors.arc" null "$work/d.json" --fast-forward "$ff" --drift 100us --limit "$n"
    line+=" $(json "$work/d.json" "['duration_s']") $(json "$work/d.json" "['dropped']") $(json "$work/d.json" "['late']")"
    local before; before=$(rx)
    play "day$sensors.arc" afpacket:va "$work/d.json" --fast-forward "$ff" --drift 100us --limit "$n"
    line+=" $(json "$work/d.json" "['dropped']") $(json "$work/d.json" "['packets']") $(( $(rx) - before ))"
    say "$line"
  done
}

nics() {
  # Fig. 11 (multi-NIC scalability): records/s of one play through 1 and 2
  # NICs (--also-to), 1 and 2 TX threads, as fast as possible
  # (--tight-loop 0), 64-byte datagrams of 1399 devices; a second veth
  # pair vc <-> vd into the sink namespace for the second NIC. Median of
  # RUNS (3), records counted by the sink veths.
  local runs=${RUNS:-3}
  ip link add vc type veth peer name vd 2>/dev/null || true
  ip link set vd netns sink 2>/dev/null || true
  ip link set vc up; ip netns exec sink ip link set vd up
  rxd() { ip netns exec sink cat /sys/class/net/vd/statistics/rx_packets; }
  arc nics.arc 2000000 1 1399 52
  say "== Fig. 11: one series play through 1 and 2 NICs (veth), records/s, median of $runs =="
  say "nics  tx_threads  records_per_s  (runs)"
  for cfg in "1 1" "2 1" "1 2" "2 2"; do
    local nic=${cfg% *} t=${cfg#* } got=()
    for _ in $(seq "$runs"); do
      local a b extra=()
      [ "$nic" = 2 ] && extra=(--also-to afpacket:vc)
      a=$(( $(rx) + $(rxd) ))
      play nics.arc afpacket:va "$work/n.json" --tight-loop 0 --threads "$t" "${extra[@]}"
      b=$(( $(rx) + $(rxd) ))
      got+=("$(python3 -c "print(round(($b - $a) / $(json "$work/n.json" "['duration_s']")))")")
    done
    say "$nic  $t  $(printf '%s\n' "${got[@]}" | sort -n | sed -n "$(( (runs + 1) / 2 ))p")  (${got[*]})"
  done
  ip link del vc 2>/dev/null || true
}

case "${1:-all}" in
  all) io; readers; throughput; sweep; drift; real; day; nics ;;
  *) "$1" ;;
esac
