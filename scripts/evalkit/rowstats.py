#!/usr/bin/env python3
"""rowstats.py OUTDIR [OUTDIR...]: one table row per eval output folder (the corpus/ subfolder is found)."""
import json, os, sys, glob

def row(d):
    sub = os.path.join(d, 'corpus')
    if os.path.isdir(sub):
        d = sub
    files = sorted(glob.glob(os.path.join(d, '*.json')))
    files = [f for f in files if not os.path.basename(f).startswith('summary')]
    n = a1 = cat = catf = catn = nf = kw = ev = ax2 = ax2n = fp = err = 0
    ac1 = ac3 = 0.0; ent = 0
    for f in files:
        try:
            j = json.load(open(f))
        except Exception:
            continue
        if 'score' not in j and 'result' not in j:
            continue
        n += 1
        if j.get('error'):
            err += 1
        s = j.get('score') or {}
        checks = {c['name']: c['pass'] for c in (s.get('axis1') or {}).get('checks', [])}
        if (s.get('axis1') or {}).get('pass'):
            a1 += 1
        nof = s.get('no_fault')
        if nof:
            nf += 1
        if checks.get('category'):
            cat += 1
            if nof: catn += 1
            else: catf += 1
        if checks.get('required_keywords', True):
            kw += 1
        if checks.get('evidence_sources', True):
            ev += 1
        if s.get('axis2_applicable'):
            ax2n += 1
            if (s.get('axis2') or {}).get('pass'):
                ax2 += 1
        e = s.get('entity') or {}
        if e.get('applicable'):
            ent += 1; ac1 += e.get('ac1', 0); ac3 += e.get('ac3', 0)
        if s.get('false_positive'):
            fp += 1
    faults = n - nf
    r1 = ac1 / ent if ent else 0; r3 = ac3 / ent if ent else 0
    return (f"| {a1}/{n} | {cat}/{n} ({catf}/{faults}, {catn}/{nf}) | {kw}/{n} | {ev}/{n} | {ax2}/{ax2n} "
            f"| {r1:.2f} / {r3:.2f} | {fp}/{nf} | {err} |")

if __name__ == '__main__':
    print('| set | axis 1 | category (faults, no-fault) | keywords | evidence | axis 2 | AC@1 / AC@3 | FP on no-fault | intake errors |')
    print('| --- | --- | --- | --- | --- | --- | --- | --- | --- |')
    for d in sys.argv[1:]:
        print(f'| {os.path.basename(d.rstrip("/"))} ' + row(d))
