/* Bench workload: breadth-first search over a generated power-law (R-MAT) graph in CSR layout,
 * the far-memory papers' graph kernel. Prints a checksum that must not change under tracing.
 * Usage: bfs [scale=20] [edgefactor=8] [roots=1] [threads=1]   (2^scale vertices, edgefactor*2^scale
 * edges). With threads > 1 each level's frontier is shared out (level-synchronous, vertices claimed
 * with a compare-and-swap): the same vertices at the same levels, so the same output. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct graph {
	uint32_t nv;
	uint64_t *off; /* nv + 1 offsets into adj */
	uint32_t *adj; /* both directions of every edge */
};

static uint64_t rng_state = 0x243f6a8885a308d3ull;

static uint64_t rng_next(void) /* splitmix64: fixed seed, so the graph is the same every run */
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* One R-MAT edge: at each of `scale` levels pick a quadrant with probabilities a, b, c, d =
 * 0.57, 0.19, 0.19, 0.05 (Graph500's), using 16 random bits per level. */
static void rmat_edge(int scale, uint32_t *u, uint32_t *v)
{
	uint32_t x = 0, y = 0;
	uint64_t r = 0;
	for (int l = 0; l < scale; l++) {
		if ((l & 3) == 0)
			r = rng_next();
		uint32_t p = (uint32_t)(r & 0xffff);
		r >>= 16;
		/* quadrant a [0, 37355) b [.., 49807) c [.., 62259) d [.., 65536): 0.57 0.19 0.19 0.05
		 * of 65536; computed without branches, which would mispredict at every level */
		x = (x << 1) | (p >= 49807);
		y = (y << 1) | ((p >= 37355) & (p < 49807)) | (p >= 62259);
	}
	/* scramble vertex ids (an odd multiplier is a bijection mod 2^scale) so that high-degree
	 * vertices are spread over the arrays instead of packed at the start */
	uint32_t mask = (uint32_t)((1ull << scale) - 1);
	*u = (uint32_t)(x * 2654435761u) & mask;
	*v = (uint32_t)(y * 2654435761u) & mask;
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n);
	if (!p) {
		fprintf(stderr, "bfs: out of memory (%zu bytes)\n", n);
		exit(3);
	}
	return p;
}

/* CSR from the R-MAT edge list in a few passes, each filling one slice of adj from a sequential
 * read of the edge list: the build's working set stays a slice, so that at a small -L the faults
 * come from the search (as in a graph loaded once and queried often), not from a random scatter. */
#define BUILD_SLICES 4

static void graph_build(struct graph *g, int scale, uint64_t ne)
{
	uint32_t nv = (uint32_t)1 << scale;
	uint32_t *eu = xmalloc(ne * sizeof(*eu)), *ev = xmalloc(ne * sizeof(*ev));
	for (uint64_t i = 0; i < ne; i++)
		rmat_edge(scale, &eu[i], &ev[i]);

	g->nv = nv;
	g->off = xmalloc((nv + 1ull) * sizeof(*g->off));
	memset(g->off, 0, (nv + 1ull) * sizeof(*g->off));
	for (uint64_t i = 0; i < ne; i++) {
		if (eu[i] == ev[i])
			continue;
		g->off[eu[i] + 1]++;
		g->off[ev[i] + 1]++;
	}
	for (uint32_t i = 0; i < nv; i++)
		g->off[i + 1] += g->off[i];
	g->adj = xmalloc(g->off[nv] * sizeof(*g->adj));
	uint32_t per = nv / BUILD_SLICES;
	uint64_t *pos = xmalloc(per * sizeof(*pos));
	for (uint32_t lo = 0; lo < nv; lo += per) {
		memcpy(pos, g->off + lo, per * sizeof(*pos));
		for (uint64_t i = 0; i < ne; i++) {
			uint32_t u = eu[i], v = ev[i];
			if (u == v)
				continue;
			if (u - lo < per)
				g->adj[pos[u - lo]++] = v;
			if (v - lo < per)
				g->adj[pos[v - lo]++] = u;
		}
	}
	free(pos);
	free(eu);
	free(ev);
}

/* Top-down BFS from root; returns vertices reached and adds sum(level * (v + 1)) to *sum. */
static uint32_t bfs_run(const struct graph *g, uint32_t root, int32_t *level, uint32_t *queue,
			uint64_t *sum)
{
	for (uint32_t i = 0; i < g->nv; i++)
		level[i] = -1;
	uint32_t head = 0, tail = 0;
	level[root] = 0;
	queue[tail++] = root;
	while (head < tail) {
		uint32_t u = queue[head++];
		for (uint64_t e = g->off[u]; e < g->off[u + 1]; e++) {
			uint32_t v = g->adj[e];
			if (level[v] < 0) {
				level[v] = level[u] + 1;
				queue[tail++] = v;
				*sum += (uint64_t)level[v] * (v + 1ull);
			}
		}
	}
	return tail;
}

/* ---- the same search on several threads, one level at a time ---- */
#define BFS_MAX_THREADS 16

struct par {
	const struct graph *g;
	_Atomic int32_t *level;
	uint32_t *frontier, nfront; /* this level's vertices */
	uint32_t *next[BFS_MAX_THREADS], nnext[BFS_MAX_THREADS]; /* each thread's finds */
	uint64_t sum[BFS_MAX_THREADS];
	int nthreads, depth;
	pthread_barrier_t step;
	_Atomic int done;
};

