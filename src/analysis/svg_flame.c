/* Flamegraph renderer: the sample tree (merge by name under each parent) and its SVG with our own
 * zoom/search script. Children are drawn sorted by name, so adding order never shows in the output. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "svg_flame.h"

#define NO_NODE UINT32_MAX

struct flame_node {
	char *name;
	uint32_t parent;
	uint32_t depth;
	uint64_t total;                          /* samples in this frame and below */
	uint64_t self[SVG_KIND_NR][SVG_ACC_NR]; /* samples that end here, by leaf attributes */
	uint64_t before;                         /* differential graphs: the other run's total */
	uint64_t before_self;                    /* ... and its samples that end here */
};

struct svg_flame {
	struct flame_node *nodes; /* nodes[0] is the root, "all" */
	uint32_t nr, cap;
	uint32_t *slots;          /* open addressing on (parent, name) -> node index */
	uint32_t nslots;          /* power of two, at most half full */
};

static uint64_t node_key(uint32_t parent, const char *name)
{
	return svg_hash(name) ^ ((uint64_t)parent * 0x9e3779b97f4a7c15ull);
}

static int flame_rehash(struct svg_flame *fl, uint32_t nslots)
{
	uint32_t *slots = malloc(sizeof(*slots) * nslots);
	if (!slots)
		return -ENOMEM;
	memset(slots, 0xff, sizeof(*slots) * nslots);
	for (uint32_t i = 1; i < fl->nr; i++) {
		uint64_t h = node_key(fl->nodes[i].parent, fl->nodes[i].name);
		uint32_t s = (uint32_t)h & (nslots - 1);
		while (slots[s] != NO_NODE)
			s = (s + 1) & (nslots - 1);
		slots[s] = i;
	}
	free(fl->slots);
	fl->slots = slots;
	fl->nslots = nslots;
	return 0;
}

struct svg_flame *svg_flame_new(void)
{
	struct svg_flame *fl = calloc(1, sizeof(*fl));
	if (!fl)
		return NULL;
	fl->cap = 64;
	fl->nodes = calloc(fl->cap, sizeof(*fl->nodes));
	if (!fl->nodes || !(fl->nodes[0].name = strdup("all")))
		goto fail;
	fl->nodes[0].parent = NO_NODE;
	fl->nr = 1;
	if (flame_rehash(fl, 128) < 0)
		goto fail;
	return fl;
fail:
	svg_flame_free(fl);
	return NULL;
}

void svg_flame_free(struct svg_flame *fl)
{
	if (!fl)
		return;
	for (uint32_t i = 0; i < fl->nr; i++)
		free(fl->nodes[i].name);
	if (fl->nr == 0 && fl->nodes)
		free(fl->nodes[0].name);
	free(fl->nodes);
	free(fl->slots);
	free(fl);
}

/* The child of parent called name, created if missing. NO_NODE when out of memory. */
static uint32_t flame_child(struct svg_flame *fl, uint32_t parent, const char *name)
{
	uint32_t s = (uint32_t)node_key(parent, name) & (fl->nslots - 1);
	for (; fl->slots[s] != NO_NODE; s = (s + 1) & (fl->nslots - 1)) {
		struct flame_node *n = &fl->nodes[fl->slots[s]];
		if (n->parent == parent && strcmp(n->name, name) == 0)
			return fl->slots[s];
	}
	/* Grow before inserting so a failure leaves the tree as it was; the table stays at most
	 * half full so probes stay short. */
	if ((fl->nr + 1) * 2 > fl->nslots) {
		if (fl->nslots > UINT32_MAX / 2 || flame_rehash(fl, fl->nslots * 2) < 0)
			return NO_NODE;
		return flame_child(fl, parent, name); /* slots moved: probe again */
	}
	if (fl->nr == fl->cap) {
		struct flame_node *nodes = realloc(fl->nodes, sizeof(*nodes) * fl->cap * 2);
		if (!nodes)
			return NO_NODE;
		fl->nodes = nodes;
		fl->cap *= 2;
	}
	struct flame_node *n = &fl->nodes[fl->nr];
	memset(n, 0, sizeof(*n));
	n->name = strdup(name);
	if (!n->name)
		return NO_NODE;
	n->parent = parent;
	n->depth = fl->nodes[parent].depth + 1;
	fl->slots[s] = fl->nr;
	return fl->nr++;
}

