/* Loaded objects' dynamic tables (got.c): their symbols, and rebinding their GOT slots by symbol
 * name, read-only-after-relocation (RELRO) pages included. */
#ifndef FLTRACE_RT_GOT_H
#define FLTRACE_RT_GOT_H

#include <link.h>
#include <stdbool.h>
#include <stdint.h>

/* The part of an object that RELRO made read-only: [lo, hi), page-aligned; 0, 0 if none. */
struct got_relro {
	uintptr_t lo, hi;
};
void got_relro_of(uintptr_t base, const ElfW(Phdr) *ph, unsigned n, struct got_relro *r);

/* Writes one pointer-sized slot of an object, lifting RELRO for the moment if it lies there. */
bool got_write_slot(void **slot, void *value, const struct got_relro *r);

/* Every JUMP_SLOT or GLOB_DAT slot of the object whose symbol `replace` maps to non-NULL gets
 * that value: what the loader would have bound, had the symbol been defined there. A lazy slot
 * not bound yet is bound now. */
void got_rebind(const struct dl_phdr_info *info, void *(*replace)(const char *name, void *arg), void *arg);

/* Binds every lazy PLT slot of the object now, to what dlvsym finds for the name and version it
 * imports: the loader's lazy binding walks its scope lists, which a handler thread must not read
 * where they may be evicted. */
void got_bind_now(const struct dl_phdr_info *info);

/* True if the object defines `name` (a dynamic symbol neither undefined nor local): a non-PIE
 * executable's undefined symbol with a value (its PLT entry, for taking the address) does not. */
bool got_defines(const struct dl_phdr_info *info, const char *name);

#endif
