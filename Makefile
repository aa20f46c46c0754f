# fltrace: one non-recursive makefile. Objects go to build/ (build-san/ with SAN=...).
# Targets: all (./fltrace + preload library + manual pages), test, test-loaded, fuzz, bench, install,
# deb, clean.

PREFIX ?= /usr/local
SAN ?=
CC ?= cc

# DEBUG=1: internal checks stop the run (an illegal page-state change, for one) instead of being
# counted; its own object tree, build-debug.
DEBUG ?=
ifneq ($(DEBUG),)
BUILD ?= build-debug
DEBUGFLAGS := -DFLTRACE_DEBUG
endif
# BUILD names the object tree; parallel work trees of developers can each take their own.
ifeq ($(SAN),)
BUILD ?= build
SANFLAGS :=
else
BUILD ?= build-san
SANFLAGS := -fsanitize=$(SAN) -fno-omit-frame-pointer -fno-sanitize-recover=all
endif
B := $(BUILD)

WARN := -Wall -Wextra -Werror -Wno-unused-parameter
CFLAGS_COMMON := -std=gnu11 -O2 -g $(WARN) -Iinc -D_GNU_SOURCE $(DEBUGFLAGS)
CFLAGS_TOOL := $(CFLAGS_COMMON) $(SANFLAGS)
# The runtime lives inside the traced program: no sanitizers, hidden symbols, PIC.
CFLAGS_RT := $(CFLAGS_COMMON) -fPIC -fvisibility=hidden -fno-omit-frame-pointer -ftls-model=initial-exec

