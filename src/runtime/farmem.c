/* The far-memory store: one reserved, initially empty mapping that receives evicted pages.
 * It grows only as pages are evicted; freed slots are emptied in batches (one system call each). */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "far.h"
#include "uffd.h"

#define FREE_BATCH 256

static struct {
	char *base;
	uint64_t nslots, bump; /* slots [0, bump) have been handed out at least once */
	uint32_t *free_stack;  /* emptied slots ready for reuse */
	uint64_t nfree;
	uint32_t pending[FREE_BATCH]; /* released slots still holding a page */
	unsigned npending;
	uint64_t used;         /* slots holding a page (pending ones included) */
	struct iovec drops[RT_ZAP_MAX]; /* runs the backend holds now, still here (farmem_drop_local) */
	unsigned ndrops;
} far;

int farmem_init(uint64_t slots)
{
	if (slots == 0)
		slots = 1;
	if (slots > PG_SLOT_MAX)
		return -E2BIG;
	memset(&far, 0, sizeof(far));
	far.nslots = slots;
	far.base = (char *)syscall(SYS_mmap, NULL, slots << rt.page_shift, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (far.base == MAP_FAILED)
		return -ENOMEM;
	far.free_stack = rt_map(slots * sizeof(uint32_t));
	return far.free_stack ? 0 : -ENOMEM;
}

uint64_t farmem_slots(void)
{
	return far.nslots;
}

int farmem_register(int fd)
{
	return uffd_register(fd, (uintptr_t)far.base, far.nslots << rt.page_shift);
}

void *farmem_addr(uint32_t slot)
{
	return far.base + ((uint64_t)slot << rt.page_shift);
}

/* The slots' pages live on in the backend: their memory here goes with the round's other runs,
 * behind one TLB flush (farmem_drops_flush; the slots stay taken). */
void farmem_drop_local(uint32_t first, unsigned n)
{
	struct iovec *last = far.ndrops ? &far.drops[far.ndrops - 1] : NULL;
	if (last && (char *)last->iov_base + last->iov_len == (char *)farmem_addr(first)) {
		last->iov_len += (size_t)n << rt.page_shift;
		return;
	}
	if (far.ndrops == RT_ZAP_MAX)
		farmem_drops_flush();
	far.drops[far.ndrops++] = (struct iovec){ farmem_addr(first), (size_t)n << rt.page_shift };
}

void farmem_drops_flush(void)
{
	rt_zap_ranges(far.drops, far.ndrops);
	far.ndrops = 0;
}

/* Empties the pending slots: their runs in one process_madvise, behind one TLB flush. */
static void farmem_flush_pending(void)
{
	/* First the pages still queued for the medium, then the dropped runs: a slot freed here is
	 * reused once emptied, and a write or a drop of it still queued would then take its new page. */
	far_out_flush();
	farmem_drops_flush();
	if (!far.npending)
		return;
	rt_sort_u32(far.pending, far.npending);
	struct iovec runs[FREE_BATCH];
	unsigned nruns = 0, i = 0;
	while (i < far.npending) {
		unsigned j = i + 1;
		while (j < far.npending && far.pending[j] == far.pending[j - 1] + 1)
			j++;
		runs[nruns++] = (struct iovec){ farmem_addr(far.pending[i]), (size_t)(j - i) << rt.page_shift };
		far_slots_freed(far.pending[i], j - i);
		i = j;
	}
	rt_zap_ranges(runs, nruns);
	for (i = 0; i < far.npending; i++)
		far.free_stack[far.nfree++] = far.pending[i];
	far.used -= far.npending;
	far.npending = 0;
}

void farmem_free(uint32_t slot)
{
	if (far.npending == FREE_BATCH)
		farmem_flush_pending();
	far.pending[far.npending++] = slot;
}

/* n contiguous empty slots: fresh ones from the bump pointer when possible, else reused ones
 * one at a time (n must then be 1). */
int farmem_alloc_run(uint32_t n, uint32_t *first)
{
	if (far.bump + n <= far.nslots) {
		*first = (uint32_t)far.bump;
		far.bump += n;
		goto done;
	}
	if (n != 1)
		return -EAGAIN;
	if (!far.nfree)
		farmem_flush_pending();
	if (!far.nfree)
		return -ENOSPC;
	*first = far.free_stack[--far.nfree];
done:
	far.used += n;
	return 0;
}
