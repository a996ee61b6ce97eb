// Attention forward for Hopper (sm_90a): wgmma, TMA and warp specialization.
//
// What it computes: exactly what kernels/fwd_sm80.cu computes for dense f16/bf16 problems
// (o = softmax(s) v per (batch, q head, query row), s the scaled dot products after softcap,
// ALiBi and the bottom-right causal/window masks of common/mask.cuh; softmax in f32 in log2
// units, f32 accumulation; rows that see no key output zeros; the LSE when asked), on the
// Hopper tensor cores.
//
// One CTA owns kBlockM = 64 · consumers query rows of one (batch, head) (128 at d128, 192 at
// d64), in 1 + consumers warpgroups:
// * warpgroup 0, the producer, gives its registers away (setmaxnreg) and one of its threads
//   issues every copy: the Q tile once, then K and V tiles of kBlockN keys through a
//   kStages-deep ring, each a TMA box of 64 columns per 128-byte-swizzled panel, completing
//   on "full" mbarriers; it refills a stage when both consumers have arrived on its "empty"
//   mbarrier.
// * the other warpgroups, the consumers, own 64 rows each: S = Q·Kᵀ as wgmma with both
//   operands in shared memory (m64 n=kBlockN k16), the online softmax in registers, then
//   O += P·V as wgmma with P from registers (the S accumulator is the A fragment layout, as
//   in FlashAttention-2) and V from shared memory (MN-major descriptor, no transpose copy).
// * Epilogue: each consumer normalizes its rows, stages them in its (dead) part of the Q tile
//   in the same swizzle and stores 16 bytes per thread.
//
// Tensor maps are made on the host from the real strides (src/cuda/prefill_sm90.rs); rows past
// the sequence and columns past the head dim arrive as zeros, so any seq_q, seq_k and any head
// dim that is a multiple of 8 up to the instance's runs without a separate tail path.
// Instances: d64, d128, d192, d256 (each plain and `_mods`), d96 (plain), wide d128 and d256. Problems
// TMA cannot describe (unaligned strides), f32, other head dims and paged caches whose pages
// are not whole key blocks or whole 8-row atoms dividing one run on the sm_80 kernel.
//
// Packed (varlen) batches run the `_varlen` entry: q and packed k/v are mapped as one batch of
// every row and a CTA's boxes start at its sequence's cu_seqlens rows; a paged cache is mapped
// as (blocks, page) and a key block is one box (pages of whole blocks) or block / page boxes,
// one per page (pages of 8-64 keys), through the block table. Rows past the sequence inside
// the last key block belong to the next sequence (or are whatever the page holds): masked, and
// their V rows zeroed in shared memory before P·V, so no NaN crosses sequences. H100, 64
// sequences of 100-3991 tokens, 32/8 heads, d128 bf16 (lab/results/s8-hopper-varlen-h100.md):
// 11.27 ms = 513 TF/s, 1.53x torch's FA2 varlen (17.27 ms) and 1.53x the sm_80 kernel; causal
// 6.69 ms, 1.46x FA2.
//
// Version 4: inside a warpgroup, each block's softmax overlaps the previous block's
// P·V wgmma (v2); plain d64 runs three consumers (v3); the consumers take turns issuing their
// GEMMs (ping-pong, round robin through named barriers), so one's softmax runs under another's
// GEMMs. No persistent grid. Measured (lab/results/s8-hopper-v4-*, H100, bf16, criterion
// medians; cuDNN from torch 2.11 in the same call): (16,16,2048,d128) 990 µs = 556 TF/s, 0.94×
// cuDNN (v3 1013 µs; sm_80 kernel 1606); causal 592 µs, 0.96×; (4,32,4096,d128) 1892 µs,
// 581 TF/s, 0.98×; (1,32,16384,d128) causal 3670 µs, 599 TF/s, 1.03×; (16,16,2048,d64) 629 µs,
// 0.94×, causal 406 µs, 0.88×; (1,8,512,d64) 14.5 µs, 0.89×. lab/README.md has v1-v4.
// Small grids (session 11): a plain problem whose grid has fewer blocks than SMs runs on the
// `_mods` instance when its query tile is smaller (d64: 128 rows, 2 consumers, against 192 and
// 3); that instance then takes the plain arithmetic (`mods_on` false), so a row's bits do not
// depend on the instance. (1,8,512,d64) 12.62 µs = 0.98× cuDNN (12.4), causal 13.22 µs, 0.96×
// (lab/results/s11-hopper-sg-h100/, H100, torch in the same call; 14.3 / 14.8 µs without).
// Version 5 (session 12): the plain d64 and d128 instances are persistent (two Q tiles): a
// dense problem with more tiles than SMs runs one block per SM; unmasked, block b takes tiles
// b, b + grid, ...; under causal/window masks each block draws its next tile from a counter
// (zero at the launch, reset by its last draw), heaviest of a head first, and the producer warp
// hands the tile to each consumer warpgroup through two named barriers (shared-memory atomics
// for the slot, which racecheck then does not count as a race). The K/V ring runs on from tile
// to tile; the next tile's Q lands in the other buffer during this one; the epilogue stages O
// in the dead one and fences the async proxy before the producer may load into it again.
// Measured (H100, bf16, criterion medians, alternating with one block per tile in one call, 3
// rounds; lab/results/s12-hopper-final-h100/all-oracle-ab/): (16,16,2048,d128) 971 µs against
// 999, causal 570 against 606 (0.98× cuDNN in the table call); d64 635 against 661, causal 401
// against 424 (0.89×); (4,32/4,4096,d128) 1853 against 1881, causal 1016 against 1047 (1.01×).
// ncu, d64 persistent: issue slots 55% busy, 128 registers, occupancy 20% (one block of 16
// warps).
// Session 35: the key block that holds a tile's last visible key, when that key leaves at
// least one 16-key step of the block empty, runs Q·Kᵀ at 64 keys where those hold it
// (into registers of its own, copied into S when done: a partly written S made ptxas
// serialize every wgmma of the kernel, C7515) and P·V over its steps up to that key
// (FattnHopperParams::trim_last; the loop runs the untrimmed blocks, the trimmed one runs
// after it, so the loop's code stays as it was: d128 952 -> 957 SASS). Same-binary A/B against
// FUSED_ATTN_SM90_TRIM=0 (H200, 2 rounds A B / B A, lab/results/s35-call7): (16,16,2048,d64)
// causal 363.8 / 362.7 µs against 372.0 / 368.1 (-1.8%: every other 192-row tile ends in half
// a block), (1,8,512,d64) 12.3 against 12.6 (-2.1%, spread: see below), causal -0.8%, d256 unmasked -0.7%
// (48 of its last block's 80 keys), causal -0.4%, 16k d128 -0.4%, the other rows within
// ±0.4%, none slower. The wide d128 instance at 2048 / 4096 keys stays off (+4.1 / +2.2%
// against the 128-key blocks even trimmed). Tests on the pack: gpu_hopper_prefill, the bf16
// and f16 sweeps, gpu_hopper_varlen, varlen = dense per sequence (bit-identical), LSE,
// poisoned outputs, memcheck and racecheck clean; the prefill, bf16 sweep and Hopper varlen
// again with the wide instances wherever they apply (FUSED_ATTN_SM90_WIDE_PADDING=100).
// Issue 14's table (call 8, two torch runs): 11 of 19 rows at or above cuDNN in both.
// Calls 7-8 ran a first version that also trimmed to 128 keys and trimmed the `_mods`
// instances: fwd_sm90 took 61.5 s to compile against 38.5. This version (one width, not
// `_mods`: 42.3 s of CPU) passed the same tests again in call 9 (gpu_hopper_prefill, the bf16
// sweep, Hopper varlen, the prefill with the wide instances everywhere, memcheck), and its
// A/B (2 rounds): d64 2048 causal 357.2 / 357.1 µs against 364.5 / 360.8 (-1.5%), d256
// causal -0.6%, d256 unmasked and the small rows within their spread (the small rows have
// no partial block: call 7's -2% there was spread too).
// Session 36, this code (pack s35u, SASS identical): the whole GPU test binary, the torch
// float64 oracle, synccheck, memcheck and racecheck clean; issue 14's table (call 4, two torch
// runs, lab/results/s36-call4): 12 of 19 rows at or above cuDNN in both, 601 TF/s at 16k d128,
// 626 at d256 2048, 444 at d64 2048.
// Session 34: the output's TMA store (FattnHopperParams::o_tma; boxes only wholly inside the
// output, not in the plain d64 instance). Same-binary A/B against FUSED_ATTN_SM90_O_STORE=threads
// (H200, 2 rounds A B / B A, lab/results/s34-call1/call2): d128 2048 causal 539.7 / 539.1 µs
// against 550.0 / 545.6 (-1.6%), (4,32,4096,d128) causal -1.2%, d256 unmasked -0.8%, d128
// unmasked -0.6%, small rows 12.3-12.4 against 12.4-12.5 (-0.5 to -0.8%), d64 causal 365.6 against
// 360.3 / 364.8 (the d64 instance's code does not change; spread). Against main across packs
// (call3, 2 rounds): d128 2048 -0.6%, causal -1.5%, d256 -1.1%, 4096 causal -1.3%, GQA causal
// -0.9%, small rows +0.6 / +0.8% (0.1 µs), d64 causal +0.5%. Issue 14's table (call3): 12 of 19
// rows at or above cuDNN in both torch runs.
// Session 32: masked dense grids (drawn, or one block per tile) take their last pairs' tiles
// heaviest first across those pairs (`FattnParams::tail_groups`, grid.cuh
// `query_block_tail`), so a launch ends on its lightest tiles: ncu had (16,16,2048,d64) causal
// with its SMs active 94.8% of the kernel (unmasked 98.7%). Same-call A/Bs (H200, criterion
// medians, lab/results/s32-call3 and -call6): d64 2048 causal -2.5 / -2.7%, d128 -1.6 / -1.7%,
// d256 -1.0%, (4,32,4096,d128) causal -2.4%, GQA 8:1 -1.7%, 16k -0.4%.
// Version 6 (session 13, this file): `_wide` instances (HopperTraits<D, 3>) with FA3's longer
// key blocks for dense plain problems: 176 keys at d128 (unmasked, where they pad at most 2%
// more keys than 128 do) and 80 at d256 (any mask). The ring of 176/80-key tiles leaves room
// for one Q tile: persistent with that one buffer, the consumers release Q after their tile's
// last Q·Kᵀ (the next Q lands under the last P·V and the epilogue) and store O from registers.
// Measured (H100, bf16, criterion medians, alternating with the wide rule off, 3 rounds;
// lab/results/s13-hopper-wide-h100/): (1,32,16384,d128) 7175-7229 µs against 7365-7492
// (610 TF/s, 1.08x cuDNN in the table call), (16,16,2048,d256) 1923-1948 against 1975-1984;
// at 2048/4096 keys 176 pads 3.1% and lost (982 against 971 µs), hence the padding rule.
// Session 15: the wide d256 instance takes one tile per CTA (no persistent loop, no spills):
// (16,16,2048,d256) 1859-1878 µs against 1902-1934, causal 1084-1092 against 1139-1142
// (same-call A/B, lab/results/s15-hopper-ab1-h100/). Rotating each tile's first key block by
// its query block (so that the CTAs in flight read different K/V blocks) was 1.7-4.1% slower
// on every row: CTAs reading the same blocks together hit in L2.
// Session 14: the staged epilogue's 16-byte stores (d64/d128) advance by constants from pass to
// pass (a thread keeps its chunk and moves down whole swizzle atoms): 0.3-1% faster on the
// 2048/4096 rows in a same-call A/B (3 rounds; (16,16,2048,d128) 977-990 -> 971-977 µs, d64
// 638-641 -> 631-636), d64's spills 16 -> 4 bytes. Chained tiles, an earlier next-Q load and a
// third d128 stage were slower (lab/README.md, fourteenth session).
// Session 16: under a right-bounded mask (causal, windows) every sequence's tiles move up by
// its last tile's padding so that its one partial tile is the top one, which sees the fewest
// keys (rows above the sequence's first are computed, never stored: dense, TMA's zero fill;
// packed, the previous sequence's rows): (16,16,16,2048,2048,64) causal 383-384 µs against
// 394-395 (-2.8%, same-call A/B, 3 rounds; lab/results/s16-shift-h100/), unmasked unchanged.
// Session 17: each GEMM's k-steps add constant offsets to one descriptor per operand (d64,
// d256 and the wide d128 instance; HopperConfig::kStepDescriptors): same-call A/B, 3 rounds
// (lab/results/s17-desc2-h100/): (16,16,2048,d256) 1773-1782 µs against 1827-1836, causal
// 1055-1061 against 1077-1087; d64 613-620 against 618-622, causal 378-382 against 379-384;
// (1,8,512,d64) 12.5-12.8 against 12.7-13.0. And a stream-K tail for the plain d64 instance's
// strided grids (the last tiles shared out by key blocks, two pieces per split tile merged in
// a fixed order; HopperConfig::kStreamK): (16,16,2048,d64) 606-611 µs against 611-616
// (lab/results/s17-streamk-h100/). Final call (lab/results/s17-final-h100/table.md, torch in
// the same call): d64 2048 611 µs = 450 TF/s, 1.02x cuDNN, causal 379 µs, 0.95x; d128 2048
// 959 / 566 µs, 0.99 / 1.01x; (4,32,4096,d128) 1887 / 1017 µs, 1.02 / 1.03x; (1,32,16384,d128)
// 7250 / 3663 µs, 0.99 / 1.02x; d256 1786 / 1060 µs, 0.96 / 0.93x.
// Session 18: the d192/d256 staged epilogue moves by constants from pass to pass as d64/d128's
// does (a warp stores 4 rows of one panel; a thread keeps its chunk and its row's place in the
// swizzle atom): (16,16,2048,d256) 1793 / 1798 µs against 1803 / 1793, causal 1044 / 1049
// against 1059 / 1056 (same-call A/B, 2 rounds, lab/results/s18-ab2-h100/), within noise.
// Session 20: thread 0 prefetches the TMA descriptors before it sets up the barriers, not
// after the block barrier: (1,8,512,d64) 12.5 / 12.5 / 12.6 µs against 12.6 / 12.5 / 13.1,
// causal 13.0 / 13.1 / 13.2 against 13.2 / 13.1 / 13.2; the 2048 d64/d128 rows within ±0.6%
// (same-call A/B, 3 rounds, lab/results/s20-final-h100/ab_medians.txt). Issuing K one block
// ahead of V in the producer changed no row by more than 1% (lab/results/s20-ab1-h100/).
// Session 27: a small grid (one block per tile, at most half as many tiles as SMs) on the d64
// `_mods` tile splits each tile's key blocks over a cluster of two CTAs; the second sends its
// partial into the first's shared memory (st.async completing on an mbarrier there), which
// merges it and stores the tile (HopperConfig::kPairSplit). Lab stamps of (1,8,512,d64) had
// put each key block at ~1.1 µs of a tile's ~7 µs. Same-call A/Bs (H200, 3 rounds,
// lab/results/s27-call2/, -call3/): 12.23 / 12.25 / 12.06 µs against 12.81 / 12.78 / 12.82,
// causal 12.51 / 12.51 / 12.39 against 13.35 / 13.30 / 13.38 (-4.8% / -6.5%); ncu (base
// clocks) 16.1 against 16.6 µs, causal 14.4 against 15.4. Clusters of four were slower (17.5
// µs), as were the 192-row tile split by stream-K (14.9 against 12.1) and a masked d64
// instance skipping unseen blocks (causal +3.3%; lab/results/s27-call1/).
// Session 30: the online softmax's conditional rescale (as FlashAttention-4 does it; kStaleMaxLog2,
// HopperConfig::kConditionalRescale): a row keeps its running max unless a key block raises it
// by more than 8 log2 units, so P <= 256 and its correction is exactly 1, and a warp whose
// rows all kept theirs skips the O rescale (64 of the plain d128 block's 617 instructions on
// its unmasked path). Same-call A/B (H200, 3 rounds, lab/results/s30-call6/): (16,16,2048,d256)
// 1723-1731 µs against 1767-1771, causal 996-999 against 1022-1023 (-2.6%); (16,16,2048,d64)
// 595-599 against 605-607, causal 367-369 against 370-375; (1,32,16384,d128) (wide) 7067-7084
// against 7129-7185; the small rows even; the plain d128 instance +0.0 to +0.6% on its five
// rows, so it and d128's `_mods` instance keep every rescale (SASS as before). The table on
// it (call 7, torch in the same call): 12 of 19 rows at or above cuDNN in both torch runs;
// d256 626 TF/s (1.009 / 1.010x), causal 1.002 / 1.021x; d64 2048 459 TF/s; 16k d128 618 TF/s.
// Session 31: a masked key block's rows that see keys from before the block (causal masks, a
// window's right edge) test only the upper bound, one compare per score instead of two; and
// the plain d128 instance builds its GEMMs from step descriptors (kStepDescriptors). Same-call
// A/Bs (H200, lab/results/s31-call1/, -call2/): (16,16,2048,d64) causal 360.5-364.2 µs
// against 365.1-367.4 (-1.2%), (1,8,512,d64) -1.0%, causal -0.8%, unmasked d64 even (4
// rounds); d128 2048 / 4096 / GQA 8:1 -0.1 to -1.1% unmasked and causal (3 rounds). Not kept:
// d64's last key block as a half block where no tile row sees its second half (a second
// 32-float S and n64/k64 GEMM chain): +9.6% unmasked, +6.6% causal (the larger loop;
// lab/results/s31-next/half_last_block.diff); the plain d128 instance with the conditional
// rescale on top of the step descriptors: +0.9 to +1.3%.
// Session 29: the cluster split's exchange halved: rank c merges and stores consumer c's rows,
// so each rank sends one consumer's partial (18 KiB at d64) instead of rank 1 sending both
// and rank 0 merging and storing all 128 rows (lab phase stamps: the exchange took 1.5-1.8 µs
// of a ~10 µs CTA). Same-call A/B (H200, 4 rounds, lab/results/s29-call6/): (1,8,512,d64)
// 12.10 / 12.55 / 12.20 / 12.13 µs against 12.57 / 12.41 / 12.45 / 12.54 (-2.6%), causal
// 12.19 / 12.33 / 12.32 / 12.27 against 12.76 / 12.61 / 12.64 / 12.75 (-3.2%); ncu (cold
// caches, base clocks) 16.03 against 16.13 µs, causal 14.43 against 14.66. The results keep
// their bits by construction (each row's partials merge in rank order wherever they merge).
// Session 28: the d128 instances (plain and wide) cut a strided grid's last round into pieces
// of key blocks (HopperConfig::kTailSplit): 4096 tiles on 132 SMs are 31 whole rounds and 4
// tiles, each now 8 pieces on 8 blocks; the last piece of a tile to arrive merges all 8 from
// global memory in piece order. Same-call A/B (H200, 3 rounds, lab/results/s28-call2/), no
// split against 8 pieces: (16,16,2048,d128) 982.7-984.2 µs against 973.3-977.7, (4,32,4096,
// d128) 1907-1927 against 1880-1887, GQA 8:1 1884-1892 against 1863-1864, (1,32,16384,d128)
// (wide) 7317-7370 against 7249-7260 (-0.6 to -1.5%; predicted -3% from the stamps' last round).
// The same cut on the wide d256 instance's one-tile-per-CTA grid (pieces as extra CTAs) tied
// (lab/results/s28-call3/) and was not kept. Call 3's table (same call as torch): d128 2048
// 959.7 µs = 0.980 / 0.989x cuDNN, 4096 0.986 / 0.989x, 16k 1.004 / 1.013x, GQA 0.990 / 0.990x.
// d192 and d256 instances (session 10; 64-key blocks): (16,16,2048,d256) 1999 µs = 550 TF/s,
// 0.90× cuDNN (1794 µs) and 1.78× FA2, causal 1180 µs, 0.87× (lab/results/s10-hopper-d256-h100/,
// criterion medians, torch in the same call).
// Session 47 (H200, lab/results/s47-call1 ... s47-call5): each item names its (batch, head,
// query block) with the launch's multiply-shift dividers (FattnHopperParams::div_m, div_heads,
// div_pairs, whole_rounds; kernels/common/grid.cuh) instead of divide chains, and the staged
// epilogue writes O into the Q buffer with stmatrix .x4 (one per two 8-column chunks of a
// warp's 16 rows) instead of a 4-byte store per packed pair (the same bytes at the same
// addresses: lab/stsm/check_layout.py). Stamps of a steady d128 tile (item 5): set-up 0.54 ->
// 0.35-0.38 µs, normalize + stage 0.59 -> 0.50, fixed cost per tile 1.95 -> 1.76 µs (1.14 key
// blocks). Same-call A/Bs against session 46's kernels (3 rounds): d128 2048 -1.1 / -1.2%, d64
// 2048 causal -1.1 / -1.2%, d64 2048 -0.6 / -0.9%, 4096 d128 -0.3 / -0.5%, GQA 8:1 level (the
// prediction was -1.1 to -2.3% on d128 2048). Call 5's table: d128 2048 960.7 µs = 0.997 /
// 0.996x cuDNN, 4096 1.000 / 1.019x, GQA 1.004 / 1.004x, 16k 1.011 / 0.991x. Tried and not
// kept: no barrier before the staging writes (call 3: level), and a storer warp issuing the TMA
// stores and freeing Q (call 4: d128 2048 +0.5%, 4096 +1.2% against the same base).
// Session 48 (H200, lab/results/s48-call1 ... s48-call5): each warp computes once per tile the
// key blocks its 16 rows see whole (common/mask.cuh `fully_visible_blocks`), so that a key
// block's mask test between its Q·Kᵀ wait and its softmax is one predicated branch instead of
// ~25 dependent instructions on parameters (ncu's source counters had them at 6% of the d128
// kernel's samples); and the producer waits on its empty barriers with a suspend-time hint
// (`sm90::mbar_wait_idle`), so that its retry loop (7% of the kernel's instructions, on one of
// the four schedulers) no longer takes issue slots from the consumer warps beside it.
// Same-call A/B against session 47's kernels (4 rounds): d64 2048 -1.6%, causal -1.6%, 4096
// d128 -1.4%, GQA 8:1 -0.9%, d256 -0.6 / -0.8%, d128 2048 -0.5%, d128 2048 causal level. Call
// 5's table: 17 of 19 rows at or above cuDNN in both torch runs; d128 2048 943.0 µs = 583
// TF/s, 0.982 / 1.018x cuDNN (926.3 / 960.2 µs), 4096 605 TF/s (1.023 / 1.013x), 16k 623 TF/s.
// Session 49 (H200, lab/results/s49-call1 ... s49-call4): K/V multicast over CTA pairs on
// the strided d128 grids (HopperConfig::kMulticast, plain and wide d128): each CTA of a cluster
// of two loads half the panels of every K/V tile into both CTAs' shared memory; a stage is
// refilled once both CTAs' consumers released it, the remote release a CTA-scope arrive (the
// cluster-scope .release form ran 17-20% slower: the pair waited). Probe first (only half of
// each tile loaded, timing only, FATTN_SM90_LAB_KV_PANELS=1): d128 2048 -9.5%, 4096 -10.5%, at
// a 180 MHz higher clock under the 700 W cap (L2 throughput 3.08 -> 2.05 TB/s in ncu): the K/V
// bytes from L2 cost power. Multicast against none, same call, same binary: d128 2048 -1.4%,
// 4096 -1.3%, 16k -3.0%. Tried and not kept: a share of the softmax's exp2 on the FMA pipes
// (polynomial, every 2nd/4th/8th key pair: 3-23% slower, issue-bound), a max tree (level).
// Session 50 (lab/results/s50-call1 ... s50-call5): racecheck of the multicast cases is clean
// on these kernels (every hazard it reports is in cuBLAS's nvjet kernels of the naive
// reference, as many without multicast); 3 K/V stages with one Q buffer for the plain d128
// instance (more slack for the pair) ran its six rows 1.8-7.5% slower: not kept. Call 5's table
// (with the host's 4096-key rule for the wide instance): 16 of 19 rows at or above cuDNN in both
// torch runs on this machine; d128 2048 974.3 µs = 564 TF/s, 0.975 / 0.987x cuDNN; 4096 596
// TF/s (1.017 / 1.009x); GQA 8:1 0.991 / 0.994x; 16k 628 TF/s (1.025 / 1.045x); d256 630 TF/s.
// Session 51 (lab/results/s51-call1 ... s51-call4): the plain d128 instance multicasts K only
// (HopperConfig::kMulticastV = false: each CTA loads its whole V tile and releases V's stages
// to its own producer), so the pair couples on K alone: d128 2048 -2.8% (session 50 call 6);
// the wide instance keeps K+V (K only was level at 4096 and 16k keys). The host then sends the
// 4096-key rows back to the plain instance (0.5-1.1% faster than wide). Racecheck of the six
// multicast cases with the naive reference on the CPU: 0 hazards; synccheck 0 errors; memcheck
// 0 errors. Call 3's table: 17 of 19 rows at or above cuDNN in both torch runs (18 of 19 in
// call 1); d128 2048 948.9 µs = 579 TF/s (1.019 / 1.019x), 4096 602 TF/s (1.017 / 1.019x), GQA
// 8:1 608 TF/s (1.017 / 1.017x), 16k 627 TF/s (1.033 / 1.034x), d256 630 TF/s, d64 458 TF/s.
//
// Session 54 (lab/results/s54-call1, lab/hopper/cluster_occupancy.py): K multicast over
// clusters of four is out. For the plain d128 block (384 threads, 197 736 B), the wide d128
// (214 104 B) and the plain d64 (512 threads, 148 616 B), the driver's max active clusters are
// 132 / 66 / 30 / 15 for clusters of 1 / 2 / 4 / 8: pairs cover all 132 SMs, clusters of four
// only 120 (a probe grid's first wave touched 120 SMs), and a persistent grid of one block an
// SM would leave 12 idle (9%) to save at most a few % of L2 bytes. The wide instance at 2048
// keys (176-key blocks, 3.1% padding) is 5.0% slower than the plain one there (s54-call2).
// Session 55: the plain d128 instance (HopperTraits<128, 0>::kQInRegs) loads each consumer's
// 64 Q rows into registers once per tile (8 ldmatrix.x4 a thread: the wgmma A fragments) and
// runs Q·Kᵀ with A from registers: 16 KiB less shared-memory reading per key block and
// consumer (of 80 KiB) and no per-step A descriptors (the key loop 956 -> 901 SASS, R2UR
// 17 -> 1; registers up to R226 of 240, no spills). These rows run at the 700 W cap (~690 W,
// SM clock ~1.68 GHz in the call), where bytes and instructions cost time. Same-call A/B
// against HEAD's image (H200, 3 rounds, lab/results/s55-call2): (16,16,2048,d128) 918.5-922.3
// µs against 932.9-938.2 (-1.5%), causal -1.8%, (4,32,4096,d128) -1.2%, causal -1.8%, GQA 8:1
// -1.0%, causal -1.4%. The wide d128 and plain d64 instances spill with it (128 / 96 bytes of
// stores; their S or third consumer leaves no room). Not kept, same session: naming and
// setting up the next item under the last P·V instead of at the loop top (s55-call1,
// early-item.diff): level or slower (+0.0 to +0.7%): idle cycles at a tile's edge are not
// time at the power cap. Issue 14's table on this code (s55-call3, torch in the same call): 18
// of 19 rows at or above cuDNN in both torch runs, d128 2048 586 TF/s (1.003 / 1.023x), 16k
// d128 623 TF/s, d64 2048 459, d256 2048 628.
// Session 59: d96 instances (HopperTraits<96, 0>, Phi-3's head dim; d72-d96 run there, but
// softcap/ALiBi problems, which stay on d128's `_mods` instance: build time):
// d128's tiles (the second panel half used) with Q·Kᵀ over 6 k-steps and P·V at m64n96k16.
// H200, same binary against the zero-padded d128 instance (FUSED_ATTN_SM90_D96=0), 2 rounds
// A B / B A, torch before and after (lab/results/s59-call2): (16,16,2048,d96) 860.0-862.7 µs
// against 906.2-915.7 (-5.4%) = 479 TF/s, 1.055x cuDNN (908-913 µs: cuDNN runs d96 on its
// 64x128x128 kernel, padded too) and 1.40x FA2; causal 478.8-479.1 against 526.3-526.4 (-9.0%),
// 1.14x cuDNN; (4,32,4096,d96) 1657-1666 against 1761-1768 (-5.8%), 1.09x; (16,16,2048,d80)
// 834-841 against 888-898 (-6.2%), 1.05-1.09x. Less than the 12-20% predicted: ncu (call 4)
// puts the tensor pipe at 59% of active cycles against 72% padded: the GEMMs shrank by a
// quarter, each block's softmax and barrier waits did not, and two consumers no longer hide
// them (what d64's third consumer does; at d96, compiled as a lab entry with three consumers
// and 512 threads, ptxas allocates for the launch bound's 128 registers and spills 200 bytes,
// 364 with Q in registers). Every
// existing entry's PTX is unchanged (label numbers aside). Tests, oracle, memcheck, racecheck
// and synccheck clean (s59-call2, s59-call3).

