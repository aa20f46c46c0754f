/* Names and help of the eviction policies (inc/fltrace/policies.h): looked up by the CLI and by
 * the runtime, which both refuse a name that is not in the table. */
#include <fltrace/fmt.h>
#include <fltrace/policies.h>

#include <string.h>

#define POLICY_NAME_ROW(name, help) #name,
#define POLICY_HELP_ROW(name, help) help,
static const char *const policy_names[] = { FLTRACE_POLICIES(POLICY_NAME_ROW) };
static const char *const policy_helps[] = { FLTRACE_POLICIES(POLICY_HELP_ROW) };

int fltrace_policy_find(const char *name)
{
	for (unsigned i = 0; i < FLTRACE_POLICY_COUNT; i++)
		if (name && strcmp(name, policy_names[i]) == 0)
			return (int)i;
	return -1;
}

const char *fltrace_policy_name(unsigned id)
{
	return id < FLTRACE_POLICY_COUNT ? policy_names[id] : "?";
}

const char *fltrace_policy_help(unsigned id)
{
	return id < FLTRACE_POLICY_COUNT ? policy_helps[id] : "";
}

const char *fltrace_policy_list(char *buf, size_t cap)
{
	struct fmt f;
	fmt_init(&f, buf, cap);
	for (unsigned i = 0; i < FLTRACE_POLICY_COUNT; i++) {
		if (i)
			fmt_str(&f, i + 1 == FLTRACE_POLICY_COUNT ? " or " : ", ");
		fmt_str(&f, policy_names[i]);
	}
	return buf;
}
