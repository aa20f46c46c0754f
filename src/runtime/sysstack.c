/* Stacks of threads asleep in a fault, unwound by a handler with libunwind's remote interface from the
 * (pc, sp) /proc shows: inside a system call, with the stack signal blocked, and in user mode. */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <libunwind.h> /* the generic (_Ux86_64_) interface: a remote address space of our own */

#include "rt.h"
#include "region.h"
#include "prefault.h"
#include "sysstack.h"
#include "threads.h"

/* Exported by libunwind (libunwind-ptrace uses it) but declared only in its private headers. */
extern int _Ux86_64_dwarf_search_unwind_table(unw_addr_space_t as, unw_word_t ip, unw_dyn_info_t *di,
					      unw_proc_info_t *pi, int need_unwind_info, void *arg);

#define OBJ_MAX 4096
#define CACHE_PAGES 16
#define CACHE_ENTRIES 8
#define OWN_FRAMES_MAX 8
#define FRAMES_MAX (FLTRACE_MAX_STACK_DEPTH + OWN_FRAMES_MAX + 1)
/* The cache key sysstack_unwind_user's stacks go by, in place of a system call's number: unwound
 * without the frame-pointer guess, they are not the ones sysstack_unwind keeps for user mode (-1). */
#define NR_USER_EXACT (-3L)
#define NR_USER_FP (-4L) /* ... and unwound with rbp too (from the fault's sample, faultregs.c) */

/* One loaded object's code and the table libunwind searches for it (.eh_frame_hdr). */
struct sys_object {
	uintptr_t lo, hi;        /* an executable segment */
	uintptr_t eh_hdr, table; /* the header, and its sorted (initial location, FDE) table */
	uint64_t fde_count;
};

struct object_table {
	unsigned n;
	struct sys_object v[OBJ_MAX];
};

/* The table is rebuilt by maps_snapshot (program or stats thread: it walks the loader's lists,
 * which a handler must never do) into the spare copy, then published under objs.lock. */
static struct {
	struct rt_spinlock lock; /* the live table is read (a binary search) or swapped under it */
	struct object_table *tables[2];
	_Atomic(struct object_table *) live;
	struct object_table *building;
	_Atomic unsigned generation; /* bumped on every publish: unwinders drop what they cached */
} objs;

/* One unwind's memory reader: pages read once with process_vm_readv, never by touching them. */
struct reader {
	uint64_t pc, sp, fp;
	bool have_fp, used_fp; /* rbp known; and read by the unwind (its stack depends on it) */
	bool lacked_fp;        /* rbp asked for and not known */
	bool lacked_reg; /* the unwind asked for a register the kernel does not show (the stack is then
			  * not the one the thread would unwind itself) */
	bool missed;     /* a page could not be read (a tracked page away, or none there) */
	bool forked; /* a page could not be read: a fork held rt.lock (the unwind is to be redone) */
	bool own_stop, own_met; /* stop at a frame of fltrace's own code; and one was met */
	uint64_t watch; /* a word whose reading is noted (watch_hit): see step_noting_read */
	bool watch_hit;
	uintptr_t page[CACHE_PAGES];
	unsigned next, last; /* last: the entry hit most recently (reads come in runs) */
	char *data;
};

struct frames;
struct cache_entry;
static __thread unw_addr_space_t tls_as;
static __thread struct reader *tls_reader;
static __thread struct cache_entry *tls_cache;
static __thread unsigned tls_cache_next;
static __thread struct frames *tls_spare;
static __thread unsigned tls_generation, tls_threads_gone;

/* ---- the object table ---- */

