#!/usr/bin/env python3
# The decode split kernel's shared-memory reads (kernels/decode_sm80.cu: lds128 of Q/K rows by
# lane (g, t), of V rows kperm(2t + e) at chunk vchunk(g, u)) checked per quarter warp for bank
# conflicts under a layout: the TMA-tile layout of branch s35-decode-tma (4-D boxes, 16-row
# panels of 128-byte rows) and the 5-D one-box-per-tile layout. Session 34: the 4-D layout with
# kperm/vchunk is conflict-free at d64/128/256; without them 2-way; the 5-D layout at d128 with
# kperm {0,2,1,3,6,4,7,5} and V chunk 8u + g; at d256 none of the simple V orders.
# Quarter-warp bank-group check of the decode kernel's lds128 reads for a smem layout.
def check(name, offset, kperm, vchunk, D):
    worst = 1
    def quarter_ok(addrs):
        groups = [(a * 2 // 16) % 8 for a in addrs]
        return max(groups.count(x) for x in set(groups))
    for cc in range(D // 32):
        for nt in range(2):
            for q in range(4):
                lanes = range(8 * q, 8 * q + 8)
                w = quarter_ok([offset(nt * 8 + kperm(l // 4), 4 * cc + l % 4) for l in lanes])
                worst = max(worst, w)
    kw = worst; worst = 1
    for u in range(D // 64):
        for e in (0, 1, 8, 9):
            for q in range(4):
                lanes = range(8 * q, 8 * q + 8)
                w = quarter_ok([offset(kperm(2 * (l % 4) + e), vchunk(l // 4, u)) for l in lanes])
                worst = max(worst, w)
    vw = worst
    # every V chunk covered once per u across g
    cover = sorted(vchunk(g, u) for g in range(8) for u in range(D // 64))
    assert cover == list(range(D // 8)), (name, cover)
    assert sorted(kperm(i) for i in range(16)) == list(range(16)), name
    print(f"{name} D={D}: K/Q reads {kw}-way, V reads {vw}-way")

for D in (64, 128, 256):
    # implemented (4-D boxes, panels of 16 rows x 128 B)
    off = lambda r, c: (c >> 3) * (16 * 64) + r * 64 + (((c ^ r) & 7) << 3)
    kp = lambda i: ((i & 1) << 2) | ((i >> 1) & 3) | (i & 8)
    vc = lambda g, u: 8 * u + kp(g)
    check("4d-tma", off, kp, vc, D)
    # identity orders on the same layout (what a plain port would do)
    check("4d-plain", off, lambda i: i, lambda g, u: g * (D // 64) + u, D)
# 5-D boxes: R = key*P + panel rows of 128 B
import itertools
for D in (128, 256):
    P = D // 64
    off5 = lambda r, c, P=P: (r * P + (c >> 3)) * 64 + (((c & 7) ^ ((r * P + (c >> 3)) & 7)) << 3)
    best = None
    for perm in itertools.permutations(range(8)):
        kp = lambda i, perm=perm: perm[i & 7] | (i & 8)
        for vmap in ("8u+kp", "8u+g", "g*P+u"):
            vc = {"8u+kp": lambda g, u, kp=kp: 8 * u + kp(g), "8u+g": lambda g, u: 8 * u + g,
                  "g*P+u": lambda g, u, P=P: g * P + u}[vmap]
            import io, contextlib
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                check("5d", off5, kp, vc, D)
            out = buf.getvalue()
            if "K/Q reads 1-way, V reads 1-way" in out:
                best = (perm, vmap); break
        if best: break
    print(f"5-D D={D}: conflict-free order {best}")
