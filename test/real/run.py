#!/usr/bin/python3
# `make check-real`: runs real programs' own regression suites natively and under `fltrace record`,
# and compares them test by test (pass, fail, skip), with each unit's traced/native time ratio.
"""Real programs' test suites, native vs traced.

Suites (each unit is one program run, natively and then traced; its test cases are compared):
  cpython  CPython's regression tests: one `python3 -m test -v --junit-xml F <module>` per module
  glib     GLib's installed tests: one GTest program per unit, its TAP lines are the cases

Settings come from the environment (the Makefile passes its variables through):
  FLTRACE            the fltrace binary (default: build/bin/fltrace)
  REAL_L, REAL_M     record's -L and -M (default 16 and 4096)
  REAL_RECORD_OPTS   more record options, e.g. "-C 2 --policy fifo"
  REAL_SUITES        suites to run (default "cpython glib")
  REAL_PY_TESTS      CPython modules: names, "default" or "all"
  REAL_GLIB_TESTS    GLib test programs: names, "default" or "all"
  REAL_PY_ARGS       more regrtest options, e.g. "-m test_close_fds" or "-i test_extra_groups"
  REAL_TIMEOUT       seconds a native unit may take (default 300)
  REAL_SLOWDOWN      a traced unit may take this many times its native time ... (default 20)
  REAL_TIMEOUT_MIN   ... but at least this many seconds (default 120)
  REAL_TIMEOUT_MAX   ... and at most this many (default 900)
  REAL_RERUN         runs again every unit that differed, this many times (default 1)
  REAL_KEEP          1: keep the work directory (outputs of every run) and print where it is
Arguments, if any, name the units and override the lists: cpython:test_os glib:thread
"""

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

PYTHON = "/usr/bin/python3"  # Debian's, whose test package is installed (not a pyenv shim)
PY_TESTDIR = "/usr/lib/python3.11/test"
GLIB_TESTDIR = "/usr/share/installed-tests/glib"

# CPython modules run by default: processes, threads, signals, fds, memory, files, and plain
# compute-heavy ones; about 10 minutes natively + traced on an idle 2-core machine in all.
# (test_socket is not one: its VSOCK tests hang natively in a VM that has a vsock device; nor
# test_lzma: its bigmem case decompresses ~100 MB, which at -L 16 takes more than 15 minutes.)
PY_DEFAULT = """
test_os test_posix test_subprocess test_signal test_threading test_thread test_fork1 test_wait4
test_mmap test_fcntl test_select test_resource test_pty test_tempfile test_shutil
test_gc test_json test_re test_zlib test_bz2 test_hashlib test_pickle test_array
test_dict test_set test_list test_struct test_bisect test_heapq test_sort
test_concurrent_futures test_multiprocessing_forkserver
""".split()

# GLib programs left out by default: benchmarks and tests that run for a fixed time (seconds each,
# the same traced or not: they measure nothing here), and codegen.py (Python, not GLib's C code).
GLIB_EXCLUDE_DEFAULT = set('''
performance performance-threaded 1bit-mutex mutex io-channel-basic codegen.py closure-refcount
objects-refcount1 objects-refcount2 properties-refcount1 properties-refcount2 properties-refcount3
properties-refcount4 signals-refcount1 signals-refcount2 signals-refcount3 signals-refcount4
slice-eager-freeing slice-glib slice-malloc slice-memchunk slice-slab slice-concurrent
'''.split())

PASS, FAIL, SKIP, ABSENT = "pass", "fail", "skip", "absent"


def env_int(name, default):
    v = os.environ.get(name, "")
    return int(v) if v.strip() else default


class Run:
    """One run of a unit: its outcome (exit status, timeout), time, and per-case results."""

    def __init__(self):
        self.outcome = ""
        self.seconds = 0.0
        self.cases = {}
        self.case_seconds = {}
        self.last_started = ""
        self.tool_lines = []
        self.hang_report = ""
        self.outdir = ""


