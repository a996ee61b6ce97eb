#!/usr/bin/env python3
"""Stall samples of ncu's SASS source CSV (s48-next/call.sh) summed over address windows of the
kernel, with each window's five largest stall reasons.   python3 windows.py FILE.csv.gz
The windows (offsets from the kernel's first instruction) are those of session 48's call 1
binary (plain bf16 d128, 7ff9876's kernels: set-up, first key blocks, main loop, last block,
epilogue, producer); another build needs its own, read from its SASS."""
import csv,gzip,sys
f=sys.argv[1]
rows=list(csv.reader(gzip.open(f,'rt')))
cols=rows[1]; body=rows[2:]
ci={c:i for i,c in enumerate(cols)}
base=int(body[0][0],16)
st=[c for c in cols if c.startswith('stall_') and 'Not Issued' not in c]
wins=[('prologue',0,0xb80),('setup',0xb80,0x2890),('first-gemm-wait',0x2890,0x28a0),('loop-first-blocks',0x28a0,0x5fd0),('mainloop',0x5fd0,0xc680),('last-block',0xc680,0xccc0),('epilogue-pre-stsm',0xccc0,0xf840),('stsm..bar',0xf840,0xfbb0),('tma-store',0xfbb0,0x10a60),('producer',0x10a60,0x12430),('tail-waits',0x12430,0x13000)]
tot=sum(int(r[ci['# Samples']]) for r in body)
for name,lo,hi in wins:
    sel=[r for r in body if lo<=int(r[0],16)-base<hi]
    n=sum(int(r[ci['# Samples']]) for r in sel)
    d={c:sum(int(r[ci[c]] or 0) for r in sel) for c in st}
    top=sorted(d.items(),key=lambda x:-x[1])[:5]
    print(f"{name:18s} {n:6d} {100*n/tot:5.1f}%  "+", ".join(f"{k[6:]}={v}" for k,v in top if v))