static int object_table_add(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size, (void)arg;
	struct object_table *t = objs.building;
	const ElfW(Phdr) *eh = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME)
			eh = &info->dlpi_phdr[i];
	if (!eh)
		return 0;
	const uint8_t *hdr = (const uint8_t *)(info->dlpi_addr + eh->p_vaddr);
	/* version 1, eh_frame_ptr pcrel|sdata4, fde_count udata4, table datarel|sdata4: what every
	 * linker here writes; anything else is left without remote stacks. */
	if (hdr[0] != 1 || hdr[1] != 0x1b || hdr[2] != 0x03 || hdr[3] != 0x3b)
		return 0;
	uint32_t count;
	memcpy(&count, hdr + 8, sizeof(count));
	for (int i = 0; i < info->dlpi_phnum && t->n < OBJ_MAX; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		t->v[t->n++] = (struct sys_object){
			.lo = info->dlpi_addr + ph->p_vaddr,
			.hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz,
			.eh_hdr = (uintptr_t)hdr,
			.table = (uintptr_t)hdr + 12,
			.fde_count = count,
		};
	}
	return 0;
}

static int object_cmp(const struct sys_object *a, const struct sys_object *b)
{
	return a->lo < b->lo ? -1 : a->lo > b->lo;
}

static void object_table_sort(struct object_table *t)
{
	for (unsigned i = 1; i < t->n; i++) /* a few dozen objects, nearly sorted already */
		for (unsigned j = i; j > 0 && object_cmp(&t->v[j - 1], &t->v[j]) > 0; j--) {
			struct sys_object x = t->v[j];
			t->v[j] = t->v[j - 1];
			t->v[j - 1] = x;
		}
}

/* Callers hold maps.c's lock (one builder at a time) and never rt.lock: the walk may read link
 * maps on the program's heap, i.e. fault. */
void sysstack_objects_refresh(void)
{
	if (!objs.tables[0]) {
		objs.tables[0] = rt_map(sizeof(struct object_table));
		objs.tables[1] = rt_map(sizeof(struct object_table));
		if (!objs.tables[0] || !objs.tables[1])
			return;
	}
	struct object_table *t = atomic_load(&objs.live) == objs.tables[0] ? objs.tables[1] : objs.tables[0];
	t->n = 0;
	objs.building = t;
	threads_dl_iterate_phdr(object_table_add, NULL);
	object_table_sort(t);
	rt_spin_lock(&objs.lock, LOCK_OBJECTS);
	atomic_store(&objs.live, t);
	atomic_fetch_add(&objs.generation, 1);
	rt_spin_unlock(&objs.lock, LOCK_OBJECTS);
}

void sysstack_fork_child(void)
{
	rt_spin_reset(&objs.lock);
}

static bool object_find(uintptr_t ip, struct sys_object *out)
{
	bool found = false;
	/* Not rt.lock: a fork may hold that one, waiting for this very handler. */
	rt_spin_lock(&objs.lock, LOCK_OBJECTS);
	const struct object_table *t = atomic_load(&objs.live);
	unsigned lo = 0, hi = t ? t->n : 0;
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		if (ip < t->v[mid].lo)
			hi = mid;
		else if (ip >= t->v[mid].hi)
			lo = mid + 1;
		else {
			*out = t->v[mid];
			found = true;
			break;
		}
	}
	rt_spin_unlock(&objs.lock, LOCK_OBJECTS);
	return found;
}

/* ---- memory: the thread's stack and the objects' unwind tables ---- */

/* len bytes of the program's memory (within one page), never by touching them: an unmapped page
 * fails process_vm_readv, and a tracked page that is not resident would fault inside it, on this
 * very handler. While a fork holds rt.lock, nothing is read (*forked): the forking thread may need
 * this handler first. */
static bool mem_read(uintptr_t addr, void *dst, size_t len, bool *forked)
{
	*forked = !rt_lock_unless_fork();
	if (*forked)
		return false;
	uint32_t *pg = region_page(addr);
	bool ok = !pg || pg_state(*pg) == PAGE_PRESENT;
	if (ok) {
		struct iovec local = { dst, len }, remote = { (void *)addr, len };
		ok = process_vm_readv(rt.pid, &local, 1, &remote, 1, 0) == (ssize_t)len;
	}
	rt_unlock();
	return ok;
}

bool sysstack_peek(uintptr_t addr, void *dst, size_t len)
{
	bool forked;
	return mem_read(addr, dst, len, &forked);
}

