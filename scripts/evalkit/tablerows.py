#!/usr/bin/env python3
"""tablerows.py TAG: README evaluation table rows from /tmp/TAG-<set>/corpus/summary.json."""
import json, sys, os
tag = sys.argv[1]
labels = {s: f'{s} (a development set since its after-run)' for s in ['blind'] + [f'blind{i}' for i in range(2, 32)]}
labels['blind32'] = 'blind32 (scored once before and once after this round, see below; this row after reading its failures)'
labels['blind33'] = 'blind33 (scored once before and once after this round, see below; this row after reading its failures)'
labels['heldout'] = 'held-out (a development set now)'
labels['corpus'] = 'our corpus'
order = ['corpus', 'blind'] + [f'blind{i}' for i in range(2, 34)] + ['heldout']
for s in order:
    p = f'/tmp/{tag}-{s}/corpus/summary.json'
    if not os.path.exists(p):
        continue
    d = json.load(open(p)); m = d['summary']; c = d['median_cost']
    ent = f"{m['ac1']:.2f} / {m['ac3']:.2f} / {m['avg5']:.2f} / {m['mrr']:.2f}"
    wall = c['wall_ms'] / 1000
    print(f"| {labels[s]} | {m['scenarios']} | {m['axis1_passed']}/{m['scenarios']} | {m['trajectory_passed']}/{m['scenarios']} | {m['axis2_passed']}/{m['axis2_applicable']} | {ent} | {m['false_positives']}/{m['no_fault']} | {c['tool_calls']} | {c['loops']} | {c['llm_calls']} | ~{wall:.1f} s (load ~2) |")
