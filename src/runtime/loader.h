/* The dynamic loader's mappings under --files=all: taken over from the loader, given back
 * before dlclose, shown with their files in /proc/self/maps. */
#ifndef FLTRACE_RT_LOADER_H
#define FLTRACE_RT_LOADER_H

#include "rt.h"

void loader_take_over(bool permanent); /* after start-up (permanent) and after every dlopen */
void loader_give_back(void);           /* before dlclose: the objects it may unmap get their files back */
void loader_dl_begin(bool exclusive);  /* around dlopen (shared) and dlclose (exclusive, with the */
void loader_dl_end(void);              /* give-back and the pass after it) */
void loader_fork_child(void);          /* in the child, before anything else of ours */
/* Rewrites /proc/self/maps text so taken-over ranges show their file again; returns the length. */
size_t loader_rewrite_maps(const char *in, size_t len, char *out, size_t cap);
/* Puts the files back under taken-over parts of [start, start+len) (rt.lock held): before the
 * program mremaps them (an mremap of memory on rt.loader_uffd must not wait for a handler). */
void loader_release(uintptr_t start, size_t len);

#endif