static bool page_read(struct reader *r, uintptr_t page, char *dst)
{
	bool forked;
	bool ok = mem_read(page, dst, rt.page_size, &forked);
	r->forked |= forked;
	return ok;
}

static const char *reader_page(struct reader *r, uintptr_t page)
{
	if (!page) /* the empty entries' tag: nothing is mapped there */
		return NULL;
	if (r->page[r->last] == page)
		return r->data + ((size_t)r->last << rt.page_shift);
	for (unsigned i = 0; i < CACHE_PAGES; i++)
		if (r->page[i] == page) {
			r->last = i;
			return r->data + ((size_t)i << rt.page_shift);
		}
	unsigned i = r->next++ % CACHE_PAGES;
	char *dst = r->data + ((size_t)i << rt.page_shift);
	r->page[i] = 0;
	if (!page_read(r, page, dst)) {
		r->missed = true;
		return NULL;
	}
	r->page[i] = page;
	r->last = i;
	return dst;
}

static int access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write, void *arg)
{
	(void)as;
	struct reader *r = arg;
	if (write)
		return -UNW_EREADONLYREG;
	r->watch_hit |= addr == r->watch;
	uintptr_t mask = rt.page_size - 1, page = addr & ~mask;
	size_t off = addr & mask;
	const char *p = reader_page(r, page);
	if (!p)
		return -UNW_EINVAL;
	if (off + sizeof(*val) <= rt.page_size) {
		memcpy(val, p + off, sizeof(*val));
		return 0;
	}
	char word[sizeof(*val)];
	size_t first = rt.page_size - off;
	memcpy(word, p + off, first);
	const char *q = reader_page(r, page + rt.page_size);
	if (!q)
		return -UNW_EINVAL;
	memcpy(word + first, q, sizeof(word) - first);
	memcpy(val, word, sizeof(word));
	return 0;
}

/* Only the two registers the kernel shows; a frame whose return needs another one ends the stack. */
static int access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val, int write, void *arg)
{
	(void)as;
	struct reader *r = arg;
	if (write)
		return -UNW_EREADONLYREG;
	if (reg == UNW_X86_64_RIP)
		*val = r->pc;
	else if (reg == UNW_X86_64_RSP)
		*val = r->sp;
	else if (reg == UNW_X86_64_RBP && r->have_fp) {
		*val = r->fp;
		r->used_fp = true;
	}
	else {
		r->lacked_reg = true;
		r->lacked_fp |= reg == UNW_X86_64_RBP;
		return -UNW_EBADREG;
	}
	return 0;
}

static int access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val, int write, void *arg)
{
	(void)as, (void)reg, (void)val, (void)write, (void)arg;
	return -UNW_EBADREG;
}

static int find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi, int need_unwind_info,
			  void *arg)
{
	struct sys_object o;
	if (!object_find(ip, &o))
		return -UNW_ENOINFO;
	unw_dyn_info_t di;
	memset(&di, 0, sizeof(di));
	di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	di.start_ip = o.lo;
	di.end_ip = o.hi;
	di.u.rti.segbase = o.eh_hdr;
	di.u.rti.table_data = o.table;
	di.u.rti.table_len = o.fde_count * 8 / sizeof(unw_word_t);
	return _Ux86_64_dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info, arg);
}

/* Table-format unwind info is freed by libunwind itself. */
static void put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
	(void)as, (void)pi, (void)arg;
}

static int get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *addr, void *arg)
{
	(void)as, (void)addr, (void)arg;
	return -UNW_ENOINFO;
}

static int resume(unw_addr_space_t as, unw_cursor_t *c, void *arg)
{
	(void)as, (void)c, (void)arg;
	return -UNW_EINVAL;
}

static int get_proc_name(unw_addr_space_t as, unw_word_t addr, char *buf, size_t len, unw_word_t *off,
			 void *arg)
{
	(void)as, (void)addr, (void)buf, (void)len, (void)off, (void)arg;
	return -UNW_ENOINFO;
}

