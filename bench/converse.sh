#!/usr/bin/env bash
# Stateful conversations, side by side with the kernel-stack pair through
# the same router: one-request HTTP/1.1 connections (a 1 KiB GET, the
# server closing after its answer) from a client namespace through a
# router namespace that tracks every connection (nft `ct state`) to a
# server namespace.
#
#   kernel:  h2load --h1 -c CONC -m 1 against nginx (keepalive_requests 1)
#   sluice:  sluice converse --client (http, --concurrency CONC) against
#            sluice converse --server (http-server)
#   mixed:   sluice's client against nginx, h2load against sluice's server
#
# Each row: connections per second, CPUs busy (the whole machine, from
# /proc/stat: client, router and server together), connections per second
# per CPU, and the router's conntrack counters (new, invalid). Rounds
# alternate; medians are printed with the spread. Root.
#
#   bench/converse.sh [ROUNDS]     N=20000 CONC=50 SLUICE=target/release/sluice
#   MEM=100000 bench/converse.sh   also: memory of MEM idle connections
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/subnet.sh
ROUNDS=${1:-3}
N=${N:-20000}
CONC=${CONC:-50}
MEM=${MEM:-0}
SLUICE=$(realpath "${SLUICE:-target/release/sluice}")
for t in nginx h2load nft conntrack; do
  command -v $t >/dev/null || { echo "converse.sh: needs $t"; exit 1; }
done
free_subnet CN 10.79.1
free_subnet SN 10.79.2
T=cvb$(( $$ % 10000 ))
names_free ${T}c ${T}r ${T}s ${T}c0 ${T}r0 ${T}r1 ${T}s0
W=$(mktemp -d); chmod 755 $W  # nginx workers (nobody) read its files
cleanup() {
  [ -f $W/nginx.pid ] && kill -TERM "$(cat $W/nginx.pid)" 2>/dev/null || true
  for n in c r s; do ip netns del $T$n 2>/dev/null || true; done
  [ -n "${KEEP:-}" ] || rm -rf $W
}
trap cleanup EXIT
for n in c r s; do ip netns add $T$n; done
ip link add ${T}c0 type veth peer name ${T}r0
ip link add ${T}s0 type veth peer name ${T}r1
ip link set ${T}c0 netns ${T}c; ip link set ${T}r0 netns ${T}r
ip link set ${T}s0 netns ${T}s; ip link set ${T}r1 netns ${T}r
for p in c:c0 s:s0 r:r0 r:r1; do
  ip -n $T${p%%:*} link set $T${p#*:} up; ip -n $T${p%%:*} link set lo up
done
ip -n ${T}r addr add $CN.254/24 dev ${T}r0
ip -n ${T}r addr add $SN.254/24 dev ${T}r1
ip netns exec ${T}r sysctl -qw net.ipv4.ip_forward=1
ip netns exec ${T}r sysctl -qw net.netfilter.nf_conntrack_max=4194304 2>/dev/null || true
ip netns exec ${T}r nft -f - <<EOF
table inet judge {
  counter c_invalid {}
  counter c_new {}
  chain judged {
    type filter hook forward priority 0; policy accept;
    ct state invalid counter name c_invalid drop
    ct state new counter name c_new
  }
}
EOF
# Clients open from many ports: the kernel client's range wide.
ip netns exec ${T}c sysctl -qw net.ipv4.ip_local_port_range="1024 65000"
ip netns exec ${T}c sysctl -qw net.ipv4.tcp_tw_reuse=1
mkdir -p $W/www; head -c 1024 /dev/urandom > $W/www/1k
cat > $W/nginx.conf <<EOF
worker_processes 1; pid $W/nginx.pid; error_log $W/error.log; daemon off;
events { worker_connections 8192; }
http { access_log off; keepalive_requests 1;
  client_body_temp_path $W/b; proxy_temp_path $W/p; fastcgi_temp_path $W/f; uwsgi_temp_path $W/u; scgi_temp_path $W/s;
  server { listen $SN.1:80 backlog=4096; root $W/www; } }
EOF

busy() { awk '/^cpu /{print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat; }
counter() { ip netns exec ${T}r nft list counter inet judge $1 | awk '/packets/{print $2}'; }
reset_ct() { ip netns exec ${T}r conntrack -F >/dev/null 2>&1 || true; ip netns exec ${T}r nft reset counters >/dev/null; }

kernel_addrs() {
  ip -n ${T}c addr add $CN.1/24 dev ${T}c0; ip -n ${T}c route add default via $CN.254
  ip -n ${T}s addr add $SN.1/24 dev ${T}s0; ip -n ${T}s route add default via $SN.254
}
flush_addrs() { ip -n ${T}c addr flush dev ${T}c0; ip -n ${T}s addr flush dev ${T}s0; }

start_nginx() { ip netns exec ${T}s nginx -c $W/nginx.conf -p $W >/dev/null 2>&1 & sleep 0.5; }
stop_nginx() { kill -TERM "$(cat $W/nginx.pid)"; sleep 0.5; }
start_server() {  # sluice's server side on $SN.2
  ip netns exec ${T}s "$SLUICE" converse -q --server ${T}s0 --listen $SN.2 --server-gateway $SN.254 \
    -p http-server:size=1k,requests=1 --summary-json $W/server.json 2>$W/server.err &
  SPID=$!
  for _ in $(seq 50); do grep -q answers $W/server.err 2>/dev/null && break; sleep 0.1; done
}
stop_server() { kill -INT $SPID; wait $SPID 2>/dev/null || true; }

# run NAME: one measured run; prints "NAME cps cpus".
measure() {  # measure NAME CMD...: times CMD, prints name, conns/s, CPUs busy
  local name=$1; shift
  reset_ct
  read b0 t0 < <(busy); local s0=$(date +%s.%N)
  "$@" > $W/out 2>&1 || { echo "$name failed:"; tail -5 $W/out; return 1; }
  cp $W/out $W/out.$name
  local s1=$(date +%s.%N); read b1 t1 < <(busy)
  local conns
  case $name in
    kernel|h2load-sluice) conns=$(awk '/requests:/{print $8}' $W/out) ;;
    *) conns=$(python3 -c "import json,sys; d=json.load(open('$W/client.json')); print(d['sides'][0]['total']['completed'])") ;;
  esac
  local new=$(counter c_new) inval=$(counter c_invalid)
  python3 - "$name" "$conns" "$s0" "$s1" "$b0" "$t0" "$b1" "$t1" "$new" "$inval" <<'PY' >> $W/rows
import sys
name, conns, s0, s1, b0, t0, b1, t1, new, inval = sys.argv[1:]
wall = float(s1) - float(s0)
cpus = (float(b1) - float(b0)) / (float(t1) - float(t0)) * 2 if float(t1) > float(t0) else 0
cps = int(conns) / wall
print(f"{name} {cps:.0f} {cpus:.2f} {cps / max(cpus, 1e-9):.0f} {conns} {new} {inval} {wall:.3f}")
PY
  tail -1 $W/rows
}

