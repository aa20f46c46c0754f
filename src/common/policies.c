/* Names and help of the eviction policies (inc/fltrace/policies.h): looked up by the CLI and by
 * the runtime, which both refuse a name that is not in the table. */
#include <fltrace/names.h>
#include <fltrace/policies.h>

#define POLICY_NAME_ROW(name, help) #name,
#define POLICY_HELP_ROW(name, help) help,
static const char *const policy_names[] = { FLTRACE_POLICIES(POLICY_NAME_ROW) };
static const char *const policy_helps[] = { FLTRACE_POLICIES(POLICY_HELP_ROW) };

int fltrace_policy_find(const char *name)
{
	return names_find(policy_names, FLTRACE_POLICY_COUNT, name);
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
	return names_list(policy_names, FLTRACE_POLICY_COUNT, buf, cap);
}
