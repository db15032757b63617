#!/usr/bin/env python3
"""fails.py TAG set...: list failing scenarios with reasons and got category/entity."""
import json, glob, os, sys
tag = sys.argv[1]
for s in sys.argv[2:]:
    d = f'/tmp/{tag}-{s}/corpus'
    for f in sorted(x for x in glob.glob(d + '/*.json') if 'summary' not in x):
        j = json.load(open(f)); sc = j.get('score') or {}
        if sc.get('pass') or (sc.get('axis1') or {}).get('pass'):
            continue
        r = j.get('result') or {}
        why = '; '.join(c.get('reason', '') for c in sc.get('axis1', {}).get('checks', []) if not c['pass'])
        print(f"{os.path.basename(f)[:-5]}: got {r.get('root_cause_category')} {r.get('root_cause_entity')} conf={r.get('confidence')} :: {why}")