#include <type_traits>

// The plain d128 instance keeps its consumers' Q rows in registers for Q·Kᵀ (wgmma with A
// from registers, session 55): 1, or 0 for the lab's A/B against Q from shared memory.
#ifndef FATTN_SM90_Q_IN_REGS
#define FATTN_SM90_Q_IN_REGS 1
#endif
// Lab, timing only (wrong results): the producer loads only the first N 64-column panels of
// each K and V tile (0, the default: all), so the L2-to-SM bytes of K/V fall to N / panels
// (session 49's probe of whether those bytes bound the d128 rows; d64 tiles are one panel:
// the control).
#ifndef FATTN_SM90_LAB_KV_PANELS
#define FATTN_SM90_LAB_KV_PANELS 0
#endif
// Lab: 1 gives the plain d128 instance the conditional rescale (HopperConfig::
// kConditionalRescale) that session 30 measured level to +0.6% on it; 0, the default: every
// block rescales. Again in session 60, after Q in registers and the multicast (H200, same
// binary, two images, 3 rounds alternating, lab/results/s60-call3/): +0.95 to +1.79% slower
// on all seven of the instance's bench rows (2048 941-945 µs against 929-936), every round.
#ifndef FATTN_SM90_LAB_D128_COND_RESCALE
#define FATTN_SM90_LAB_D128_COND_RESCALE 0
#endif

#include "common/grid.cuh"
#include "common/kv_addr.cuh"
#include "common/mask.cuh"
#include "common/params.cuh"
#include "common/ptx.cuh"
#include "common/sm90.cuh"
#include "common/softmax.cuh"
#include "common/wgmma.cuh"

