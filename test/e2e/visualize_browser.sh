#!/usr/bin/env bash
# Browser tests of the visualize pictures: headless Debian chromium opens them, the flamegraph's
# click-to-zoom, reset and search run without script errors, and screenshots show drawn frames.
# Skipped where /usr/bin/chromium is not installed (apt-get install chromium).
. "$(dirname "$0")/../lib.sh"

CHROMIUM=${FLTRACE_CHROMIUM:-/usr/bin/chromium}
GEN=$BUILD/test/unit/test_vis_trace
RUN=$TMP/run
P=31337
# Screenshots stay in the build tree for people to look at.
SHOTS=$BUILD/test/screenshots

NAMES=(visualize_browser_zoom_search visualize_browser_reset visualize_browser_screenshot
	visualize_browser_timeline visualize_browser_index visualize_browser_index_answer_first)
if [ ! -x "$CHROMIUM" ]; then
	for n in "${NAMES[@]}"; do skip "$n" "no browser at $CHROMIUM (apt-get install chromium)"; done
	exit 0
fi
if [ ! -x "$GEN" ] || ! "$GEN" --write "$RUN" || ! "$FLTRACE" visualize -i "$RUN" >/dev/null 2>"$TMP/err"; then
	for n in "${NAMES[@]}"; do fail "$n" "could not draw the synthetic trace: $(cat "$TMP/err" 2>/dev/null)"; done
	exit 1
fi
mkdir -p "$SHOTS"

# One headless run; its own profile, no network, bounded in time.
browse() { # args... (URL last)
	timeout -k 10 "$HANG" "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-background-networking \
		--disable-component-update --disable-sync --no-first-run --user-data-dir="$TMP/profile" \
		--enable-logging=stderr --v=0 --hide-scrollbars "$@"
}

# URL-encode a frame name for the #c= / #s= hooks of the flamegraph script.
urlenc() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1" 2>/dev/null ||
	printf '%s' "$1" | sed 's/ /%20/g; s/(/%28/g; s/)/%29/g; s/:/%3A/g'; }