static unw_accessors_t accessors = {
	.find_proc_info = find_proc_info,
	.put_unwind_info = put_unwind_info,
	.get_dyn_info_list_addr = get_dyn_info_list_addr,
	.access_mem = access_mem,
	.access_reg = access_reg,
	.access_fpreg = access_fpreg,
	.resume = resume,
	.get_proc_name = get_proc_name,
};

/* ---- the unwind ---- */

/* Frames as unwound, fltrace's own included, with where each return address was read from. */
struct frames {
	unsigned n;
	bool broken; /* stopped on an error, not at the outermost frame */
	bool exact;  /* whole (or cut at the limit) from the two registers shown, nothing guessed */
	bool sigframe; /* it went through a signal frame (the stack pointer above it comes from memory) */
	bool in_place; /* its words can be checked by touching them (cache_words_hold) */
	bool tracked;  /* ... and some are on tracked pages */
	bool used_fp;  /* the unwind read rbp (given: NR_USER_FP): the entry is good for that rbp only */
	bool lacked_fp; /* ... or needed it, not given */
	uint64_t last_sp;
	uint64_t ip[FRAMES_MAX], slot[FRAMES_MAX];
	/* where each frame's rbp was saved, 0 if in no memory, and its value: a frame whose canonical
	 * frame address comes from rbp moves with it */
	uint64_t bp_slot[FRAMES_MAX], bp[FRAMES_MAX];
};

struct cache_entry {
	int tid;
	long nr;
	uint64_t pc, sp, fp;
	struct frames f;
};

/* One step up the stack, noting whether it read the word at `watched`. libunwind reads a saved
 * register only where the frame's rule needs its value (a canonical frame address that comes from
 * rbp, an expression): a word it did not read is no part of the stack. */
static int step_noting_read(unw_cursor_t *cur, struct reader *r, uint64_t watched, bool *read)
{
	r->watch = watched;
	r->watch_hit = false;
	int step = unw_step(cur);
	*read = watched && r->watch_hit;
	r->watch = 0;
	return step;
}

/* Forgets the saved rbp of frames whose step did not read it: code built without frame pointers
 * keeps anything in rbp (python's evaluation loop, an object's address), and a cached stack whose
 * check held that word failed at nearly every fault for a value that does not change the stack
 * (python filling memory at ample -L: 1,800 of its 5,400 faults took the stack signal, 490 so).
 * Not across a signal frame: the registers above it come from its context. */
static void frames_drop_unread_bp(struct frames *f, const bool *bp_read)
{
	if (f->sigframe)
		return;
	for (unsigned j = 0; j < f->n; j++)
		if (!bp_read[j])
			f->bp_slot[j] = f->bp[j] = 0;
}

static void unwind_from(struct reader *r, struct frames *f, unsigned max)
{
	unw_cursor_t cur;
	bool bp_read[FRAMES_MAX];
	f->n = 0;
	f->broken = true;
	f->exact = false;
	f->sigframe = false;
	f->in_place = false;
	f->last_sp = r->sp;
	r->lacked_reg = false;
	r->used_fp = r->lacked_fp = false;
	if (unw_init_remote(&cur, tls_as, r) < 0)
		return;
	int step = 0;
	do {
		unw_word_t ip, sp;
		unw_save_loc_t loc;
		if (unw_get_reg(&cur, UNW_REG_IP, &ip) < 0 || ip == 0)
			break;
		if (unw_get_reg(&cur, UNW_REG_SP, &sp) == 0)
			f->last_sp = sp;
		f->ip[f->n] = ip;
		f->slot[f->n] = f->n && unw_get_save_loc(&cur, UNW_REG_IP, &loc) == 0 &&
				loc.type == UNW_SLT_MEMORY ? loc.u.addr : 0;
		unw_word_t bp;
		f->bp_slot[f->n] = unw_get_save_loc(&cur, UNW_X86_64_RBP, &loc) == 0 && loc.type == UNW_SLT_MEMORY &&
				   unw_get_reg(&cur, UNW_X86_64_RBP, &bp) == 0 ? loc.u.addr : 0;
		f->bp[f->n] = f->bp_slot[f->n] ? bp : 0;
		f->sigframe |= unw_is_signal_frame(&cur) > 0;
		bp_read[f->n] = false; /* no step after the last frame: its rbp is read by none */
		f->n++;
		r->own_met = r->own_stop && prefault_is_own_frame(ip);
	} while (f->n < max && !r->own_met &&
		 (step = step_noting_read(&cur, r, f->bp_slot[f->n - 1], &bp_read[f->n - 1])) > 0);
	frames_drop_unread_bp(f, bp_read);
	f->broken = f->n < max && step < 0;
	f->exact = !f->broken && !r->lacked_reg && f->n > 0 && !r->own_met;
	f->used_fp = r->used_fp;
	f->lacked_fp = r->lacked_fp;
}