int svg_flame_add(struct svg_flame *fl, const char *const *frames, size_t n, uint64_t count,
		  enum svg_access acc, enum svg_kind kind)
{
	static const char *const no_stack[] = { "[no stack]" };
	uint32_t small[256], *path = small;
	int err = 0;

	if ((unsigned)acc >= SVG_ACC_NR || (unsigned)kind >= SVG_KIND_NR)
		return -EINVAL;
	if (n == 0) {
		frames = no_stack;
		n = 1;
	}
	/* Deep stacks with inlines expanded can exceed the stack buffer: then use the heap. */
	if (n > sizeof(small) / sizeof(small[0]) && !(path = malloc(n * sizeof(*path))))
		return -ENOMEM;
	/* Find or create the whole path first: a failure must not leave counts half added. */
	uint32_t cur = 0;
	for (size_t i = 0; i < n; i++) {
		cur = flame_child(fl, cur, frames[i] ? frames[i] : "[unknown]");
		if (cur == NO_NODE) {
			err = -ENOMEM;
			goto out;
		}
		path[i] = cur;
	}
	fl->nodes[0].total += count;
	for (size_t i = 0; i < n; i++)
		fl->nodes[path[i]].total += count;
	fl->nodes[cur].self[kind][acc] += count;
out:
	if (path != small)
		free(path);
	return err;
}

int svg_flame_add_before(struct svg_flame *fl, const char *const *frames, size_t n,
			 uint64_t count)
{
	static const char *const no_stack[] = { "[no stack]" };
	uint32_t cur = 0;

	if (n == 0) {
		frames = no_stack;
		n = 1;
	}
	/* Frames only the earlier run had get a node of width 0: not drawn, but a sibling's
	 * order and the path of a later add stay the same. Counts go in only once the path is
	 * whole, as in svg_flame_add. */
	for (size_t i = 0; i < n; i++) {
		cur = flame_child(fl, cur, frames[i] ? frames[i] : "[unknown]");
		if (cur == NO_NODE)
			return -ENOMEM;
	}
	for (uint32_t k = cur; k != NO_NODE; k = fl->nodes[k].parent)
		fl->nodes[k].before += count;
	fl->nodes[cur].before_self += count;
	return 0;
}

uint64_t svg_flame_total(const struct svg_flame *fl)
{
	return fl->nodes[0].total;
}

/* ---- writing ---- */

#define FRAME_H 16   /* px per level */
#define FONT_PX 12
#define XPAD 10
#define TOP_H 64     /* title, subtitle, buttons */
#define BOTTOM_H 58  /* details line and legend */

struct flame_layout {
	const struct svg_flame *fl;
	const struct svg_flame_opts *o;
	const char *unit;
	uint32_t *kids;    /* children of every node, sorted by name, CSR by kid_start */
	uint32_t *kid_start;
	double scale;      /* px per sample */
	double width;
	double minwidth;
	uint32_t max_depth;
	uint32_t view;     /* levels drawn in view: max_depth, or opts.fold when that is less */
	double height;
	uint64_t max_change;  /* differential: the biggest change of a drawn frame's own samples */
	FILE *out;
};

static int cmp_kids(const void *a, const void *b, void *arg)
{
	const struct svg_flame *fl = arg;
	const struct flame_node *na = &fl->nodes[*(const uint32_t *)a];
	const struct flame_node *nb = &fl->nodes[*(const uint32_t *)b];
	return strcmp(na->name, nb->name);
}

