/* The table of eviction policies: a row of inc/fltrace/policies.h names `policy_<name>`, the
 * operations its file (policy_<name>.c) defines. */
#include "policy.h"

#define POLICY_DECLARE(name, help) extern const struct policy_ops policy_##name;
FLTRACE_POLICIES(POLICY_DECLARE)
#define POLICY_ROW(name, help) &policy_##name,
static const struct policy_ops *const policies[] = { FLTRACE_POLICIES(POLICY_ROW) };

const struct policy_ops *policy_ops_of(unsigned id)
{
	return id < FLTRACE_POLICY_COUNT ? policies[id] : NULL;
}
