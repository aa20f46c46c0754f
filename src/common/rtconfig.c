/* FLTRACE_* settings into struct rtconfig (inc/fltrace/rtconfig.h): one row per setting, each value
 * checked against its kind and bounds; the first bad one is reported with the variable's name. */
#include <stddef.h>
#include <string.h>

#include "fltrace/fmt.h"
#include "fltrace/parse.h"
#include "fltrace/rtconfig.h"

#define TODO_RECORD "run the program through 'fltrace record', which sets it"

enum kind { K_U64, K_UNSIGNED, K_BOOL, K_WORD, K_POLICY, K_PREFETCH, K_FAR, K_CORES, K_PATH, K_HEX16 };

struct setting {
	const char *name;
	enum kind kind;
	size_t off;          /* of the field in struct rtconfig */
	bool required;
	uint64_t dflt, min, max;
	const char *const *words; /* K_WORD: the accepted values, in enum order; NULL-terminated */
};

static const char *const poll_words[] = { "percpu", "adaptive", "block", "spin", NULL };
static const char *const files_words[] = { "mapped", "all", NULL };
static const char *const stacks_words[] = { "handler", "signal", "proc", "perf", NULL };

#define OFF(f) offsetof(struct rtconfig, f)
static const struct setting settings[] = {
	{ FLTRACE_ENV_LOCALMEM, K_U64, OFF(localmem), true, 0, 1, UINT64_MAX, NULL },
	{ FLTRACE_ENV_MAXMEM, K_U64, OFF(maxmem), true, 0, 1, UINT64_MAX, NULL },
	{ FLTRACE_ENV_OUTDIR, K_PATH, OFF(outdir), true, 0, 0, 0, NULL },
	{ FLTRACE_ENV_HANDLERS, K_UNSIGNED, OFF(handlers), false, 1, 1, FLTRACE_MAX_HANDLERS, NULL },
	{ FLTRACE_ENV_CORES, K_CORES, OFF(cores), false, 0, 0, 0, NULL },
	{ FLTRACE_ENV_SAMPLERATE, K_UNSIGNED, OFF(samplerate), false, 0, 0, 1000000000, NULL },
	{ FLTRACE_ENV_POLICY, K_POLICY, OFF(policy), false, 0, 0, 0, NULL },
	{ FLTRACE_ENV_PREFETCH, K_PREFETCH, OFF(prefetch), false, 0, 0, 0, NULL },
	{ FLTRACE_ENV_FAR, K_FAR, OFF(far), false, 0, 0, 0, NULL },
	{ FLTRACE_ENV_FAR_LATENCY, K_U64, OFF(far_latency_ns), false, 0, 0, FLTRACE_MAX_FAR_LATENCY_US, NULL },
	{ FLTRACE_ENV_FAR_REPLICAS, K_UNSIGNED, OFF(far_replicas), false, 1, 1, FLTRACE_MAX_FAR_REPLICAS, NULL },
	{ FLTRACE_ENV_FAR_TIMEOUT, K_U64, OFF(far_timeout_ms), false, FLTRACE_DEFAULT_FAR_TIMEOUT_MS, 10,
	  FLTRACE_MAX_FAR_TIMEOUT_MS, NULL },
	{ FLTRACE_ENV_FAR_RUN, K_HEX16, OFF(far_run), false, 0, 0, 0, NULL },
	{ FLTRACE_ENV_FAR_AUTH, K_PATH, OFF(far_auth), false, 0, 0, 0, NULL },
	{ FLTRACE_ENV_STACK_DEPTH, K_UNSIGNED, OFF(stack_depth), false, FLTRACE_DEFAULT_STACK_DEPTH, 1,
	  FLTRACE_MAX_STACK_DEPTH, NULL },
	{ FLTRACE_ENV_POLL, K_WORD, OFF(poll), false, RTCONFIG_POLL_PERCPU, 0, 0, poll_words },
	{ FLTRACE_ENV_SPIN_US, K_U64, OFF(spin_ns), false, 100, 0, 1000000, NULL },
	{ FLTRACE_ENV_FILES, K_WORD, OFF(files_all), false, 0, 0, 0, files_words },
	{ FLTRACE_ENV_STACKS, K_WORD, OFF(stacks), false, 0, 0, 0, stacks_words },
	{ FLTRACE_ENV_ALLOCS, K_BOOL, OFF(allocs), false, 1, 0, 1, NULL },
	{ FLTRACE_ENV_KEEP_LOCAL, K_PATH, OFF(keep_local), false, 0, 0, 0, NULL },
	{ FLTRACE_ENV_ALLOC_SAMPLE, K_U64, OFF(alloc_sample), false, FLTRACE_DEFAULT_ALLOC_SAMPLE, 0,
	  UINT64_MAX, NULL },
	{ FLTRACE_ENV_TEST_MOVE_MISREPORT, K_U64, OFF(test_move_misreport), false, 0, 0, UINT64_MAX, NULL },
	{ FLTRACE_ENV_TEST_HANDLER_LAG, K_U64, OFF(test_handler_lag_ns), false, 0, 0, 1000000, NULL },
};

static int refuse(struct rtconfig_error *err, const struct setting *s, const char *v, const char *why,
		  const char *todo)
{
	struct fmt f;
	fmt_init(&f, err->why, sizeof(err->why));
	fmt_str(&f, "'");
	fmt_str(&f, v);
	fmt_str(&f, "' ");
	fmt_str(&f, why);
	err->name = s->name;
	fmt_init(&f, err->todo, sizeof(err->todo));
	fmt_str(&f, todo);
	return -1;
}

