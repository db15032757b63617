#!/usr/bin/env python3
"""cmp.py TAGA TAGB set...: scenarios whose axis-1 pass or category or entity differ."""
import json, glob, os, sys
a, b = sys.argv[1], sys.argv[2]
def load(tag, s):
    out = {}
    for f in glob.glob(f'/tmp/{tag}-{s}/corpus/*.json'):
        j = json.load(open(f)); sc = j.get('score') or {}; r = j.get('result') or {}
        out[os.path.basename(f)[:-5]] = ((sc.get('axis1') or {}).get('pass'), r.get('root_cause_category'), r.get('root_cause_entity'))
    return out
tot = {a: 0, b: 0}
for s in sys.argv[3:]:
    A, B = load(a, s), load(b, s)
    pa = sum(1 for v in A.values() if v[0]); pb = sum(1 for v in B.values() if v[0])
    tot[a] += pa; tot[b] += pb
    print(f'{s}: {pa} -> {pb}')
    for k in sorted(set(A) | set(B)):
        if A.get(k) != B.get(k):
            print('   ', k, A.get(k), '->', B.get(k))
print('total', tot)
