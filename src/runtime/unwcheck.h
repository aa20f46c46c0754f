/* libunwind's memory validation without fds: its validation pipes replaced by a check
 * that opens nothing in the program's fd table. */
#ifndef FLTRACE_RT_UNWCHECK_H
#define FLTRACE_RT_UNWCHECK_H

#include "rt.h"

void unwcheck_init(void); /* before libunwind's first use */

#endif
