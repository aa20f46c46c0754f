/* Eviction: keeps the resident tracked pages under the cap, the policy (policy.h) picking
 * victims, the far store (far.h) keeping them. */
#ifndef FLTRACE_RT_EVICT_H
#define FLTRACE_RT_EVICT_H

#include "rt.h"

int evict_init(uint64_t cap_pages, uint64_t max_pages);
void evict_note_present(uintptr_t page, uint32_t *pg); /* a page became resident */
void evict_note_touched(uintptr_t page, uint32_t *pg); /* ... back from probation (a soft fault) */
void evict_requeue(uintptr_t page, uint32_t *pg);      /* a resident page moved (mremap) */
bool evict_has_probation(void);                        /* the policy takes soft faults */
bool evict_has_room(unsigned need);                    /* no eviction round needed for them */
/* Makes room for `need` more resident pages; -ENOSPC when -M is exhausted. */
int evict_make_room(unsigned need);

#endif
