# The Hopper forward's staged epilogue (kernels/fwd_sm90.cu, after FATTN_LAB_ITEM_PHASE(cw, 12, ...)),
# checked without a GPU: the stmatrix .x4 stores write exactly the bytes, at exactly the
# addresses, of the 4-byte stores they replaced (session 47).
#
# Each side is modelled as a map from shared byte offset (within the Q buffer sQ) to the b16
# element stored there, an element named (warp, lane, i) for the accumulator register o[i] of
# that lane (scaled by its row's inverse sum and packed, identically on both sides):
# * old: lane = 4g + t stores E::pack(o[4j + 2hf], o[4j + 2hf + 1]) as 4 bytes at
#   (j / 8) BM 128 + r 128 + ((j % 8) ^ (r % 8)) 16 + 4t, r = cw 64 + warp 16 + g + 8 hf;
# * new: per pair of chunks (j, j + 1), j even, stmatrix.sync.aligned.m8n8.x4.shared.b16 with
#   registers {pack(o[4j], o[4j+1]), pack(o[4j+2], o[4j+3]), pack(o[4j+4], o[4j+5]),
#   pack(o[4j+6], o[4j+7])} and lane L's address (jj / 8) BM 128 + r 128 + ((jj % 8) ^ (r % 8)) 16,
#   r = cw 64 + warp 16 + L % 8 + 8 ((L / 8) % 2), jj = j + L / 16. The PTX ISA's stmatrix
#   (m8n8, .b16, no .trans): matrix i's row q (0..7) goes to the address of lane 8i + q; the
#   row's elements 2c and 2c + 1 are register i of lane 4q + c (low half at the lower address).
# Both are also checked against the tile's intended layout: element (row R, column C) of O at
# (C / 64) BM 128 + R 128 + (((C % 64) / 8) ^ (R % 8)) 16 + (C % 8) 2, the 128-byte swizzle of
# 64-column panels that the TMA store and the threads' 16-byte copies read, where the wgmma
# accumulator (m64nNk16, f32) holds (R, C) = (warp 16 + g + 8 hf, 8j + 2t + e) in o[4j + 2hf + e].
#
# Run: python3 lab/stsm/check_layout.py (prints one line per (D, BM) and "ok"; raises on any
# difference).

# The instances of kernels/fwd_sm90.cu (src/cuda/instances.rs): (head dim, block rows); the
# consumer warpgroups are BM / 64. d64 plain 192 rows (3 consumers), everything else 128.
INSTANCES = [(64, 192), (64, 128), (128, 128), (192, 128), (256, 128)]


def old_stores(D, BM, cw):
    mem = {}
    for warp in range(4):
        for lane in range(32):
            g, t = lane // 4, lane % 4
            for hf in range(2):
                r = cw * 64 + warp * 16 + g + hf * 8
                for j in range(D // 8):
                    addr = (j // 8) * BM * 128 + r * 128 + (((j % 8) ^ (r % 8)) * 16) + t * 4
                    lo, hi = (warp, lane, 4 * j + 2 * hf), (warp, lane, 4 * j + 2 * hf + 1)
                    for off, el in ((0, lo), (2, hi)):
                        assert addr + off not in mem, ("old: written twice", addr + off)
                        mem[addr + off] = el
    return mem


def new_stores(D, BM, cw):
    assert (D // 8) % 2 == 0, "pairs of chunks"
    mem = {}
    for warp in range(4):
        for j in range(0, D // 8, 2):
            # Registers of every lane: frag[i] = (lo element, hi element).
            frag = {
                lane: [
                    ((warp, lane, 4 * j + 0), (warp, lane, 4 * j + 1)),
                    ((warp, lane, 4 * j + 2), (warp, lane, 4 * j + 3)),
                    ((warp, lane, 4 * j + 4), (warp, lane, 4 * j + 5)),
                    ((warp, lane, 4 * j + 6), (warp, lane, 4 * j + 7)),
                ]
                for lane in range(32)
            }
            # Addresses of every lane, as the kernel computes them.
            addr = {}
            for lane in range(32):
                r = cw * 64 + warp * 16 + (lane % 8) + 8 * ((lane // 8) % 2)
                jj = j + lane // 16
                addr[lane] = (jj // 8) * BM * 128 + r * 128 + (((jj % 8) ^ (r % 8)) * 16)
                assert addr[lane] % 16 == 0, "stmatrix row addresses are 16-byte aligned"
            # stmatrix m8n8.x4.b16 semantics.
            for i in range(4):
                for q in range(8):
                    row_addr = addr[8 * i + q]
                    for c in range(4):
                        lo, hi = frag[4 * q + c][i]
                        for off, el in ((4 * c, lo), (4 * c + 2, hi)):
                            assert row_addr + off not in mem, ("new: written twice", row_addr + off)
                            mem[row_addr + off] = el
    return mem


def intended(D, BM, cw):
    mem = {}
    for warp in range(4):
        for lane in range(32):
            g, t = lane // 4, lane % 4
            for j in range(D // 8):
                for hf in range(2):
                    for e in range(2):
                        R, C = cw * 64 + warp * 16 + g + 8 * hf, 8 * j + 2 * t + e
                        a = (C // 64) * BM * 128 + R * 128 + ((((C % 64) // 8) ^ (R % 8)) * 16) + (C % 8) * 2
                        mem[a] = (warp, lane, 4 * j + 2 * hf + e)
    return mem


def main():
    for D, BM in INSTANCES:
        consumers = BM // 64
        every = {}
        for cw in range(consumers):
            old, new, want = old_stores(D, BM, cw), new_stores(D, BM, cw), intended(D, BM, cw)
            assert len(old) == 64 * D, "old: this warpgroup's 64 rows of D b16 elements"
            assert old == new, (D, BM, cw, "stmatrix differs from the 4-byte stores")
            assert old == want, (D, BM, cw, "not the swizzled tile")
            assert all(cw * 64 <= (a // 128) % BM < cw * 64 + 64 for a in old), "outside this warpgroup's rows"
            assert not set(old) & set(every), "two warpgroups write one byte"
            every.update(old)
        assert sorted(every) == list(range(0, BM * D * 2, 2)), "the whole tile, each element once"
        print(f"D={D:3d} BM={BM}: {consumers} warpgroups x 4 warps x {D // 16} stmatrix.x4 = the 4-byte stores, byte for byte")
    print("ok")


if __name__ == "__main__":
    main()
