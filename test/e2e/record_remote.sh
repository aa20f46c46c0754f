# record --far memcached: far memory on real memory servers (memcached on loopback, started here and
# by test/run.sh): programs give their native output at a quarter of their peak with pages on every
# server, two runs share servers without meeting, replicas survive a killed server, and a server that
# dies, stops, restarts empty or is refused at start stops the run with one line and exit 122 or 2.
source "$(dirname "$0")/../lib.sh"

if ! have_uffd; then
	skip record_remote "userfaultfd is not available to this user"
	exit 0
fi
if [ -z "${FLTRACE_TEST_MEMCACHED:-}" ] || ! command -v memcached > /dev/null; then
	skip record_remote "no memcached servers (test/run.sh starts them; deps.sh installs memcached)"
	exit 0
fi
MC="python3 $ROOT/test/memcached.py"
MCD=$TMP/servers # servers this script starts (and kills): stopped however it ends
trap '$MC stop "$MCD"; rm -rf "$TMP"' EXIT
SERVERS=$FLTRACE_TEST_MEMCACHED
# A server that does not answer within --far-timeout is given up: on a machine this busy (its
# servers run at the tests' nice 19) a healthy one may take seconds, so the runs here wait long,
# but for the stopped server's case (a time-out is its verdict, not how long it took).
T="--far-timeout 120000"
IFS=, read -r -a POOL <<< "$SERVERS"

# items: curr_items summed over the session's servers
items() { local s n=0; for s in "${POOL[@]}"; do n=$((n + $($MC stat "$s" curr_items))); done; echo $n; }

# quarter NAME PROG ARGS...: a learning run finds the peak, then the run at a quarter of it on the
# servers must give the native output; each server took some of its pages (total_items grew on
# every one), and when it ends the servers hold what they held before (curr_items).
quarter() {
	local name=$1; shift
	local dir=$TMP/${name}_learn s before after
	mkdir -p "$dir"
	timeout "$HANG" "$FLTRACE" record -o "$dir" -- "$@" > /dev/null 2>&1
	local peak=$(stat_max "$dir" resident_peak_bytes)
	local l=$(( (peak / 4 + 65535) / 65536 * 64 ))K
	declare -A tot
	for s in "${POOL[@]}"; do tot[$s]=$($MC stat "$s" total_items); done
	before=$(items)
	same_output "remote_$name" "-L $l -M 2048 $T --far memcached:$SERVERS" "$@" || return
	local spread=ok
	for s in "${POOL[@]}"; do
		[ "$($MC stat "$s" total_items)" -gt "${tot[$s]}" ] || spread="none on $s"
	done
	[ "$spread" = ok ] && pass "remote_${name}_on_every_server" || fail "remote_${name}_on_every_server" "$spread"
	expect_stat "remote_${name}_went_far" "$TMP/remote_$name" far_gets -gt 100
	after=$(items)
	expect_eq "remote_${name}_leaves_nothing" "items on the servers after the run" "$before" "$after"
}

