#!/usr/bin/env bash
# Build sluice's packages: a .deb (always) and an .rpm (where rpmbuild is).
#
#   pkg/build.sh [OUTDIR]        (default target/pkg)
#
# Both hold the release binary, one man page per command (each with an
# EXAMPLES section), bash/zsh/fish completions, the docs, and systemd
# units for the worker and inject services, which run as a user of their
# own with the capabilities sending needs (pkg/systemd/). They install no
# tcpreplay/tcprewrite/tcpprep names: the real tools may sit beside sluice
# (`sluice tcpreplay ...`, or a symlink of your own).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/target/pkg}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$root"
cargo build --release --locked -p sluice-cli
bin=target/release/sluice
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
install -D -m 0755 "$bin" "$stage/usr/bin/sluice"
strip "$stage/usr/bin/sluice"
mkdir -p "$stage/usr/share/man/man1"
"$bin" man --dir "$stage/usr/share/man/man1" 2>/dev/null
gzip -9n "$stage"/usr/share/man/man1/*.1
install -d "$stage/usr/share/bash-completion/completions" \
  "$stage/usr/share/zsh/vendor-completions" "$stage/usr/share/fish/vendor_completions.d"
"$bin" completions bash > "$stage/usr/share/bash-completion/completions/sluice"
"$bin" completions zsh > "$stage/usr/share/zsh/vendor-completions/_sluice"
"$bin" completions fish > "$stage/usr/share/fish/vendor_completions.d/sluice.fish"
doc=$stage/usr/share/doc/sluice
install -d "$doc"
cp README.md CHANGELOG.md docs/CLI.md docs/FORMATS.md docs/MIGRATING.md "$doc/"
cat LICENSE-MIT LICENSE-APACHE > "$doc/copyright"
install -D -m 0644 pkg/systemd/sluice-worker.service "$stage/lib/systemd/system/sluice-worker.service"
install -D -m 0644 pkg/systemd/sluice-inject@.service "$stage/lib/systemd/system/sluice-inject@.service"

# The newest glibc symbol version the binary needs is the least libc it runs on.
glibc=$(objdump -T "$stage/usr/bin/sluice" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -1)
arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)

# .deb
deb=$stage/deb
mkdir -p "$deb/DEBIAN"
cp -a "$stage/usr" "$stage/lib" "$deb/"
size=$(du -sk "$deb" | cut -f1)
cat > "$deb/DEBIAN/control" <<CONTROL
Package: sluice
Version: $version
Architecture: $arch
Maintainer: sluice developers <sluice@localhost>
Installed-Size: $size
Depends: libc6 (>= $glibc), libgcc-s1
Suggests: tcpdump, iproute2
Section: net
Priority: optional
Homepage: https://github.com/sluice-tg/sluice
Description: precise, fast software traffic generator
 Replays traces with their timing or at set rates, rewrites their headers,
 generates flows and stochastic profiles, paces live traffic and runs
 RFC 2544 benchmarks, on AF_PACKET or AF_XDP. It also takes tcpreplay's,
 tcprewrite's and tcpprep's command lines (sluice tcpreplay ...).
CONTROL
debfile=$out/sluice_${version}_${arch}.deb
dpkg-deb --root-owner-group --build "$deb" "$debfile" >/dev/null
echo "$debfile"

# .rpm
if command -v rpmbuild >/dev/null 2>&1; then
  top=$stage/rpm
  mkdir -p "$top"/{BUILD,RPMS,SPECS,SRPMS,SOURCES}
  cat > "$top/SPECS/sluice.spec" <<SPEC
Name: sluice
Version: $version
Release: 1
Summary: precise, fast software traffic generator
License: MIT or Apache-2.0
URL: https://github.com/sluice-tg/sluice
Requires: glibc >= $glibc, libgcc
AutoReqProv: no
%description
Replays traces with their timing or at set rates, rewrites their headers,
generates flows and stochastic profiles, paces live traffic and runs RFC
2544 benchmarks, on AF_PACKET or AF_XDP; also takes tcpreplay's command lines.
%install
mkdir -p %{buildroot}
cp -a $stage/usr $stage/lib %{buildroot}/
%files
/usr/bin/sluice
/usr/share/man/man1/*
/usr/share/bash-completion/completions/sluice
/usr/share/zsh/vendor-completions/_sluice
/usr/share/fish/vendor_completions.d/sluice.fish
%doc /usr/share/doc/sluice
/lib/systemd/system/sluice-worker.service
/lib/systemd/system/sluice-inject@.service
SPEC
  rpmbuild -bb --define "_topdir $top" --define "_build_id_links none" \
    --define "__os_install_post %{nil}" "$top/SPECS/sluice.spec" >/dev/null 2>&1 \
    || rpmbuild -bb --define "_topdir $top" "$top/SPECS/sluice.spec"
  cp "$top"/RPMS/*/*.rpm "$out/"
  ls "$out"/*.rpm
fi