static int layout_children(struct flame_layout *L)
{
	const struct svg_flame *fl = L->fl;
	uint32_t *fill;

	L->kid_start = calloc((size_t)fl->nr + 1, sizeof(uint32_t));
	L->kids = malloc(sizeof(uint32_t) * (fl->nr ? fl->nr : 1));
	fill = calloc((size_t)fl->nr + 1, sizeof(uint32_t));
	if (!L->kid_start || !L->kids || !fill) {
		free(fill);
		return -ENOMEM;
	}
	for (uint32_t i = 1; i < fl->nr; i++)
		L->kid_start[fl->nodes[i].parent + 1]++;
	for (uint32_t i = 0; i < fl->nr; i++)
		L->kid_start[i + 1] += L->kid_start[i];
	for (uint32_t i = 1; i < fl->nr; i++) {
		uint32_t p = fl->nodes[i].parent;
		L->kids[L->kid_start[p] + fill[p]++] = i;
	}
	free(fill);
	/* Siblings always differ in name, so this order is total: no tie can depend on qsort. */
	for (uint32_t i = 0; i < fl->nr; i++)
		qsort_r(L->kids + L->kid_start[i], L->kid_start[i + 1] - L->kid_start[i], sizeof(uint32_t),
			cmp_kids, (void *)fl);
	return 0;
}

/* Samples that end in a frame. */
static uint64_t node_self(const struct flame_node *n)
{
	uint64_t self = 0;

	for (int k = 0; k < SVG_KIND_NR; k++)
		for (int a = 0; a < SVG_ACC_NR; a++)
			self += n->self[k][a];
	return self;
}

/* Deepest level with a frame wide enough to draw. */
static void layout_depth(struct flame_layout *L, uint32_t node)
{
	const struct flame_node *n = &L->fl->nodes[node];
	if ((double)n->total * L->scale < L->minwidth || !n->total)
		return;
	if (node && L->o->diff) {
		uint64_t now = node_self(n), c = now > n->before_self ? now - n->before_self :
						  n->before_self - now;
		if (c > L->max_change)
			L->max_change = c;
	}
	if (n->depth > L->max_depth)
		L->max_depth = n->depth;
	for (uint32_t k = L->kid_start[node]; k < L->kid_start[node + 1]; k++)
		layout_depth(L, L->kids[k]);
}

static double frame_y(const struct flame_layout *L, uint32_t depth)
{
	if (L->o->inverted)
		return TOP_H + (double)depth * FRAME_H;
	return TOP_H + ((double)L->view - (double)depth) * FRAME_H;
}

static void put_pct(FILE *out, uint64_t n, uint64_t total)
{
	fprintf(out, "%.2f%%", total ? 100.0 * (double)n / (double)total : 0.0);
}

/* The leaf attributes that hold most of a frame's own samples; ties go to the lower enum. */
static int node_dominant(const struct flame_node *n, int *kind, int *acc)
{
	uint64_t best = 0;
	for (int k = 0; k < SVG_KIND_NR; k++)
		for (int a = 0; a < SVG_ACC_NR; a++)
			if (n->self[k][a] > best) {
				best = n->self[k][a];
				*kind = k;
				*acc = a;
			}
	return best > 0;
}

/* Differential colour: red where the frame's own faults (those that end in it) grew since the
 * earlier run, blue where they shrank, deeper the bigger that change against the biggest one,
 * so the frames that changed most stand out wherever they are, leaves included; a frame whose
 * own faults did not change is tinted by the change below it, lightly (a caller's total change
 * is the sum of its callees' and would otherwise colour the roots deepest); grey when equal. */
static struct svg_rgb diff_colour(const struct flame_layout *L, const struct flame_node *n)
{
	uint64_t now = node_self(n);
	bool own = now != n->before_self, grew = own ? now > n->before_self : n->total > n->before;
	double x = !own ? 0.12 : L->max_change ? (double)(grew ? now - n->before_self :
							   n->before_self - now) / (double)L->max_change : 0;
	uint8_t pale = (uint8_t)(225 - 175 * (x < 0.12 ? 0.12 : x));