# Pixels of an exact colour in a PNG screenshot (pure python: zlib and the PNG filters).
count_colour() { # png r g b
	python3 - "$@" <<'EOF'
import struct, sys, zlib
path, want = sys.argv[1], tuple(int(v) for v in sys.argv[2:5])
data = open(path, 'rb').read()
pos, idat, w = 8, b'', 0
while pos < len(data):
    n, kind = struct.unpack('>I4s', data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b'IHDR':
        w, h, depth, ctype = struct.unpack('>IIBB', body[:10])
        bpp = {2: 3, 6: 4}[ctype]
    elif kind == b'IDAT':
        idat += body
    pos += 12 + n
raw, stride, prev, hits, i = zlib.decompress(idat), w * bpp, None, 0, 0
for y in range(h):
    f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b = prev[x] if prev else 0
        c = prev[x - bpp] if prev and x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    prev = line
    hits += sum(1 for x in range(0, stride, bpp) if tuple(line[x:x + 3]) == want)
print(hits)
EOF
}

FG=$RUN/fltrace-data-flamegraph-$P.svg
SCAN=$(grep -o '<title>vis_scan ([^)]*)' "$FG" | head -1 | sed 's/<title>//')
URL="file://$FG#c=$(urlenc "$SCAN")&s=$(urlenc 'vis_scan_leaf')"
dom=$(browse --dump-dom "$URL" 2>"$TMP/console1")
state=$(printf '%s' "$dom" | grep -o 'data-state="[^"]*"' | head -1)
jserr=$(printf '%s' "$dom" | grep -o 'data-error="[^"]*"'; grep -i 'Uncaught\|SyntaxError\|TypeError\|ReferenceError' "$TMP/console1")
# After the click, vis_scan spans the whole width; a frame outside it is hidden.
zoomed_rect=$(printf '%s' "$dom" | tr '\n' ' ' | grep -o "<title>vis_scan ([^<]*</title><rect[^>]*>" | grep -o 'x="[^"]*" y="[^"]*" width="[^"]*"')
hidden=$(printf '%s' "$dom" | tr '\n' ' ' | grep -o '<g class="f" style="display: none;"><title>vis_build' | head -1)
if [ -z "$SCAN" ]; then fail visualize_browser_zoom_search "no vis_scan frame in $(basename "$FG")"
elif [ -n "$jserr" ]; then fail visualize_browser_zoom_search "script error: $jserr"
elif [ "$state" != "data-state=\"clicked=$SCAN;matched=41.67\"" ]; then
	fail visualize_browser_zoom_search "state after click+search: '$state' (expected clicked=$SCAN;matched=41.67)"
elif [[ "$zoomed_rect" != 'x="10.0" '*'width="1180.0"' ]]; then
	fail visualize_browser_zoom_search "zoomed frame not full width: $zoomed_rect"
elif [ -z "$hidden" ]; then fail visualize_browser_zoom_search "frames outside the zoom still shown"
elif ! printf '%s' "$dom" | grep -q 'Matched: 41.67%'; then fail visualize_browser_zoom_search "no 'Matched: 41.67%' shown"
else pass visualize_browser_zoom_search; fi

dom=$(browse --dump-dom "file://$FG#c=$(urlenc "$SCAN")&r=1" 2>"$TMP/console2")
state=$(printf '%s' "$dom" | grep -o 'data-state="[^"]*"' | head -1)
jserr=$(printf '%s' "$dom" | grep -o 'data-error="[^"]*"'; grep -i 'Uncaught' "$TMP/console2")
if [ -n "$jserr" ]; then fail visualize_browser_reset "script error: $jserr"
elif [ "$state" != "data-state=\"clicked=$SCAN;reset=yes\"" ]; then fail visualize_browser_reset "state '$state'"
elif printf '%s' "$dom" | grep -q 'style="display: none'; then fail visualize_browser_reset "frames still hidden after Reset Zoom"
else pass visualize_browser_reset; fi

# Screenshot of the zoomed and searched graph: search hits are magenta, the zoomed frames drawn.
SHOT=$SHOTS/flamegraph-zoomed.png
rm -f "$SHOT"
browse --screenshot="$SHOT" --window-size=1200,260 "$URL" >/dev/null 2>&1
if [ ! -s "$SHOT" ]; then fail visualize_browser_screenshot "no screenshot written"
elif ! command -v python3 >/dev/null; then pass visualize_browser_screenshot
else
	magenta=$(count_colour "$SHOT" 230 0 230)
	shot2=$SHOTS/flamegraph.png
	browse --screenshot="$shot2" --window-size=1200,260 "file://$FG" >/dev/null 2>&1
	green=$(count_colour "$shot2" 90 180 90) # zero/write leaves: vis_alloc_leaf [w]
	if [ "${magenta:-0}" -gt 5000 ] && [ "${green:-0}" -gt 5000 ]; then pass visualize_browser_screenshot
	else fail visualize_browser_screenshot "too few frame pixels: $magenta search hits (zoomed), $green zero/write leaves"; fi
fi

TSHOT=$SHOTS/timeline.png
browse --screenshot="$TSHOT" --window-size=1200,900 "file://$RUN/fltrace-data-timeline-$P.svg" >/dev/null 2>&1
if [ ! -s "$TSHOT" ]; then fail visualize_browser_timeline "no screenshot written"
elif ! command -v python3 >/dev/null; then pass visualize_browser_timeline
else
	blue=$(count_colour "$TSHOT" 80 145 205) # refetch, in the rate panel at least
	if [ "${blue:-0}" -gt 200 ]; then pass visualize_browser_timeline
	else fail visualize_browser_timeline "no refetch points drawn ($blue pixels)"; fi
fi

# The index embeds the pictures with <object>, whose scripts run inside the page.
ISHOT=$SHOTS/index.png
dom=$(browse --dump-dom --virtual-time-budget=2000 "file://$RUN/fltrace-data-index-$P.html" 2>"$TMP/console3")
browse --screenshot="$ISHOT" --window-size=1200,1400 "file://$RUN/fltrace-data-index-$P.html" >/dev/null 2>&1
if grep -qi 'Uncaught' "$TMP/console3"; then fail visualize_browser_index "script error: $(grep -i Uncaught "$TMP/console3" | head -1)"
elif [ "$(printf '%s' "$dom" | grep -c '<object type="image/svg+xml"')" != 5 ]; then fail visualize_browser_index "index does not embed 5 pictures"
elif [ ! -s "$ISHOT" ]; then fail visualize_browser_index "no screenshot written"
else pass visualize_browser_index; fi

# The index opens with the answer: the summary paragraph, then the top callsites, then the pictures;
# the raw stats table last, folded. Positions in the DOM as the browser built it.
pos() { printf '%s' "$dom" | grep -b -o -F -- "$1" | head -1 | cut -d: -f1; }
p_sum=$(pos '<p class="summary"><b>2160 faults</b>')
p_sites=$(pos '<h2>Top callsites</h2>')
p_obj=$(pos '<object type="image/svg+xml"')
p_det=$(pos '<details>')
p_stats=$(pos '<th>vm_hwm</th>')
last=$(printf '%s' "$dom" | tr -d '\n' | grep -o '</details>[^<]*</body>')
visible=$(printf '%s' "$dom" | grep -c '<details open')
if [ -z "$p_sum" ] || [ -z "$p_sites" ] || [ -z "$p_obj" ] || [ -z "$p_det" ] || [ -z "$p_stats" ]; then
	fail visualize_browser_index_answer_first "missing: summary '$p_sum' callsites '$p_sites' pictures '$p_obj' details '$p_det' stats '$p_stats'"
elif ! [ "$p_sum" -lt "$p_sites" ] || ! [ "$p_sites" -lt "$p_obj" ] || ! [ "$p_obj" -lt "$p_det" ] || ! [ "$p_det" -lt "$p_stats" ]; then
	fail visualize_browser_index_answer_first "order: summary $p_sum, callsites $p_sites, pictures $p_obj, stats $p_det"
elif [ -z "$last" ] || [ "$visible" != 0 ]; then fail visualize_browser_index_answer_first "stats table not last or not folded"
elif ! printf '%s' "$dom" | grep -q '1220 zero-filled first touches (56.5%), 600 re-fetches of evicted pages (27.8%)'; then
	fail visualize_browser_index_answer_first "summary counts: $(printf '%s' "$dom" | grep -o '<p class="summary">.\{0,300\}')"
elif ! printf '%s' "$dom" | tr -d '\n' | grep -q '<tr><td>vis_scan_leaf</td>'; then
	fail visualize_browser_index_answer_first "no vis_scan_leaf row in the callsites table"
else pass visualize_browser_index_answer_first; fi
echo "screenshots (look at them): $SHOTS/index.png $SHOTS/flamegraph.png $SHOTS/timeline.png"
