#!/usr/bin/env python3
"""The instructions with the most stall samples among those executed a given number of times,
with their top stall reasons.   python3 lab/tools/sass_top_by_count.py sass.csv 491520,32768 [N]"""
import csv, sys
rows=list(csv.reader(open(sys.argv[1])))
hdr=rows[1]; data=[r for r in rows[2:] if len(r)>=len(hdr)]
idx={h:i for i,h in enumerate(hdr)}
S=lambda r:int(r[idx['Warp Stall Sampling (All Samples)']] or 0)
E=lambda r:int(r[idx['Instructions Executed']] or 0)
want=set(int(x) for x in sys.argv[2].split(','))
cols=[h for h in hdr if h.startswith('stall_')]
sel=[(i,r) for i,r in enumerate(data) if E(r) in want]
for i,r in sorted(sel,key=lambda x:-S(x[1]))[:int(sys.argv[3]) if len(sys.argv)>3 else 30]:
    top=sorted(((int(r[idx[c]] or 0),c[6:]) for c in cols),reverse=True)[:3]
    print(f"{i:5d} {r[0][-5:]} {r[1].strip()[:58]:58s} {S(r):5d} {E(r)} {top}")
