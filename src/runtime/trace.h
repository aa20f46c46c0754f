/* The trace writer: per-process trace file, records reserved and committed by any thread,
 * stacks interned, written pages dropped from our RSS. */
#ifndef FLTRACE_RT_TRACE_H
#define FLTRACE_RT_TRACE_H

#include "rt.h"

int trace_open(char *path, size_t cap); /* path: the trace file (or the name refused) */
void *trace_reserve(uint32_t size);
void trace_commit(void *rec, uint16_t type, uint32_t size);
uint32_t trace_stack_id(const uint64_t *ips, unsigned depth);
void trace_write_fault(const struct ft_fault *f);
void trace_close(void);
void trace_close_inherited(void); /* fork child: the parent's file is not ours */
void trace_release_written(void); /* drop written pages from our RSS */
uint64_t trace_bytes(void);
/* Written bytes still mapped in our RSS (at most ~5 MB: trace_release_written drops the rest). */
uint64_t trace_unreleased_bytes(void);

#endif