def thread_count(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return 0


def session_processes(sid):
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
        except OSError:
            continue
        fields = st[st.rindex(")") + 2:].split()
        if int(fields[3]) == sid and not (fields[0] == "Z" and thread_count(d) <= 1):
            pids.append(int(d))  # (a zombie waits only for its parent, unless threads live on)
    return sorted(pids)


def read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return "?"


def describe_hang(sid):
    """What every thread of the hung session waits in: state, kernel wait channel, system call."""
    lines = []
    for pid in session_processes(sid):
        cmd = read(f"/proc/{pid}/cmdline").replace("\0", " ")[:80]
        lines.append(f"pid {pid}: {cmd}")
        try:
            tids = sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
        except OSError:
            continue
        for tid in tids:
            base = f"/proc/{pid}/task/{tid}"
            comm = read(f"{base}/comm")
            st = read(f"{base}/stat")
            state = st[st.rindex(")") + 2:].split()[0] if ")" in st else "?"
            sysc = read(f"{base}/syscall").split()[0] if read(f"{base}/syscall") != "?" else "?"
            status = read(f"{base}/status")
            blk = re.search(r"^SigBlk:\s*(\S+)", status, re.M)
            pnd = re.search(r"^SigPnd:\s*(\S+)", status, re.M)
            lines.append(f"  tid {tid} {comm!r} state {state} wchan {read(base + '/wchan')} "
                         f"syscall {sysc} sigpnd {pnd.group(1) if pnd else '?'} "
                         f"sigblk {blk.group(1) if blk else '?'}")
    return "\n".join(lines)


def run_command(argv, cwd, limit, out_path):
    """Runs argv in its own session with stdout+stderr to out_path; kills the session at limit."""
    env = dict(os.environ)
    # TMPDIR is a short link to cwd: multiprocessing puts its AF_UNIX sockets under it, and a
    # socket path must fit 108 bytes (under cwd's long path every manager case failed natively
    # and traced alike, and test_multiprocessing_fork hung in its teardown both ways)
    link_dir = tempfile.mkdtemp(prefix="fr", dir="/tmp")
    env["TMPDIR"] = os.path.join(link_dir, "t")
    os.symlink(cwd, env["TMPDIR"])
    env["HOME"] = cwd
    try:
        return run_in(argv, cwd, env, limit, out_path)
    finally:
        os.unlink(env["TMPDIR"])
        os.rmdir(link_dir)


def run_in(argv, cwd, env, limit, out_path):
    """run_command's body: the command with its environment set."""
    with open(out_path, "wb") as out:
        t0 = time.monotonic()
        p = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out,
                             stderr=subprocess.STDOUT, start_new_session=True)
        hang = ""
        try:
            rc = p.wait(timeout=limit)
            outcome = exit_outcome(rc)
        except KeyboardInterrupt:  # ^C stops the runner and the unit it runs
            os.killpg(p.pid, signal.SIGKILL)
            raise
        except subprocess.TimeoutExpired:
            hang = describe_hang(p.pid)
            outcome = f"timeout ({limit:.0f} s)"
        seconds = time.monotonic() - t0
        if not hang and session_processes(p.pid):  # what its leftovers were doing, then kill them
            hang = "left running after the run ended:\n" + describe_hang(p.pid)
        try:  # the run's leftovers (a hung program, daemons it started) go with it
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
    return outcome, seconds, hang


def exit_outcome(rc):
    return f"killed by signal {-rc}" if rc < 0 else f"exit {rc}"


# ---- suites: how a unit is run and how its cases are read ----

