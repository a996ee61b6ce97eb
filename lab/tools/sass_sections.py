#!/usr/bin/env python3
"""Runs of consecutive SASS instructions with one execution count (a code section: tile setup,
mainloop, epilogue), their stall samples and opcode mix.   python3 lab/tools/sass_sections.py sass.csv"""
import csv, sys, collections
rows=list(csv.reader(open(sys.argv[1])))
hdr=rows[1]; data=[r for r in rows[2:] if len(r)>=len(hdr)]
idx={h:i for i,h in enumerate(hdr)}
S=lambda r:int(r[idx['Warp Stall Sampling (All Samples)']] or 0)
E=lambda r:int(r[idx['Instructions Executed']] or 0)
# contiguous runs of the same exec count
runs=[]; cur=None
for i,r in enumerate(data):
    e=E(r)
    if cur and cur[0]==e: cur[2]=i; cur[3]+=S(r); cur[4].append(r[1].strip().split()[0] if r[1].strip() else '')
    else:
        cur=[e,i,i,S(r),[r[1].strip().split()[0] if r[1].strip() else '']]; runs.append(cur)
for e,a,b,s,ops in runs:
    if b-a>=3 or s>100:
        c=collections.Counter(o.split('.')[0] for o in ops)
        print(f"{a:5d}-{b:5d} exec {e:>9} n {b-a+1:4d} samples {s:6d}  {dict(c.most_common(6))}")