static bool word_at(struct reader *r, uintptr_t addr, uint64_t *v)
{
	unw_word_t w;
	if (access_mem(tls_as, addr, &w, 0, r) < 0)
		return false;
	*v = w;
	return true;
}

/* A return address: a word that points into loaded code. */
static bool code_word_at(struct reader *r, uintptr_t addr, bool *readable)
{
	uint64_t v;
	struct sys_object o;
	*readable = word_at(r, addr, &v);
	return *readable && object_find(v, &o);
}

/* The frame pointer the kernel does not show, for a caller that needs it (code built with frame
 * pointers, e.g. -O0) when no frame in between saved it: the first slot above the caller's stack
 * pointer that starts two linked frame records (a saved frame pointer above it, a return address
 * into loaded code, and the record it points to holds one too). A single record matched stale
 * words: the zero of a 7-argument syscall() below the padding that kept an old return address
 * (futex at -O0: 1 fault in 3 ended in a made-up frame). */
static bool guess_frame_pointer(struct reader *r, uint64_t sp, uint64_t *fp)
{
	for (uintptr_t a = (sp + 7) & ~7ull; a < sp + 65536; a += 8) {
		uint64_t saved;
		bool readable = true;
		if (!word_at(r, a, &saved))
			return false;
		if (saved <= a || saved >= a + (8u << 20) || !code_word_at(r, a + 8, &readable)) {
			if (!readable)
				return false;
			continue;
		}
		if (code_word_at(r, saved + 8, &readable)) {
			*fp = a;
			return true;
		}
	}
	return false;
}

static void unwind_with_frame_pointer_guess(struct reader *r, struct frames *f, unsigned max)
{
	unwind_from(r, f, max);
	uint64_t fp;
	if (!f->broken || f->n == 0 || !guess_frame_pointer(r, f->last_sp, &fp))
		return;
	struct frames *again = tls_spare;
	r->fp = fp;
	r->have_fp = true;
	unwind_from(r, again, max);
	if (again->n > f->n && memcmp(again->ip, f->ip, f->n * sizeof(f->ip[0])) == 0) {
		memcpy(f, again, sizeof(*f));
		f->exact = false;
	}
}

/* The words a stack unwound before rests on, still in place: each frame's return address and saved
 * rbp, read with one process_vm_readv per CHECK_WORDS under rt.lock (0.3-1 us a fault, where one
 * per page they are on took 3-4: GAPBS bfs, python). Never by touching them: a word may be on a
 * stack that is gone (a signal frame's, after the program freed the stack it had interrupted), and
 * a tracked page that is away would fault here, on this very handler (an eviction moving a page
 * away holds the lock). */
#define CHECK_WORDS 128
struct check {
	struct iovec at[CHECK_WORDS];
	uint64_t want[CHECK_WORDS], got[CHECK_WORDS];
	unsigned n;
	uintptr_t page; /* the last page found readable */
};

static bool check_flush(struct check *c)
{
	struct iovec to = { c->got, c->n * sizeof(uint64_t) };
	bool hold = !c->n || process_vm_readv(rt.pid, &to, 1, c->at, c->n, 0) == (ssize_t)to.iov_len;
	for (unsigned i = 0; hold && i < c->n; i++)
		hold = c->got[i] == c->want[i];
	c->n = 0;
	return hold;
}