struct worker {
	struct par *p;
	int id;
};

static void par_expand(struct par *p, int id)
{
	uint32_t lo = (uint32_t)((uint64_t)p->nfront * id / p->nthreads);
	uint32_t hi = (uint32_t)((uint64_t)p->nfront * (id + 1) / p->nthreads);
	for (uint32_t i = lo; i < hi; i++) {
		uint32_t u = p->frontier[i];
		for (uint64_t e = p->g->off[u]; e < p->g->off[u + 1]; e++) {
			uint32_t v = p->g->adj[e];
			int32_t unseen = -1;
			if (atomic_load_explicit(&p->level[v], memory_order_relaxed) < 0 &&
			    atomic_compare_exchange_strong(&p->level[v], &unseen, p->depth + 1)) {
				p->next[id][p->nnext[id]++] = v;
				p->sum[id] += (uint64_t)(p->depth + 1) * (v + 1ull);
			}
		}
	}
}

/* Thread 0 gathers the finds into the next frontier between two barriers. */
static void *par_worker(void *arg)
{
	struct worker *w = arg;
	struct par *p = w->p;
	for (;;) {
		pthread_barrier_wait(&p->step);
		if (atomic_load(&p->done))
			return NULL;
		par_expand(p, w->id);
		pthread_barrier_wait(&p->step);
		if (w->id == 0) {
			uint32_t n = 0;
			for (int t = 0; t < p->nthreads; t++) {
				memcpy(p->frontier + n, p->next[t], p->nnext[t] * sizeof(uint32_t));
				n += p->nnext[t];
				p->nnext[t] = 0;
			}
			p->nfront = n;
			p->depth++;
			if (n == 0)
				atomic_store(&p->done, 1);
		}
	}
}

static uint32_t bfs_run_threads(const struct graph *g, uint32_t root, int nthreads, uint64_t *sum)
{
	struct par p = { .g = g, .nthreads = nthreads };
	p.level = xmalloc(g->nv * sizeof(*p.level));
	p.frontier = xmalloc(g->nv * sizeof(*p.frontier));
	for (int t = 0; t < nthreads; t++)
		p.next[t] = xmalloc(g->nv * sizeof(uint32_t));
	for (uint32_t i = 0; i < g->nv; i++)
		atomic_init(&p.level[i], -1);
	atomic_store(&p.level[root], 0);
	p.frontier[0] = root;
	p.nfront = 1;
	pthread_barrier_init(&p.step, NULL, (unsigned)nthreads);
	struct worker w[BFS_MAX_THREADS];
	pthread_t th[BFS_MAX_THREADS];
	for (int t = 1; t < nthreads; t++) {
		w[t] = (struct worker){ &p, t };
		if (pthread_create(&th[t], NULL, par_worker, &w[t]) != 0) {
			fprintf(stderr, "bfs: cannot start a thread\n");
			exit(3);
		}
	}
	w[0] = (struct worker){ &p, 0 };
	par_worker(&w[0]);
	uint32_t reached = 0;
	for (int t = 1; t < nthreads; t++)
		pthread_join(th[t], NULL);
	for (int t = 0; t < nthreads; t++) {
		*sum += p.sum[t];
		free(p.next[t]);
	}
	for (uint32_t i = 0; i < g->nv; i++)
		reached += atomic_load_explicit(&p.level[i], memory_order_relaxed) >= 0;
	pthread_barrier_destroy(&p.step);
	free(p.frontier);
	free(p.level);
	return reached;
}

int main(int argc, char **argv)
{
	int scale = argc > 1 ? atoi(argv[1]) : 20;
	int ef = argc > 2 ? atoi(argv[2]) : 8;
	int roots = argc > 3 ? atoi(argv[3]) : 1;
	int nthreads = argc > 4 ? atoi(argv[4]) : 1;
	if (scale < 4 || scale > 28 || ef < 1 || ef > 64 || roots < 1 || nthreads < 1 || nthreads > BFS_MAX_THREADS) {
		fprintf(stderr, "usage: bfs [scale 4..28] [edgefactor 1..64] [roots >= 1] [threads 1..16]\n");
		return 2;
	}
	struct graph g;
	graph_build(&g, scale, (uint64_t)ef << scale);

	int32_t *level = xmalloc(g.nv * sizeof(*level));
	uint32_t *queue = xmalloc(g.nv * sizeof(*queue));
	uint64_t sum = 0, reached = 0;
	uint32_t root = 0;
	for (int r = 0; r < roots; r++) {
		/* roots: a fixed walk over the ids, skipping isolated vertices */
		do
			root = (root + 0x9e3779b1u) & (g.nv - 1);
		while (g.off[root] == g.off[root + 1]);
		reached += nthreads > 1 ? bfs_run_threads(&g, root, nthreads, &sum)
				      : bfs_run(&g, root, level, queue, &sum);
	}
	printf("bfs scale %d edgefactor %d: %u vertices, %llu directed edges, %d roots, %llu reached, "
	       "checksum %016llx\n",
	       scale, ef, g.nv, (unsigned long long)g.off[g.nv], roots, (unsigned long long)reached,
	       (unsigned long long)sum);
	free(queue);
	free(level);
	free(g.adj);
	free(g.off);
	return 0;
}
