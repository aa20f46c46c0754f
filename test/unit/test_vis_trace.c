/* Synthetic traces for the visualize tests: with `--write DIR` writes a recording (two processes,
 * one with an exec, every fault kind, real symbols of this binary), with `--write-deep DIR` one
 * with a single very deep stack; alone, checks it reads back. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The shared writer has helpers this generator does not call (object records). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "synth_trace.h"
#pragma GCC diagnostic pop
#include "../../src/analysis/analysis.h"

#define VIS_PID 31337u
#define VIS_PID2 31338u
#define VIS_REGION_START 0x7f1200000000ull

/* Real functions, so that the symbolizer names frames "func (test_vis_trace.c:line)". Their
 * bodies only need to be long enough for the +4/+8 offsets below to stay inside them. */
volatile unsigned long vis_sink;
__attribute__((noinline)) void vis_alloc_leaf(void) { for (int i = 0; i < 8; i++) vis_sink += (unsigned long)i * 3; }
__attribute__((noinline)) void vis_scan_leaf(void) { for (int i = 0; i < 8; i++) vis_sink ^= (unsigned long)i * 5; }
__attribute__((noinline)) void vis_build(void) { vis_alloc_leaf(); vis_sink++; vis_alloc_leaf(); vis_sink++; }
__attribute__((noinline)) void vis_scan(void) { vis_scan_leaf(); vis_sink++; vis_scan_leaf(); vis_sink++; }
__attribute__((noinline)) void vis_main_like(void) { vis_build(); vis_sink++; vis_scan(); vis_sink++; }

static uint64_t fn(void (*f)(void), unsigned off)
{
	return (uint64_t)(uintptr_t)f + off;
}

/* One process generation: `scale` multiplies the fault counts. */
static int vis_write_trace(const char *dir, uint32_t pid, uint32_t gen, unsigned scale)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/fltrace-data-trace-%u-%u.bin", dir, pid, gen);
	f = synth_open(path, pid, gen, FT_VERSION, "/usr/bin/vis-demo");
	if (!f)
		return -errno;
	synth_self_maps(f, 0);
	const uint64_t alloc_st[] = { fn(vis_alloc_leaf, 4), fn(vis_build, 8), fn(vis_main_like, 8) };
	const uint64_t scan_st[] = { fn(vis_scan_leaf, 4), fn(vis_scan, 8), fn(vis_main_like, 8) };
	const uint64_t sys_st[] = { fn(vis_build, 8), fn(vis_main_like, 8) };
	synth_stack(f, 0, 3, alloc_st);
	synth_stack(f, 1, 3, scan_st);
	synth_stack(f, 2, 2, sys_st);
	synth_region(f, 0, 0, VIS_REGION_START, 1 << 20, 0, "/usr/lib/libvis-data.so");

	/* Over one second: allocation (zero, write) of a heap, a scan that refetches, write-protect
	 * faults, a file read backwards, faults inside read(2), faults without a stack. */
	unsigned n = 600 * scale;
	for (unsigned i = 0; i < n; i++)
		synth_fault(f, &(struct synth_fault){ .t_ns = (uint64_t)i * 1000000000ull / n,
			.addr = 0x555500000000ull + (uint64_t)i * 4096, .stack_id = 0,
			.latency_ns = 2000 + i % 7 * 1000, .flags = FT_FLAG_WRITE | FT_FLAG_ZERO,
			.kind = FT_KIND_ZERO });
	n = 300 * scale;
	for (unsigned i = 0; i < n; i++)
		synth_fault(f, &(struct synth_fault){ .t_ns = 300000000ull + (uint64_t)i * 700000000ull / n,
			.addr = 0x555500000000ull + (uint64_t)(i % 200) * 4096, .stack_id = 1,
			.latency_ns = 40000 + i % 13 * 9000, .kind = FT_KIND_REFETCH });
	for (unsigned i = 0; i < 50 * scale; i++)
		synth_fault(f, &(struct synth_fault){ .t_ns = 500000000ull + i * 1000000ull,
			.addr = 0x555500000000ull + (uint64_t)i * 4096, .stack_id = 1,
			.latency_ns = 1500, .flags = FT_FLAG_WRITE | FT_FLAG_WP, .kind = FT_KIND_WP });
	for (unsigned i = 0; i < 100 * scale; i++)
		synth_fault(f, &(struct synth_fault){ .t_ns = 100000000ull + i * 2000000ull,
			.addr = VIS_REGION_START + (uint64_t)(255 - i % 256) * 4096, .stack_id = 1,
			.latency_ns = 90000 + i * 100, .kind = FT_KIND_FILE, .region = 0 });
	for (unsigned i = 0; i < 20 * scale; i++)
		synth_fault(f, &(struct synth_fault){ .t_ns = 700000000ull + i * 1000000ull,
			.addr = 0x7f3400000000ull + (uint64_t)i * 4096, .stack_id = 2,
			.latency_ns = 3000, .flags = FT_FLAG_WRITE | FT_FLAG_ZERO, .kind = FT_KIND_ZERO,
			.origin = FT_ORIGIN_SYSCALL, .status = FT_STACK_PARTIAL, .syscall_nr = 0 });
	for (unsigned i = 0; i < 10 * scale; i++)
		synth_fault(f, &(struct synth_fault){ .t_ns = 900000000ull + i * 1000000ull,
			.addr = 0x555600000000ull + (uint64_t)i * 4096, .stack_id = FT_NO_STACK,
			.latency_ns = 800, .flags = FT_FLAG_ZERO, .kind = FT_KIND_ZERO,
			.status = FT_STACK_NONE });
	return fclose(f) ? -errno : 0;
}

