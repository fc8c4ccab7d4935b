#!/usr/bin/env bash
# Install the .deb into a fresh Debian chroot as a new machine would see
# it, apt resolving its dependencies from Debian's archive, and run it:
# `sluice --version` (naming the commit), `sluice demo` (the pcap
# fallback: no interfaces there) and a `sluice tcprewrite` case of
# tcpreplay's suite. Then check the .rpm's contents and dependencies.
#
#   pkg/chroot_test.sh DEB [RPM]      (root; mmdebstrap, rpm)
set -euo pipefail
deb=$(readlink -f "$1")
rpm=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
commit=$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
dir=$(mktemp -d /tmp/sluice-chroot.XXXXXX)
cleanup() {
  for m in proc sys dev; do umount -l "$dir/$m" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
echo "chroot: mmdebstrap bookworm from $mirror"
mmdebstrap --quiet --variant=apt bookworm "$dir" "$mirror"
cp "$deb" "$dir/tmp/"
mkdir -p "$dir/tmp/suite"
cp "$root/testdata/pcap/tcpreplay__test.pcap" "$dir/tmp/suite/test.pcap"
gzip -dc "$root/testdata/tcpreplay-suite/test2.rewrite_portmap.pcap.gz" > "$dir/tmp/suite/want.pcap"
mount -t proc proc "$dir/proc"
inroot() { chroot "$dir" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }
echo "chroot: apt install ./$(basename "$deb")"
inroot apt-get install -y -q "/tmp/$(basename "$deb")" | tail -3
v=$(inroot sluice --version)
echo "chroot: $v"
case "$v" in *"$commit"*) ;; *) echo "chroot: --version does not name $commit" >&2; exit 1 ;; esac
inroot sh -c 'cd /tmp && sluice demo' | tail -4
inroot sluice tcprewrite -i /tmp/suite/test.pcap -o /tmp/suite/got.pcap -r 80:8080
cmp "$dir/tmp/suite/got.pcap" "$dir/tmp/suite/want.pcap"
echo "chroot: sluice tcprewrite -r 80:8080 is byte-identical to tcpreplay's test2.rewrite_portmap"
inroot test -f /usr/share/man/man1/sluice-tcprewrite.1.gz
inroot test -f /lib/systemd/system/sluice-worker.service
echo "chroot: man pages and systemd units installed"
if [ -n "$rpm" ]; then
  files=$(rpm -qpl "$rpm")
  for f in /usr/bin/sluice /usr/share/man/man1/sluice.1.gz /lib/systemd/system/sluice-worker.service \
           /usr/share/bash-completion/completions/sluice; do
    grep -qx "$f" <<<"$files" || { echo "rpm: $f missing" >&2; exit 1; }
  done
  echo "rpm: $(wc -l <<<"$files") files; requires: $(rpm -qpR "$rpm" | grep -v '^rpmlib' | tr '\n' ' ')"
  rpm -qpR "$rpm" | grep -q '^glibc >= ' || { echo "rpm: no glibc requirement" >&2; exit 1; }
fi
echo "chroot: all checks passed"