client_cmd() {  # client_cmd TARGET_IP
  ip netns exec ${T}c "$SLUICE" converse -q --client ${T}c0 --pool $CN.10-$CN.250 --to $1 --gateway $CN.254 \
    -p http:size=1k,path=/1k -n $N --concurrency $CONC --summary-json $W/client.json
}

for r in $(seq $ROUNDS); do
  kernel_addrs; start_nginx
  measure kernel ip netns exec ${T}c h2load --h1 -n $N -c $CONC -m 1 http://$SN.1/1k
  measure sluice-nginx client_cmd $SN.1
  stop_nginx; flush_addrs
  start_server
  measure sluice client_cmd $SN.2
  stop_server
  kernel_addrs; start_server
  measure h2load-sluice ip netns exec ${T}c h2load --h1 -n $N -c $CONC -m 1 http://$SN.2/
  stop_server; flush_addrs
done

echo
echo "median of $ROUNDS rounds (N=$N connections, $CONC at once; $(nproc) CPUs):"
python3 - $W/rows <<'PY'
import sys, statistics as st
rows = {}
for l in open(sys.argv[1]):
    n, cps, cpus, per, conns, new, inval, wall = l.split()
    rows.setdefault(n, []).append((float(cps), float(cpus), float(per), int(new), int(inval)))
print(f"{'pair':<14} {'conn/s':>9} {'spread':>13} {'CPUs':>5} {'conn/s/CPU':>10} {'ct new':>7} {'invalid':>7}")
for n, v in rows.items():
    cps = [x[0] for x in v]
    print(f"{n:<14} {st.median(cps):>9.0f} {min(cps):>6.0f}-{max(cps):<6.0f} {st.median(x[1] for x in v):>5.2f} {st.median(x[2] for x in v):>10.0f} {max(x[3] for x in v):>7} {max(x[4] for x in v):>7}")
if "kernel" in rows and "sluice" in rows:
    k = st.median(x[2] for x in rows["kernel"]); s = st.median(x[2] for x in rows["sluice"])
    print(f"sluice pair / kernel pair, conn/s per CPU: x{s / k:.2f}")
PY

if [ "$MEM" -gt 0 ]; then
  echo
  echo "memory of $MEM idle connections (each client waits 120 s after its handshake):"
  start_server
  ip netns exec ${T}c "$SLUICE" converse -q --client ${T}c0 --pool $CN.10-$CN.250 --to $SN.2 --gateway $CN.254 \
    -p "http:size=1k,wait=120s" --cps 20000 -n $MEM --drain 300s --summary-json $W/client.json &
  CPID=$!
  sleep $(( MEM / 20000 + 5 ))
  # `ip netns exec` execs sluice: these are sluice's own PIDs.
  for who in client:$CPID server:$SPID; do
    awk -v n=$MEM -v w=${who%%:*} '/VmRSS/{printf "%s RSS %.1f MiB: %.0f B per connection (all of the process)\n", w, $2/1024, $2*1024/n}' /proc/${who#*:}/status
  done
  echo "router: $(ip netns exec ${T}r conntrack -C) connections tracked"
  kill -INT $CPID; wait $CPID || true
  stop_server
fi
