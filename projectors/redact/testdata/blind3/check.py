#!/usr/bin/env python3
"""Validate the blind3 files: values verbatim, no duplicates, separator use, counts."""
import collections, re, sys
SEP = " \u2016 "
ok = True
def body(fn):
    return [l.rstrip('\n') for l in open(fn, encoding='utf-8') if l.strip() and not l.startswith('#')]
seen = collections.Counter()
classes, per, nvals, vals = [], collections.Counter(), 0, []
cur = None
for l in open('planted.txt', encoding='utf-8'):
    l = l.rstrip('\n')
    if not l.strip() or (l.startswith('#') and not l.startswith('## ')):
        continue
    if l.startswith('## '):
        cur = l[3:]; classes.append(cur); continue
    parts = l.split(SEP)
    line, vs = parts[0], parts[1:]
    if not vs: print("no values:", l); ok = False
    if '\u2016' in line: print("separator inside line:", l); ok = False
    for v in vs:
        if '\u2016' in v or not v or v != v.strip(): print("bad value:", repr(v)); ok = False
        if v not in line: print("value not in line:", v, '|', line); ok = False
    per[cur] += 1; nvals += len(vs); vals += vs
    seen[line] += 1
nord = nverb = 0
for fn in ('ordinary.txt', 'verbatim.txt'):
    for l in body(fn):
        if '\u2016' in l: print("separator in", fn, l); ok = False
        seen[l] += 1
    if fn == 'ordinary.txt': nord = len(body(fn))
    else: nverb = len(body(fn))
d = [l for l, c in seen.items() if c > 1]
if d: print("duplicates:", d); ok = False
mx = max(per.values())
if mx > 10: print("class over 10:", per.most_common(3)); ok = False
L = [0, 0, 0]
for v in vals: L[0 if len(v) <= 11 else 1 if len(v) <= 40 else 2] += 1
print(f"classes={len(classes)} planted_lines={sum(per.values())} planted_values={nvals} ordinary={nord} verbatim={nverb} max_per_class={mx} len<=11:{L[0]} 12-40:{L[1]} >40:{L[2]}")
print("OK" if ok else "FAILED"); sys.exit(0 if ok else 1)