class CPython:
    name = "cpython"

    def units(self, spec):
        if spec == "all":
            out = subprocess.run([PYTHON, "-m", "test", "--list-tests"], capture_output=True,
                                 text=True).stdout
            return [t for t in out.split() if t.startswith("test_")]
        return PY_DEFAULT if spec in ("", "default") else spec.split()

    def has(self, unit):
        return os.path.exists(os.path.join(PY_TESTDIR, unit + ".py")) or \
            os.path.isdir(os.path.join(PY_TESTDIR, unit))

    def argv(self, unit, outdir, limit):
        return [PYTHON, "-m", "test", "-v", "--timeout", str(max(10, int(limit) - 15)),
                "--junit-xml", os.path.join(outdir, "junit.xml")] + \
            shlex.split(os.environ.get("REAL_PY_ARGS", "")) + [unit]

    def read_cases(self, run, outdir, output):
        m = re.findall(r"^Tests? result: (.*)$", output, re.M)
        if m:
            run.outcome += f", {m[-1].strip().lower()}"
        t = re.search(r"^(.*)Timeout \(\d+:\d\d:\d\d\)!\n((?:.*\n){1,8})", output, re.M)
        if t:  # regrtest's own --timeout: faulthandler showed where the test waited
            run.outcome += ", regrtest timeout"
            run.hang_report = ("regrtest --timeout fired; innermost frames:\n" + t.group(2).rstrip()
                               + ("\n" + run.hang_report if run.hang_report else ""))
        junit = os.path.join(outdir, "junit.xml")
        if os.path.exists(junit):
            try:
                for tc in ET.parse(junit).getroot().iter("testcase"):
                    if not tc.get("name"):  # regrtest writes an empty one for a failed module
                        continue
                    kinds = {c.tag for c in tc}
                    st = FAIL if kinds & {"failure", "error"} else SKIP if "skipped" in kinds else PASS
                    run.cases[tc.get("name")] = st
                    run.case_seconds[tc.get("name")] = float(tc.get("time") or 0)
                return
            except ET.ParseError:
                run.cases.clear()
        self.read_verbose(run, output)

    def read_verbose(self, run, output):
        # Without the XML (the run was killed), unittest's -v lines: "name (module.Class.name) ... ok"
        words = {"ok": PASS, "FAIL": FAIL, "ERROR": FAIL, "skipped": SKIP, "expected": PASS,
                 "unexpected": FAIL}
        pending = ""
        for line in output.splitlines():
            m = re.match(r"^\w+ \(([\w.]+)\)", line)
            if m:
                pending = m.group(1)
            if not pending:
                continue
            i = line.find(" ... ")
            rest = line[i + 5:] if i >= 0 else "" if m else line
            word = rest.split(" ")[0] if rest else ""
            if word in words:
                run.cases[pending] = words[word]
                pending = ""
        run.last_started = pending


class GLib:
    name = "glib"

    def exec_of(self, unit):
        with open(os.path.join(GLIB_TESTDIR, unit + ".test")) as f:
            m = re.search(r"^Exec=(.*)$", f.read(), re.M)
        return shlex.split(m.group(1))

    def units(self, spec):
        all_units = sorted(f[:-5] for f in os.listdir(GLIB_TESTDIR) if f.endswith(".test"))
        if spec == "all":
            return all_units
        if spec in ("", "default"):
            return [u for u in all_units if u not in GLIB_EXCLUDE_DEFAULT]
        return spec.split()

    def has(self, unit):
        return os.path.exists(os.path.join(GLIB_TESTDIR, unit + ".test"))

    def argv(self, unit, outdir, limit):
        return self.exec_of(unit)

    def read_cases(self, run, outdir, output):
        pending = ""
        for line in output.splitlines():
            m = re.match(r"^(not ok|ok) \d+ (\S*)(.*)$", line)
            if m:
                # a case named after its random seed (/queue/random/seed:N) is one case
                name = re.sub(r"seed:\d+", "seed:*", m.group(2)) or f"#{len(run.cases) + 1}"
                while name in run.cases:
                    name += "+"
                skip = re.search(r"#\s*(SKIP|TODO)", m.group(3), re.I)
                run.cases[name] = SKIP if skip else PASS if m.group(1) == "ok" else FAIL
                pending = ""
                continue
            m = re.match(r"^# Start of (\S+) tests", line)
            if m:
                pending = m.group(1)
        run.last_started = pending


SUITES = {s.name: s for s in (CPython(), GLib())}


