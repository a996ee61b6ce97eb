#!/usr/bin/env python3
"""Writes to an in-flight wgmma's registers in a kernel's innermost key loop (SASS).

Each wgmma group of the key loop (its HGMMAs up to the one carrying gsb0, the commit) reads
A fragments from registers (the P·V of the Hopper prefill; Q·Kᵀ with Q in registers) and
accumulates into others until a `WARPGROUP.DEPBAR.LE gsb0, k` retires it (k groups committed
after it). This walks the loop from each group's commit, wrapping round the back edge, to that
wait and prints every instruction whose destination register is one of the group's A or
accumulator registers: on a correct cubin there are none.

Why (session 63): with the P·V's wait moved past the loop's back edge, the fragments' last
use in the PTX was the wgmma itself, and ptxas reused their registers for the mask
arithmetic after the Q·Kᵀ wait, under the running P·V (wrong results on the GPU, no
warning). Check a schedule change on the cubin before spending device time:

  CU="$(lab/tools/cuobjdump.sh)/cuobjdump"
  ptxas -arch=sm_90a -e fattn_fwd_bf16_d128_sm90 OUT/fwd_sm90.ptx -o k.cubin
  "$CU" -sass k.cubin > k.sass
  lab/tools/wgmma_hazards.py k.sass        # exit status 1 when it finds one

Destinations are read as the first register operand of a writing opcode (a rough parse:
64/128-bit forms count 2/4 registers); stores, barriers and branches write none.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sass_loops import parse  # noqa: E402  (the listing's (address, instruction) pairs)

NO_DEST = ("ST", "BAR", "BRA", "SYNCS", "WARPGROUP", "RED", "ATOM", "EXIT", "NOP", "BSYNC", "BSSY",
           "WARPSYNC", "ISETP", "FSETP", "UISETP", "VOTEU", "PLOP3", "DEPBAR", "YIELD", "CALL", "RET",
           "HGMMA", "UST", "ARRIVES", "MEMBAR", "FENCE", "CCTL", "ERRBAR", "ELECT")


def inner_loop(ins):
    """The shortest backward branch whose body holds HGMMA and, where one does, MUFU.EX2 (the
    key loop of an attention kernel, not an epilogue's), as lab/tools/sass_loops.py."""
    at = {a: i for i, (a, _) in enumerate(ins)}
    best, best_mufu = None, None
    for i, (a, text) in enumerate(ins):
        m = re.search(r"BRA.*?0x([0-9a-f]+)", text)
        if m and int(m[1], 16) < a and int(m[1], 16) in at:
            body = [t for _, t in ins[at[int(m[1], 16)]: i + 1]]
            if not any("HGMMA" in t for t in body):
                continue
            if best is None or len(body) < len(best):
                best = body
            if any("MUFU.EX2" in t for t in body) and (best_mufu is None or len(body) < len(best_mufu)):
                best_mufu = body
    return best_mufu or best or []


def written(text):
    text = re.sub(r"^@!?U?P\w+\s+", "", text)
    op, _, args = text.partition(" ")
    if op.startswith(NO_DEST):
        return set()
    m = re.match(r"\s*R(\d+)\b", args)
    if not m:
        return set()
    n = 4 if ".128" in op else 2 if ".64" in op else 1
    return set(range(int(m[1]), int(m[1]) + n))


def groups(loop):
    """The loop's wgmma groups: (first line, commit line, accumulator registers, A registers);
    a group ends at its HGMMA with the gsb0 operand (the commit)."""
    out, cur = [], []
    for i, t in enumerate(loop):
        if "HGMMA" in t:
            cur.append((i, t))
            if "gsb0" in t:
                acc, a_regs = set(), set()
                for _, x in cur:
                    m = re.search(r"HGMMA\.64x(\d+)x\d+\S*\s+R(\d+),\s+(R(\d+))?", x)
                    if m:
                        acc |= set(range(int(m[2]), int(m[2]) + int(m[1]) // 2))
                        if m[4]:
                            a_regs |= set(range(int(m[4]), int(m[4]) + 4))
                out.append((cur[0][0], i, acc, a_regs))
                cur = []
    return out


def main(path):
    loop = inner_loop(parse(path))
    if not loop:
        print(f"{path}: no loop with HGMMA")
        return 0
    gs = groups(loop)
    n = len(loop)
    hazards = 0
    for gi, (first, commit, acc, a_regs) in enumerate(gs):
        # Walk from the commit (wrapping round the back edge) to the wait that retires the
        # group: DEPBAR.LE gsb0, k retires it once k groups were committed after it.
        after, j, steps, retired = 0, (commit + 1) % n, 0, None
        while steps < 2 * n:
            t = loop[j]
            if "HGMMA" in t and "gsb0" in t:
                after += 1
            m = re.search(r"DEPBAR\.LE gsb0, 0x([0-9a-f]+)", t)
            if m and after >= int(m[1], 16):
                retired = j
                break
            bad = written(t) & (acc | a_regs)
            if bad:
                hazards += 1
                print(f"  group {gi} (loop line {commit}): line {j}: {t}  (writes R{', R'.join(map(str, sorted(bad)))})")
            j, steps = (j + 1) % n, steps + 1
        if retired is None:
            print(f"  group {gi} (loop line {commit}): no retiring wait found")
    print(f"{path}: loop of {n}, {len(gs)} wgmma groups; {hazards} hazard(s)")
    return 1 if hazards else 0


if __name__ == "__main__":
    sys.exit(max(main(p) for p in sys.argv[1:]))
