#!/usr/bin/env python3
"""Stall samples of an ncu source-page CSV (ncu --page source --csv --print-source sass) summed by
execution count: per-block, per-tile and producer code separate by how often they run.
    python3 lab/tools/sass_by_count.py sass.csv"""
import csv, sys, collections
rows=list(csv.reader(open(sys.argv[1])))
hdr=rows[1]; data=[r for r in rows[2:] if len(r)>=len(hdr)]
idx={h:i for i,h in enumerate(hdr)}
S=lambda r:int(r[idx['Warp Stall Sampling (All Samples)']] or 0)
E=lambda r:int(r[idx['Instructions Executed']] or 0)
by=collections.Counter(); ins=collections.Counter()
for r in data: by[E(r)]+=S(r); ins[E(r)]+=1
tot=sum(by.values())
for e,s in by.most_common(25): print(f"exec {e:>10} instrs {ins[e]:5d} samples {s:7d} {100*s/tot:5.1f}%")