	if (!own && n->total == n->before)
		return (struct svg_rgb){ 225, 225, 225 };
	if (grew)
		return (struct svg_rgb){ 255, pale, pale };
	return (struct svg_rgb){ pale, pale, 255 };
}

static void write_frame(struct flame_layout *L, uint32_t node, uint64_t offset)
{
	const struct flame_node *n = &L->fl->nodes[node];
	uint64_t total = L->fl->nodes[0].total;
	double w = (double)n->total * L->scale;
	double x = XPAD + (double)offset * L->scale;
	double y = frame_y(L, n->depth);
	FILE *out = L->out;
	struct svg_rgb c;
	int kind = 0, acc = 0, leaf = node_dominant(n, &kind, &acc);

	if (w < L->minwidth || !n->total)
		return;
	c = L->o->diff ? diff_colour(L, n) : leaf ? svg_leaf_colour(kind, acc) :
		svg_name_colour(n->name);
	fputs("<g class=\"f\"><title>", out);
	svg_put_escaped(out, n->name);
	fprintf(out, " (%llu %s, ", (unsigned long long)n->total, L->unit);
	put_pct(out, n->total, total);
	fputc(')', out);
	if (L->o->diff) {
		fprintf(out, "&#10;before: %llu, change: %+lld", (unsigned long long)n->before,
			(long long)n->total - (long long)n->before);
		if (n->before)
			fprintf(out, " (%+.1f%%)", 100.0 * ((double)n->total - (double)n->before) /
				(double)n->before);
		if (node_self(n) || n->before_self)
			fprintf(out, "; ending here: %llu before, %llu now",
				(unsigned long long)n->before_self, (unsigned long long)node_self(n));
	} else if (n->depth == L->view && L->view < L->max_depth &&
		   L->kid_start[node] < L->kid_start[node + 1]) {
		fputs("&#10;deeper frames are folded: click to bring them into view", out);
	} else if (leaf) {
		/* Second tooltip line: what the faults that end here were. */
		uint64_t self = 0;
		for (int k = 0; k < SVG_KIND_NR; k++)
			for (int a = 0; a < SVG_ACC_NR; a++)
				self += n->self[k][a];
		fputs("&#10;ends here:", out);
		const char *sep = " ";
		for (int k = 0; k < SVG_KIND_NR; k++)
			for (int a = 0; a < SVG_ACC_NR; a++) {
				if (!n->self[k][a])
					continue;
				fprintf(out, "%s%s/%s %llu (", sep, svg_kind_name(k), svg_access_name(a),
					(unsigned long long)n->self[k][a]);
				put_pct(out, n->self[k][a], self);
				fputc(')', out);
				sep = ", ";
			}
	}
	fprintf(out, "</title><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" "
		     "fill=\"rgb(%u,%u,%u)\" rx=\"2\" ry=\"2\"/><text x=\"%.1f\" y=\"%.1f\">",
		x, y, w, FRAME_H - 1, c.r, c.g, c.b, x + 3, y + FRAME_H - 5.5);
	int cut;
	size_t keep = svg_fit_text(n->name, w - 3, FONT_PX, &cut);
	svg_put_escaped_n(out, n->name, keep);
	if (cut)
		fputs("..", out);
	fputs("</text></g>\n", out);

	for (uint32_t k = L->kid_start[node]; k < L->kid_start[node + 1]; k++) {
		uint32_t kid = L->kids[k];
		write_frame(L, kid, offset);
		offset += L->fl->nodes[kid].total;
	}
}

/* The interactive part, ours: frames are <g class="f"> in depth-first order, so the tree can be
 * rebuilt from document order and depth (from y) without floating-point containment tests. */