/* A value that is none of a setting's plug-ins: the error lists them. */
static int refuse_choice(struct rtconfig_error *err, const struct setting *s, const char *v, const char *why,
			 const char *choices)
{
	char todo[128];
	struct fmt f;
	fmt_init(&f, todo, sizeof(todo));
	fmt_str(&f, "give one of ");
	fmt_str(&f, choices);
	return refuse(err, s, v, why, todo);
}

static int parse_words(const struct setting *s, const char *v, unsigned *out, struct rtconfig_error *err)
{
	for (unsigned i = 0; s->words[i]; i++)
		if (strcmp(v, s->words[i]) == 0) {
			*out = i;
			return 0;
		}
	return refuse(err, s, v, "is not one of its values", s->words == poll_words ? "give percpu, adaptive, block or spin" :
		      s->words == stacks_words ? "give handler, signal, proc or perf" : "give mapped or all");
}

static int parse_one(const struct setting *s, const char *v, struct rtconfig *c, struct rtconfig_error *err)
{
	char *field = (char *)c + s->off;
	uint64_t x = s->dflt;
	unsigned w = (unsigned)s->dflt;
	int e;
	switch (s->kind) {
	case K_U64:
	case K_UNSIGNED:
	case K_BOOL:
		if (v && (e = parse_u64(v, s->min, s->max, &x)) < 0)
			return refuse(err, s, v, parse_strerror(e), TODO_RECORD);
		if (s->kind == K_U64)
			*(uint64_t *)field = x;
		else if (s->kind == K_UNSIGNED)
			*(unsigned *)field = (unsigned)x;
		else
			*(bool *)field = x != 0;
		return 0;
	case K_WORD:
		if (v && parse_words(s, v, &w, err) < 0)
			return -1;
		if (s->off == OFF(files_all))
			c->files_all = w == 1;
		else if (s->off == OFF(stacks))
			c->stacks = (enum rtconfig_stacks)w;
		else
			c->poll = (enum rtconfig_poll)w;
		return 0;
	case K_POLICY: {
		char list[96];
		int id = fltrace_policy_find(v ? v : FLTRACE_POLICY_DEFAULT);
		if (id < 0)
			return refuse_choice(err, s, v, "is not an eviction policy",
					     fltrace_policy_list(list, sizeof(list)));
		c->policy = id;
		return 0;
	}
	case K_PREFETCH: {
		char list[96];
		int id = fltrace_prefetch_find(v ? v : FLTRACE_PREFETCH_DEFAULT);
		if (id < 0)
			return refuse_choice(err, s, v, "is not a prefetcher",
					     fltrace_prefetch_list(list, sizeof(list)));
		c->prefetch = id;
		return 0;
	}
	case K_FAR: {
		const char *arg;
		int id = fltrace_backend_parse(v ? v : FLTRACE_BACKEND_DEFAULT, &arg);
		if (id < 0) {
			char todo[128], list[96];
			struct fmt f;
			fmt_init(&f, todo, sizeof(todo));
			fmt_str(&f, "give ");
			fmt_str(&f, fltrace_backend_list(list, sizeof(list)));
			return refuse(err, s, v, id == -2 ? "has no argument, or one it does not take" :
				      "is not a far-memory backend", todo);
		}
		if (id == FLTRACE_BACKEND_file && arg[0] != '/')
			return refuse(err, s, v, "does not name an absolute directory", TODO_RECORD);
		c->far = id;
		c->far_arg = arg;
		return 0;
	}
	case K_CORES:
		c->pinned = v != NULL;
		memset(&c->cores, 0, sizeof(c->cores));
		if (v && (e = cpulist_parse(v, &c->cores)) < 0)
			return refuse(err, s, v, "is not a CPU list (e.g. 0,2-3)", TODO_RECORD);
		return 0;
	case K_PATH:
		if (v && v[0] != '/')
			return refuse(err, s, v, "is not an absolute path", TODO_RECORD);
		*(const char **)field = v;
		return 0;
	case K_HEX16:
		if (v && (strlen(v) != 16 || strspn(v, "0123456789abcdef") != 16))
			return refuse(err, s, v, "is not 16 lowercase hex digits", TODO_RECORD);
		*(const char **)field = v;
		return 0;
	}
	return 0;
}

int rtconfig_parse(const char *(*get)(const char *name, void *ctx), void *ctx, struct rtconfig *c,
		   struct rtconfig_error *err)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++) {
		const struct setting *s = &settings[i];
		const char *v = get(s->name, ctx);
		if (v && !*v)
			v = NULL; /* set but empty: as unset */
		if (!v && s->required) {
			err->name = s->name;
			struct fmt f;
			fmt_init(&f, err->why, sizeof(err->why));
			fmt_str(&f, "the preload library was loaded without this setting");
			fmt_init(&f, err->todo, sizeof(err->todo));
			fmt_str(&f, "run the program through 'fltrace record -L <MB> -M <MB> -- <command>'");
			return -1;
		}
		if (parse_one(s, v, c, err) < 0)
			return -1;
	}
	c->spin_ns = c->poll == RTCONFIG_POLL_BLOCK ? 0 : c->spin_ns * 1000; /* the rows read µs */
	c->far_latency_ns *= 1000;
	c->test_handler_lag_ns *= 1000;
	if (c->maxmem < c->localmem)
		c->maxmem = c->localmem;
	return 0;
}