/* Under rt.lock. */
static bool check_add(struct check *c, uint64_t addr, uint64_t want)
{
	if (!addr)
		return true;
	uintptr_t page = addr & ~((uintptr_t)rt.page_size - 1);
	if (addr & 7) /* never seen: words of the stack; unwind afresh */
		return false;
	if (page != c->page) {
		uint32_t *pg = region_page(page);
		if (pg && pg_state(*pg) != PAGE_PRESENT)
			return false;
		c->page = page;
	}
	c->at[c->n] = (struct iovec){ (void *)addr, sizeof(uint64_t) };
	c->want[c->n++] = want;
	return c->n < CHECK_WORDS || check_flush(c);
}

/* The span of the thread's stack from sp to the last word a stack rests on, when it can be checked in
 * place: no signal frame on the way (its frames all on the stack sp is on), at most SPAN_PAGES
 * pages, every one of them readable now (one contiguous mapping, which stays while the thread runs
 * on it), none of them a tracked page away. */
#define SPAN_PAGES 64 /* 256 KiB: deep stacks of big frames (an interpreter's) */
#define SPAN_MAX ((uint64_t)SPAN_PAGES << 12)
static void frames_mark_in_place(struct frames *f, uint64_t sp)
{
	uint64_t top = 0;
	for (unsigned j = 0; j < f->n; j++) {
		top = f->slot[j] > top ? f->slot[j] : top;
		top = f->bp_slot[j] > top ? f->bp_slot[j] : top;
	}
	uintptr_t mask = rt.page_size - 1, lo = sp & ~mask;
	f->in_place = false;
	if (!f->exact || f->sigframe || top < sp || top + 8 - lo > SPAN_MAX)
		return;
	for (unsigned j = 0; j < f->n; j++)
		if ((f->slot[j] && (f->slot[j] < sp || (f->slot[j] & 7))) ||
		    (f->bp_slot[j] && (f->bp_slot[j] < sp || (f->bp_slot[j] & 7))))
			return;
	struct iovec at[SPAN_PAGES];
	char probe[SPAN_PAGES];
	unsigned n = 0;
	if (!rt_lock_unless_fork())
		return;
	bool ok = true;
	f->tracked = false;
	for (uintptr_t p = lo; ok && p <= top; p += rt.page_size) {
		uint32_t *pg = region_page(p);
		f->tracked |= pg != NULL;
		ok = !pg || pg_state(*pg) == PAGE_PRESENT;
		at[n++] = (struct iovec){ (void *)p, 1 };
	}
	struct iovec to = { probe, n };
	ok = ok && process_vm_readv(rt.pid, &to, 1, at, n, 0) == (ssize_t)n;
	rt_unlock();
	f->in_place = ok;
}

/* Touched in place: one word of the stack above sp (frames_mark_in_place), 0.2 us a stack. */
static bool words_in_place_hold(const struct frames *f)
{
	if (f->tracked && !rt_lock_unless_fork())
		return false;
	bool hold = true;
	uintptr_t mask = rt.page_size - 1, checked = 0;
	for (unsigned j = 0; hold && j < f->n; j++) {
		uint64_t a[2] = { j ? f->slot[j] : 0, f->bp_slot[j] }, v[2] = { f->ip[j], f->bp[j] };
		for (unsigned k = 0; hold && k < 2; k++) {
			if (!a[k])
				continue;
			if (f->tracked && (a[k] & ~mask) != checked) {
				uint32_t *pg = region_page(a[k] & ~mask);
				hold = !pg || pg_state(*pg) == PAGE_PRESENT;
				checked = a[k] & ~mask;
			}
			hold = hold && *(const volatile uint64_t *)a[k] == v[k];
		}
	}
	if (f->tracked)
		rt_unlock();
	return hold;
}