#ifdef FATTN_LAB_STAMPS
// Lab build only (NVCC_FLAGS=-DFATTN_LAB_STAMPS=K, examples/lab_stamps.rs): launch K of the
// process's Hopper prefill launches (counted by their CTAs' arrivals; launches on one stream
// do not overlap) stores, per CTA < kLabCtas, consumer and item < kLabItems: the tile, its key
// blocks (lo | hi << 16), and the item's start and end in ns of %globaltimer after the CTA's
// entry, and per CTA its entry in absolute %globaltimer ns (g_lab_entry: the launch's spread
// of CTA entries, and with ncu's kernel duration the time outside every CTA's life). Plain
// global stores: a printf here is a call, and ptxas then serializes every wgmma of the kernel
// (C7510).
constexpr int kLabCtas = 132, kLabItems = 64;
__device__ unsigned long long g_lab_stamps[kLabCtas * 3 * kLabItems * 4];
__device__ unsigned long long g_lab_entry[kLabCtas];
__device__ unsigned int g_lab_smid[kLabCtas];
__device__ unsigned int g_lab_ctas;
using fattn::lab_now;
// Phases of each CTA's item FATTN_LAB_PHASE_ITEM (g_lab_phase[cta][role][phase], ns after the CTA's entry;
// role 0-2 a consumer warpgroup's thread 0, 3 the producer's thread 0): where a short tile's
// time goes (session 29; its "cold-cache loss" of the small rows under ncu's cache control
// was the instruction caches ncu empties and the bench's L2 flush does not: session 30).
constexpr int kLabPhases = 18;
// The item whose phases are stored (NVCC_FLAGS=-DFATTN_LAB_PHASE_ITEM=N; default the first):
// a later item shows a steady tile's start and epilogue.
#ifndef FATTN_LAB_PHASE_ITEM
#define FATTN_LAB_PHASE_ITEM 0
#endif
__device__ unsigned long long g_lab_phase[kLabCtas * 4 * kLabPhases];
#define FATTN_LAB_PHASE(role, k, first)                                                    \
    do {                                                                                   \
        if (lab_launch == FATTN_LAB_STAMPS && (first) && blockIdx.x < kLabCtas)            \
            g_lab_phase[(blockIdx.x * 4 + (role)) * kLabPhases + (k)] = lab_now() - lab_t0; \
    } while (0)
#else
#define FATTN_LAB_PHASE(role, k, first) ((void)0)
#endif
// Phase k of item FATTN_LAB_PHASE_ITEM, stored by the thread for which `who` holds.
#define FATTN_LAB_ITEM_PHASE(role, k, who) FATTN_LAB_PHASE(role, k, (who) && n == FATTN_LAB_PHASE_ITEM)

namespace fattn {
namespace hopper {

// ---- tile traits --------------------------------------------------------------------------

template <int kHeadDim_, int kBlockN_, int kStages_, int kConsumers_, int kProducerRegs_, int kConsumerRegs_,
          int kQBufs_ = 1, bool kPersistent_ = false, bool kPingPong_ = true, bool kPairSplit_ = false>
struct HopperConfig {
    static constexpr int kHeadDim = kHeadDim_;
    static constexpr int kBlockN = kBlockN_;
    static constexpr int kStages = kStages_;
    // Consumer warpgroups, 64 query rows each (one wgmma m64 row block).
    static constexpr int kConsumers = kConsumers_;
    static constexpr int kBlockM = 64 * kConsumers;
    static constexpr int kThreads = 128 * (kConsumers + 1);
    // Head-dim panels of 64 columns: the width of the 128-byte swizzle, one TMA box each. At
    // d96 the second panel holds 32 columns: its tiles take a whole panel's shared memory and
    // its TMA boxes read zeros past the head dim (the tensor maps end there), but the GEMMs
    // run over the 96 columns only: Q·Kᵀ in 6 k-steps, P·V at n96 (48 O floats a thread).
    static constexpr int kPanels = (kHeadDim + 63) / 64;
    static constexpr int kQBytes = kBlockM * kPanels * 64 * 2;
    static constexpr int kKVBytes = kBlockN * kPanels * 64 * 2;  // one K or one V tile
    // Panels of a K or V tile the producer loads: all but under FATTN_SM90_LAB_KV_PANELS.
    static constexpr int kLoadPanels =
        FATTN_SM90_LAB_KV_PANELS > 0 && FATTN_SM90_LAB_KV_PANELS < kPanels ? FATTN_SM90_LAB_KV_PANELS : kPanels;
    static constexpr int kKVLoadBytes = kKVBytes / kPanels * kLoadPanels;
    // Persistent: the dense kernel loops over query tiles (one CTA per SM).
    static constexpr bool kPersistent = kPersistent_;
    // Q tiles. Two (persistent): the next tile's Q lands in the other buffer while this one
    // computes, and the epilogue stages O in the dead one. One, persistent: the consumers
    // release Q once their last Q·Kᵀ of a tile is done, so the next tile's Q lands under the
    // last P·V and the epilogue, which then stores O from registers (no staging buffer).
    static constexpr int kQBufs = kQBufs_;
    // Q full (and, persistent, Q empty) per Q buffer; K and V full/empty per stage.
    static constexpr int kBarriers = (kPersistent ? 2 * kQBufs : 1) + 4 * kStages;
    // Persistent: the next tile (an int, 8 bytes for alignment), after the barriers.
    static constexpr int kTileSlotBytes = kPersistent ? 8 : 0;
    // Cluster split (FattnHopperParams::pair_split = R, the cluster size, at most kSplitMax): a
    // small grid's tile runs on a cluster of R CTAs, each taking a contiguous share of the
    // tile's key blocks; rank c merges and stores consumer c's rows, whose partials (every
    // consumer thread's unnormalized O, two row maxima and two partial row sums) the other
    // ranks send into its shared memory (session 28 and before: all of them into rank 0's).
    // Then: an mbarrier (8 bytes, 16 with the alignment of the partials) and room for up to
    // kSplitMax - 1 ranks' partials, each per consumer (D/8 + 1) × 128 float4 (one consumer's
    // slot of each is used).
    static constexpr bool kPairSplit = kPairSplit_;
    // Clusters of 4 (a quarter of the key blocks each) ran the (1,8,8,512,512,64) row in
    // 17.5 µs against 12.4 for pairs (session 27 call 3, H200, ncu 19.7 against 16.1 µs): pairs
    // only, and room for one other rank's partial.
    static constexpr int kSplitMax = kPairSplit ? 2 : 1;
    // Consumer c's rows are merged and stored by rank c (fwd_hopper's exchange).
    static_assert(!kPairSplit || kConsumers == kSplitMax, "a cluster split stores consumer c's rows on rank c");
    static constexpr int kPairFloat4s = kHeadDim / 8 + 1;
    static constexpr int kPartialBytes = kConsumers * kPairFloat4s * 128 * 16;  // one rank's
    static constexpr int kPairPad = (16 - (kBarriers * 8 + kTileSlotBytes) % 16) % 16;
    static constexpr int kPairBytes = kPairSplit ? kPairPad + 16 + (kSplitMax - 1) * kPartialBytes : 0;
    // 1 KiB of slack aligns the tiles to the swizzle atom; the barriers follow the tiles.
    static constexpr int kSmemBytes =
        1024 + kQBufs * kQBytes + 2 * kStages * kKVBytes + kBarriers * 8 + kTileSlotBytes + kPairBytes;
    // setmaxnreg budgets: the producer needs a few registers, the consumers O, S and P.
    static constexpr int kProducerRegs = kProducerRegs_;
    static constexpr int kConsumerRegs = kConsumerRegs_;
    // The consumers take turns issuing their GEMMs (round robin through named barriers), so
    // that one's softmax runs while the tensor cores work through another's QKᵀ and P·V.
    static constexpr bool kPingPong = kPingPong_;
    // The GEMMs' k-steps add their offsets to one shared-memory descriptor per operand
    // (fewer uniform-datapath instructions between a turn's barrier and its first wgmma)
    // instead of building each step's descriptor. Session 17 (same-call A/Bs, H100, 3 rounds,
    // lab/results/s17-desc*-h100/): d64 -0.5 to -1.1% (2048, unmasked and causal), its small
    // grid (`_mods` instance) -1.4 / -1.6%, d256 -2.6 to -3.1%, the wide d128 instance -0.4%
    // (16k unmasked); the plain d128 instance +1.5 / +0.6% slower, so it and d128's `_mods`
    // instance (not measured) built each step's. Session 31 (H200, same-call A/B, 3 rounds,
    // lab/results/s31-call2/): the plain d128 instance with them, now that its loop runs
    // power-capped, -0.1 to -1.1% on all six of its bench rows (2048, 4096, GQA 8:1, causal
    // and not): on there (HopperTraits<128, 0>); d128's `_mods` instance still builds each.
    static constexpr bool kStepDescriptors = kHeadDim_ != 128;
    // A strided grid shares its last tiles out by key blocks (stream-K; FattnHopperParams::
    // sk_tail). Session 17 (same-call A/B, H100, 3 rounds, lab/results/s17-streamk-h100/):
    // d64 (16,16,2048) 606-611 µs against 611-616 (-0.9%), its causal control (drawn grid)
    // equal; the plain d128 instance 4096 -0.9%, GQA -0.4%, but 2048 +1.5% (its code, with the
    // rule off, +0.8%); wide d128 16k -0.5% (rule on/off, same binary). On for plain d64 only
    // (HopperTraits<64, 0>; src/cuda/instances.rs `shares_tail` names the same instances).
    static constexpr bool kStreamK = false;
    // A strided grid's last round (tiles % grid whole tiles while the other SMs wait) is split
    // into FattnHopperParams::tail_pieces pieces per tile, contiguous ranges of its key blocks,
    // one per block; the last piece of a tile to arrive merges every piece's partial in piece
    // order and stores the tile. On for the d128 instances (plain and wide), whose tiles are
    // long: 4096 tiles (the bench's d128 rows) run 31.03 rounds of 132, and the lab stamps put
    // the 32nd at 3.5% of the kernel (session 27). Set per instance below.
    static constexpr bool kTailSplit = false;
    // The online softmax's conditional rescale (kStaleMaxLog2). Session 30 (same-call A/B,
    // H200, 3 rounds, lab/results/s30-call6/): d256 -2.6% (unmasked and causal), d64 2048
    // -1.8% / -1.6%, the wide d128 instance at 16k -1.2%, the small d64 rows even; the plain
    // d128 instance +0.0 to +0.6% on all five of its rows (2048, 4096, GQA, 16k causal), so it
    // and d128's `_mods` instance keep the rescale of every block; d192 and the 64-key d256
    // instances (no bench row) take it as the wide d256 one does. Set per instance below.
    static constexpr bool kConditionalRescale = true;
    // K/V multicast over clusters of two (FattnHopperParams::kv_multicast, session 49): the two
    // CTAs of a cluster run tiles bx and bx + 1 of one (batch, head) over the same key blocks, and
    // each CTA's producer loads half the panels of every K and V tile into both CTAs' shared
    // memory (one TMA multicast), so each tile's K/V cross from L2 once per pair instead of
    // once per CTA. A stage is refilled once both CTAs' consumers have released it. Session
    // 49's probe (lab/results/s49-call2/: only half of each tile loaded, timing only) ran the
    // d128 rows 9.5-12% faster at a 180 MHz higher SM clock under the H200's 700 W cap. Dense
    // strided (unmasked) grids only; set per instance below.
    static constexpr bool kMulticast = false;
    // With kMulticast, whether V's tiles are multicast too, or only K's: each CTA then loads its
    // whole V tile and releases V's stages to its own producer only, so the pair couples on K
    // alone (V's release comes a whole softmax after K's). Session 50 call 6 (H200, same call,
    // 2 rounds, fwd_sm90 images, lab/results/s50-call6/): K only ran (16,16,2048,d128) (the
    // plain instance) in 938.0 / 938.0 µs against 964.5-969.1 (-2.8%); on the wide instance
    // (4096 keys) level: -0.4% (4,32,32), +0.8% (GQA 8:1); again level in session 51 call 2
    // (4096 and 16k keys, +0.0 to +0.5%), so the wide instance keeps K+V. Set per instance below.
    static constexpr bool kMulticastV = true;
    // Q·Kᵀ with A (this consumer's 64 Q rows) from registers, loaded once per tile with
    // ldmatrix, instead of from shared memory at every key block: D/4 more registers a
    // thread, 16 KiB less shared-memory reading per key block and consumer. Set per instance.
    static constexpr bool kQInRegs = false;

