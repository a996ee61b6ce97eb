#!/usr/bin/env python3
"""The innermost key loop of a kernel's SASS: the shortest backward branch whose body holds
tensor-core instructions (HGMMA, or HMMA for the mma.sync kernels). Prints its length and its uniform-datapath share (U* and R2UR
opcodes) for each listing, and with two listings the opcodes whose counts differ.

Why: the Hopper forward's ring and descriptor arithmetic must stay on the uniform datapath;
a warp-dependent branch ahead of the loop (session 33's TMA store, second version) moved it to
the vector datapath (953 -> 1 027 SASS in the d128 loop) and the rows 2-3.7% slower. Check a
change on the sm_90a cubin before spending device time:

  CU="$(lab/tools/cuobjdump.sh)/cuobjdump"
  ptxas -arch=sm_90a OUT/fwd_sm90.ptx -o new.cubin   # OUT: the build's out dir
  "$CU" -sass -fun fattn_fwd_bf16_d128_sm90 new.cubin > new.sass   # same for the old cubin
  lab/tools/sass_loops.py old.sass new.sass

lab/tools/loop_ops.py takes the loop by execution count from ncu's source export instead (on
the device, with stall samples); this one needs no device.
"""
import collections
import re
import sys


def parse(path):
    ins = []
    for line in open(path):
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
        if m:
            ins.append((int(m[1], 16), m[2].strip()))
    return ins


def inner_loop(ins):
    at = {a: i for i, (a, _) in enumerate(ins)}
    best = None
    for i, (a, text) in enumerate(ins):
        m = re.search(r"BRA.*?0x([0-9a-f]+)", text)
        if m and int(m[1], 16) < a and int(m[1], 16) in at:
            body = [t for _, t in ins[at[int(m[1], 16)] : i + 1]]
            if any("HGMMA" in t or "HMMA" in t for t in body) and (best is None or len(body) < len(best)):
                best = body
    return best or []


def opcode(text):
    return re.sub(r"^@!?U?P\w+\s+", "", text).split()[0]


def main(paths):
    counts = []
    for path in paths:
        ins = parse(path)
        loop = inner_loop(ins)
        ops = collections.Counter(map(opcode, loop))
        uniform = sum(n for op, n in ops.items() if op.startswith("U") or op.startswith("R2UR"))
        print(f"{path}: {len(ins)} SASS, inner loop {len(loop)} ({uniform} uniform-datapath / R2UR)")
        counts.append(ops)
    if len(counts) == 2:
        a, b = counts
        for op in sorted(set(a) | set(b)):
            if a[op] != b[op]:
                print(f"  {op}: {a[op]} -> {b[op]}")


if __name__ == "__main__":
    main(sys.argv[1:])