COMMON_SRC := $(wildcard src/common/*.c)
RUNTIME_SRC := $(wildcard src/runtime/*.c)
PRELOAD_SRC := $(wildcard preload/*.c)
ANALYSIS_SRC := $(wildcard src/analysis/*.c)
TOOLS_SRC := $(wildcard tools/*.c)
UNIT_SRC := $(wildcard test/unit/test_*.c)
PROGS_SRC := $(wildcard test/progs/*.c)

COMMON_OBJ := $(COMMON_SRC:%.c=$(B)/obj/%.o)
COMMON_PIC := $(COMMON_SRC:%.c=$(B)/pic/%.o)
RUNTIME_OBJ := $(RUNTIME_SRC:%.c=$(B)/pic/%.o) $(PRELOAD_SRC:%.c=$(B)/pic/%.o)
ANALYSIS_OBJ := $(ANALYSIS_SRC:%.c=$(B)/obj/%.o)
TOOLS_OBJ := $(TOOLS_SRC:%.c=$(B)/obj/%.o)
UNIT_BIN := $(UNIT_SRC:test/unit/%.c=$(B)/test/unit/%)

PRELOAD_LIB := $(B)/lib/fltrace/libfltrace.so
JEMALLOC_A := $(shell for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib; do \
	[ -f $$d/libjemalloc_pic.a ] && echo $$d/libjemalloc_pic.a && break; done)
# jemalloc's malloc family is renamed fltrace_je_* so our wrappers (preload/malloc.c) run first;
# only those entry points are pulled in (its C++ operators would need libstdc++).
JEMALLOC_SYMS := malloc free calloc realloc posix_memalign aligned_alloc memalign valloc mallocx rallocx dallocx mallctl \
	malloc_usable_size
JEMALLOC_RENAMED := $(B)/jemalloc/libjemalloc_fltrace.a
JEMALLOC_U := $(foreach s,$(JEMALLOC_SYMS),-Wl,-u,fltrace_je_$(s))

TOOL_LIBS := -lelf -lz -lm

.PHONY: all test test-loaded unit-test fuzz fuzz-build bench bench-anchor stress check-real install deb clean progs man
all: $(B)/bin/fltrace $(PRELOAD_LIB) progs man
# ./fltrace names the default build only: other BUILD trees do not repoint it.
ifeq ($(B),build)
all: fltrace
endif

$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TOOL) -MMD -MP -c $< -o $@

$(B)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_RT) -MMD -MP -c $< -o $@

$(B)/bin/fltrace: $(TOOLS_OBJ) $(ANALYSIS_OBJ) $(COMMON_OBJ) test/floors.sh
	@mkdir -p $(dir $@)
	@bash test/floors.sh
	$(CC) $(SANFLAGS) -o $@ $(filter %.o,$^) $(TOOL_LIBS)

# ./fltrace is a link: the binary finds its preload library at <its dir>/../lib/fltrace/.
fltrace: $(B)/bin/fltrace
	ln -sfn $< $@

# Manual pages fltrace(1) and fltrace-<command>(1), made by help2man from the --help of the fltrace
# just built (tools/man.sh): a change of --help changes them.
MAN_CMDS := record report visualize sweep
MAN_PAGES := $(B)/man/fltrace.1 $(MAN_CMDS:%=$(B)/man/fltrace-%.1)
man: $(MAN_PAGES)
$(B)/man/fltrace.1: $(B)/bin/fltrace tools/man.sh
	@mkdir -p $(dir $@)
	bash tools/man.sh $< "" $@
$(B)/man/fltrace-%.1: $(B)/bin/fltrace tools/man.sh
	@mkdir -p $(dir $@)
	bash tools/man.sh $< $* $@

$(JEMALLOC_RENAMED): $(JEMALLOC_A) Makefile
	@mkdir -p $(dir $@)
	objcopy $(foreach s,$(JEMALLOC_SYMS),--redefine-sym $(s)=fltrace_je_$(s)) $< $@

# test/floors.sh: no include crosses a floor upwards, and the runtime never calls into preload/.
$(PRELOAD_LIB): $(RUNTIME_OBJ) $(COMMON_PIC) preload/exports.map $(JEMALLOC_RENAMED) test/floors.sh
	@mkdir -p $(dir $@)
	@bash test/floors.sh $(RUNTIME_SRC:%.c=$(B)/pic/%.o) -- $(PRELOAD_SRC:%.c=$(B)/pic/%.o)
	$(CC) -shared -o $@ $(RUNTIME_OBJ) $(COMMON_PIC) $(JEMALLOC_U) $(JEMALLOC_RENAMED) \
		-Wl,--version-script=preload/exports.map -Wl,-z,nodelete -Wl,-z,now \
		-lunwind-x86_64 -lunwind -lsodium -lpthread -ldl -lm

# Test programs: the traced workloads of the end-to-end tests (some built twice, -O0 and -O2).
PROGS := $(PROGS_SRC:test/progs/%.c=$(B)/progs/%)
PROGS := $(filter-out $(B)/progs/plugin $(B)/progs/tlsmod $(B)/progs/earlydl $(B)/progs/libcalls,$(PROGS))
progs: $(PROGS) $(B)/progs/stacks-O0 $(B)/progs/stacks-O2 $(B)/progs/stacks-O2-fp \
	$(B)/progs/libcalls-O0-fp $(B)/progs/libcalls-O2 \
	$(B)/progs/deepstacks $(B)/progs/plugin.so $(B)/progs/tlsmod.so $(B)/progs/ownmalloc-early
$(B)/progs/deepstacks: test/progs/deepstacks.cpp
	@mkdir -p $(dir $@)
	$(CXX) -std=gnu++17 -O1 -g $(WARN) -pthread -o $@ $<
$(B)/progs/plugin.so $(B)/progs/tlsmod.so $(B)/progs/earlydl.so: $(B)/progs/%.so: test/progs/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g $(WARN) -shared -fPIC -o $@ $<
$(B)/progs/%: test/progs/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g $(WARN) -D_GNU_SOURCE -pthread -o $@ $< -lm -ldl
# ownmalloc with a library whose constructor dlopens before fltrace's constructor runs
$(B)/progs/ownmalloc-early: test/progs/ownmalloc.c $(B)/progs/earlydl.so
	$(CC) -std=gnu11 -O1 -g $(WARN) -D_GNU_SOURCE -pthread -o $@ $< -Wl,--no-as-needed -L$(B)/progs -l:earlydl.so \
		-Wl,-rpath,$(abspath $(B)/progs) -ldl
# -O2, as programs are shipped: memset, memcpy and strcmp are real calls into libc
$(B)/progs/callers: test/progs/callers.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g $(WARN) -o $@ $<
# -no-pie: its references to malloc and free are the executable's own PLT entries (as CPython's)
$(B)/progs/mallocaddr: test/progs/mallocaddr.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g $(WARN) -D_GNU_SOURCE -fno-pie -no-pie -o $@ $<
$(B)/progs/stacks-O0: test/progs/stacks.c
	$(CC) -std=gnu11 -O0 -g $(WARN) -fomit-frame-pointer -o $@ $<
$(B)/progs/stacks-O2: test/progs/stacks.c
	$(CC) -std=gnu11 -O2 -g $(WARN) -fomit-frame-pointer -o $@ $<
$(B)/progs/stacks-O2-fp: test/progs/stacks.c
	$(CC) -std=gnu11 -O2 -g $(WARN) -fno-omit-frame-pointer -o $@ $<
# Frames that need the frame pointer, which the kernel does not show for a thread in a system call.
$(B)/progs/libcalls-O0-fp: test/progs/libcalls.c
	$(CC) -std=gnu11 -O0 -g $(WARN) -fno-omit-frame-pointer -o $@ $<
$(B)/progs/libcalls-O2: test/progs/libcalls.c
	$(CC) -std=gnu11 -O2 -g $(WARN) -fomit-frame-pointer -o $@ $<

$(B)/test/unit/%: test/unit/%.c $(ANALYSIS_OBJ) $(COMMON_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TOOL) -o $@ $< $(ANALYSIS_OBJ) $(COMMON_OBJ) $(TOOL_LIBS)

# Unit tests of runtime modules link the module itself, built like the tools (sanitizers apply).
RUNTIME_UNIT_MODS := pagestate
$(foreach m,$(RUNTIME_UNIT_MODS),$(eval $(B)/test/unit/test_$(m): $(B)/obj/src/runtime/$(m).o))
$(foreach m,$(RUNTIME_UNIT_MODS),$(B)/test/unit/test_$(m)): $(B)/test/unit/test_%: test/unit/test_%.c $(COMMON_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TOOL) -o $@ $< $(B)/obj/src/runtime/$*.o $(COMMON_OBJ) $(TOOL_LIBS)

# The lock-order check is a debug build's: its test builds lock.c with it on, whatever the build.
$(B)/test/unit/test_lock: test/unit/test_lock.c src/runtime/lock.c src/runtime/lock.h $(COMMON_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TOOL) -DFLTRACE_DEBUG -o $@ test/unit/test_lock.c src/runtime/lock.c $(COMMON_OBJ)

# Far memory runs outside a traced process too: the staging store, far.c and every backend, with the
# runtime's fd and memory calls stubbed by the test.
FAR_SRC := src/runtime/farmem.c src/runtime/far.c $(wildcard src/runtime/far_*.c)
$(B)/test/unit/test_far: test/unit/test_far.c $(FAR_SRC) src/runtime/far.h src/runtime/rt.h $(COMMON_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TOOL) -Isrc/runtime -o $@ test/unit/test_far.c $(FAR_SRC) $(COMMON_OBJ) -lsodium

# The policies run outside a traced process too: their unit test links them with a simulated memory.
POLICY_OBJ := $(patsubst %.c,$(B)/obj/%.o,$(wildcard src/runtime/policy*.c))
$(B)/test/unit/test_policy: test/unit/test_policy.c $(POLICY_OBJ) $(COMMON_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TOOL) -Isrc/runtime -o $@ $< $(POLICY_OBJ) $(COMMON_OBJ)

# The prefetchers only predict: their unit test runs them on access strings, without a process.
PREFETCH_OBJ := $(patsubst %.c,$(B)/obj/%.o,$(wildcard src/runtime/prefetch_*.c))
$(B)/test/unit/test_prefetch: test/unit/test_prefetch.c $(PREFETCH_OBJ) $(COMMON_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TOOL) -Isrc/runtime -o $@ $< $(PREFETCH_OBJ) $(COMMON_OBJ)

unit-test: $(UNIT_BIN)

# Fuzzers (libFuzzer, built by clang under AddressSanitizer and UBSan, test/fuzz/): the trace
# reader, the maps history parser and the stats parser, with the analysis code built alike in
# $(B)/fuzz. `make test` runs each a few seconds (test/e2e/fuzz.sh), `make fuzz` FUZZ_SECONDS each,
# keeping what they find in $(B)/fuzz/corpus.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 300
HAVE_FUZZ_CC := $(shell command -v $(FUZZ_CC) > /dev/null 2>&1 && echo yes)
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS := -std=gnu11 -O1 -g $(WARN) -Iinc -D_GNU_SOURCE $(FUZZ_SAN)
FUZZ_LIB_OBJ := $(patsubst %.c,$(B)/fuzz/obj/%.o,$(ANALYSIS_SRC) $(COMMON_SRC))
FUZZ_BIN := $(patsubst test/fuzz/%.c,$(B)/fuzz/%,$(wildcard test/fuzz/fuzz_*.c))
# Kept: as intermediates of the pattern rule below, make deleted them after every run, rebuilt them
# at the next, and printed its 'rm' after the tests' summary line.
.SECONDARY: $(FUZZ_LIB_OBJ)

$(B)/fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(B)/fuzz/%: test/fuzz/%.c test/fuzz/fuzz_input.h $(FUZZ_LIB_OBJ)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_LIB_OBJ) $(TOOL_LIBS)

ifeq ($(HAVE_FUZZ_CC),yes)
fuzz-build: $(FUZZ_BIN)
else
fuzz-build:
	@echo "make: no $(FUZZ_CC) here: the fuzzers are not built (./deps.sh installs clang)"
endif

fuzz: all unit-test fuzz-build
	@FLTRACE_BUILD=$(B) FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_CORPUS=$(abspath $(B))/fuzz/corpus \
		bash test/fuzz/run.sh

ifeq ($(SAN),)
test: all unit-test fuzz-build
	@FLTRACE_BUILD=$(B) bash test/run.sh $(UNIT_BIN)
else
# Sanitized builds cover the pure modules: the unit tests (the runtime cannot host ASan).
test: unit-test
	@FLTRACE_BUILD=$(B) FLTRACE_UNIT_ONLY=1 bash test/run.sh $(UNIT_BIN)
endif

# The whole suite beside a CPU and memory hog on every core: verdicts must not depend on timing.
test-loaded: all unit-test fuzz-build
	@FLTRACE_BUILD=$(B) bash test/loaded.sh $(UNIT_BIN)

bench: all unit-test
	@FLTRACE_BUILD=$(B) bash test/bench/run.sh

# The earlier public fltrace against ours on its own example (sources: see test/bench/anchor.sh).
bench-anchor: all
	@make -s BUILD=$(B) $(B)/bench/runstat
	@FLTRACE_BUILD=$(B) ANCHOR_FLTRACE=$(ANCHOR_FLTRACE) ANCHOR_GAPBS=$(ANCHOR_GAPBS) bash test/bench/anchor.sh

$(B)/bench/runstat: test/bench/runstat.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -o $@ $<

stress: all
	@FLTRACE_BUILD=$(B) bash test/stress/run.sh

# Real programs' own test suites, natively and under record (not part of test: it takes minutes
# and installs its own Debian packages). REAL_* variables (test/real/run.py) choose suites, tests,
# -L and record's options; REAL_UNITS names single units, e.g. cpython:test_os glib:thread.
REAL_L ?= 16
REAL_M ?= 4096
check-real: all
	@bash test/real/deps.sh
	@FLTRACE_BUILD=$(B) REAL_L='$(REAL_L)' REAL_M='$(REAL_M)' /usr/bin/python3 test/real/run.py $(REAL_UNITS)

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/fltrace $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions
	install -m 755 $(B)/bin/fltrace $(DESTDIR)$(PREFIX)/bin/fltrace
	install -m 644 $(PRELOAD_LIB) $(DESTDIR)$(PREFIX)/lib/fltrace/libfltrace.so
	install -m 644 $(MAN_PAGES) $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 tools/completion.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/fltrace

# The Debian package, fltrace_<version>_amd64.deb in $(B)/deb (tools/deb.sh: make install into a
# staging root under /usr, then dpkg-shlibdeps and dpkg-deb).
deb: all
	@bash tools/deb.sh $(B)

clean:
	rm -rf build build-san build-debug fltrace

-include $(shell find $(B) -name '*.d' 2>/dev/null)