static const char flame_js[] =
	"\"use strict\";\n"
	"var frames = [], byDepth = [], details, matched, resetBtn, searchBtn, zoomed = -1, term = null;\n"
	"function depthOf(y) { return Math.round(F.inv ? (y - F.top) / F.fh : (F.bottom - y) / F.fh); }\n"
	"function init() {\n"
	"  details = document.getElementById('details');\n"
	"  matched = document.getElementById('matched');\n"
	"  resetBtn = document.getElementById('unzoom');\n"
	"  searchBtn = document.getElementById('search');\n"
	"  var gs = document.querySelectorAll('g.f'), stack = [];\n"
	"  for (var i = 0; i < gs.length; i++) {\n"
	"    var g = gs[i], r = g.querySelector('rect'), t = g.querySelector('text');\n"
	"    var line = g.querySelector('title').textContent.split('\\n')[0];\n"
	"    var cut = line.lastIndexOf(' (');\n"
	"    var f = { g: g, r: r, t: t, i: i, line: line, name: line.slice(0, cut),\n"
	"              n: parseInt(line.slice(cut + 2), 10), x: +r.getAttribute('x'),\n"
	"              w: +r.getAttribute('width'), d: depthOf(+r.getAttribute('y')),\n"
	"              fill: r.getAttribute('fill'), parent: -1, end: i + 1 };\n"
	"    while (stack.length && frames[stack[stack.length - 1]].d >= f.d) stack.pop();\n"
	"    if (stack.length) f.parent = stack[stack.length - 1];\n"
	"    for (var s = 0; s < stack.length; s++) frames[stack[s]].end = i + 1;\n"
	"    stack.push(i);\n"
	"    frames.push(f);\n"
	"    g.fi = i;\n"
	"    g.addEventListener('click', onClick);\n"
	"    g.addEventListener('mouseover', onOver);\n"
	"    g.addEventListener('mouseout', onOut);\n"
	"  }\n"
	"  resetBtn.addEventListener('click', unzoom);\n"
	"  searchBtn.addEventListener('click', onSearchClick);\n"
	"  window.addEventListener('keydown', function (e) {\n"
	"    if ((e.ctrlKey || e.metaKey) && e.key === 'f') { e.preventDefault(); askSearch(); }\n"
	"    else if (e.key === 'Escape') { unzoom(); clearSearch(); }\n"
	"  });\n"
	"  fromHash();\n"
	"}\n"
	"function frameOf(e) { var i = e.currentTarget.fi; return i === undefined ? -1 : i; }\n"
	"function onClick(e) { var i = frameOf(e); if (i >= 0) zoom(i); }\n"
	"function onOver(e) { var i = frameOf(e); if (i >= 0) details.textContent = F.what + ': ' + frames[i].line; }\n"
	"function onOut() { details.textContent = ' '; }\n"
	"function label(f, x, w) {\n"
	"  var room = Math.floor((w - 3) / (F.font * F.cw)), s = f.name;\n"
	"  if (s.length > room) s = room < 3 ? '' : s.slice(0, room - 2) + '..';\n"
	"  f.t.textContent = s;\n"
	"  f.t.setAttribute('x', (x + 3).toFixed(1));\n"
	"}\n"
	"function place(f, x, w, parentOfZoom) {\n"
	"  f.r.setAttribute('x', x.toFixed(1));\n"
	"  f.r.setAttribute('width', w.toFixed(1));\n"
	"  label(f, x, w);\n"
	"  f.g.style.display = '';\n"
	"  f.g.classList.toggle('par', parentOfZoom);\n"
	"}\n"
	"function zoom(i) {\n"
	"  var z = frames[i], full = F.width - 2 * F.pad, s = full / z.w, j;\n"
	"  for (j = 0; j < frames.length; j++) frames[j].g.style.display = 'none';\n"
	"  for (j = i; j < z.end; j++) place(frames[j], F.pad + (frames[j].x - z.x) * s, frames[j].w * s, false);\n"
	"  for (j = z.parent; j >= 0; j = frames[j].parent) place(frames[j], F.pad, full, true);\n"
	"  zoomed = i;\n"
	"  fold(i);\n"
	"  resetBtn.classList.remove('hide');\n"
	"  if (term !== null) search(term);\n"
	"}\n"
	"function unzoom() {\n"
	"  for (var j = 0; j < frames.length; j++) place(frames[j], frames[j].x, frames[j].w, false);\n"
	"  zoomed = -1;\n"
	"  fold(-1);\n"
	"  resetBtn.classList.add('hide');\n"
	"  if (term !== null) search(term);\n"
	"}\n"
	"/* A folded graph shows F.view levels: a zoom moves its subtree into view, keeping the frame's\n"
	" * parent in the bottom row (the top row, inverted). */\n"
	"function fold(i) {\n"
	"  var g = document.getElementById('shift'), deep = 0, k;\n"
	"  if (!g) return;\n"
	"  if (i >= 0) for (k = i; k < frames[i].end; k++) deep = Math.max(deep, frames[k].d);\n"
	"  var s = i < 0 ? 0 : Math.max(0, Math.min(frames[i].d - 1, deep - F.view));\n"
	"  g.setAttribute('transform', 'translate(0,' + (F.inv ? -s : s) * F.fh + ')');\n"
	"}\n"
	"function matcher(t) {\n"
	"  try { var re = new RegExp(t); return function (s) { return re.test(s); }; }\n"
	"  catch (err) { return function (s) { return s.indexOf(t) >= 0; }; }\n"
	"}\n"
	"function search(t) {\n"
	"  var m = matcher(t), sum = 0, j = 0;\n"
	"  term = t;\n"
	"  for (var k = 0; k < frames.length; k++) {\n"
	"    var f = frames[k];\n"
	"    f.hit = f.d > 0 && m(f.name); /* the root is not a frame */\n"
	"    f.r.setAttribute('fill', f.hit ? F.hitFill : f.fill);\n"
	"  }\n"
	"  /* A match inside a matching frame is already counted: skip its subtree. */\n"
	"  while (j < frames.length) {\n"
	"    if (frames[j].hit) { sum += frames[j].n; j = frames[j].end; }\n"
	"    else j++;\n"
	"  }\n"
	"  var pct = F.total ? (100 * sum / F.total).toFixed(2) : '0.00';\n"
	"  matched.textContent = 'Matched: ' + pct + '%';\n"
	"  searchBtn.textContent = 'Reset Search';\n"
	"  return pct;\n"
	"}\n"
	"function clearSearch() {\n"
	"  term = null;\n"
	"  for (var k = 0; k < frames.length; k++) frames[k].r.setAttribute('fill', frames[k].fill);\n"
	"  matched.textContent = ' ';\n"
	"  searchBtn.textContent = 'Search';\n"
	"}\n"
	"function askSearch() {\n"
	"  var t = window.prompt('Search frames (regular expression or plain text):', term || '');\n"
	"  if (t) search(t);\n"
	"}\n"
	"function onSearchClick() { if (term !== null) clearSearch(); else askSearch(); }\n"
	"/* #z=<frame name>&s=<term>: open zoomed and/or searched (links). c=<frame name> clicks the\n"
	" * frame and r=1 clicks Reset Zoom, as a user would: the browser test drives the handlers. */\n"
	"function fromHash() {\n"
	"  var h = window.location.hash.slice(1), parts = h ? h.split('&') : [], state = [];\n"
	"  for (var k = 0; k < parts.length; k++) {\n"
	"    var eq = parts[k].indexOf('='), key = parts[k].slice(0, eq), val = decodeURIComponent(parts[k].slice(eq + 1));\n"
	"    if (key === 'z') {\n"
	"      for (var j = 0; j < frames.length; j++) if (frames[j].name === val) { zoom(j); state.push('zoomed=' + val); break; }\n"
	"    } else if (key === 'c') {\n"
	"      for (var j = 0; j < frames.length; j++) if (frames[j].name === val) { frames[j].g.dispatchEvent(new MouseEvent('click')); state.push('clicked=' + (zoomed === j ? val : 'none')); break; }\n"
	"    } else if (key === 'r') {\n"
	"      resetBtn.dispatchEvent(new MouseEvent('click'));\n"
	"      state.push('reset=' + (zoomed < 0 ? 'yes' : 'no'));\n"
	"    } else if (key === 's') state.push('matched=' + search(val));\n"
	"  }\n"
	"  document.documentElement.setAttribute('data-state', state.length ? state.join(';') : 'ready');\n"
	"}\n"
	"window.addEventListener('error', function (e) { document.documentElement.setAttribute('data-error', String(e.message)); });\n"
	"window.addEventListener('load', init);\n";