static int vis_write_all(const char *dir)
{
	char path[4096];
	FILE *f;
	int err;

	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	if ((err = vis_write_trace(dir, VIS_PID, 0, 1)) || (err = vis_write_trace(dir, VIS_PID, 1, 1)) ||
	    (err = vis_write_trace(dir, VIS_PID2, 0, 2)))
		return err;
	snprintf(path, sizeof(path), "%s/fltrace-data-stats-%u.out", dir, VIS_PID);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "1700000000,faults:1000,faults_zp:630,memory_used:1048576,vm_hwm:73400320\n"
		   "1700000001,faults:2160,faults_zp:1260,memory_used:2097152,vm_hwm:146800640\n");
	return fclose(f) ? -errno : 0;
}

/* A process whose faults are nearly all at a shallow stack, and one fault at the end of a
 * 66-frame stack (an import chain, say): the picture must not be as tall as that one stack. */
#define VIS_PID_DEEP 31339u
#define VIS_DEEP 66
static int vis_write_deep(const char *dir)
{
	char path[4096];
	uint64_t deep[VIS_DEEP];
	FILE *f;

	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	snprintf(path, sizeof(path), "%s/fltrace-data-trace-%u-0.bin", dir, VIS_PID_DEEP);
	f = synth_open(path, VIS_PID_DEEP, 0, FT_VERSION, "/usr/bin/vis-deep");
	if (!f)
		return -errno;
	synth_self_maps(f, 0);
	const uint64_t scan_st[] = { fn(vis_scan_leaf, 4), fn(vis_scan, 8), fn(vis_main_like, 8) };
	/* innermost first: the leaf, then build and scan by turns, main_like outermost */
	deep[0] = fn(vis_alloc_leaf, 4);
	for (int i = 1; i < VIS_DEEP - 1; i++)
		deep[i] = i % 2 ? fn(vis_scan, 8) : fn(vis_build, 8);
	deep[VIS_DEEP - 1] = fn(vis_main_like, 8);
	synth_stack(f, 0, 3, scan_st);
	synth_stack(f, 1, VIS_DEEP, deep);
	for (unsigned i = 0; i < 1000; i++)
		synth_fault(f, &(struct synth_fault){ .t_ns = (uint64_t)i * 1000000ull,
			.addr = 0x555500000000ull + (uint64_t)i * 4096, .stack_id = 0,
			.latency_ns = 2000, .flags = FT_FLAG_WRITE | FT_FLAG_ZERO, .kind = FT_KIND_ZERO });
	synth_fault(f, &(struct synth_fault){ .t_ns = 999000000ull, .addr = 0x555600000000ull,
		.stack_id = 1, .latency_ns = 2000, .flags = FT_FLAG_WRITE | FT_FLAG_ZERO,
		.kind = FT_KIND_ZERO });
	return fclose(f) ? -errno : 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--write-deep")) {
		int err = vis_write_deep(argv[2]);
		if (err)
			fprintf(stderr, "test_vis_trace: %s: %s\n", argv[2], strerror(-err));
		return err ? 1 : 0;
	}
	if (argc == 3 && !strcmp(argv[1], "--write")) {
		int err = vis_write_all(argv[2]);
		if (err)
			fprintf(stderr, "test_vis_trace: %s: %s\n", argv[2], strerror(-err));
		return err ? 1 : 0;
	}
	/* Alone (as a unit test): the trace must load with every fault kept. */
	char dir[] = "/tmp/fltrace-vis-trace.XXXXXX", err[512], path[4096];
	struct an_process *p = NULL;
	int ok;

	if (!mkdtemp(dir) || vis_write_all(dir)) {
		printf("FAIL vis_trace_write: cannot write a synthetic trace in /tmp\n");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/fltrace-data-trace-%u-0.bin", dir, VIS_PID);
	ok = an_process_load(path, NULL, NULL, NULL, &p, err, sizeof(err)) == 0 &&
	     p->faults_seen == 1080 && p->faults_kept == 1080;
	if (ok)
		printf("PASS vis_trace_roundtrip\n");
	else
		printf("FAIL vis_trace_roundtrip: %s\n", p ? "wrong fault count" : err);
	an_process_free(p);
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "test_vis_trace: could not remove %s\n", dir);
	return ok ? 0 : 1;
}