static bool cache_words_hold(const struct frames *f, struct reader *r)
{
	if (f->in_place)
		return words_in_place_hold(f);
	struct check c;
	c.n = 0;
	c.page = 0;
	if (!rt_lock_unless_fork()) {
		r->forked = true;
		return false;
	}
	bool hold = true;
	for (unsigned j = 0; hold && j < f->n; j++)
		hold = (!j || check_add(&c, f->slot[j], f->ip[j])) && check_add(&c, f->bp_slot[j], f->bp[j]);
	hold = hold && check_flush(&c);
	rt_unlock();
	return hold;
}

/* A thread faulting again and again at one place (a big read, a loop filling memory) has the same
 * stack each time: the same (call, sp, pc) whose return addresses all still sit in their slots. */
/* *same: the entry of that key, to be filled again where its words moved (else one to take). */
static struct frames *cache_lookup(int tid, long nr, uint64_t pc, uint64_t sp, uint64_t fp, struct reader *r,
				   struct cache_entry **same)
{
	*same = NULL;
	for (unsigned i = 0; i < CACHE_ENTRIES; i++) {
		struct cache_entry *e = &tls_cache[i];
		/* rbp is a register like another in code built without frame pointers: it tells
		 * stacks apart only where the unwind read it. */
		if (e->tid != tid || e->nr != nr || e->pc != pc || e->sp != sp || (e->f.used_fp && e->fp != fp))
			continue;
		*same = e;
		return cache_words_hold(&e->f, r) ? &e->f : NULL;
	}
	return NULL;
}

/* Bumped when a thread id is found reused by a new thread: every handler's cache is dropped. */
static _Atomic unsigned threads_gone;

void sysstack_thread_gone(void)
{
	atomic_fetch_add(&threads_gone, 1);
}

static struct cache_entry *cache_slot(int tid, long nr, uint64_t pc, uint64_t sp, uint64_t fp)
{
	struct cache_entry *e = &tls_cache[tls_cache_next++ % CACHE_ENTRIES];
	e->tid = tid;
	e->nr = nr;
	e->pc = pc;
	e->sp = sp;
	e->fp = fp;
	return e;
}

static bool sysstack_thread_init(void)
{
	if (tls_as)
		return true;
	tls_reader = rt_map(sizeof(*tls_reader));
	char *data = rt_map((size_t)CACHE_PAGES << rt.page_shift);
	tls_cache = rt_map(CACHE_ENTRIES * sizeof(*tls_cache));
	tls_spare = rt_map(sizeof(*tls_spare));
	if (!tls_reader || !data || !tls_cache || !tls_spare)
		return false;
	tls_reader->data = data;
	tls_as = unw_create_addr_space(&accessors, 0);
	if (!tls_as)
		return false;
	/* Parsed frame rules are kept per handler thread, dropped whenever the object table changes
	 * (dlopen, dlclose): without them, one frame costs microseconds. */
	unw_set_caching_policy(tls_as, UNW_CACHE_PER_THREAD);
	return true;
}

/* This handler's unwinder, its caches current: parsed frame rules are dropped when the loaded
 * objects change, cached stacks when a thread id was reused. */
static bool sysstack_ready(void)
{
	if (!sysstack_thread_init())
		return false;
	unsigned generation = atomic_load(&objs.generation), gone = atomic_load(&threads_gone);
	if (generation != tls_generation) {
		unw_flush_cache(tls_as, 0, 0);
		tls_generation = generation;
	}
	if (gone != tls_threads_gone) {
		for (unsigned i = 0; i < CACHE_ENTRIES; i++)
			tls_cache[i].tid = 0;
		tls_threads_gone = gone;
	}
	return true;
}

/* The program's stack at a system call (nr >= 0) or a user-mode fault (nr -1): the pc first, then
 * its callers. Handler threads only; the thread must stay asleep. */
