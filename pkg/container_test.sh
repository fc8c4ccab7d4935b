#!/usr/bin/env bash
# The container image as CI builds and runs it, with no registry: a
# Debian base made from Debian's packages (mmdebstrap | podman import),
# the Containerfile built on it with the .deb of pkg/build.sh, then
# `sluice --version` (naming the commit) and a replay from the container
# on the host's network into a veth pair whose far end, in a namespace of
# this script's own, counts the frames.
#
#   pkg/container_test.sh DEB        (root; podman, mmdebstrap, iproute2)
set -euo pipefail
deb=$(readlink -f "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
commit=$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
tag=slc$$
work=$(mktemp -d /tmp/sluice-container.XXXXXX)
base=localhost/sluice-test-base:$tag
image=localhost/sluice-test:$tag
cleanup() {
  ip link del "${tag}a" 2>/dev/null || true
  ip netns del "$tag" 2>/dev/null || true
  podman rmi -f "$image" "$base" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "container: base image from $mirror (mmdebstrap | podman import)"
mmdebstrap --quiet --variant=minbase bookworm - "$mirror" | podman import --quiet - "$base" >/dev/null
# Some sandboxes refuse crun's default rlimits or run hybrid cgroups:
# then runc, with limits under the host's.
pod=(podman)
run_opts=()
if ! podman run --rm "$base" true >/dev/null 2>&1; then
  pod=(podman --runtime runc)
  run_opts=(--ulimit nofile=1024:1024 --ulimit nproc=4096:4096)
fi
ctx=$work/ctx
mkdir -p "$ctx/target/pkg"
cp "$root/Containerfile" "$ctx/"
cp "$deb" "$ctx/target/pkg/"
"${pod[@]}" build -q "${run_opts[@]}" --build-arg "BASE=$base" -t "$image" "$ctx" >/dev/null
v=$("${pod[@]}" run --rm "${run_opts[@]}" "$image" --version)
echo "container: $v"
case "$v" in *"$commit"*) ;; *) echo "container: --version does not name $commit" >&2; exit 1 ;; esac

# A veth pair: ${tag}a here (the container shares this network), ${tag}b
# in a namespace of its own, where the frames are counted.
ip netns add "$tag"
ip link add "${tag}a" type veth peer name "${tag}b"
ip link set "${tag}b" netns "$tag"
sysctl -qw "net.ipv6.conf.${tag}a.disable_ipv6=1"
ip netns exec "$tag" sysctl -qw "net.ipv6.conf.${tag}b.disable_ipv6=1"
ip link set "${tag}a" up
ip netns exec "$tag" ip link set "${tag}b" up
before=$(ip netns exec "$tag" cat "/sys/class/net/${tag}b/statistics/rx_packets")
mkdir -p "$work/data"
cp "$root/testdata/pcap/tcpreplay__test.pcap" "$work/data/t.pcap"
"${pod[@]}" run --rm "${run_opts[@]}" --network host --cap-add NET_RAW --cap-add NET_ADMIN \
  -v "$work/data:/data:Z" "$image" replay /data/t.pcap --to "afpacket:${tag}a" --topspeed -q
after=$(ip netns exec "$tag" cat "/sys/class/net/${tag}b/statistics/rx_packets")
got=$((after - before))
echo "container: podman run --network host ... replay --to afpacket:${tag}a: $got frames reached ${tag}b"
[ "$got" -ge 179 ] || { echo "container: expected the trace's 179 frames" >&2; exit 1; }
echo "container: all checks passed"
