import csv, sys, collections
for p in sys.argv[1:]:
    rows=list(csv.reader(open(p))); hdr=rows[1]; data=[r for r in rows[2:] if len(r)>=len(hdr)]
    idx={h:i for i,h in enumerate(hdr)}
    base=int(data[0][0],16)
    # bucket by 2KB of code
    b=collections.Counter(); ex=collections.Counter()
    for r in data:
        off=int(r[0],16)-base
        b[off//0x1000]+=int(r[idx['stall_no_inst']] or 0)
        ex[off//0x1000]+=int(r[idx['Instructions Executed']] or 0)
    print(p.split('/')[-1], 'code bytes', hex(int(data[-1][0],16)-base))
    for k in sorted(b):
        if b[k] or ex[k]>100000: print(f"  {k*0x1000:#07x}: no_inst {b[k]:5d} executed {ex[k]:9d}")
