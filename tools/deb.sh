#!/usr/bin/env bash
# `make deb`: the Debian package fltrace_<version>_<arch>.deb, built from `make install` into a
# staging root under /usr. Usage: deb.sh BUILD (the object tree make built). Writes BUILD/deb/.
set -euo pipefail
B=$1
fltrace=$B/bin/fltrace
version=$("$fltrace" --version | sed 's/^fltrace //')
arch=$(dpkg --print-architecture)
work=$B/deb/work
root=$work/root
deb=$B/deb/fltrace_${version}_${arch}.deb

rm -rf "$work" "$deb"
mkdir -p "$root/DEBIAN"
make -s install BUILD="$B" DESTDIR="$(cd "$root" && pwd)" PREFIX=/usr > /dev/null

# As Debian ships them: binaries without their debugging symbols (the dynamic ones stay: the runtime
# and the unwinder need them), manual pages compressed, a copyright file and a changelog.
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$root/usr/bin/fltrace" \
	"$root/usr/lib/fltrace/libfltrace.so"
gzip -9n "$root"/usr/share/man/man1/*.1
doc=$root/usr/share/doc/fltrace
install -d "$doc"
cat > "$doc/copyright" << 'TXT'
fltrace: which lines of a program page-fault when it gets less memory than it wants.

Copyright (C) 2026 the fltrace developers.
The project has not stated a license yet; until it does, ask its developers before
redistributing this package. The preload library links jemalloc (BSD-2-Clause), whose
notice is in the libjemalloc-dev package's copyright file.
TXT
{
	echo "fltrace ($version) unstable; urgency=medium"
	echo
	echo "  * Built from the fltrace source tree by make deb."
	echo
	echo " -- fltrace developers <dev@fltrace.invalid>  $(date -R -d @"${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2> /dev/null || date +%s)}")"
} | gzip -9n > "$doc/changelog.gz"
chmod 644 "$doc/copyright" "$doc/changelog.gz"

# Depends: the shared libraries of both binaries as dpkg-shlibdeps finds their packages, and
# binutils, whose addr2line `fltrace report` runs.
mkdir -p "$work/debian"
printf 'Source: fltrace\n\nPackage: fltrace\nArchitecture: any\n' > "$work/debian/control"
shlibs=$(cd "$work" && dpkg-shlibdeps -O -e root/usr/bin/fltrace -e root/usr/lib/fltrace/libfltrace.so 2> /dev/null |
	sed -n 's/^shlibs:Depends=//p')
[ -n "$shlibs" ] || { echo "deb.sh: dpkg-shlibdeps found no libraries" >&2; exit 1; }
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat > "$root/DEBIAN/control" << TXT
Package: fltrace
Version: $version
Architecture: $arch
Maintainer: fltrace developers <dev@fltrace.invalid>
Installed-Size: $size
Depends: $shlibs, binutils
Section: devel
Priority: optional
Description: page-fault tracer: which lines fault when memory is short
 fltrace runs an unmodified program with less local memory than it wants,
 evicting the rest to emulated far memory (in-process, a file, or memcached
 servers), and records every page fault it takes with the stack of code that
 caused it. fltrace report turns the trace into CSV, pprof, speedscope or
 perf-script files; fltrace visualize draws flame graphs and timelines;
 fltrace sweep measures the miss-ratio curve over several memory sizes.
TXT
rm -rf "$work/debian"
dpkg-deb --root-owner-group --build "$root" "$deb" > /dev/null
echo "$deb"