    static_assert(kHeadDim % 64 == 0 || kHeadDim == 96, "whole 64-column panels, or d96's one and a half");
    static_assert(kBlockN % 16 == 0 && kBlockN >= 16 && kBlockN <= 256, "a wgmma n of 16..256 in steps of 16");
    static_assert(kBlockN % 8 == 0 && kBlockM % 8 == 0, "tiles are whole 8-row swizzle atoms");
    static_assert(kBlockM <= 256, "one TMA box holds at most 256 rows");
    static_assert(kStages >= 2, "the ring needs two stages to overlap loads with compute");
    static_assert((kQBytes % 1024) == 0 && (kKVBytes % 1024) == 0, "every tile starts on a 1 KiB atom");
    static_assert(kBlockN * 128 < (1 << 18), "V's panel stride fits the descriptor's leading byte offset");
    static_assert(kSmemBytes <= 227 * 1024, "tile does not fit the 227 KiB an H100 block may opt into");
    // setmaxnreg moves registers between the warpgroups of the block's launch allocation (the
    // launch bound's per-thread count, 65536 / threads rounded down to 8, for every thread): an
    // increase that the decreases do not cover waits forever.
    static constexpr int kLaunchRegs = (65536 / kThreads) / 8 * 8;
    static_assert(kProducerRegs * 128 + kConsumerRegs * 128 * kConsumers <= kLaunchRegs * kThreads,
                  "setmaxnreg budgets exceed the launch allocation");
    static_assert(kProducerRegs % 8 == 0 && kConsumerRegs % 8 == 0, "setmaxnreg takes multiples of 8");
    static_assert(kConsumers <= 3, "named barrier ids: 1 + consumer (epilogue) and kTurnBarrier + consumer");
    static_assert(kConsumers >= 2 || !kPingPong, "ping-pong takes turns between two or more consumers");
    static_assert(kQBufs == 1 || (kQBufs == 2 && kPersistent), "one Q tile, or two for the persistent loop");
    static_assert(!kPairSplit || !kPersistent, "a cluster splits one tile: no persistent loop");
    static_assert(!kMulticast || (kPersistent && !kPairSplit && kPanels % 2 == 0),
                  "K/V multicast: a persistent strided loop, each CTA of a pair loading half the panels");
};

// Per head-dim instance (kVariant as src/cuda/instances.rs `Variant::cpp_code`: 0 plain,
// 1 softcap/ALiBi, 3 wide). Consumer registers per thread: O (kHeadDim/2) + S (kBlockN/2) + P
// (kBlockN/4) + addressing. d64 runs three consumers (192 rows): its GEMMs are half as long as
// d128's for the same softmax work, so a third warpgroup's softmax fills the tensor cores'
// gaps (v2 with two: 0.81-0.83x cuDNN at d64 against 0.92-0.95x at d128). Unsupported head
// dims have no specialization.
template <int kHeadDim, int kVariant>
struct HopperTraits;
template <>
struct HopperTraits<64, 0> : HopperConfig<64, 128, 3, 3, 32, 160, 2, true> {
    static constexpr bool kStreamK = true;
};
// The softcap/ALiBi arithmetic does not fit the 128 registers per thread that 512 threads
// leave at entry (ptxas allocates for the launch bound; 244 bytes of spills): two consumers.
// Small grids of plain problems run here too (the smaller tile), split over CTA pairs where
// the host asks (kPairSplit).
template <>
struct HopperTraits<64, 1> : HopperConfig<64, 128, 3, 2, 24, 240, 1, false, true, true> {};
// d96 (Phi-3 and kin; session 59): d128's tiles and ring, whose second panel is half used,
// with the GEMMs at 96 columns (a quarter less tensor work than the d128 instance it ran on
// before, zero-padded); persistent like the other plain instances up to d128, without d128's
// tail split and multicast (tuned on d128 rows), with Q in registers as d128. No `_mods`
// instance: softcap/ALiBi at d72-96 run zero-padded on d128's (src/cuda/instances.rs).
template <>
struct HopperTraits<96, 0> : HopperConfig<96, 128, 2, 2, 24, 240, 2, true> {
    static constexpr bool kQInRegs = FATTN_SM90_Q_IN_REGS != 0;
};
template <>
struct HopperTraits<128, 0> : HopperConfig<128, 128, 2, 2, 24, 240, 2, true> {
    static constexpr bool kTailSplit = true;
    static constexpr bool kMulticast = true;
    static constexpr bool kMulticastV = false;
    static constexpr bool kStepDescriptors = true;
    static constexpr bool kConditionalRescale = FATTN_SM90_LAB_D128_COND_RESCALE != 0;
    static constexpr bool kQInRegs = FATTN_SM90_Q_IN_REGS != 0;
};
template <>
struct HopperTraits<128, 1> : HopperConfig<128, 128, 2, 2, 24, 240> {
    static constexpr bool kConditionalRescale = false;
};
// d192 and d256: 64-key blocks, so that Q (48 / 64 KiB) and the K/V ring fit the shared
// memory (3 stages of 24 KiB tiles at d192, 2 of 32 KiB at d256) and O (96 / 128 f32 per
// thread), S and P fit 240 registers.
template <int kVariant>
struct HopperTraits<192, kVariant> : HopperConfig<192, 64, 3, 2, 24, 240> {};
template <int kVariant>
struct HopperTraits<256, kVariant> : HopperConfig<256, 64, 2, 2, 24, 240> {};
// Wide (dense plain problems, src/cuda/prefill_sm90.rs: unmasked at d128, any mask at d256):
// longer key blocks, as FlashAttention-3 takes them, so that each block's fixed costs (the
// O rescale, the row max and sum reductions, the barrier waits and arrivals) spread over more
// keys. The K/V ring then leaves room for one Q tile: at d128 persistent with Q released early
// (see HopperConfig). d128: 176 keys, S 88 + P 44 + O 64 registers; 2 stages of 44 KiB K and V
// tiles + 32 KiB of Q. d256: 80 keys, 2 stages of 40 KiB tiles + 64 KiB of Q, one tile per
// CTA: in the persistent loop its consumers spilled 68/116 bytes (O 128 + S 40 + P 20 of
// 240 registers), without it none, 3.2% faster unmasked and 4.6% causal (session 15).
template <>
struct HopperTraits<128, 3> : HopperConfig<128, 176, 2, 2, 24, 240, 1, true> {
    static constexpr bool kStepDescriptors = true;
    static constexpr bool kTailSplit = true;
    static constexpr bool kMulticast = true;
};
template <>
struct HopperTraits<256, 3> : HopperConfig<256, 80, 2, 2, 24, 240, 1, false> {};

// ---- the kernel ---------------------------------------------------------------------------

// Conditional rescale (the online softmax, as FlashAttention-4 does it): a row's running max
// moves only when a key block raises it by more than this many log2 units, so P ≤ 2^8 (f32
// sums and O, and P in f16/bf16, hold that with the same relative precision) and most blocks
// leave O unscaled. The result is the same softmax, rounded differently.
constexpr float kStaleMaxLog2 = 8.f;

// Named barrier ids: 0 is __syncthreads; 1 + consumer is each consumer's epilogue barrier
// (at most 3 consumers); the packed kernel's consumers meet on kTailBarrier after zeroing the
// last V tile's rows past the sequence; kTurnBarrier + consumer orders the consumers' GEMMs.
constexpr int kTailBarrier = 5;
// Consumer c waits on kTurnBarrier + c for its turn to issue GEMMs (ping-pong).
constexpr int kTurnBarrier = 6;
// Persistent: the producer warp and consumer c meet on kSlotFullBarrier + c once the next
// tile is in the slot, and on kSlotFreeBarrier + c once c has read it (32 + 128 threads).
constexpr int kSlotFullBarrier = 9;
constexpr int kSlotFreeBarrier = 12;
static_assert(kSlotFreeBarrier + 3 <= 16, "16 named barriers");

// kPacked: a packed (varlen) batch (p.cu_seqlens_q set), K/V packed or paged (pages of whole
// key blocks, or pages of whole 8-row atoms that divide a key block); masks per sequence with its multimodal ranges (mask.cuh). The dense
// instantiation is the dense kernel as it was.
// S = Q Kᵀ of the key block at k_tile over its first N keys (N = the block's kBlockN, or a
// trimmed width: `trim_last` in fwd_hopper), issued (not waited for): D/16 k-steps; a step is
// 32 bytes into the 128-byte rows of a panel. The instruction writes the first N / 2
// accumulators of the block's S (wgmma.cuh's layout: its first N keys), here in s of its own.
// The same with Q's A fragments in registers (kQInRegs): qf[kk] holds this warp's 16 rows
// at columns 16kk..16kk+15.
template <class Cfg, class E, int N>
__device__ __forceinline__ void issue_qk_width(float (&s)[N / 2], const uint32_t (&qf)[Cfg::kHeadDim / 16][4],
                                               uint32_t k_tile) {
    constexpr int D = Cfg::kHeadDim, BN = Cfg::kBlockN;
    static_assert(N % 16 == 0 && N <= BN, "a trimmed Q·Kᵀ covers the block's first keys");
    const uint64_t b0 = sm90::desc_sw128(k_tile, 16, 1024);
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
        const int b_off = (kk / 4) * BN * 128 + (kk % 4) * 32;
        const uint64_t b = Cfg::kStepDescriptors ? b0 + static_cast<uint64_t>(b_off >> 4)
                                                 : sm90::desc_sw128(k_tile + b_off, 16, 1024);
        sm90::Wgmma<E, N>::rs_kb(s, qf[kk], b, kk > 0 ? 1 : 0);
    }
    sm90::wgmma_commit();
}
template <class Cfg, class E, int N>
__device__ __forceinline__ void issue_qk_width(float (&s)[N / 2], uint32_t q_tile, uint32_t k_tile) {
    constexpr int D = Cfg::kHeadDim, BN = Cfg::kBlockN, BM = Cfg::kBlockM;
    static_assert(N % 16 == 0 && N <= BN, "a trimmed Q·Kᵀ covers the block's first keys");
    // kStepDescriptors: one descriptor per operand; a k-step adds its byte offset / 16 to
    // the address field (the tiles lie below 256 KiB, so the 14-bit field does not carry).
    const uint64_t a0 = sm90::desc_sw128(q_tile, 16, 1024), b0 = sm90::desc_sw128(k_tile, 16, 1024);
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
        const int a_off = (kk / 4) * BM * 128 + (kk % 4) * 32, b_off = (kk / 4) * BN * 128 + (kk % 4) * 32;
        const uint64_t a = Cfg::kStepDescriptors ? a0 + static_cast<uint64_t>(a_off >> 4)
                                                 : sm90::desc_sw128(q_tile + a_off, 16, 1024);
        const uint64_t b = Cfg::kStepDescriptors ? b0 + static_cast<uint64_t>(b_off >> 4)
                                                 : sm90::desc_sw128(k_tile + b_off, 16, 1024);
        sm90::Wgmma<E, N>::ss(s, a, b, kk > 0 ? 1 : 0);
    }
    sm90::wgmma_commit();
}

