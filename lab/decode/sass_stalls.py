import csv, sys, collections
def load(p):
    rows=list(csv.reader(open(p)))
    hdr=rows[1]; data=rows[2:]
    return hdr,data
for p in sys.argv[1:]:
    hdr,data=load(p)
    idx={h:i for i,h in enumerate(hdr)}
    tot=collections.Counter(); n=0
    stallcols=[h for h in hdr if h.startswith('stall_') and 'Not Issued' not in h]
    samples=0
    for r in data:
        if len(r)<len(hdr): continue
        s=int(r[idx['Warp Stall Sampling (All Samples)']] or 0); samples+=s
        for c in stallcols:
            try: tot[c]+=int(r[idx[c]] or 0)
            except: pass
    print(p.split('/')[-1], 'samples', samples, 'instrs', len(data))
    print('  ', ', '.join(f"{c[6:]} {v}" for c,v in tot.most_common(10)))
    top=sorted(data,key=lambda r:-int(r[idx['Warp Stall Sampling (All Samples)']] or 0))[:25]
    for r in top:
        print('   ', r[0][-5:], r[1].strip()[:60].ljust(60), r[idx['Warp Stall Sampling (All Samples)']], r[idx['Instructions Executed']], 'lsb',r[idx['stall_long_sb']],'ssb',r[idx['stall_short_sb']],'bar',r[idx['stall_barrier']],'lg',r[idx['stall_lg']], 'wait', r[idx['stall_wait']])
