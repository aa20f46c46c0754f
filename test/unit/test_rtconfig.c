/* Unit test of src/common/rtconfig.c: every FLTRACE_* setting read, its default, and every kind of
 * bad value refused with the variable's name (the runtime stops with that line). */
#include <stdio.h>
#include <string.h>

#include "fltrace/rtconfig.h"

static int failures;

static void check(int ok, const char *name, const char *detail)
{
	if (ok)
		printf("PASS rtconfig_%s\n", name);
	else {
		printf("FAIL rtconfig_%s: %s\n", name, detail);
		failures++;
	}
}

/* An environment: "NAME=value" strings, NULL-terminated. */
static const char *env_get(const char *name, void *ctx)
{
	size_t n = strlen(name);
	for (const char *const *e = ctx; *e; e++)
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

#define BASE "FLTRACE_LOCALMEM=1048576", "FLTRACE_MAXMEM=4194304", "FLTRACE_OUTDIR=/tmp/out"

static int parse(const char *const *env, struct rtconfig *c, struct rtconfig_error *err)
{
	memset(err, 0, sizeof(*err));
	return rtconfig_parse(env_get, (void *)env, c, err);
}

/* One bad value: refused, the error naming the variable. */
static void refused(const char *case_name, const char *setting, const char *expect_name)
{
	const char *env[] = { setting, BASE, NULL }; /* the first of a name wins */
	struct rtconfig c;
	struct rtconfig_error err;
	char name[96], detail[320];
	snprintf(name, sizeof(name), "refuses_%s", case_name);
	int rc = parse(env, &c, &err);
	snprintf(detail, sizeof(detail), "%s gave rc %d, error %s: %s", setting, rc, err.name ? err.name : "-", err.why);
	check(rc == -1 && err.name && strcmp(err.name, expect_name) == 0 && err.why[0] && err.todo[0], name, detail);
}

int main(void)
{
	struct rtconfig c;
	struct rtconfig_error err;
	char d[256];

	const char *defaults[] = { BASE, NULL };
	int rc = parse(defaults, &c, &err);
	snprintf(d, sizeof(d), "rc %d handlers %u depth %u policy %d poll %d spin_ns %llu allocs %d sample %llu",
		 rc, c.handlers, c.stack_depth, c.policy, (int)c.poll, (unsigned long long)c.spin_ns, c.allocs,
		 (unsigned long long)c.alloc_sample);
	check(rc == 0 && c.localmem == 1048576 && c.maxmem == 4194304 && strcmp(c.outdir, "/tmp/out") == 0 &&
	      c.handlers == 1 && !c.pinned && c.samplerate == 0 &&
	      c.policy == fltrace_policy_find(FLTRACE_POLICY_DEFAULT) && c.stack_depth == FLTRACE_DEFAULT_STACK_DEPTH &&
	      c.poll == RTCONFIG_POLL_PERCPU && c.spin_ns == 100000 && !c.files_all && c.allocs &&
	      c.stacks == RTCONFIG_STACKS_HANDLER &&
	      c.alloc_sample == FLTRACE_DEFAULT_ALLOC_SAMPLE && c.far == FLTRACE_BACKEND_mem && !c.far_arg &&
	      c.far_latency_ns == 0, "defaults", d);

	const char *all[] = { BASE, "FLTRACE_HANDLERS=3", "FLTRACE_CORES=0,100-101", "FLTRACE_SAMPLERATE=500",
			      "FLTRACE_POLICY=fifo", "FLTRACE_STACK_DEPTH=512", "FLTRACE_POLL=spin",
			      "FLTRACE_SPIN_US=50", "FLTRACE_FILES=all", "FLTRACE_ALLOCS=0",
			      "FLTRACE_ALLOC_SAMPLE=0", "FLTRACE_FAR=file:/var/tmp", "FLTRACE_FAR_LATENCY_US=25", NULL };
	rc = parse(all, &c, &err);
	check(rc == 0 && c.handlers == 3 && c.pinned && cpulist_has(&c.cores, 0) && cpulist_has(&c.cores, 101) &&
	      !cpulist_has(&c.cores, 1) && cpulist_count(&c.cores) == 3 && c.samplerate == 500 &&
	      c.policy == fltrace_policy_find("fifo") && c.stack_depth == 512 && c.poll == RTCONFIG_POLL_SPIN &&
	      c.spin_ns == 50000 && c.files_all && !c.allocs && c.alloc_sample == 0 &&
	      c.far == FLTRACE_BACKEND_file && c.far_arg && strcmp(c.far_arg, "/var/tmp") == 0 &&
	      c.far_latency_ns == 25000, "every_setting",
	      err.why);

	const char *block[] = { BASE, "FLTRACE_POLL=block", "FLTRACE_SPIN_US=70", "FLTRACE_FILES=mapped", NULL };
	rc = parse(block, &c, &err);
	check(rc == 0 && c.poll == RTCONFIG_POLL_BLOCK && c.spin_ns == 0 && !c.files_all, "block_never_polls", err.why);

	static const struct { const char *env, *name; enum rtconfig_stacks want; } stacks[] = {
		{ "FLTRACE_STACKS=handler", "stacks_handler", RTCONFIG_STACKS_HANDLER },
		{ "FLTRACE_STACKS=signal", "stacks_signal", RTCONFIG_STACKS_SIGNAL },
		{ "FLTRACE_STACKS=proc", "stacks_proc", RTCONFIG_STACKS_PROC },
		{ "FLTRACE_STACKS=perf", "stacks_perf", RTCONFIG_STACKS_PERF },
	};
	for (unsigned i = 0; i < sizeof(stacks) / sizeof(stacks[0]); i++) {
		const char *one[] = { BASE, stacks[i].env, NULL };
		rc = parse(one, &c, &err);
		check(rc == 0 && c.stacks == stacks[i].want, stacks[i].name, err.why);
	}

	const char *small_max[] = { "FLTRACE_LOCALMEM=8192", "FLTRACE_MAXMEM=4096", "FLTRACE_OUTDIR=/o", NULL };
	rc = parse(small_max, &c, &err);
	check(rc == 0 && c.maxmem == 8192, "maxmem_at_least_localmem", err.why);

	const char *empty[] = { BASE, "FLTRACE_POLICY=", "FLTRACE_HANDLERS=", NULL };
	rc = parse(empty, &c, &err);
	check(rc == 0 && c.handlers == 1 && c.policy == fltrace_policy_find(FLTRACE_POLICY_DEFAULT),
	      "empty_is_unset", err.why);

	const char *const required[] = { "FLTRACE_LOCALMEM", "FLTRACE_MAXMEM", "FLTRACE_OUTDIR" };
	for (int i = 0; i < 3; i++) {
		const char *env[4], *base[] = { BASE };
		int n = 0;
		for (int j = 0; j < 3; j++)
			if (j != i)
				env[n++] = base[j];
		env[n] = NULL;
		rc = parse(env, &c, &err);
		char name[64];
		snprintf(name, sizeof(name), "requires_%s", required[i] + 8);
		check(rc == -1 && err.name && strcmp(err.name, required[i]) == 0, name, err.why);
	}

	refused("localmem_word", "FLTRACE_LOCALMEM=lots", "FLTRACE_LOCALMEM");
	refused("maxmem_negative", "FLTRACE_MAXMEM=-1", "FLTRACE_MAXMEM");
	refused("outdir_relative", "FLTRACE_OUTDIR=out", "FLTRACE_OUTDIR");
	refused("handlers_zero", "FLTRACE_HANDLERS=0", "FLTRACE_HANDLERS");
	refused("handlers_over", "FLTRACE_HANDLERS=65", "FLTRACE_HANDLERS");
	refused("cores_reversed", "FLTRACE_CORES=3-1", "FLTRACE_CORES");
	refused("cores_past_max", "FLTRACE_CORES=5000", "FLTRACE_CORES");
	refused("cores_junk", "FLTRACE_CORES=a", "FLTRACE_CORES");
	refused("samplerate_junk", "FLTRACE_SAMPLERATE=1k", "FLTRACE_SAMPLERATE");
	refused("policy_unknown", "FLTRACE_POLICY=lru", "FLTRACE_POLICY");
	refused("depth_zero", "FLTRACE_STACK_DEPTH=0", "FLTRACE_STACK_DEPTH");
	refused("depth_over", "FLTRACE_STACK_DEPTH=513", "FLTRACE_STACK_DEPTH");
	refused("poll_unknown", "FLTRACE_POLL=fast", "FLTRACE_POLL");
	refused("spin_junk", "FLTRACE_SPIN_US=1.5", "FLTRACE_SPIN_US");
	refused("files_unknown", "FLTRACE_FILES=some", "FLTRACE_FILES");
	refused("stacks_unknown", "FLTRACE_STACKS=dwarf", "FLTRACE_STACKS");
	refused("allocs_two", "FLTRACE_ALLOCS=2", "FLTRACE_ALLOCS");
	refused("far_unknown", "FLTRACE_FAR=disk", "FLTRACE_FAR");
	refused("far_file_without_dir", "FLTRACE_FAR=file", "FLTRACE_FAR");
	refused("far_file_relative", "FLTRACE_FAR=file:tmp", "FLTRACE_FAR");
	refused("far_mem_with_arg", "FLTRACE_FAR=mem:/tmp", "FLTRACE_FAR");
	refused("far_latency_over", "FLTRACE_FAR_LATENCY_US=1000001", "FLTRACE_FAR_LATENCY_US");
	refused("far_latency_junk", "FLTRACE_FAR_LATENCY_US=5ms", "FLTRACE_FAR_LATENCY_US");
	refused("alloc_sample_unit", "FLTRACE_ALLOC_SAMPLE=512K", "FLTRACE_ALLOC_SAMPLE");

	const char *lru[] = { BASE, "FLTRACE_POLICY=lru", NULL };
	parse(lru, &c, &err);
	check(strcmp(err.why, "'lru' is not an eviction policy") == 0 && strncmp(err.todo, "give one of fifo, ", 18) == 0,
	      "message_quotes_value", err.why);
	return failures ? 1 : 0;
}