template <class Cfg, class E, bool kMods, bool kPacked>
__device__ __forceinline__ void fwd_hopper(const FattnHopperParams& hp) {
    constexpr int D = Cfg::kHeadDim, BN = Cfg::kBlockN, BM = Cfg::kBlockM, ST = Cfg::kStages;
    // Persistent dense instances loop over query tiles: by a fixed stride (blockIdx.x,
    // + gridDim.x, ...) or drawn from hp.tile_counter; the host launches min(tiles, SMs) CTAs
    // (src/cuda/prefill_sm90.rs `grid`), and with one CTA per tile the loop runs once. The
    // packed entry keeps one tile per CTA.
    constexpr bool kPersistent = Cfg::kPersistent && !kPacked;
    constexpr int QB = Cfg::kQBufs;
    // O is staged in the tile's Q buffer for 16-byte stores, except in a persistent loop with
    // one Q buffer: there the consumers release Q after their tile's last Q·Kᵀ (the next
    // tile's Q lands under the last P·V and the epilogue) and store O from registers.
    constexpr bool kStageO = !kPersistent || QB == 2;
    const FattnParams& p = hp.fwd;
    const float kNegInf = -CUDART_INF_F;

    extern __shared__ uint8_t smem_raw[];
    const uint32_t raw = smem_addr(smem_raw);
    uint8_t* const smem = smem_raw + (((raw + 1023u) & ~1023u) - raw);
    uint8_t* const sQ0 = smem;  // Q buffer b at + b · kQBytes
    uint8_t* const sK = sQ0 + Cfg::kQBufs * Cfg::kQBytes;  // stage s at + s · kKVBytes
    uint8_t* const sV = sK + ST * Cfg::kKVBytes;
    uint64_t* const bar_q = reinterpret_cast<uint64_t*>(sV + ST * Cfg::kKVBytes);  // per Q buffer
    uint64_t* const full_k = bar_q + (Cfg::kPersistent ? 2 * QB : 1);
    uint64_t* const empty_q = bar_q + QB;  // persistent instances only
    uint64_t* const full_v = full_k + ST;
    uint64_t* const empty_k = full_v + ST;
    uint64_t* const empty_v = empty_k + ST;
    // Persistent with drawn tiles: the next tile, which the producer warp hands to each
    // consumer warpgroup through named barriers (a tile past the last one tells them to stop).
    // Written and read with shared-memory atomics: the barriers order the accesses, and
    // compute-sanitizer's racecheck, which does not take a bar.arrive as a release, does not
    // count atomic accesses as a race.
    int* const tile_slot = reinterpret_cast<int*>(empty_v + ST);
    // Pair split: this rank's mbarrier for the other ranks' partials of its rows, then the
    // partials (16-byte aligned).
    uint8_t* const pair_area = reinterpret_cast<uint8_t*>(empty_v + ST) + Cfg::kTileSlotBytes + Cfg::kPairPad;
    uint64_t* const pair_bar = reinterpret_cast<uint64_t*>(pair_area);
    float4* const pair_part = reinterpret_cast<float4*>(pair_area + 16);
    // Drawn tiles (a counter): block-uniform.
    const bool drawn = kPersistent && hp.tile_counter != nullptr;
    // K/V multicast over a cluster of two (kMulticast; grid-uniform; the host sets it for
    // strided grids only), and this CTA's rank in it.
    const bool mc = Cfg::kMulticast && kPersistent && hp.kv_multicast != 0;
    const int mc_rank = static_cast<int>(blockIdx.x) & 1;

    // The current tile: its (batch, head, rows), sequence and key blocks (setup()).
    QueryBlock qb{};
    SeqSpan span{};
    SeqMask msk{};
    int nb_begin = 0, nb_end = 0;
    int tile_hi = 0;  // one past the tile's last visible key (any row), when it has keys
    // Dense: the params themselves, as the dense kernel always read them.
    auto len_q = [&]() {
        if constexpr (kPacked) {
            return msk.len_q;
        } else {
            return p.seq_q;
        }
    };
    auto row_keys = [&](int row) {
        if constexpr (kPacked) {
            return key_range(p, msk, row);
        } else {
            return key_range(p, row);
        }
    };
    auto setup = [&](int tile) {
        // No divide on this path: every item names its tile here (session 47's stamps: 0.54 µs
        // of division chains per item before the launch's FattnFastDiv dividers).
        qb = query_block_tail_fast(hp, BM, tile, kPacked ? 0 : p.tail_groups);
        span = seq_span<kPacked>(p, qb.batch);
        // The sequence's partial tile at the top (FattnHopperParams::partial_tile_top).
        if (hp.partial_tile_top != 0) qb.m0 -= (BM - span.len_q % BM) % BM;
        msk = kPacked ? packed_mask(p, qb.batch, span.len_q, span.len_k) : dense_mask(p);
        const int m_last = min(qb.m0 + BM, len_q()) - 1;
        const KeyRange keys = KeyRange{row_keys(qb.m0).lo, row_keys(m_last).hi};
        nb_begin = keys.lo / BN;
        nb_end = keys.hi > keys.lo ? (keys.hi + BN - 1) / BN : nb_begin;
        tile_hi = keys.hi > keys.lo ? keys.hi : 0;
    };
    const int num_tiles = kPersistent ? p.batch * p.heads * ((p.seq_q + BM - 1) / BM) : 1;
    // Cluster split (small grids, src/cuda/prefill_sm90.rs `pair_split`): the cluster's R CTAs
    // (R = hp.pair_split, 2 today; consecutive blocks) share tile blockIdx.x / R; rank r takes
    // key blocks [ceil(r·n/R), ceil((r+1)·n/R)) of the tile's n, so rank 0's share is never
    // empty while the tile has a block; grid-uniform.
    const int ranks = Cfg::kPairSplit && !kPacked && hp.pair_split > 1 ? hp.pair_split : 1;
    if (ranks > Cfg::kSplitMax) __trap();  // the host asks for at most kSplitMax
    const bool pair = ranks > 1;
    const int pair_rank = static_cast<int>(blockIdx.x) % ranks;
    const int first_tile = static_cast<int>(blockIdx.x) / ranks;
    setup(first_tile);
    // The ranks with key blocks (bit r): each rank waits for and merges the others' partials
    // of the rows it stores (below).
    unsigned pair_members = 0u;
    if (pair) {
        const int n = nb_end - nb_begin, lo = nb_begin;
        auto share = [&](int r) { return lo + (r * n + ranks - 1) / ranks; };
        for (int r = 0; r < ranks; ++r)
            if (share(r) < share(r + 1)) pair_members |= 1u << r;
        nb_begin = share(pair_rank);
        nb_end = share(pair_rank + 1);
    }
    // Packed: a query block past its sequence's end has nothing to do (the grid covers the
    // longest sequence). The whole CTA leaves together, before any barrier.
    if (kPacked && qb.m0 >= span.len_q) return;
    // Persistent: the tile after `tile`, drawn from the launch's counter (masked problems,
    // whose tiles differ in cost: whichever block is free takes the next, in the order of
    // grid.cuh, heaviest of a head first, the last p.tail_groups pairs heaviest first across
    // them: `query_block_tail`) or a fixed stride (blockIdx.x, + gridDim.x, ...).
    // Drawn: the launch makes num_tiles draws (each tile past the first grid's once, then one
    // past the end per block); the last one leaves the counter at zero for the next launch on
    // the stream, which takes it from the same workspace without zeroing it
    // (src/cuda/workspace.rs).
    auto next_tile = [&](int tile) {
        if (!drawn) return tile + static_cast<int>(gridDim.x);
        const unsigned r = atomicAdd(hp.tile_counter, 1u);
        if (r + 1u == static_cast<unsigned>(num_tiles)) atomicExch(hp.tile_counter, 0u);
        return static_cast<int>(r) + static_cast<int>(gridDim.x);
    };
    // Stream-K tail (strided grids, hp.sk_tail > 0; dense and unmasked, so every tile sees key
    // blocks [0, nb_all)): block b takes whole tiles b, b + grid, ... up to the last sk_tail
    // tiles, whose key blocks (sk_tail · nb_all units) the blocks then share in equal
    // contiguous ranges: instead of a last round of (tiles mod grid) whole tiles with the other
    // SMs idle, every block ends within a unit of the others. A range is at least one tile
    // long, so a tile splits into at most two pieces: its first key blocks, the last piece of
    // block c (slot 2c + 1), and the rest, the first piece of block c + 1 (slot 2c + 2); both
    // leave an unnormalized partial and the second to arrive merges them (the epilogue).
    // Everything below is recomputed from the parameters per item, so that none of it stays
    // live through the key loop (registers: the d64 consumers spilled inside it otherwise).
    // The host keeps sk_tail · nb_all · grid within i32.
    const bool sk = Cfg::kStreamK && kPersistent && !drawn && hp.sk_tail > 0;  // block-uniform
    // Tail split (strided grids, hp.tail_pieces = P > 1; kTailSplit): block b takes whole
    // tiles b, b + grid, ... for the whole rounds; then the last tiles % grid tiles are each
    // cut into P contiguous ranges of key blocks ([j·nb/P, (j+1)·nb/P), the host keeps P ≤ nb
    // so none is empty), piece j of tail tile i going to block i·P + j (the host keeps
    // P · (tiles % grid) ≤ grid). Every piece leaves its partial; the last to arrive merges
    // them all in piece order (fixed bits) and stores the tile (the epilogue).
    const bool ts = Cfg::kTailSplit && kPersistent && !drawn && hp.tail_pieces > 1;  // block-uniform
    auto nb_all = [&]() { return (p.seq_k + BN - 1) / BN; };
    // Item n of a strided grid: its tile (num_tiles: none), and [piece_lo, piece_hi) of its
    // key blocks (the whole [0, nb_all) unless it is a piece of a split tile).
    auto strided_item = [&](int n, int& piece_lo, int& piece_hi) {
        const int grid = static_cast<int>(gridDim.x), bx = static_cast<int>(blockIdx.x), nb = nb_all();
        piece_lo = 0;
        piece_hi = nb;
        if constexpr (Cfg::kTailSplit) {
            if (!ts) return first_tile + n * grid;
            const int rounds = hp.whole_rounds;  // num_tiles / grid
            if (n < rounds) return first_tile + n * grid;
            const int pieces = hp.tail_pieces, rem = num_tiles - rounds * grid;
            // Multicast: the pairs (tiles 2i, 2i + 1; the host keeps tiles and grid even) are
            // cut instead, piece j of tail pair i going to cluster i·P + j, whose two CTAs
            // take the same key blocks of the pair's two tiles (tail_piece_slot agrees).
            const int unit = mc ? bx >> 1 : bx, units = mc ? rem >> 1 : rem;
            if (n > rounds || unit >= units * pieces) return num_tiles;
            const int j = unit % pieces;
            piece_lo = j * nb / pieces;
            piece_hi = (j + 1) * nb / pieces;
            return rounds * grid + (mc ? 2 * (unit / pieces) + mc_rank : unit / pieces);
        }
        const int head_rounds = sk ? hp.whole_rounds : 0;  // (num_tiles - sk_tail) / grid
        if (!sk || n < head_rounds) return first_tile + n * grid;
        const int units = hp.sk_tail * nb, u0 = bx * units / grid, u1 = (bx + 1) * units / grid;
        // The first piece starts at u0; the later ones at whole tiles.
        const int m = n - head_rounds, start = m == 0 ? u0 : (u0 / nb + m) * nb;
        if (start >= u1) return num_tiles;
        piece_lo = start % nb;
        piece_hi = min(nb, piece_lo + (u1 - start));
        return num_tiles - hp.sk_tail + start / nb;
    };

#ifdef FATTN_LAB_STAMPS
    __shared__ unsigned lab_launch;
    __shared__ unsigned long long lab_t0;
    if (threadIdx.x == 0) {
        lab_t0 = lab_now();
        lab_launch = atomicAdd(&g_lab_ctas, 1u) / gridDim.x;
        if (lab_launch == FATTN_LAB_STAMPS && blockIdx.x < kLabCtas) {
            g_lab_entry[blockIdx.x] = lab_t0;
            g_lab_smid[blockIdx.x] = fattn::lab_smid();
        }
    }
#endif
    if (threadIdx.x == 0) {
        // The descriptors' fetch overlaps the barriers' set-up (the producer's first TMA load
        // uses them right after).
        sm90::prefetch_tma_desc(&hp.tma_q);
        sm90::prefetch_tma_desc(&hp.tma_k);
        sm90::prefetch_tma_desc(&hp.tma_v);
#pragma unroll
        for (int b = 0; b < QB; ++b) {
            sm90::mbar_init(&bar_q[b], 1);
            // Every consumer warp arrives once it is done with the buffer (after its epilogue,
            // or after its tile's last Q·Kᵀ where O is not staged there).
            if constexpr (Cfg::kPersistent) sm90::mbar_init(&empty_q[b], Cfg::kConsumers * 4);
        }
#pragma unroll
        for (int s = 0; s < ST; ++s) {
            sm90::mbar_init(&full_k[s], 1);
            sm90::mbar_init(&full_v[s], 1);
            // Every consumer warp arrives once it is done with the stage (multicast: those of
            // both CTAs of the pair, whose producers both write into it).
            sm90::mbar_init(&empty_k[s], Cfg::kConsumers * 4 * (mc ? 2 : 1));
            sm90::mbar_init(&empty_v[s], Cfg::kConsumers * 4 * (mc && Cfg::kMulticastV ? 2 : 1));
        }
        // Cluster split, every rank: one arrival (here) and the partial bytes of its rows from
        // the other ranks with key blocks (one consumer's partial each) complete the phase.
        if (pair) sm90::mbar_init(pair_bar, 1);
        sm90::fence_barrier_init();
        if (pair) {
            const int sources = __popc(pair_members & ~(1u << pair_rank));
            sm90::mbar_arrive_expect_tx(pair_bar, sources * (Cfg::kPartialBytes / Cfg::kConsumers));
        }
    }
    __syncthreads();
    // Pair split: every thread arrives once, releasing this rank's initialized mbarrier to the
    // other ranks, and waits once before it exits (the consumers before they write into
    // another rank).
    if (pair) sm90::cluster_arrive();
    // Multicast: every thread of the pair meets here (both CTAs' barriers are set up before
    // either's TMA or consumers reach into the other) and again before it exits (neither CTA
    // leaves while the other may still write into its shared memory or arrive on its barriers).
    auto mc_sync = [&]() {
        if (mc) {
            sm90::cluster_arrive();
            sm90::cluster_wait();
        }
    };
    mc_sync();

    const int warp_group = threadIdx.x / 128;
    if (warp_group == 0) {
        // ---- producer ----
        sm90::setmaxnreg_dec<Cfg::kProducerRegs>();
        // Thread 0 issues every copy; persistent, its whole warp hands the tiles over (named
        // barriers take whole warps).
        if (threadIdx.x >= (kPersistent ? 32 : 1)) {
            if (pair) sm90::cluster_wait();
            mc_sync();
            return;
        }
        const bool leader = threadIdx.x == 0;
        FATTN_LAB_PHASE(3, 0, leader);
        // it0: key blocks loaded for earlier tiles (the ring's position); n: tiles so far.
        int it0 = 0;
        for (int tile = first_tile, n = 0;; ++n) {
            int piece_lo = 0, piece_hi = 0;
            if constexpr (kPersistent) {
                if ((Cfg::kStreamK || Cfg::kTailSplit) && !drawn) {
                    tile = strided_item(n, piece_lo, piece_hi);
                } else if (n > 0) {
                    int next = 0;
                    if (leader) next = next_tile(tile);
                    tile = __shfl_sync(0xffffffffu, next, 0);
                }
                if (drawn) {
                    // Every consumer warpgroup has read the previous tile from the slot.
                    if (n > 0) {
#pragma unroll
                        for (int c = 0; c < Cfg::kConsumers; ++c) sm90::named_barrier_sync(kSlotFreeBarrier + c, 160);
                    }
                    if (leader) atomicExch(tile_slot, tile);
                    __syncwarp();
#pragma unroll
                    for (int c = 0; c < Cfg::kConsumers; ++c) sm90::named_barrier_arrive(kSlotFullBarrier + c, 160);
                }
                if (tile >= num_tiles) break;  // the consumers see the end and stop
                if (n > 0 || sk) setup(tile);
                if (sk || ts) nb_begin = piece_lo, nb_end = piece_hi;
            } else {
                // One tile per CTA: nothing to load when it sees no key (its consumers write
                // zeros without waiting).
                if (n > 0 || nb_begin >= nb_end) break;
            }
            const int kvh = qb.head / p.kv_group;
            // Packed tensors are mapped as one batch of all rows: a sequence's rows start at its
            // cu_seqlens entry. Paged K/V are mapped as (blocks, page) with the block as the
            // batch coordinate (src/cuda/prefill_sm90.rs).
            const int q_row = kPacked ? span.q0 + qb.m0 : qb.m0;
            const int q_batch = kPacked ? 0 : qb.batch;
            const int32_t* table = kPacked ? block_table_row(p, qb.batch) : nullptr;
            // Key block nb of the K or V map into `dst` (a stage's tile), completing on `bar`:
            // one box of BN rows per 64-column panel; paged with pages shorter than a block,
            // BN / page boxes of one page each (the host takes such pages only when they divide
            // BN and hold whole 8-row swizzle atoms, so every box starts on a 1 KiB atom). The
            // last block's pages past the sequence's keys repeat its last page: rows that are
            // masked, and whose V the consumers zero.
            auto load_kv = [&](uint8_t* dst, const auto* map, uint64_t* bar, int nb, bool multi) {
                const int n0 = nb * BN;
                if (!kPacked || table == nullptr) {
                    const int row = kPacked ? span.k0 + n0 : n0;
                    const int batch = kPacked ? 0 : qb.batch;
                    // Multicast: this rank's half of the panels, into both CTAs of the pair.
#pragma unroll
                    for (int c = 0; c < Cfg::kLoadPanels; ++c) {
                        if (!multi) {
                            sm90::tma_load_4d(dst + c * BN * 128, map, bar, c * 64, row, kvh, batch);
                        } else if (c / (Cfg::kPanels / 2) == mc_rank) {
                            sm90::tma_load_4d_multicast(dst + c * BN * 128, map, bar, c * 64, row, kvh, batch, 0x3);
                        }
                    }
                } else if (p.page_block_size >= BN) {
                    const int page = n0 / p.page_block_size;
                    const int blk = table[page];
#pragma unroll
                    for (int c = 0; c < Cfg::kLoadPanels; ++c)
                        sm90::tma_load_4d(dst + c * BN * 128, map, bar, c * 64, n0 - page * p.page_block_size, kvh, blk);
                } else {
                    const int pg = p.page_block_size, last_page = (msk.len_k - 1) / pg;
                    for (int j = 0; j < BN / pg; ++j) {
                        const int blk = table[min(n0 / pg + j, last_page)];
#pragma unroll
                        for (int c = 0; c < Cfg::kLoadPanels; ++c)
                            sm90::tma_load_4d(dst + c * BN * 128 + j * pg * 128, map, bar, c * 64, 0, kvh, blk);
                    }
                }
            };
            // Tile n's Q goes to buffer n % QB, its (n / QB)-th use.
            const int b = kPersistent ? n % QB : 0;
            uint8_t* const sQ = sQ0 + b * Cfg::kQBytes;
            if (leader) {
                // Persistent: buffer b is free once every consumer warp is done with its
                // previous use (tile n - QB).
                if (kPersistent && n >= QB) sm90::mbar_wait_idle(&empty_q[b], ((n / QB) - 1) & 1);
                FATTN_LAB_ITEM_PHASE(3, 1, true);
                sm90::mbar_arrive_expect_tx(&bar_q[b], Cfg::kQBytes);
#pragma unroll
                for (int c = 0; c < Cfg::kPanels; ++c)
                    sm90::tma_load_4d(sQ + c * BM * 128, &hp.tma_q, &bar_q[b], c * 64, q_row, qb.head, q_batch);
                FATTN_LAB_ITEM_PHASE(3, 2, true);
                for (int nb = nb_begin; nb < nb_end; ++nb) {
                    const int it = it0 + nb - nb_begin, st = it % ST;
                    const uint32_t phase = (it / ST) & 1;
                    // A stage is free again once the consumers released its previous use.
                    if (it >= ST) mc ? sm90::mbar_wait_idle<true>(&empty_k[st], phase ^ 1) : sm90::mbar_wait_idle(&empty_k[st], phase ^ 1);
                    sm90::mbar_arrive_expect_tx(&full_k[st], Cfg::kKVLoadBytes);
                    load_kv(sK + st * Cfg::kKVBytes, &hp.tma_k, &full_k[st], nb, mc);
                    if (it >= ST) mc ? sm90::mbar_wait_idle<true>(&empty_v[st], phase ^ 1) : sm90::mbar_wait_idle(&empty_v[st], phase ^ 1);
                    sm90::mbar_arrive_expect_tx(&full_v[st], Cfg::kKVLoadBytes);
                    load_kv(sV + st * Cfg::kKVBytes, &hp.tma_v, &full_v[st], nb, mc && Cfg::kMulticastV);
                }
                FATTN_LAB_ITEM_PHASE(3, 3, true);
                it0 += nb_end - nb_begin;
            }
            // Persistent: the warp meets again before the next tile's hand-over.
            if constexpr (kPersistent) __syncwarp();
        }
        if (pair) sm90::cluster_wait();
        mc_sync();
        return;
    }

    // ---- consumers ----
    sm90::setmaxnreg_inc<Cfg::kConsumerRegs>();
    const int cw = warp_group - 1;
    const int tid = threadIdx.x % 128, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    FATTN_LAB_PHASE(cw, 0, tid == 0);
    // A `_mods` instance also runs plain problems (small grids, src/cuda/prefill_sm90.rs): then
    // it takes the plain instances' arithmetic, so that a row's result does not depend on which
    // instance ran it (block-uniform). Large scales take the scaled scores (params.cuh).
    const bool mods_on = kMods && (p.softcap > 0.f || p.alibi_slopes != nullptr || !(p.scale > 0.f) ||
                                   p.scale_log2 > kFattnPrescaleAboveLog2);
    const float exp_scale = mods_on ? 1.f : p.scale_log2;

    // Per tile: this warp's 16 rows and this thread's two of them (row0, row0 + 8); the
    // head's ALiBi slope; this warpgroup's 64 rows in the tile's Q buffer (first panel; panel
    // c is BM · 128 bytes further).
    int warp_row0 = 0, row0 = 0;
    // The key blocks this warp's 16 rows see whole (no mask), set per tile.
    BlockSpan warp_visible{};
    float alibi_log2 = 0.f;
    uint32_t q_tile = 0;
    // kQInRegs: this warp's 16 Q rows as wgmma A fragments, per 16-column step.
    uint32_t qf[Cfg::kQInRegs ? D / 16 : 1][4];

    float o[D / 2];
    float row_max[2];
    float row_sum[2];  // this thread's partial sums; the quad reduces them at the end

    // S = Q Kᵀ of the key block in stage `st`, issued (not waited for): D/16 k-steps; a step
    // is 32 bytes into the 128-byte rows of a panel.
    // Q·Kᵀ at width N into `acc` (N / 2 floats), Q from registers (kQInRegs) or shared memory.
    auto issue_qk_n = [&](auto& acc, int st, auto width) {
        constexpr int N = decltype(width)::value;
        if constexpr (Cfg::kQInRegs) {
            issue_qk_width<Cfg, E, N>(acc, qf, smem_addr(sK) + st * Cfg::kKVBytes);
        } else {
            issue_qk_width<Cfg, E, N>(acc, q_tile, smem_addr(sK) + st * Cfg::kKVBytes);
        }
    };
    auto issue_qk = [&](float(&s)[BN / 2], int st) { issue_qk_n(s, st, std::integral_constant<int, BN>{}); };
    // The trimmed width (`trim_last`): 64 keys where the block is wider. One width, one extra
    // copy of the loop's step per instance: a second width (128 of the wide instance's 176)
    // took fwd_sm90's compile from ~39 to ~61 s, for tiles that the wide rule rarely sends
    // there (its last block holds 65-128 keys).
    // Not in the `_mods` instances (softcap, ALiBi): their copy of the step is the largest
    // (the score modifiers), and fwd_sm90's compile time is issue 14's bar too.
    constexpr int kTrimA = kMods ? BN : 64;
    constexpr int kWidthA = kTrimA < BN ? kTrimA : BN;
    // O += P V with V in stage `st`, issued: BN/16 k-steps of 16 keys (2048 bytes of V's
    // panels each); V is MN-major: 8-key atoms 1024 bytes apart (sbo), 64-column panels
    // BN · 128 bytes apart (lbo).
    // `steps` < BN / 16: only the first steps · 16 keys (`trim_last`; the rest have P = 0).
    auto issue_pv = [&](const uint32_t(&pf)[BN / 16][4], int st, int steps = Cfg::kBlockN / 16) {
        const uint32_t v_tile = smem_addr(sV) + st * Cfg::kKVBytes;
        const uint64_t b0 = sm90::desc_sw128(v_tile, BN * 128, 1024);
#pragma unroll
        for (int kk = 0; kk < BN / 16; ++kk) {
            if (kk >= steps) break;
            const uint64_t b = Cfg::kStepDescriptors ? b0 + static_cast<uint64_t>((kk * 16 * 128) >> 4)
                                                     : sm90::desc_sw128(v_tile + kk * 16 * 128, BN * 128, 1024);
            sm90::Wgmma<E, D>::rs(o, pf[kk], b, 1);
        }
        sm90::wgmma_commit();
    };
    // Scores of key block nb in place: `_mods` instances turn the dot products into log2-unit
    // scores, the plain ones keep raw dot products and fold the (positive) scale into exp2;
    // mask arithmetic only on blocks that some row of this warp sees partially. Then the
    // online softmax: new row max, the rescale factor of O and the running sums, and
    // P = exp2(scale·(x - max)) in place.
    auto softmax = [&](float(&s)[BN / 2], int nb, float(&corr)[2]) {
        const int n0 = nb * BN;
        if (mods_on) {
#pragma unroll
            for (int j = 0; j < BN / 8; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int row = row0 + (e / 2) * 8, key = n0 + 8 * j + 2 * t + e % 2;
                    s[4 * j + e] = kPacked ? score_log2_diag(p, s[4 * j + e], alibi_log2, msk.diag(row), key)
                                           : score_log2(p, s[4 * j + e], alibi_log2, row, key);
                }
        }
        if (!warp_visible.contains(nb)) {
#pragma unroll
            for (int hf = 0; hf < 2; ++hf) {
                const KeyRange rk = row_keys(row0 + hf * 8);
                if (rk.lo <= n0) {
                    // The row sees from before the block (causal masks, a window's right
                    // edge): only the upper bound cuts it, one compare per score.
                    const int lim = rk.hi - n0 - 2 * t;  // key < hi <=> 8j + e < lim
#pragma unroll
                    for (int j = 0; j < BN / 8; ++j)
#pragma unroll
                        for (int e = 0; e < 2; ++e)
                            if (8 * j + e >= lim) s[4 * j + 2 * hf + e] = kNegInf;
                } else {
#pragma unroll
                    for (int j = 0; j < BN / 8; ++j)
#pragma unroll
                        for (int e = 0; e < 2; ++e)
                            if (!rk.contains(n0 + 8 * j + 2 * t + e)) s[4 * j + 2 * hf + e] = kNegInf;
                }
            }
        }
#pragma unroll
        for (int hf = 0; hf < 2; ++hf) {
            float mx = row_max[hf];
#pragma unroll
            for (int j = 0; j < BN / 8; ++j) mx = fmaxf(mx, fmaxf(s[4 * j + 2 * hf], s[4 * j + 2 * hf + 1]));
            mx = quad_max(mx);
            // Conditional rescale: the row keeps its running max unless this block raises it
            // by more than kStaleMaxLog2 (log2 units), so that P stays below 2^kStaleMaxLog2
            // and corr is exactly 1 (O and the sum need no rescale, and the warp skips it
            // when all its rows keep theirs). A row with nothing visible yet keeps max -inf;
            // subtract 0 so exp2 gives 0, not NaN.
            const float old = row_max[hf];
            float base;
            if (Cfg::kConditionalRescale && old != kNegInf && (mx - old) * exp_scale <= kStaleMaxLog2) {
                base = old * exp_scale;
                corr[hf] = 1.f;
            } else {
                base = mx == kNegInf ? 0.f : mx * exp_scale;
                corr[hf] = exp2_approx(fmaf(old, exp_scale, -base));
                row_max[hf] = mx;
            }
            float sum = 0.f;
#pragma unroll
            for (int j = 0; j < BN / 8; ++j) {
                s[4 * j + 2 * hf] = exp2_approx(fmaf(s[4 * j + 2 * hf], exp_scale, -base));
                s[4 * j + 2 * hf + 1] = exp2_approx(fmaf(s[4 * j + 2 * hf + 1], exp_scale, -base));
                sum += s[4 * j + 2 * hf] + s[4 * j + 2 * hf + 1];
            }
            row_sum[hf] = row_sum[hf] * corr[hf] + sum;
        }
    };
    // P as wgmma A fragments: the S accumulators of key columns 16kk..16kk+15 are k-step kk.
    auto to_fragments = [&](const float(&s)[BN / 2], uint32_t(&pf)[BN / 16][4]) {
#pragma unroll
        for (int kk = 0; kk < BN / 16; ++kk) {
            pf[kk][0] = E::pack(s[8 * kk + 0], s[8 * kk + 1]);
            pf[kk][1] = E::pack(s[8 * kk + 2], s[8 * kk + 3]);
            pf[kk][2] = E::pack(s[8 * kk + 4], s[8 * kk + 5]);
            pf[kk][3] = E::pack(s[8 * kk + 6], s[8 * kk + 7]);
        }
    };
    auto rescale_o = [&](const float(&corr)[2]) {
#pragma unroll
        for (int j = 0; j < D / 8; ++j) {
            o[4 * j + 0] *= corr[0];
            o[4 * j + 1] *= corr[0];
            o[4 * j + 2] *= corr[1];
            o[4 * j + 3] *= corr[1];
        }
    };
    // Keeps the P fragments in their registers until the PV wgmma reading them has completed
    // (the compiler would otherwise reuse them as soon as the wgmma is issued).
    auto keep_fragments = [&](uint32_t(&pf)[BN / 16][4]) {
#pragma unroll
        for (int kk = 0; kk < BN / 16; ++kk) sm90::fence_regs(pf[kk]);
    };
    auto release = [&](uint64_t* bar) {
        __syncwarp();
        if (lane == 0) sm90::mbar_arrive(bar);
    };
    // A K or V stage: multicast, the other CTA of the pair refills it in this CTA too.
    auto release_kv = [&](uint64_t* bar) {
        __syncwarp();
        if (lane == 0) {
            sm90::mbar_arrive(bar);
            if (mc) sm90::mbar_arrive_remote(bar, static_cast<uint32_t>(mc_rank ^ 1));
        }
    };
    auto release_v = [&](uint64_t* bar) {
        if constexpr (Cfg::kMulticastV) {
            release_kv(bar);
        } else {
            release(bar);
        }
    };

    // The loop overlaps each block's softmax with the previous block's P·V: block i's S is
    // issued, then block i-1's P·V; the softmax of block i runs as soon as its S is done,
    // while the tensor cores work on P·V.
    // That is the source's order. In the SASS (session 63, ptxas of CUDA 13.0) the wait for
    // the P·V (WARPGROUP.DEPBAR.LE gsb0, 0x0) sits above the softmax's row max and exponentials
    // in every instance, so a consumer's softmax runs under the other consumer's GEMMs only.
    // Ways round it (lab/README.md, session 63): the wait after the next turn barrier let
    // ptxas reuse the running P·V's A registers across the loop's back edge (wrong results;
    // lab/tools/wgmma_hazards.py finds such writes in a cubin); keeping them live by a select
    // serialized the 64-key instances' wgmma (C7513); P packed into registers of its own
    // serialized every wgmma; two P buffers with the wait inside a two-block trip compiled
    // clean where they fit (d96, d192, `_mods`) but ran 3-7% slower on the H200.
    // Ping-pong: consumer c issues a turn's GEMMs once consumer c - 1 (round robin) has issued
    // its own, then lets consumer c + 1 go. Every consumer takes the same number of turns (one
    // per key block, plus the last P·V); the last consumer's arrival opens the first turn. The
    // final turn's arrival is left pending at exit (it blocks nobody).
    auto my_turn = [&]() {
        if constexpr (Cfg::kPingPong) sm90::named_barrier_sync(kTurnBarrier + cw, 256);
    };
    auto next_turn = [&]() {
        if constexpr (Cfg::kPingPong) sm90::named_barrier_arrive(kTurnBarrier + (cw + 1) % Cfg::kConsumers, 256);
    };
    // The output's TMA store (dense, staged; FattnHopperParams::o_tma, block-uniform): thread 0
    // of each consumer warpgroup stores its staged rows. In a persistent loop every warp of the
    // warpgroup then releases that tile's Q buffer only in the next tile, after its first Q·Kᵀ
    // (or at once when it has no key), thread 0 once the store has read the buffer:
    // `release_stored_q(n)`, called exactly once per tile, releases tile n - 1's buffer. Every
    // tile of the loop ends in the staged epilogue, so no other state is needed. Every warp
    // takes the same path: session 33's version deferred warp 0's release only, and that
    // warp-dependent branch ahead of the key loop moved the loop's ring and descriptor
    // arithmetic off the uniform datapath (953 -> 1 027 SASS in the d128 loop, the d128 rows
    // 2.7-3.7% slower, calls 4-5).
    // Not in the plain d64 instance (three consumers at 128 registers): there the store's code
    // took its spills from 8 to 20 bytes and its rows 8% slower (session 33, call 3).
    constexpr bool kTmaStoreO = !kPacked && kStageO && Cfg::kConsumers < 3;
    // Tile n's Q load waits for the release of tile n - QB's buffer, which the deferral moves
    // into tile n - QB + 1: with one buffer that is tile n itself, which waits for its Q.
    static_assert(!kTmaStoreO || !kPersistent || QB >= 2, "the deferred Q release needs two Q buffers");
    auto o_tma = [&]() { return kTmaStoreO && hp.o_tma != 0; };
    auto release_stored_q = [&](int n) {
        if (kPersistent && o_tma() && n > 0) {
            if (tid == 0) sm90::bulk_wait_group_read<0>();
            release(&empty_q[(n - 1) % QB]);
        }
    };
    int tile_it0 = 0;  // key blocks of earlier tiles: the ring's position
    // Ping-pong: the last consumer's arrival opens the first turn, once per CTA (the turns
    // go on round robin from tile to tile: every consumer takes the same number per tile).
    bool turns_open = false;
    for (int n = 0, tile = first_tile;; ++n) {
        const int b = kPersistent ? n % QB : 0;
        FATTN_LAB_ITEM_PHASE(cw, 16, tid == 0);
        if constexpr (kPersistent) {
            // The tile (or the end): drawn, the producer warp names it; else the stride.
            if (drawn) {
                sm90::named_barrier_sync(kSlotFullBarrier + cw, 160);
                tile = __shfl_sync(0xffffffffu, lane == 0 ? atomicAdd(tile_slot, 0) : 0, 0);
                if (tile < num_tiles) sm90::named_barrier_arrive(kSlotFreeBarrier + cw, 160);
            } else if constexpr (Cfg::kStreamK || Cfg::kTailSplit) {
                int piece_lo, piece_hi;
                tile = strided_item(n, piece_lo, piece_hi);
                if (tile >= num_tiles) break;
                if (n > 0 || sk) setup(tile);
                if (sk || ts) nb_begin = piece_lo, nb_end = piece_hi;
            } else if (n > 0) {
                tile += static_cast<int>(gridDim.x);
            }
            if (tile >= num_tiles) break;
            if ((drawn || !(Cfg::kStreamK || Cfg::kTailSplit)) && n > 0) setup(tile);
            FATTN_LAB_ITEM_PHASE(cw, 17, tid == 0);
            // Q of this tile in buffer b.
            sm90::mbar_wait(&bar_q[b], (n / QB) & 1);
        } else if (n > 0) {
            break;
        }
#ifdef FATTN_LAB_STAMPS
        const unsigned long long lab_item = lab_now();
        auto lab_end = [&]() {
            if (lab_launch == FATTN_LAB_STAMPS && tid == 0 && blockIdx.x < kLabCtas && n < kLabItems) {
                unsigned long long* st = g_lab_stamps + ((blockIdx.x * 3 + cw) * kLabItems + n) * 4;
                st[0] = static_cast<unsigned long long>(tile);
                st[1] = static_cast<unsigned long long>(nb_begin) | (static_cast<unsigned long long>(nb_end) << 16);
                st[2] = lab_item - lab_t0;
                st[3] = lab_now() - lab_t0;
            }
        };
#else
        auto lab_end = []() {};
#endif
        uint8_t* const sQ = sQ0 + b * Cfg::kQBytes;
        warp_row0 = qb.m0 + cw * 64 + warp * 16;
        row0 = warp_row0 + g;
        warp_visible = fully_visible_blocks(kPacked ? msk.len_k : p.seq_k, row_keys(warp_row0), row_keys(warp_row0 + 15), BN);
        if (kMods && p.alibi_slopes != nullptr) alibi_log2 = p.alibi_slopes[qb.batch * p.heads + qb.head] * CUDART_L2E_F;
        q_tile = smem_addr(sQ) + cw * 64 * 128;
#pragma unroll
        for (int j = 0; j < D / 2; ++j) o[j] = 0.f;
        row_max[0] = row_max[1] = kNegInf;
        row_sum[0] = row_sum[1] = 0.f;
        const int it0 = tile_it0;
        if (nb_begin < nb_end) {
            if (!turns_open) {
                if (cw == Cfg::kConsumers - 1) next_turn();
                turns_open = true;
            }
            FATTN_LAB_ITEM_PHASE(cw, 1, tid == 0);
            if constexpr (!kPersistent) sm90::mbar_wait(&bar_q[b], 0);
            if constexpr (Cfg::kQInRegs) {
                // One ldmatrix .x4 per 16-column step: matrices 0-3 are rows 0-7 / 8-15 of this
                // warp's 16 at the step's first / second 16-byte chunk (the A fragment's a0-a3);
                // lane L gives row (L % 8) + 8 ((L / 8) % 2) at chunk L / 16, in the 128-byte
                // swizzle (chunk c of row r at (c ^ r % 8) · 16), as the epilogue's stmatrix.
                const int r = cw * 64 + warp * 16 + (lane % 8) + 8 * ((lane / 8) % 2);
                const uint32_t row_addr = smem_addr(sQ) + r * 128;
#pragma unroll
                for (int kk = 0; kk < D / 16; ++kk) {
                    const int chunk = 2 * (kk % 4) + lane / 16;
                    ldmatrix_x4(qf[kk], row_addr + (kk / 4) * BM * 128 + ((chunk ^ (r % 8)) * 16));
                }
            }
            FATTN_LAB_ITEM_PHASE(cw, 2, tid == 0);
            float s[BN / 2];
            uint32_t pf[BN / 16][4];
            float corr[2];
            // `trim_last`: the block that holds the tile's last visible key (trim_at; -1 when
            // that key lies in the block's last 16-key step, or the switch is off) runs P·V
            // over its steps up to that key (the rest have P = 0), and Q·Kᵀ at kTrimA keys
            // where those hold it (qk_trim_at; the scores past them are -inf, as the mask
            // would make them: their keys lie past every row's range). Block-uniform.
            const int last_nb = (tile_hi - 1) / BN, last_keys = tile_hi - last_nb * BN;
            const int trim_steps = (last_keys + 15) / 16;
            const int trim_at = hp.trim_last != 0 && trim_steps < BN / 16 ? last_nb : -1;
            const int trim_width = kTrimA < BN && last_keys <= kTrimA ? kTrimA : BN;
            const int qk_trim_at = trim_width < BN ? trim_at : -1;
            const int st0 = it0 % ST;
            sm90::mbar_wait(&full_k[st0], (it0 / ST) & 1);
            FATTN_LAB_ITEM_PHASE(cw, 3, tid == 0);
            my_turn();
            sm90::wgmma_fence();
            issue_qk(s, st0);
            next_turn();
            sm90::wgmma_wait<0>();
            sm90::fence_regs(s);
            FATTN_LAB_ITEM_PHASE(cw, 4, tid == 0);
            release_stored_q(n);
            release_kv(&empty_k[st0]);
            if (!kStageO && nb_begin + 1 == nb_end) release(&empty_q[b]);  // Q's last reader
            softmax(s, nb_begin, corr);  // O is still zero: nothing to rescale
            to_fragments(s, pf);
            FATTN_LAB_ITEM_PHASE(cw, 5, tid == 0);
            // One key block nb > nb_begin: its Q·Kᵀ (trimmed: at trim_width) with block nb - 1's
            // P·V, then its softmax. The loop runs the blocks at full width; the trimmed block
            // (always the last) runs after it, so that the loop's code is the untrimmed one.
            auto step = [&](int nb, auto width) {
                constexpr int N = decltype(width)::value;  // BN, or a trimmed width
                const int it = it0 + nb - nb_begin, st = it % ST, prev = (it - 1) % ST;
                const uint32_t phase = (it / ST) & 1, prev_phase = ((it - 1) / ST) & 1;
                sm90::mbar_wait(&full_k[st], phase);
                sm90::mbar_wait(&full_v[prev], prev_phase);
                my_turn();
                sm90::wgmma_fence();
                // A trimmed Q·Kᵀ accumulates into registers of its own, copied into s once it is
                // done: ptxas serializes every wgmma of the kernel when a register of an
                // accumulator may be defined otherwise inside a wgmma's pipeline stage (the
                // untouched part of s would be, at the merge of the paths).
                float t[N < BN ? N / 2 : 1];
                if constexpr (N < BN) {
                    issue_qk_n(t, st, width);
                } else {
                    issue_qk(s, st);
                }
                issue_pv(pf, prev);
                next_turn();
                sm90::wgmma_wait<1>();
                if constexpr (N < BN) {
                    sm90::fence_regs(t);
#pragma unroll
                    for (int j = 0; j < N / 2; ++j) s[j] = t[j];
#pragma unroll
                    for (int j = N / 2; j < BN / 2; ++j) s[j] = kNegInf;
                } else {
                    sm90::fence_regs(s);
                }
                release_kv(&empty_k[st]);
                if (!kStageO && nb + 1 == nb_end) release(&empty_q[b]);  // Q's last reader
                softmax(s, nb, corr);
                sm90::wgmma_wait<0>();
                sm90::fence_regs(o);
                keep_fragments(pf);
                release_v(&empty_v[prev]);
                // x · 1 is x: a warp whose rows all kept their max skips the rescale.
                if (!Cfg::kConditionalRescale || __any_sync(0xffffffffu, corr[0] != 1.f || corr[1] != 1.f))
                    rescale_o(corr);
                to_fragments(s, pf);
            };
            const bool trim_tail = kTrimA < BN && qk_trim_at == nb_end - 1 && qk_trim_at > nb_begin;
            const int loop_end = trim_tail ? nb_end - 1 : nb_end;
            for (int nb = nb_begin + 1; nb < loop_end; ++nb) step(nb, std::integral_constant<int, BN>{});
            if constexpr (kTrimA < BN) {
                if (trim_tail) step(nb_end - 1, std::integral_constant<int, kWidthA>{});
            }
            const int last = it0 + nb_end - 1 - nb_begin;
            FATTN_LAB_ITEM_PHASE(cw, 6, tid == 0);
            sm90::mbar_wait(&full_v[last % ST], (last / ST) & 1);
            FATTN_LAB_ITEM_PHASE(cw, 7, tid == 0);
            if constexpr (kPacked) {
                // The last block's rows past the sequence's keys are the next sequence's (packed)
                // or whatever the page holds (paged): their scores are masked to P = 0, but 0 · NaN
                // or 0 · inf in P·V would still reach this sequence's rows. The consumers zero them
                // (as the dense maps' out-of-bounds fill does) before either reads the stage.
                const int valid = msk.len_k - (nb_end - 1) * BN;
                if (valid < BN) {
                    uint8_t* const v_tile = sV + (last % ST) * Cfg::kKVBytes;
                    const int ctid = cw * 128 + tid;
                    constexpr int kRowChunks = Cfg::kPanels * 8;  // 16-byte chunks of a key row
                    for (int i = ctid; i < (BN - valid) * kRowChunks; i += Cfg::kConsumers * 128) {
                        const int r = valid + i / kRowChunks, c = i % kRowChunks;
                        *reinterpret_cast<uint4*>(v_tile + (c / 8) * BN * 128 + r * 128 + (c % 8) * 16) =
                            make_uint4(0u, 0u, 0u, 0u);
                    }
                    // Generic-proxy writes that wgmma (the async proxy) reads next.
                    sm90::fence_proxy_async();
                    sm90::named_barrier_sync(kTailBarrier, Cfg::kConsumers * 128);
                }
            }
            // After the zeroing's barrier, which every consumer reaches without a turn.
            my_turn();
            sm90::wgmma_fence();
            if (nb_end - 1 == trim_at) {
                issue_pv(pf, last % ST, trim_steps);
            } else {
                issue_pv(pf, last % ST);
            }
            next_turn();
            sm90::wgmma_wait<0>();
            sm90::fence_regs(o);
            keep_fragments(pf);
            FATTN_LAB_ITEM_PHASE(cw, 8, tid == 0);
            release_v(&empty_v[last % ST]);
        } else if (!kStageO) {
            release(&empty_q[b]);  // no key: Q is not read
        } else {
            release_stored_q(n);
        }
        if constexpr (Cfg::kPairSplit) {
            if (pair) {
                // Every thread of the cluster arrived at the start: every rank's mbarrier is set
                // up. Consumer c's rows are stored by rank c (kConsumers == kSplitMax, and the
                // host launches pairs only): the other ranks send this consumer's partial there,
                // so that each rank sends and merges one consumer's rows instead of rank 0
                // receiving and merging all of them (session 29, lab stamps: the exchange of a
                // whole tile's partials took 1.5-1.8 µs of a ~10 µs CTA).
                const int owner = cw;
                if (owner != pair_rank) {
                    // This share's partial into the owner's slot for this rank (the ranks other
                    // than the owner, in order), in thread order (float4-coalesced): O
                    // unnormalized, then both rows' max and this thread's partial sums.
                    if (nb_begin < nb_end) {
                        const int slot = pair_rank < owner ? pair_rank : pair_rank - 1;
                        const uint32_t bar = sm90::map_to_rank(smem_addr(pair_bar), owner);
                        const uint32_t dst = sm90::map_to_rank(
                            smem_addr(pair_part + (slot * Cfg::kConsumers + cw) * Cfg::kPairFloat4s * 128 + tid), owner);
#pragma unroll
                        for (int j = 0; j < D / 8; ++j)
                            sm90::st_async_v4(dst + j * 128 * 16, o[4 * j], o[4 * j + 1], o[4 * j + 2], o[4 * j + 3], bar);
                        sm90::st_async_v4(dst + (D / 8) * 128 * 16, row_max[0], row_max[1], row_sum[0], row_sum[1], bar);
                    }
                    FATTN_LAB_ITEM_PHASE(cw, 9, tid == 0);
                    return;  // the owner stores these rows
                }
                const unsigned sources = pair_members & ~(1u << pair_rank);
                if (sources != 0u) {
                    // Every other share's partial of these rows has landed: merged in rank order
                    // (fixed bits: a row's result does not depend on which rank stores it), as
                    // the stream-K merge does for two. With two ranks: rank 0's terms are the
                    // product kept exact in the fma, rank 1's the rounded one.
                    sm90::mbar_wait(pair_bar, 0);
                    FATTN_LAB_ITEM_PHASE(cw, 9, tid == 0);
                    for (int r = 0; r < ranks; ++r) {
                        if (!(sources >> r & 1u)) continue;
                        const bool src_first = r < pair_rank;
                        const float4* const src =
                            pair_part + ((src_first ? r : r - 1) * Cfg::kConsumers + cw) * Cfg::kPairFloat4s * 128 + tid;
                        const float4 ml = src[(D / 8) * 128];
                        const float m_tail[2] = {ml.x, ml.y}, l_tail[2] = {ml.z, ml.w};
                        float fh[2], ft[2];
#pragma unroll
                        for (int hf = 0; hf < 2; ++hf) {
                            const float mx = fmaxf(row_max[hf], m_tail[hf]);
                            const float base = mx == kNegInf ? 0.f : mx * exp_scale;
                            fh[hf] = exp2f(fmaf(row_max[hf], exp_scale, -base));
                            ft[hf] = exp2f(fmaf(m_tail[hf], exp_scale, -base));
                            row_max[hf] = mx;
                            row_sum[hf] = src_first ? __fmaf_rn(l_tail[hf], ft[hf], __fmul_rn(row_sum[hf], fh[hf]))
                                                    : __fmaf_rn(row_sum[hf], fh[hf], __fmul_rn(l_tail[hf], ft[hf]));
                        }
#pragma unroll
                        for (int j = 0; j < D / 8; ++j) {
                            const float4 x = src[j * 128];
                            const float xs[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
                            for (int e = 0; e < 4; ++e)
                                o[4 * j + e] = src_first ? __fmaf_rn(xs[e], ft[e / 2], __fmul_rn(o[4 * j + e], fh[e / 2]))
                                                         : __fmaf_rn(o[4 * j + e], fh[e / 2], __fmul_rn(xs[e], ft[e / 2]));
                        }
                    }
                }
            }
        }

        // False for the first-in piece of a split tile (stream-K): the other piece stores it.
        // Only stores depend on it, never the loop's control flow, so that the loop's ring
        // and descriptor arithmetic stays on the uniform datapath (session 16's first version
        // `continue`d here and every key loop got 5-8% slower).
        bool store_tile = true;
        if constexpr (kPersistent) {
            // A strided grid's item covers [nb_begin, nb_end) of [0, nb_all) (unmasked).
            if (sk && (nb_begin > 0 || nb_end < nb_all())) {
                // A piece of a split tile (the stream-K tail above): this warpgroup's partial
                // (O unnormalized, thread-fragment order, float4-coalesced; each row's max and
                // sum) goes to its slot; the warpgroup that brings the tile's count to two
                // merges the two pieces in a fixed order (the head piece's terms first), so
                // that the bits do not depend on which arrived first, and stores the tile.
                constexpr int kSlotFloats = 64 * D + 128;
                const int bx = static_cast<int>(blockIdx.x);
                const bool tail_piece = nb_begin > 0;  // the tile's later key blocks
                const int mine = tail_piece ? 2 * bx : 2 * bx + 1;
                const int other = tail_piece ? 2 * bx - 1 : 2 * bx + 2;
                const int split = tail_piece ? bx - 1 : bx;
                float* const part = hp.sk_partial + static_cast<int64_t>(mine * Cfg::kConsumers + cw) * kSlotFloats;
                float l[2];
#pragma unroll
                for (int hf = 0; hf < 2; ++hf) l[hf] = quad_sum(row_sum[hf]);
#pragma unroll
                for (int j = 0; j < D / 8; ++j)
                    reinterpret_cast<float4*>(part)[j * 128 + tid] = make_float4(o[4 * j], o[4 * j + 1], o[4 * j + 2], o[4 * j + 3]);
                if (t == 0) {
#pragma unroll
                    for (int hf = 0; hf < 2; ++hf)
                        reinterpret_cast<float2*>(part + 64 * D)[warp * 16 + g + 8 * hf] = make_float2(row_max[hf], l[hf]);
                }
                __shared__ unsigned sk_arrived[Cfg::kConsumers];
                __threadfence();  // this thread's partial is visible on the device...
                sm90::named_barrier_sync(1 + cw, 128);  // ...for every thread of the warpgroup
                if (tid == 0) {
                    unsigned* const flag = hp.sk_flags + split * Cfg::kConsumers + cw;
                    const unsigned arrived = atomicAdd(flag, 1u);
                    if (arrived == 1u) *flag = 0u;  // both pieces in: zero for the next launch
                    sk_arrived[cw] = arrived;
                }
                sm90::named_barrier_sync(1 + cw, 128);
                // Lane 0's read, broadcast: warp-uniform.
                store_tile = __shfl_sync(0xffffffffu, sk_arrived[cw], 0) != 0u;
                if (store_tile) {
                    __threadfence();  // the other piece's partial, published before its arrival
                    const float* const op =
                        hp.sk_partial + static_cast<int64_t>(other * Cfg::kConsumers + cw) * kSlotFloats;
                    float fh[2], ft[2];
#pragma unroll
                    for (int hf = 0; hf < 2; ++hf) {
                        const float2 ml = __ldcg(reinterpret_cast<const float2*>(op + 64 * D) + warp * 16 + g + 8 * hf);
                        const float m_head = tail_piece ? ml.x : row_max[hf], m_tail = tail_piece ? row_max[hf] : ml.x;
                        const float l_head = tail_piece ? ml.y : l[hf], l_tail = tail_piece ? l[hf] : ml.y;
                        const float mx = fmaxf(m_head, m_tail);
                        const float base = mx == kNegInf ? 0.f : mx * exp_scale;
                        fh[hf] = exp2f(fmaf(m_head, exp_scale, -base));
                        ft[hf] = exp2f(fmaf(m_tail, exp_scale, -base));
                        row_max[hf] = mx;
                        // The epilogue's quad sum adds three zeros.
                        row_sum[hf] = t == 0 ? __fmaf_rn(l_head, fh[hf], __fmul_rn(l_tail, ft[hf])) : 0.f;
                    }
#pragma unroll
                    for (int j = 0; j < D / 8; ++j) {
                        const float4 x = __ldcg(reinterpret_cast<const float4*>(op) + j * 128 + tid);
                        const float xs[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
                        for (int e = 0; e < 4; ++e) {
                            const float head = tail_piece ? xs[e] : o[4 * j + e], tail = tail_piece ? o[4 * j + e] : xs[e];
                            o[4 * j + e] = __fmaf_rn(head, fh[e / 2], __fmul_rn(tail, ft[e / 2]));
                        }
                    }
                }
            }
        }
        if constexpr (kPersistent && Cfg::kTailSplit) {
            // A piece of a tail tile (the tail split above): this warpgroup's partial (per
            // thread: O unnormalized, both rows' max and partial sums; float4-coalesced) goes
            // to the block's slot; the warpgroup that brings the tile's count to P merges
            // every piece's partial in piece order (its own too, from its slot), so that the
            // bits do not depend on the order of arrival, and stores the tile.
            if (ts && (nb_begin > 0 || nb_end < nb_all())) {
                constexpr int kF4 = D / 8 + 1;  // float4 per thread of a slot
                // This piece's slot, tail tile · P + piece (strided_item's mapping: block bx is
                // piece bx % P of tail tile bx / P; multicast, cluster bx / 2 is piece
                // (bx / 2) % P of tail tiles 2 ((bx / 2) / P) and the next).
                const int pieces = hp.tail_pieces, bx = static_cast<int>(blockIdx.x);
                const int tail_tile = tile - hp.whole_rounds * static_cast<int>(gridDim.x);
                const int piece = (mc ? bx >> 1 : bx) % pieces;
                float4* const slots = reinterpret_cast<float4*>(hp.sk_partial);
                float4* const mine = slots + static_cast<int64_t>((tail_tile * pieces + piece) * Cfg::kConsumers + cw) * kF4 * 128 + tid;
#pragma unroll
                for (int j = 0; j < D / 8; ++j) mine[j * 128] = make_float4(o[4 * j], o[4 * j + 1], o[4 * j + 2], o[4 * j + 3]);
                mine[(D / 8) * 128] = make_float4(row_max[0], row_max[1], row_sum[0], row_sum[1]);
                __shared__ unsigned ts_arrived[Cfg::kConsumers];
                __threadfence();  // this thread's partial is visible on the device...
                sm90::named_barrier_sync(1 + cw, 128);  // ...for every thread of the warpgroup
                if (tid == 0) {
                    unsigned* const flag = hp.sk_flags + tail_tile * Cfg::kConsumers + cw;
                    const unsigned arrived = atomicAdd(flag, 1u);
                    if (arrived + 1u == static_cast<unsigned>(pieces)) *flag = 0u;  // all in: zero for the next launch
                    ts_arrived[cw] = arrived;
                }
                sm90::named_barrier_sync(1 + cw, 128);
                // Lane 0's read, broadcast: warp-uniform.
                store_tile = __shfl_sync(0xffffffffu, ts_arrived[cw], 0) + 1u == static_cast<unsigned>(pieces);
                if (store_tile) {
                    __threadfence();  // the other pieces' partials, published before their arrivals
#pragma unroll
                    for (int hf = 0; hf < 2; ++hf) row_max[hf] = kNegInf, row_sum[hf] = 0.f;
#pragma unroll
                    for (int j = 0; j < D / 2; ++j) o[j] = 0.f;
                    // Rolled: unrolled by two, the wide d256 instance's consumers spilled 216
                    // bytes (when it split its tail too, session 28), the d128 ones 4.
#pragma unroll 1
                    for (int r = 0; r < pieces; ++r) {
                        const float4* const src =
                            slots + static_cast<int64_t>((tail_tile * pieces + r) * Cfg::kConsumers + cw) * kF4 * 128 + tid;
                        const float4 ml = __ldcg(src + (D / 8) * 128);
                        const float m_piece[2] = {ml.x, ml.y}, l_piece[2] = {ml.z, ml.w};
                        float fh[2], fp[2];
#pragma unroll
                        for (int hf = 0; hf < 2; ++hf) {
                            const float mx = fmaxf(row_max[hf], m_piece[hf]);
                            const float base = mx == kNegInf ? 0.f : mx * exp_scale;
                            fh[hf] = exp2f(fmaf(row_max[hf], exp_scale, -base));
                            fp[hf] = exp2f(fmaf(m_piece[hf], exp_scale, -base));
                            row_max[hf] = mx;
                            row_sum[hf] = __fmaf_rn(row_sum[hf], fh[hf], __fmul_rn(l_piece[hf], fp[hf]));
                        }
#pragma unroll
                        for (int j = 0; j < D / 8; ++j) {
                            const float4 x = __ldcg(src + j * 128);
                            const float xs[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
                            for (int e = 0; e < 4; ++e)
                                o[4 * j + e] = __fmaf_rn(o[4 * j + e], fh[e / 2], __fmul_rn(xs[e], fp[e / 2]));
                        }
                    }
                }
            }
        }
        uint16_t* const og = kPacked ? o_seq_rows<uint16_t>(p, span, qb.head)
                                     : static_cast<uint16_t*>(p.o) + qb.batch * p.o_batch_stride + qb.head * p.o_head_stride;
        const int rows = len_q();
        if constexpr (!kStageO) {
            // ---- epilogue from registers: normalize; each thread stores 4 bytes of every 8-column
            // chunk of its two rows, so a quad's stores fill the chunk's 16 bytes (L2 merges
            // them into whole lines).
#pragma unroll
            for (int hf = 0; hf < 2; ++hf) {
                const float l = quad_sum(row_sum[hf]);
                const float inv = inv_row_sum(l);
                const int row = row0 + hf * 8;
                if (row >= rows || row < 0 || !store_tile) continue;  // rows above 0: a shifted top tile's fill
                if (p.lse != nullptr && t == 0) *lse_slot(p, qb.batch, qb.head, row) = row_lse(row_max[hf] * exp_scale, l);
                uint16_t* const orow = og + static_cast<int64_t>(row) * p.o_seq_stride + 2 * t;
#pragma unroll
                for (int j = 0; j < D / 8; ++j) {
                    if (j * 8 >= p.head_dim) break;
                    *reinterpret_cast<uint32_t*>(orow + 8 * j) = E::pack(o[4 * j + 2 * hf] * inv, o[4 * j + 2 * hf + 1] * inv);
                }
            }
            tile_it0 += nb_end - nb_begin;
            lab_end();
            continue;
        }
        FATTN_LAB_ITEM_PHASE(cw, 10, tid == 0);
        // ---- epilogue: normalize, stage in this warpgroup's rows of the Q tile, 16-byte stores.
        // The barrier orders every warp's last wgmma read of Q before the writes.
        sm90::named_barrier_sync(1 + cw, 128);
        FATTN_LAB_ITEM_PHASE(cw, 12, tid == 0);
        float inv[2];
#pragma unroll
        for (int hf = 0; hf < 2; ++hf) {
            const float l = quad_sum(row_sum[hf]);
            inv[hf] = inv_row_sum(l);
            const int row = row0 + hf * 8;
            if (p.lse != nullptr && t == 0 && row < rows && row >= 0 && store_tile) {
                float* slot = kPacked ? lse_slot_packed(p, span, qb.head, row) : lse_slot(p, qb.batch, qb.head, row);
                *slot = row_lse(row_max[hf] * exp_scale, l);
            }
        }
        {
            // One stmatrix .x4 per pair of 8-column chunks (j, j + 1) stores this warp's 16 rows
            // of both: matrix i is rows 8 (i % 2) .. + 7 of chunk j + i / 2, and its register in
            // lane 4g + t (row g, columns 2t, 2t + 1) is the packed pair the accumulator holds
            // there. Lane L gives the address of the warp's row (L % 8) + 8 ((L / 8) % 2) at
            // chunk j + L / 16. The same bytes at the same addresses as the 4-byte store per
            // pair it replaces (lab/stsm/check_layout.py).
            static_assert((D / 8) % 2 == 0, "the stmatrix epilogue stores 8-column chunks in pairs");
            const int r = cw * 64 + warp * 16 + (lane % 8) + 8 * ((lane / 8) % 2);  // row within the tile
            const int jl = lane / 16;  // this lane's chunk of the pair
            const uint32_t row_addr = smem_addr(sQ) + r * 128;
#pragma unroll
            for (int j = 0; j < D / 8; j += 2) {
                const uint32_t frag[4] = {E::pack(o[4 * j + 0] * inv[0], o[4 * j + 1] * inv[0]),
                                          E::pack(o[4 * j + 2] * inv[1], o[4 * j + 3] * inv[1]),
                                          E::pack(o[4 * j + 4] * inv[0], o[4 * j + 5] * inv[0]),
                                          E::pack(o[4 * j + 6] * inv[1], o[4 * j + 7] * inv[1])};
                const int jj = j + jl;
                sm90::stmatrix_x4(row_addr + (jj / 8) * BM * 128 + (((jj % 8) ^ (r % 8)) * 16), frag);
            }
        }
        // TMA store of this warpgroup's rows when its boxes lie wholly inside the output (every
        // row in [0, seq_q), head_dim the instance's); else (a partial or shifted tile, a
        // padded head dim) the threads' stores below. Session 33's first version also sent
        // boxes reaching past the output and faulted on the shifted top tiles (call 3).
        const bool tma_rows = o_tma() && qb.m0 + cw * 64 >= 0 && qb.m0 + cw * 64 + 64 <= rows && p.head_dim == D;
        FATTN_LAB_ITEM_PHASE(cw, 13, tid == 0);
        // The staged writes reach the async proxy before thread 0 issues the boxes.
        if (tma_rows) sm90::fence_proxy_async();
        sm90::named_barrier_sync(1 + cw, 128);
        FATTN_LAB_ITEM_PHASE(cw, 14, tid == 0);
        constexpr int kChunks = D / 8;  // 16-byte chunks of a row
        if (tma_rows) {
            // One box of 64 columns × this warpgroup's 64 rows per panel.
            if (tid == 0 && store_tile) {
#pragma unroll
                for (int pc = 0; pc < Cfg::kPanels; ++pc)
                    sm90::tma_store_4d(&hp.tma_o, sQ + pc * BM * 128 + cw * 64 * 128, pc * 64, qb.m0 + cw * 64, qb.head,
                                       qb.batch);
                sm90::bulk_commit_group();
            }
        } else if constexpr (128 % kChunks == 0 && (128 / kChunks) % 8 == 0) {
            // d64 / d128: a thread keeps its chunk c from pass to pass and moves down by a whole
            // number of 8-row swizzle atoms, so its shared and global addresses advance by
            // constants (no per-pass division, swizzle or 64-bit multiply).
            constexpr int kPassRows = 128 / kChunks;
            const int c = tid % kChunks, r0 = cw * 64 + tid / kChunks;
            const uint8_t* const src = sQ + (c / 8) * BM * 128 + r0 * 128 + (((c % 8) ^ (r0 % 8)) * 16);
            uint16_t* const dst = og + static_cast<int64_t>(qb.m0 + r0) * p.o_seq_stride + c * 8;
            const int64_t dst_step = static_cast<int64_t>(kPassRows) * p.o_seq_stride;
            const int left = c * 8 < p.head_dim && store_tile ? rows - (qb.m0 + r0) : 0;  // rows this thread may write
            const int above = -(qb.m0 + r0);  // passes below this many rows are above row 0
#pragma unroll
            for (int i = 0; i < 64 / kPassRows; ++i) {
                if (i * kPassRows < left && i * kPassRows >= above)
                    *reinterpret_cast<uint4*>(dst + i * dst_step) =
                        *reinterpret_cast<const uint4*>(src + i * kPassRows * 128);
            }
        } else {
            // d96 / d192 / d256: a warp stores 4 rows of one 64-column panel (128 contiguous
            // bytes each); a thread keeps its chunk c of the panel and its row's place in the
            // 8-row swizzle atom, and moves by whole panels and by 16 rows from pass to pass,
            // so its shared and global addresses advance by constants. d96's second panel
            // holds 4 chunks: the head-dim test below ends the rest.
            static_assert(kChunks % 4 == 0, "whole 64-column panels or half of one");
            constexpr int kPanels = Cfg::kPanels;
            const int c = tid % 8, r0 = cw * 64 + tid / 8;
            const uint8_t* const src = sQ + r0 * 128 + ((c ^ (r0 % 8)) * 16);
            uint16_t* const dst = og + static_cast<int64_t>(qb.m0 + r0) * p.o_seq_stride + c * 8;
            const int64_t dst_step = static_cast<int64_t>(16) * p.o_seq_stride;
            const int left = store_tile ? rows - (qb.m0 + r0) : 0;  // rows this thread may write
            const int above = -(qb.m0 + r0);  // passes below this many rows are above row 0
#pragma unroll
            for (int pc = 0; pc < kPanels; ++pc) {
                if (pc * 64 + c * 8 >= p.head_dim) break;
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    if (i * 16 < left && i * 16 >= above)
                        *reinterpret_cast<uint4*>(dst + pc * 64 + i * dst_step) =
                            *reinterpret_cast<const uint4*>(src + pc * BM * 128 + i * 16 * 128);
                }
            }
        }
        FATTN_LAB_ITEM_PHASE(cw, 15, tid == 0);
        // Persistent: this warp is done with the Q buffer and its tile slot; the producer may
        // load a later tile's Q there (async-proxy writes after this warp's generic reads and
        // writes of the buffer: the proxy fence orders them).
        if constexpr (kPersistent) {
            sm90::fence_proxy_async();
            if (!o_tma()) release(&empty_q[b]);  // else release_stored_q, in the next tile
        }
        tile_it0 += nb_end - nb_begin;
        FATTN_LAB_ITEM_PHASE(cw, 11, tid == 0);
        lab_end();
    }
    // The last tile's store has read its rows before the CTA's shared memory goes away.
    if (o_tma() && tid == 0) sm90::bulk_wait_group_read<0>();
    mc_sync();
}

}  // namespace hopper
}  // namespace fattn