static void write_legend(struct flame_layout *L)
{
	const struct svg_flame *fl = L->fl;
	FILE *out = L->out;
	bool present[SVG_KIND_NR][SVG_ACC_NR] = { { false } };
	double x = XPAD, y = L->height - 18;

	if (L->o->diff) {
		struct svg_rgb up = { 255, 50, 50 }, down = { 50, 50, 255 };
		fprintf(out, "<g id=\"legend\"><text x=\"%.1f\" y=\"%.1f\">width: %s in the later "
			     "run; colour: the change of the faults that end in a frame, deeper is bigger</text>\n"
			     "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"14\" fill=\"rgb(%u,%u,%u)\"/>"
			     "<text x=\"%.1f\" y=\"%.1f\">grew</text>"
			     "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"14\" fill=\"rgb(%u,%u,%u)\"/>"
			     "<text x=\"%.1f\" y=\"%.1f\">shrank</text></g>\n",
			x, y - 14, L->unit, x, y, up.r, up.g, up.b, x + 18, y + 11, x + 70, y,
			down.r, down.g, down.b, x + 88, y + 11);
		return;
	}
	for (uint32_t i = 0; i < fl->nr; i++)
		for (int k = 0; k < SVG_KIND_NR; k++)
			for (int a = 0; a < SVG_ACC_NR; a++)
				present[k][a] |= fl->nodes[i].self[k][a] > 0;
	fprintf(out, "<g id=\"legend\"><text x=\"%.1f\" y=\"%.1f\">leaf colour: fault kind; shade: "
		     "access (r read, w write, p write-protect)</text>\n", x, y - 14);
	for (int k = 0; k < SVG_KIND_NR; k++) {
		bool any = false;
		for (int a = 0; a < SVG_ACC_NR; a++)
			any |= present[k][a];
		if (!any)
			continue;
		fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">%s</text>", x, y + 10, svg_kind_name(k));
		x += 8 * FONT_PX * SVG_CHAR_WIDTH;
		for (int a = 0; a < SVG_ACC_NR; a++) {
			struct svg_rgb c = svg_leaf_colour(k, a);
			fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"14\" "
				     "fill=\"rgb(%u,%u,%u)\"/><text x=\"%.1f\" y=\"%.1f\">%c</text>",
				x, y, c.r, c.g, c.b, x + 4, y + 11, svg_access_letter(a));
			x += 16;
		}
		x += 14;
		fputc('\n', out);
	}
	fputs("</g>\n", out);
}

