#!/usr/bin/env python3
"""kwwhere.py TAG set...: for failing scenarios whose category is right but a keyword is missing, where the keyword sits."""
import json, glob, os, sys, re
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
tag = sys.argv[1]
for s in sys.argv[2:]:
    for f in sorted(glob.glob(f'/tmp/{tag}-{s}/corpus/*.json')):
        j = json.load(open(f)); sc = j.get('score') or {}
        ch = {c['name']: c for c in (sc.get('axis1') or {}).get('checks', [])}
        if not ch.get('category', {}).get('pass') or ch.get('required_keywords', {}).get('pass', True):
            continue
        miss = ch['required_keywords']['reason'].replace('missing keywords: ', '').split(', ')
        d = os.path.join(ROOT, j['dir'])
        print(f"== {os.path.basename(f)[:-5]} cat={j['result'].get('root_cause_category')} ent={j['result'].get('root_cause_entity')}")
        for k in miss:
            hits = []
            for ef in glob.glob(d + '/**', recursive=True):
                b = os.path.basename(ef)
                if os.path.isdir(ef) or b in ('answer.yml', 'scenario.yml', 'README.md'):
                    continue
                t = open(ef, errors='replace').read()
                for m in re.finditer(re.escape(k), t, re.I):
                    hits.append((os.path.relpath(ef, d), t[max(0, m.start()-90):m.end()+60].replace('\n', ' ')))
                    break
            print(f"   [{k}] in {len(hits)} files")
            for h in hits[:3]:
                print('      ', h[0], '::', h[1])