// ---- entry points ------------------------------------------------------------------------
//
// Declared once in src/cuda/instances.rs (Arch::Sm90a); build.rs expands FATTN_INSTANCE_FWD
// per instance of this file and checks the launch numbers against the traits. VARIANT: 0
// plain, 1 softcap/ALiBi (`_mods`). Each instance has two entry points: NAME, the dense
// kernel, and NAME_varlen, the packed one (packed K/V, or paged with whole key blocks per
// page), so that the packed path's registers never change the dense kernel's.

namespace fattn {
namespace hopper {
// The packed entry of an instance: the wide instances serve dense problems only (their
// `_varlen` entry is never launched, src/cuda/prefill_sm90.rs; it traps rather than compile
// the packed loop a second time).
template <int D, int kVariant, class E>
__device__ __forceinline__ void fwd_hopper_varlen(const FattnHopperParams& p) {
    if constexpr (kVariant == 3) {
        __trap();
    } else {
        fwd_hopper<HopperTraits<D, kVariant>, E, kVariant == 1, true>(p);
    }
}
}  // namespace hopper
}  // namespace fattn

#define FATTN_INSTANCE_FWD(DTYPE, NAME, D, VARIANT, THREADS, ROWS, KEYS, SMEM)                                         \
    static_assert(VARIANT == 0 || VARIANT == 1 || VARIANT == 3, #NAME ": a Hopper instance is plain, _mods or _wide"); \
    static_assert(fattn::hopper::HopperTraits<D, VARIANT>::kHeadDim == D, #NAME ": head dim");                         \
    static_assert(fattn::hopper::HopperTraits<D, VARIANT>::kThreads == THREADS, #NAME ": threads differ from instances.rs"); \
    static_assert(fattn::hopper::HopperTraits<D, VARIANT>::kBlockM == ROWS, #NAME ": block rows differ from instances.rs");  \
    static_assert(fattn::hopper::HopperTraits<D, VARIANT>::kBlockN == KEYS, #NAME ": key block differs from instances.rs");  \
    static_assert(fattn::hopper::HopperTraits<D, VARIANT>::kSmemBytes == SMEM, #NAME ": smem bytes differ from instances.rs"); \
    static_assert(fattn::hopper::HopperTraits<D, VARIANT>::kPersistent == (D <= 128 && (VARIANT == 0 || VARIANT == 3)), \
                  #NAME ": loops over query tiles exactly when Instance::loops_over_tiles says so");              \
    static_assert(fattn::hopper::HopperTraits<D, VARIANT>::kStreamK == (D == 64 && VARIANT == 0),                      \
                  #NAME ": shares its tail out exactly when Instance::shares_tail says so");                    \
    static_assert(fattn::hopper::HopperTraits<D, VARIANT>::kPairSplit == (D == 64 && VARIANT == 1),                    \
                  #NAME ": splits tiles over clusters exactly when Instance::splits_pairs says so");            \
    static_assert(fattn::hopper::HopperTraits<D, VARIANT>::kTailSplit == (D == 128 && (VARIANT == 0 || VARIANT == 3)), \
                  #NAME ": splits its last round exactly when Instance::splits_tail says so");                  \
    static_assert(fattn::hopper::HopperTraits<D, VARIANT>::kMulticast == (D == 128 && (VARIANT == 0 || VARIANT == 3)), \
                  #NAME ": multicasts K/V exactly when Instance::multicasts_kv says so");                      \
    static_assert(!fattn::hopper::HopperTraits<D, VARIANT>::kTailSplit ||                                              \
                      (fattn::hopper::HopperTraits<D, VARIANT>::kPersistent &&                                         \
                       !fattn::hopper::HopperTraits<D, VARIANT>::kStreamK),                                            \
                  #NAME ": the tail split is a persistent grid's, and not stream-K's");                         \
    extern "C" __global__ void __launch_bounds__(fattn::hopper::HopperTraits<D, VARIANT>::kThreads, 1)               \
        NAME(const __grid_constant__ FattnHopperParams p) {                                                            \
        fattn::hopper::fwd_hopper<fattn::hopper::HopperTraits<D, VARIANT>, fattn::DTYPE, VARIANT == 1, false>(p);      \
    }                                                                                                                  \
    extern "C" __global__ void __launch_bounds__(fattn::hopper::HopperTraits<D, VARIANT>::kThreads, 1)               \
        NAME##_varlen(const __grid_constant__ FattnHopperParams p) {                                                   \
        fattn::hopper::fwd_hopper_varlen<D, VARIANT, fattn::DTYPE>(p);                                                 \
    }