int svg_flame_write(const struct svg_flame *fl, FILE *out, const struct svg_flame_opts *opts)
{
	static const struct svg_flame_opts defaults = { 0 };
	const struct svg_flame_opts *o = opts ? opts : &defaults;
	struct flame_layout L = {
		.fl = fl,
		.o = o,
		.out = out,
		.unit = o->unit ? o->unit : "faults",
		.width = o->width ? o->width : 1200,
		.minwidth = o->minwidth < 0 ? 0.1 : o->minwidth,
	};
	const char *title = o->title ? o->title : "Page faults";
	uint64_t total = fl->nodes[0].total;
	int err = layout_children(&L);
	if (err)
		goto out;

	L.scale = total ? (L.width - 2 * XPAD) / (double)total : 0;
	if (total)
		layout_depth(&L, 0);
	L.view = o->fold && o->fold < L.max_depth ? o->fold : L.max_depth;
	L.height = TOP_H + (double)(L.view + 1) * FRAME_H + BOTTOM_H;

	fprintf(out, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		     "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
		     "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"Verdana, sans-serif\" "
		     "font-size=\"%d\">\n",
		L.width, L.height, L.width, L.height, FONT_PX);
	fputs("<!-- fltrace flamegraph: click a frame to zoom, Ctrl-F or Search to highlight frames "
	      "by regular expression, Escape to reset. -->\n", out);
	fputs("<style>\n"
	      "g.f { cursor: pointer; }\n"
	      "g.f:hover rect { stroke: black; stroke-width: 0.5; }\n"
	      "g.f text { font-size: 12px; fill: rgb(0,0,0); pointer-events: none; }\n"
	      "g.par { opacity: 0.5; }\n"
	      ".btn { cursor: pointer; fill: rgb(40,40,40); }\n"
	      ".btn:hover { text-decoration: underline; }\n"
	      ".hide { display: none; }\n"
	      "#title { font-size: 17px; text-anchor: middle; }\n"
	      "#subtitle { fill: rgb(90,90,90); text-anchor: middle; }\n"
	      "</style>\n", out);
	fprintf(out, "<script type=\"text/ecmascript\"><![CDATA[\n"
		     "var F = { width: %.0f, pad: %d, fh: %d, font: %d, cw: %.2f, inv: %d, top: %d, "
		     "bottom: %.1f, view: %u, total: %llu, what: 'Frame', hitFill: 'rgb(230,0,230)' };\n"
		     "%s]]></script>\n",
		L.width, XPAD, FRAME_H, FONT_PX, SVG_CHAR_WIDTH, o->inverted ? 1 : 0, TOP_H,
		frame_y(&L, 0), L.view, (unsigned long long)total, flame_js);
	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"rgb(248,248,244)\"/>\n",
		L.width, L.height);
	fprintf(out, "<text id=\"title\" x=\"%.1f\" y=\"24\">", L.width / 2);
	svg_put_escaped(out, title);
	fputs("</text>\n", out);
	if (o->subtitle) {
		fprintf(out, "<text id=\"subtitle\" x=\"%.1f\" y=\"42\">", L.width / 2);
		svg_put_escaped(out, o->subtitle);
		fputs("</text>\n", out);
	}
	fprintf(out, "<text id=\"unzoom\" class=\"btn hide\" x=\"%d\" y=\"24\">Reset Zoom</text>\n"
		     "<text id=\"search\" class=\"btn\" x=\"%.1f\" y=\"24\" text-anchor=\"end\">Search</text>\n",
		XPAD, L.width - XPAD);
	fprintf(out, "<text id=\"details\" x=\"%d\" y=\"%.1f\"> </text>\n"
		     "<text id=\"matched\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\"> </text>\n",
		XPAD, L.height - BOTTOM_H + 16, L.width - XPAD, L.height - BOTTOM_H + 16);
	if (total && L.view < L.max_depth) {
		/* Folded: every frame is drawn, the view shows L.view + 1 levels of them. */
		fprintf(out, "<clipPath id=\"fold\"><rect x=\"0\" y=\"%d\" width=\"%.0f\" "
			     "height=\"%d\"/></clipPath>\n<g id=\"frames\" clip-path=\"url(#fold)\">"
			     "<g id=\"shift\">\n", TOP_H, L.width, (int)(L.view + 1) * FRAME_H);
		write_frame(&L, 0, 0);
		fputs("</g></g>\n", out);
	} else if (total) {
		fputs("<g id=\"frames\">\n", out);
		write_frame(&L, 0, 0);
		fputs("</g>\n", out);
	} else {
		fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">no %s to show</text>\n",
			L.width / 2, (double)TOP_H + FRAME_H - 4, L.unit);
	}
	write_legend(&L);
	fputs("</svg>\n", out);
	err = fflush(out) || ferror(out) ? -EIO : 0;
out:
	free(L.kids);
	free(L.kid_start);
	return err;
}
