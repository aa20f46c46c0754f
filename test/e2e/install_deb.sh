#!/usr/bin/env bash
# make deb: fltrace_<version>_<arch>.deb with the run-time libraries and binutils in Depends,
# lintian without an error, and, installed with apt (then removed again; into a scratch root when
# fltrace is installed already or apt is not ours to use), a fltrace that records, reports,
# visualizes and has its manual pages.
. "$(dirname "$0")/../lib.sh"
for t in dpkg-deb dpkg-shlibdeps lintian; do
	command -v $t > /dev/null || { skip install_deb "no $t (./deps.sh installs it)"; exit 0; }
done
if ! have_preload || [ ! -x "$PROGS/fillscan" ]; then skip install_deb "preload library or fillscan not built"; exit 0; fi
if ! deb=$(make -s -C "$ROOT" deb BUILD="${FLTRACE_BUILD:-build}" 2> "$TMP/deb.err" | tail -1) || [ ! -f "$ROOT/$deb" ]; then
	fail make_deb "$(tail -3 "$TMP/deb.err")"; exit 0
fi
deb=$ROOT/$deb
version=$("$FLTRACE" --version | sed 's/^fltrace //')
expect_eq make_deb_name "package file" "fltrace_${version}_$(dpkg --print-architecture).deb" "$(basename "$deb")"
depends=$(dpkg-deb -f "$deb" Depends)
missing=
for p in libc6 libunwind8 libsodium23 libelf1 zlib1g binutils; do
	[[ ", $depends," == *", $p"[\ ,]* ]] || missing="$missing $p"
done
expect_eq make_deb_depends "packages missing from Depends ($depends)" "" "$missing"
lintian --fail-on error "$deb" > "$TMP/lintian" 2>&1
rc=$?
expect_eq make_deb_lintian "lintian's errors (exit $rc)" "" "$(grep '^E:' "$TMP/lintian")"

# Installed for real with apt when that cannot disturb anything: root, and no fltrace installed.
if [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null && ! dpkg -s fltrace > /dev/null 2>&1; then
	trap 'apt-get purge -y -qq fltrace > /dev/null 2>&1; rm -rf "$TMP"' EXIT
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$deb" > "$TMP/apt" 2>&1; then
		fail deb_apt_install "$(tail -3 "$TMP/apt")"; exit 0
	fi
	pass deb_apt_install
	bin=/usr/bin/fltrace manpath=
	how=apt
else
	dpkg-deb -x "$deb" "$TMP/root"
	bin=$TMP/root/usr/bin/fltrace manpath=$TMP/root/usr/share/man
	how=scratch
fi
if ! have_uffd; then
	skip deb_record "userfaultfd not available"
else
	D=$TMP/deb-rec; mkdir -p "$D"
	timeout -k 10 "$HANG" "$bin" record -L 4 -M 256 -o "$D" -- "$PROGS/fillscan" 16 2 > /dev/null 2> "$TMP/rec.err"
	expect_eq "deb_${how}_record" "exit status of the installed fltrace record ($(head -c 200 "$TMP/rec.err"))" 0 $?
	"$bin" report -i "$D" > /dev/null 2>&1
	fill=$(grep -n 'w->p\[i\] = ' "$ROOT/test/progs/fillscan.c" | head -1 | cut -d: -f1)
	n=$(python3 -c '
import csv, glob, sys
print(sum(int(r["count"]) for f in glob.glob(sys.argv[1] + "/fltrace-data-report-*.out") for r in csv.DictReader(open(f))
          if r["type"] == "zero" and r["code"].split("<//>")[0].endswith("/fillscan.c:" + sys.argv[2])))' "$D" "$fill")
	# 16 MB of first touches at the fill line, and no more than a page of the buffer's start besides
	if [ "$n" -ge 4096 ] && [ "$n" -le 4097 ]; then pass "deb_${how}_report"; else
		fail "deb_${how}_report" "first touches at fillscan.c:$fill: $n, expected 4096 or 4097"; fi
	"$bin" visualize -i "$D" > /dev/null 2>&1
	if xmllint --noout "$D"/fltrace-data-flamegraph-[0-9]*.svg 2> /dev/null && [ -s "$D/fltrace-data-index.html" ]; then
		pass "deb_${how}_visualize"
	else
		fail "deb_${how}_visualize" "no flamegraph or index: $(ls "$D" | tr '\n' ' ')"
	fi
fi
out=$(MANPATH=$manpath MANWIDTH=80 man --warnings fltrace-record 2>&1 | head -4 | tr -s ' \n' ' ')
case $out in *"fltrace-record - run a command with a local-memory cap"*) pass "deb_${how}_man" ;;
*) fail "deb_${how}_man" "man fltrace-record: $out" ;; esac
