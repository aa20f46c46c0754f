#!/usr/bin/env bash
# The floors check that make runs before linking the preload library: no include crosses a floor
# upwards, and no runtime object calls into preload/. Usage: floors.sh [runtime.o... -- preload.o...]
#
# Floors, lowest first (a file includes headers of its own floor or lower; a file's floor is its
# module's header's, or its directory's):
#   0 common   inc/fltrace/*.h, src/common/*.c: pure helpers, no runtime, no analysis
#   1 lock     src/runtime/lock.h: the locks and their order
#   2 pages    src/runtime/pagestate.h: every page's state
#   3 base     rt.h (the runtime root, config, counters, dying, own fds and threads), threads.h, got.h,
#              uffd.h, trace.h, filemap.h, unwcheck.h
#   4 memory   region.h, far.h, evict.h, policy.h, prefetch.h: tracked regions, the far store, eviction
#              and prefetching (one
#              floor: releasing or moving a region's pages hands them to the far store and policy)
#   5 calls    prefault.h, sysstack.h, loader.h, allocs.h, maps.h: system calls, the loader,
#              allocation sites, the maps history, over the memory they touch
#   6 fault    fault.h, handler.h: the fault path (threadstate, stack, record, serve, handler, pollers)
#   7 life     stats.h, runtime.c, fork.c: starting, forking and the once-a-second thread
#   8 preload  preload/*.c: the interposed functions, on top of everything; nothing includes them
# and, a tower of its own beside the runtime: src/analysis (headers of its own) under tools/.
set -u
cd "$(dirname "$0")/.."
bad=0
say() { echo "fltrace floors: $*" >&2; bad=1; }

floor_of_header() { # path as included, relative to the includer's directory or inc/
	case "$1" in
	fltrace/*) echo 0 ;;
	lock.h) echo 1 ;;
	pagestate.h) echo 2 ;;
	rt.h|threads.h|uffd.h|trace.h|filemap.h|unwcheck.h|got.h) echo 3 ;;
	region.h|far.h|evict.h|policy.h|prefetch.h) echo 4 ;;
	prefault.h|sysstack.h|loader.h|allocs.h|maps.h) echo 5 ;;
	fault.h|handler.h) echo 6 ;;
	stats.h) echo 7 ;;
	*) echo ;;
	esac
}

floor_of_file() { # a file's own floor
	local f=$1 b
	b=$(basename "$f")
	case "$f" in
	inc/*|src/common/*) echo 0 ;;
	src/runtime/*.h) floor_of_header "$b" ;;
	src/runtime/policy*.c|src/runtime/far*.c|src/runtime/prefetch*.c) echo 4 ;;
	src/runtime/threadstate.c|src/runtime/stack.c|src/runtime/record.c|src/runtime/serve.c|src/runtime/pollers.c) echo 6 ;;
	src/runtime/runtime.c|src/runtime/fork.c) echo 7 ;;
	src/runtime/lock.c) echo 3 ;; # its check reports through rt_die (rt.h)
	src/runtime/*.c) # a module's file sits on its header's floor; the rest of the base on 3
		local h
		h=$(floor_of_header "${b%.c}.h")
		echo "${h:-3}" ;;
	preload/*) echo 8 ;;
	esac
}

for f in inc/fltrace/*.h src/common/*.c src/runtime/*.[ch] preload/*.c src/analysis/*.[ch] tools/*.[ch]; do
	own=$(floor_of_file "$f")
	while IFS= read -r inc; do
		case "$f:$inc" in
		src/analysis/*:*runtime/*|src/analysis/*:*preload/*|tools/*:*runtime/*|tools/*:*preload/*)
			say "$f includes $inc: the offline tools do not use the runtime" ;;
		inc/*:*/*|src/common/*:*/*)
			[[ "$inc" == fltrace/* ]] || say "$f includes $inc: common code includes only inc/fltrace" ;;
		src/runtime/*:*preload/*|src/runtime/*:*analysis/*|src/runtime/*:*tools/*)
			say "$f includes $inc: the runtime is below preload/ and beside the offline tools" ;;
		esac
		case "$f" in src/analysis/*|tools/*) continue ;; esac
		[ -n "$own" ] || continue
		h=$(floor_of_header "$(basename "$inc")")
		[[ "$inc" == fltrace/* ]] && h=0
		[ -n "$h" ] || continue
		[ "$h" -gt "$own" ] && say "$f (floor $own) includes $inc (floor $h): an include may not reach a higher floor"
	done < <(sed -n 's/^#include "\(.*\)".*/\1/p' "$f")
done

# Calls: every symbol the runtime's objects need that preload's objects define is a call upwards.
if [ $# -gt 0 ]; then
	rt_objs=() pre_objs=() side=rt
	for o in "$@"; do
		[ "$o" = -- ] && { side=pre; continue; }
		[ $side = rt ] && rt_objs+=("$o") || pre_objs+=("$o")
	done
	up=$(comm -12 <(nm -u "${rt_objs[@]}" 2> /dev/null | awk 'NF == 2 { print $2 }' | sort -u) \
		<(nm --defined-only "${pre_objs[@]}" 2> /dev/null | awk 'NF == 3 && $2 ~ /[TDB]/ { print $3 }' | sort -u))
	for s in $up; do say "the runtime calls $s, which preload/ defines: move it into src/runtime"; done
fi
exit $bad