class Runner:
    def __init__(self):
        build = os.environ.get("FLTRACE_BUILD", "build")
        self.fltrace = os.path.abspath(os.environ.get("FLTRACE") or f"{build}/bin/fltrace")
        self.record = ["-L", os.environ.get("REAL_L") or "16", "-M", os.environ.get("REAL_M") or "4096"]
        self.record += shlex.split(os.environ.get("REAL_RECORD_OPTS", ""))
        self.native_limit = env_int("REAL_TIMEOUT", 300)
        self.slowdown = env_int("REAL_SLOWDOWN", 20)
        self.traced_min = env_int("REAL_TIMEOUT_MIN", 120)
        self.traced_max = env_int("REAL_TIMEOUT_MAX", 900)
        self.reruns = env_int("REAL_RERUN", 1)
        self.keep = os.environ.get("REAL_KEEP", "") == "1"
        self.work = tempfile.mkdtemp(prefix="fltrace-check-real.")
        self.seq = 0

    def run_once(self, suite, unit, traced, limit):
        self.seq += 1
        d = os.path.join(self.work, f"{self.seq:04d}-{suite.name}-{unit}-{'traced' if traced else 'native'}")
        cwd, outdir = os.path.join(d, "cwd"), os.path.join(d, "out")
        os.makedirs(cwd)
        os.makedirs(outdir)
        argv = suite.argv(unit, outdir, limit)
        if traced:
            argv = [self.fltrace, "record"] + self.record + ["-o", os.path.join(d, "trace"), "--"] + argv
        log = os.path.join(d, "output.txt")
        r = Run()
        r.outcome, r.seconds, r.hang_report = run_command(argv, cwd, limit, log)
        r.outdir = d
        with open(log, errors="replace") as f:
            output = f.read()
        suite.read_cases(r, outdir, output)  # (record dies of the signal that killed its command)
        if traced:
            r.tool_lines = [ln for ln in output.splitlines() if ln.startswith("fltrace:")
                            and not re.match(r"fltrace: (recorded|note: up to|record: the command "
                                             r"was killed)", ln)]
            if not self.keep:
                shutil.rmtree(os.path.join(d, "trace"), ignore_errors=True)
        return r

    def run_pair(self, suite, unit):
        native = self.run_once(suite, unit, False, self.native_limit)
        limit = min(max(self.traced_min, self.slowdown * native.seconds), self.traced_max)
        traced = self.run_once(suite, unit, True, limit)
        return native, traced


def differences(native, traced):
    """(number of cases with the same result, [(case, native status, traced status)])"""
    diffs = []
    same = 0
    for name in sorted(set(native.cases) | set(traced.cases)):
        a, b = native.cases.get(name, ABSENT), traced.cases.get(name, ABSENT)
        if a == b:
            same += 1
        else:
            diffs.append((name, a, b))
    return same, diffs


def slow_cases(native, traced):
    """Cases that took 30 s more traced and 10 times their native time: a wait that timed out?"""
    slow = []
    for name, t in traced.case_seconds.items():
        n = native.case_seconds.get(name)
        if n is not None and t >= n + 30 and t >= 10 * n:
            slow.append(f"{name}: native {n:.1f}s, traced {t:.1f}s")
    return slow


def outcome_differs(native, traced):
    return native.outcome != traced.outcome


def print_unit(key, native, traced, same, diffs):
    ratio = traced.seconds / native.seconds if native.seconds > 0 else float("inf")
    print(f"{key:<44} native {native.seconds:7.2f}s  traced {traced.seconds:7.2f}s  "
          f"x{ratio:5.2f}  {same} same, {len(diffs)} differ", flush=True)


def describe_diff(key, native, traced, diffs, out):
    if outcome_differs(native, traced):
        out.append(f"{key}: run ended natively with '{native.outcome}', traced with '{traced.outcome}'")
    absent = [d for d in diffs if d[2] == ABSENT]
    for name, a, b in diffs:
        if b != ABSENT:
            out.append(f"{key}: {name}: native {a}, traced {b}")
    if absent:
        out.append(f"{key}: {len(absent)} cases that ran natively did not run traced "
                   f"(first: {absent[0][0]})")
    if traced.last_started and (absent or outcome_differs(native, traced)):
        out.append(f"{key}:   traced run was in: {traced.last_started}")
    for ln in traced.tool_lines[:5]:
        out.append(f"{key}:   {ln}")
    leftovers = "left running after the run ended"
    if traced.hang_report and not (traced.hang_report.startswith(leftovers)
                                   and native.hang_report.startswith(leftovers)):
        out.extend(f"{key}:   {ln}" for ln in traced.hang_report.splitlines()[:40])


def selected_units(args):
    if args:
        picked = []
        for a in args:
            s, _, u = a.partition(":")
            if s not in SUITES or not u:
                sys.exit(f"check-real: unknown unit '{a}'; name units as suite:unit, "
                         f"suite one of {', '.join(SUITES)}")
            picked.append((SUITES[s], u))
        return picked
    picked = []
    for s in (os.environ.get("REAL_SUITES") or "cpython glib").split():
        if s not in SUITES:
            sys.exit(f"check-real: unknown suite '{s}' in REAL_SUITES; use {', '.join(SUITES)}")
        spec = os.environ.get("REAL_PY_TESTS" if s == "cpython" else "REAL_GLIB_TESTS") or "default"
        picked += [(SUITES[s], u) for u in SUITES[s].units(spec.strip())]
    return picked