# (Sizes are small: each re-fetch is a round trip to a server on this machine, and a busy machine
# starves the servers; the hang guard must only ever catch a hang.)
quarter fillscan "$PROGS/fillscan" 24 3
cc -std=gnu11 -O2 -o "$TMP/bfs" "$ROOT/test/bench/bfs.c" -lpthread && quarter bfs "$TMP/bfs" 14 8 1
# An eviction's pages go out together, one request to each server and connection (two a
# server), however scattered: far_put_rounds counts one per server and connection written, at
# most 2 x servers per eviction (evict_ops) and per 64 pages. bfs's victims are single pages,
# python's runs of 1-3 pages, each sent as its own request before (2026-12-07, 3 servers:
# python 26 requests an eviction, bfs 9.7; now 6.0 and 5.9).
batched() {
	local dir=$TMP/remote_$1 puts rounds ops
	puts=$(stat_max "$dir" far_puts) rounds=$(stat_max "$dir" far_put_rounds) ops=$(stat_max "$dir" evict_ops)
	if [ "${puts:-0}" -gt 0 ] && [ "$rounds" -le $((2 * ${#POOL[@]} * (ops + puts / 64))) ]; then
		pass "remote_$1_evictions_batched"
	else
		fail "remote_$1_evictions_batched" "$puts pages in $rounds server requests for $ops evictions: over $((2 * ${#POOL[@]})) an eviction"
	fi
}
batched bfs
quarter python python3 -c 'd = {i: str(i) * 3 for i in range(100000)}
print(sum(len(v) for v in d.values()), sum(d))'
batched python

# Two runs at once on the same servers: each its own pages (keys under its run's random id, sealed
# under its own key), both outputs native, nothing left after either.
before=$(items)
for i in 1 2; do
	( same_output "remote_shared_$i" "-L 4 -M 1024 $T --far memcached:$SERVERS" "$PROGS/fillscan" 16 3 > "$TMP/shared_$i.out" ) &
done
wait
cat "$TMP/shared_1.out" "$TMP/shared_2.out"
expect_eq remote_shared_leave_nothing "items on the servers after both runs" "$before" "$(items)"

# fltrace record itself killed with SIGKILL: nobody clears its run's items, which stay on the
# servers; `record --far-clear <run>` (the id its first note named) deletes every one of them.
dir=$TMP/remote_record_killed
mkdir -p "$dir"
before=$(items)
timeout "$HANG" "$FLTRACE" record -L 4 -M 1024 $T --far "memcached:$SERVERS" -o "$dir" -- \
	"$PROGS/farpause" 16 "$dir/ready" "$dir/go" > "$dir/out" 2> "$dir/err" &
pid=$!
while [ ! -e "$dir/ready" ] && kill -0 $pid 2> /dev/null; do sleep 0.1; done
rec=$(pgrep -P $pid -x fltrace)
prog=$(pgrep -P "$rec")
kill -9 $rec $prog
wait $pid
left=$(($(items) - before))
run=$(sed -n 's/.*keyed fltrace:\([0-9a-f]*\):.*/\1/p' "$dir/err")
"$FLTRACE" record --far "memcached:$SERVERS" --far-clear "$run" > /dev/null 2> "$dir/clear.err"
echo $? > "$dir/clear.rc"
if [ "$left" -le 100 ]; then
	fail remote_record_killed_leaves_items "$left items left by run '$run' (a 16 MB fill at -L 4 evicts most of it)"
else
	pass remote_record_killed_leaves_items
	expect_eq remote_far_clear_deletes_them "items on the servers after --far-clear" "$before" "$(items)"
	expect_eq remote_far_clear_says_so "--far-clear's exit status and line" \
		"0 fltrace: far memory: $left items of run $run deleted" "$(cat "$dir/clear.rc") $(cat "$dir/clear.err")"
fi

# The sockets are fltrace's own: never in the program's fd table (its /proc/self/fd listing at
# start, in a fork child and after exec are the untraced ones), and a program closing every fd it
# has does not close them.
same_output remote_fds_listing "-L 16 -M 2048 $T --far memcached:$SERVERS" "$PROGS/fdtable" list
same_output remote_fds_close_range "-L 16 -M 2048 $T --far memcached:$SERVERS" "$PROGS/fdtable" close_range

# ---- a server lost mid-run: farpause fills 16 MB at -L 4 (most of it far), waits while the test
# acts on a server, then reads it all back ----
"$PROGS/farpause" 16 "$TMP/nready" /dev/null > "$TMP/farpause.native"
echo "exit 0" >> "$TMP/farpause.native"

# paused NAME SERVERS "OPTS" ACTION: the run stopped at its pause while ACTION runs ($PAUSED_PID is
# the program's pid); its stdout, stderr and exit status in $TMP/NAME/{out,err,rc}.
paused() {
	local name=$1 list=$2 opts=$3 action=$4 dir=$TMP/$1 i
	mkdir -p "$dir"
	# shellcheck disable=SC2086
	timeout "$HANG" "$FLTRACE" record -L 4 -M 1024 --far "memcached:$list" $opts -o "$dir" -- \
		"$PROGS/farpause" 16 "$dir/ready" "$dir/go" > "$dir/out" 2> "$dir/err" &
	local pid=$!
	# the fill's end, or the run's (a hang guard only: the loop ends with the run)
	while [ ! -e "$dir/ready" ] && kill -0 $pid 2> /dev/null; do sleep 0.1; done
	eval "$action"
	touch "$dir/go"
	wait $pid
	echo $? > "$dir/rc"
}

# stopped_with NAME RC REGEX: the run exited RC with one line on stderr matching REGEX, shaped
# "fltrace: far memory: <why>; <what to do>", and its trace reads up to that point.
stopped_with() {
	local name=$1 rc=$2 re=$3 dir=$TMP/$1 got
	got=$(cat "$dir/rc")
	local lines=$(grep -c '^fltrace: far memory:' "$dir/err")
	if [ "$got" != "$rc" ] || [ "$lines" != 1 ] || ! grep -Eq "^fltrace: far memory: .*$re.*; .+" "$dir/err"; then
		fail "$name" "exit $got (want $rc), stderr: $(head -c 400 "$dir/err")"
	elif ! "$FLTRACE" report -i "$dir" -o - > /dev/null 2>&1; then
		fail "$name" "the trace does not read: $("$FLTRACE" report -i "$dir" -o - 2>&1 | head -2)"
	elif grep -q farpause "$dir/out"; then
		fail "$name" "the program finished (a wrong page?): $(cat "$dir/out")"
	else
		pass "$name"
	fi
}

three() { $MC start "$MCD" 3 -m 1024; }

# --far-replicas 2: one of three servers killed -9 at the pause; every page has a copy elsewhere.
list=$(three)
victim=${list%%,*}
paused remote_replica_kill "$list" "--far-replicas 2 $T" \
	"kill -9 \$(awk -v s=$victim '\$2 == s { print \$1 }' $MCD/pids)"
echo "exit $(cat "$TMP/remote_replica_kill/rc")" >> "$TMP/remote_replica_kill/out"
if cmp -s "$TMP/farpause.native" "$TMP/remote_replica_kill/out"; then pass remote_replica_kill_same_output
else fail remote_replica_kill_same_output "$(diff "$TMP/farpause.native" "$TMP/remote_replica_kill/out" | head -3 | tr '\n' ' ') $(head -c 300 "$TMP/remote_replica_kill/err")"; fi
expect_stat remote_replica_gets_counted "$TMP/remote_replica_kill" far_replica_gets -gt 0
expect_stat remote_replica_server_lost "$TMP/remote_replica_kill" far_servers_lost -eq 1
grep -Eq "^fltrace: note: far memory: server $victim (closed|refused) the connection.*read from their replicas" "$TMP/remote_replica_kill/err" &&
	pass remote_replica_kill_noted || fail remote_replica_kill_noted "$(head -c 300 "$TMP/remote_replica_kill/err")"
# record's summary says how many re-fetches the replicas answered: the stats' count, exactly
rg=$(stat_max "$TMP/remote_replica_kill" far_replica_gets)
expect_eq remote_replica_gets_summary "record's summary line of replica reads" \
	"fltrace: far memory replicas: $rg re-fetches read from a replica; 1 server given up" \
	"$(grep '^fltrace: far memory replicas: ' "$TMP/remote_replica_kill/err")"
$MC stop "$MCD"

# Without replicas: killed, stopped (a time-out, not a hang), restarted empty, a page dropped.
list=$(three); victim=${list%%,*}
paused remote_server_killed "$list" "$T" "kill -9 \$(awk -v s=$victim '\$2 == s { print \$1 }' $MCD/pids)"
stopped_with remote_server_killed 122 "server $victim (closed|refused).*now lost: [0-9]+"
$MC stop "$MCD"

list=$(three); victim=${list%%,*}
paused remote_server_stopped "$list" "--far-timeout 20000" "kill -STOP \$(awk -v s=$victim '\$2 == s { print \$1 }' $MCD/pids)"
stopped_with remote_server_stopped 122 "server $victim did not answer in time.*now lost: [0-9]+"
$MC stop "$MCD"

list=$(three); victim=${list%%,*}
paused remote_server_restarted "$list" "$T" "$MC restart $MCD $victim"
# Met while it is down (a busy machine: a stress run beside it), it refused the connection.
stopped_with remote_server_restarted 122 "server $victim (does not have the evicted page of slot [0-9]+|closed the connection|refused the connection)"
$MC stop "$MCD"

list=$(three)
victim=${list%%,*}
paused remote_page_dropped "$list" "$T" "$MC delete-all $victim fltrace:"
stopped_with remote_page_dropped 122 "server $victim does not have the evicted page of slot [0-9]+"
$MC stop "$MCD"

# An item altered on the server: refused, never handed to the program.
list=$(three)
paused remote_page_altered "$list" "$T" \
	"for s in \${list//,/ }; do $MC alter-all \$s fltrace:; done"
stopped_with remote_page_altered 122 "altered, swapped with another or replayed"
$MC stop "$MCD"

# ---- refused before the command starts ----
list=$(three)
expect_error remote_unreachable 2 "--far: server 127.0.0.1:1 refused the connection" \
	"$FLTRACE" record -L 8 -M 64 --far "memcached:127.0.0.1:1,$list" -- true
expect_error remote_bad_list 2 "--far: 'localhost' in 'localhost' is not host:port" \
	"$FLTRACE" record -L 8 -M 64 --far memcached:localhost -- true
expect_error remote_replicas_over_pool 2 "--far-replicas: 4 replicas need 4 servers, the list has 3" \
	"$FLTRACE" record -L 8 -M 64 --far "memcached:$list" --far-replicas 4 -- true
expect_error remote_replicas_other_backend 2 "--far-replicas: only the memcached backend keeps replicas" \
	"$FLTRACE" record -L 8 -M 64 --far-replicas 2 -- true
expect_error remote_too_small 2 "--far: server 127.0.0.1:[0-9]+ has room for .* -M - -L asks up to" \
	"$FLTRACE" record -L 8 -M 20000 --far "memcached:$list" -- true
expect_error remote_far_clear_bad_id 2 "--far-clear: 'xyz' is not a run id" \
	"$FLTRACE" record --far "memcached:$list" --far-clear xyz
expect_error remote_far_clear_without_servers 2 "--far-clear: clears a run's items from memcached servers" \
	"$FLTRACE" record --far-clear 0123456789abcdef
expect_error remote_far_clear_with_command 2 "--far-clear: runs no command \('true' given\)" \
	"$FLTRACE" record --far "memcached:$list" --far-clear 0123456789abcdef -- true
expect_error remote_far_clear_refused 1 "--far-clear: server 127.0.0.1:1: refused the connection" \
	"$FLTRACE" record --far "memcached:$list,127.0.0.1:1" --far-clear 0123456789abcdef
$MC stop "$MCD"
evicting=$($MC start "$MCD" 1 evicting -m 1024)
expect_error remote_evicting_refused 2 "--far: server $evicting evicts items when it is full \(started without -M\)" \
	"$FLTRACE" record -L 8 -M 64 --far "memcached:$evicting" -- true
$MC stop "$MCD"

# ---- SASL: a server started with -S (Debian's memcached has Cyrus SASL; sasl2-bin makes its
# database): without --far-auth or with a wrong password the run is refused; with the right one it
# runs, and its items are cleared without listing them (the server takes no text commands) ----
if command -v saslpasswd2 > /dev/null; then
	sasl=$TMP/sasl
	mkdir -p "$sasl"
	chmod o+x "$TMP" "$sasl" # the server runs as nobody
	printf 'mech_list: plain\nsasldb_path: %s/sasldb2\n' "$sasl" > "$sasl/memcached.conf"
	printf secret | saslpasswd2 -p -a memcached -c -f "$sasl/sasldb2" fltuser
	chmod o+r "$sasl/sasldb2"
	echo fltuser:secret > "$sasl/auth"
	echo fltuser:wrong > "$sasl/bad"
	s=$(SASL_CONF_PATH=$sasl $MC start "$MCD" 1 -S -m 1024)
	expect_error remote_sasl_required 2 "--far: server $s requires SASL authentication; give --far-auth" \
		"$FLTRACE" record -L 4 -M 64 --far "memcached:$s" -- true
	expect_error remote_sasl_wrong_password 2 "--far-auth: server $s refused user 'fltuser'" \
		"$FLTRACE" record -L 4 -M 64 --far "memcached:$s" --far-auth "$sasl/bad" -- true
	same_output remote_sasl "-L 4 -M 256 $T --far memcached:$s --far-auth $sasl/auth" "$PROGS/fillscan" 16 2 &&
		expect_stat remote_sasl_went_far "$TMP/remote_sasl" far_gets -gt 1000
	expect_eq remote_sasl_leaves_nothing "items on the SASL server after the run" 0 \
		"$($MC sasl-items "$s" fltuser:secret)"
	$MC stop "$MCD"
else
	skip remote_sasl "saslpasswd2 (Debian sasl2-bin) is not installed"
fi