unsigned sysstack_unwind(int tid, long nr, uint64_t pc, uint64_t sp, uint64_t *ips, unsigned max, bool *fresh,
			 bool *forked)
{
	*fresh = true;
	*forked = false;
	if (!sysstack_ready())
		return 0;
	struct reader *r = tls_reader;
	*r = (struct reader){ .pc = pc, .sp = sp, .data = r->data };
	/* Room for our own frames beyond --depth, and one more to tell a cut stack. */
	unsigned want = max + OWN_FRAMES_MAX + 1;
	struct cache_entry *e;
	struct frames *f = cache_lookup(tid, nr, pc, sp, 0, r, &e); /* NULL too if a fork kept a page */
	*fresh = !f;
	if (!f && !r->forked) {
		e = e ? e : cache_slot(tid, nr, pc, sp, 0);
		f = &e->f;
		unwind_with_frame_pointer_guess(r, f, want);
		if (r->forked)
			e->tid = 0; /* cut short by a fork: nothing to keep */
	}
	if (r->forked) {
		*forked = true;
		return 0;
	}
	/* In a system call, our frames are an interposed wrapper's; at a fault in user mode they are
	 * the program's malloc (our jemalloc), kept as the stack signal's handler keeps them. */
	unsigned d = 0;
	for (unsigned i = 0; i < f->n && d < max; i++)
		if (nr < 0 || !prefault_is_own_frame(f->ip[i]))
			ips[d++] = f->ip[i];
	if (f->n == want)
		atomic_fetch_add(&rt.stats.stacks_cut, 1);
	return d;
}

/* A user-mode fault's stack from here is the stack signal's own only if the unwind needed no register
 * but the two /proc shows, or with `fp` (rbp, from the fault's sample) the three (code that keeps its
 * frame in rbp, -O0 for one, needs rbp; one needing another register takes the signal), and met none of fltrace's frames (the program's malloc, or a wrapper touching a
 * buffer for a system call: the stack handler tells those apart). Whole stacks and failed ones are
 * both cached: a loop faulting at one place costs one unwind. */
bool sysstack_unwind_user(int tid, uint64_t pc, uint64_t sp, const uint64_t *fp, uint64_t *ips, unsigned max,
			  bool fresh_ok, struct user_unwind *u)
{
	u->fresh = true;
	u->lacked_fp = u->known = false;
	/* A stack with a frame of ours goes by the stack signal (our frames are the signal handler's to
	 * leave out): the unwind stops at the first, and a fault in our own code (jemalloc's, at start)
	 * is not unwound at all. Unwound whole to be refused, such stacks had cost 20-35 us each: 0.4-0.6
	 * ms of a traced /bin/true's 6 and 0.9 ms of the python run at ample -L. */
	if (!sysstack_ready() || prefault_is_own_frame(pc))
		return false;
	struct reader *r = tls_reader;
	*r = (struct reader){ .pc = pc, .sp = sp, .fp = fp ? *fp : 0, .have_fp = fp != NULL, .own_stop = true,
			      .data = r->data };
	unsigned want = max + OWN_FRAMES_MAX + 1; /* as sysstack_unwind, whose entries sit beside these */
	long key = fp ? NR_USER_FP : NR_USER_EXACT;
	struct cache_entry *e;
	struct frames *f = cache_lookup(tid, key, pc, sp, r->fp, r, &e);
	u->fresh = !f;
	if (!f && !fresh_ok)
		return false;
	if (!f && !r->forked) {
		if (e)
			e->fp = r->fp; /* refilled: the unwind below may read rbp where the last did not */
		else
			e = cache_slot(tid, key, pc, sp, r->fp);
		f = &e->f;
		unwind_from(r, f, want);
		/* Cut short by a fork, or by a page away (the stack's, evicted): nothing to keep. */
		if (r->forked || (!f->exact && r->missed))
			e->tid = 0;
		else
			frames_mark_in_place(f, sp);
	}
	u->known = !r->forked;
	u->lacked_fp = u->known && f->lacked_fp;
	if (r->forked || !f->exact)
		return false;
	unsigned d = f->n < max ? f->n : max;
	for (unsigned i = 0; i < f->n; i++)
		if (prefault_is_own_frame(f->ip[i]))
			return false;
	memcpy(ips, f->ip, d * sizeof(*ips));
	u->cut = f->n > max;
	u->depth = d;
	return true;
}
