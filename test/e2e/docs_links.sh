#!/usr/bin/env bash
# The manual's pages hold together: every relative link in README.md and the README.md files beside
# the code resolves (the file exists; a #fragment names a heading of it, as GitHub makes anchors),
# and the front door stays short.
. "$(dirname "$0")/../lib.sh"
cd "$ROOT" || exit 0
docs=$(find . -name '*.md' -not -path './build*' -not -path './.git/*' | sed 's|^\./||' | sort)
bad=$(python3 - $docs <<'PY'
import os, re, sys

def anchors(path):
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to '-', repeats -1, -2."""
    seen, out, fence = {}, set(), False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fence = not fence
            continue
        m = None if fence else re.match(r"^#{1,6} +(.*?)\s*#*\s*$", line)
        if not m:
            continue
        a = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
        n = seen.get(a, 0)
        seen[a] = n + 1
        out.add(a if n == 0 else "%s-%d" % (a, n))
    return out

bad, links = [], 0
for doc in sys.argv[1:]:
    text = open(doc, encoding="utf-8").read()
    text = re.sub(r"```.*?```", "", text, flags=re.S)   # code blocks hold no links
    text = re.sub(r"`[^`\n]*`", "", text)                # nor does inline code
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):                 # http:, mailto: ...: not relative
            continue
        links += 1
        path, _, frag = target.partition("#")
        full = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
        if not os.path.exists(full):
            bad.append("%s: %s: no such file" % (doc, target))
        elif frag and (os.path.isdir(full) or frag not in anchors(full)):
            bad.append("%s: %s: no such heading" % (doc, target))
print("links=%d" % links)
for b in bad:
    print(b)
PY
)
n=$(printf '%s\n' "$bad" | sed -n 's/^links=//p')
errs=$(printf '%s\n' "$bad" | grep -v '^links=')
if [ -z "$errs" ] && [ "${n:-0}" -ge 20 ]; then pass "docs_links_resolve"; else
	fail docs_links_resolve "${errs:-only ${n:-0} links found} $(printf '%s' "$errs" | grep -c '') broken"; fi
lines=$(wc -l < README.md)
[ "$lines" -le 400 ] && pass docs_readme_short || fail docs_readme_short "README.md has $lines lines, at most 400"
# the set-up and test commands CI runs are the README's own
for c in setup:'./deps.sh && make' test:'make test'; do
	if grep -qxF -- "${c#*:}" .ci/run && grep -qF -- "${c#*:}" README.md; then pass "docs_ci_runs_readme_${c%%:*}"; else
		fail "docs_ci_runs_readme_${c%%:*}" "'${c#*:}' not in both .ci/run and README.md"; fi
done
