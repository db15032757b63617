#!/usr/bin/env python3
"""kwobj.py TAG set...: for keyword misses with category right, which k8s object / evidence line holds the keyword, vs the entity."""
import json, glob, os, sys, re, yaml
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
        ent = j['result'].get('root_cause_entity')
        tools = set()
        for t in j['result'].get('tools_called', []):
            tools.add(json.dumps(t)[:200])
        print(f"== {os.path.basename(f)[:-5]} ent={ent}")
        for k in miss:
            where = []
            for yf in glob.glob(d + '/k8s/*.y*ml'):
                try:
                    docs = list(yaml.safe_load_all(open(yf)))
                except Exception:
                    continue
                for doc in docs:
                    items = doc.get('items') if isinstance(doc, dict) and 'items' in doc else [doc]
                    for o in items or []:
                        if not isinstance(o, dict): continue
                        t = yaml.safe_dump(o)
                        if k.lower() in t.lower():
                            md = o.get('metadata') or {}
                            line = [l for l in t.split('\n') if k.lower() in l.lower()][0].strip()
                            where.append(f"k8s {o.get('kind')}/{md.get('namespace','')}/{md.get('name')} :: {line[:120]}")
            for ef in ['logs.json', 'commits.json', 'prometheus.json', 'deploys.json', 'alert.json']:
                p = os.path.join(d, ef)
                if os.path.exists(p) and k.lower() in open(p).read().lower():
                    where.append(ef)
            for pl in glob.glob(d + '/pod_logs/**/*.log', recursive=True):
                if k.lower() in open(pl, errors='replace').read().lower():
                    where.append('pod_logs ' + os.path.relpath(pl, d + '/pod_logs')); break
            print(f"   [{k}]", ' || '.join(where[:4]))