def check_units_exist(units):
    """A name with no test behind it is the user's typo (or a suite not installed): say so at once."""
    for suite, unit in units:
        if not suite.has(unit):
            where = PY_TESTDIR if suite.name == "cpython" else GLIB_TESTDIR
            sys.exit(f"check-real: {suite.name}:{unit}: no such test in {where}; "
                     f"check the name, or install the suite with test/real/deps.sh")


def main():
    # The units get SIGINT's default action even if the runner was started with it ignored (as a
    # shell's background job is): CPython's tests of KeyboardInterrupt depend on it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    runner = Runner()
    if not os.access(runner.fltrace, os.X_OK):
        sys.exit(f"check-real: {runner.fltrace}: not built; run make first")
    units = selected_units(sys.argv[1:])
    check_units_exist(units)
    print(f"check-real: {len(units)} units; record {' '.join(runner.record)}; work dir {runner.work}",
          flush=True)
    same_total = 0
    report = []
    differing = []
    ratios = []
    for suite, unit in units:
        key = f"{suite.name}/{unit}"
        native, traced = runner.run_pair(suite, unit)
        same, diffs = differences(native, traced)
        same_total += same
        print_unit(key, native, traced, same, diffs)
        if native.seconds > 0:
            ratios.append(traced.seconds / native.seconds)
        for ln in slow_cases(native, traced):
            print(f"    {key}: slow case {ln}", flush=True)
        if diffs or outcome_differs(native, traced):
            lines = []
            describe_diff(key, native, traced, diffs, lines)
            for ln in lines:
                print("    " + ln, flush=True)
            differing.append((suite, unit, native, traced, diffs))
    # Each differing unit again: a difference seen every time is real, one seen once is flaky.
    confirmed = []
    for suite, unit, native, traced, diffs in differing:
        key = f"{suite.name}/{unit}"
        again = []
        for i in range(runner.reruns):
            n2, t2 = runner.run_pair(suite, unit)
            _, d2 = differences(n2, t2)
            print(f"rerun {i + 1}: ", end="")
            print_unit(key, n2, t2, len(set(n2.cases) | set(t2.cases)) - len(d2), d2)
            again.append((set((n, a, b) for n, a, b in d2), outcome_differs(n2, t2), n2, t2))
        # (unit, what, reruns that showed it again, tests it counts for)
        absent = [(n, a) for n, a, b in diffs if b == ABSENT]
        for name, a, b in diffs:
            if b != ABSENT:
                seen = sum(1 for d, _, _, _ in again if (name, a, b) in d)
                confirmed.append((key, f"{name}: native {a}, traced {b}", seen, 1))
        if absent:
            seen = sum(1 for d, _, _, _ in again if (absent[0][0], absent[0][1], ABSENT) in d)
            confirmed.append((key, f"{len(absent)} cases that ran natively did not run traced, "
                                   f"from {absent[0][0]} on", seen, len(absent)))
        if outcome_differs(native, traced):  # counts as a test only if no case shows it
            seen = sum(1 for _, o, _, _ in again if o)
            confirmed.append((key, f"run ended natively with '{native.outcome}', traced with "
                                   f"'{traced.outcome}'", seen, 0 if diffs else 1))
    differ = sum(c[3] for c in confirmed)
    print()
    print(f"check-real: {same_total} tests same result, {differ} differ"
          + (f"; time traced/native per unit: median x{sorted(ratios)[len(ratios) // 2]:.2f}, "
             f"max x{max(ratios):.2f}" if ratios else ""))
    for key, what, seen, _ in confirmed:
        rerun = f" (again in {seen} of {runner.reruns} reruns)" if runner.reruns else ""
        print(f"  DIFF {key}: {what}{rerun}")
    if runner.keep:
        print(f"check-real: outputs kept in {runner.work}")
    else:
        shutil.rmtree(runner.work, ignore_errors=True)
    print(f"check-real: {same_total} passed, {differ} failed")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
