# Prepared at the end of session 33 (branch s34-tma-store, not merged): the output's TMA store,
# third version. Session 33's calls 3-5 ran the first two: the first faulted on boxes reaching
# past the output (shifted top tiles); the second was correct but deferred warp 0's release of
# the Q buffer behind a warp-dependent branch ahead of the key loop, which took the plain d128
# loop off the uniform datapath (953 -> 1 027 SASS, R2UR 17 -> 48; lab/tools/sass_loops.py) and
# the d128 rows 2-3.7% slower. Here every warp defers its release alike: the d128 loop is 952
# SASS against HEAD's 953 (the wide d128 and plain d64 instances' code unchanged), checked
# with lab/tools/sass_loops.py on the sm_90a cubin before any device time.
# Pack: on the branch, `lab/pack-h90.sh s34a` -> device-pack/h90-s34a-9.tar.xz (full), and main's
# as a bench-only pack h90-main-9.tar.xz (both prebuilt at the end of session 33). About 10 minutes:
#  1. gpu_hopper_prefill (both generations), gpu_sweep_bf16 / f16, gpu_output_poisoned, gpu_lse,
#     then memcheck, racecheck and synccheck of the sanitizer subset;
#  2. within s34a, the store against FUSED_ATTN_SM90_O_STORE=threads, every prefill row but 16k,
#     2 rounds (A B, B A); prediction: small rows -1 to -2% (their epilogue ends the launch),
#     d128 2048 -0.3 to -0.5%, d256 -0.5%;
#  3. s34a against main across packs (the compiled-in code's cost), 2 rounds.
# Two calls back to back (about 4 and 6 minutes): `CALL=tests bash lab/results/s34-next/call.sh`,
# then `CALL=ab ...`. The helpers reverse the order on even rounds, so the A/Bs take 2 rounds.
. lab/decode/check_ab.sh
tests_call() {
  gpu_info
  gpu_tests s34a "memcheck racecheck synccheck" gpu_hopper_prefill gpu_sweep_bf16 gpu_sweep_f16 gpu_output_poisoned gpu_lse
}
ab_call() {
  gpu_info
  envab s34a 'cuda_fused_attn_bf16/b[0-9]+_h[0-9]+_kv[0-9]+_q(512|2048|4096)_' 2 FUSED_ATTN_SM90_O_STORE \
    "tma=unset threads=threads"
  python3 "$L/lab/results/s32-call3/envab_table.py" "$R/envab_medians.txt"
  bench_ab 'cuda_fused_attn_bf16/b[0-9]+_h[0-9]+_kv[0-9]+_q(512|2048|4096)_' 2 main s34a
}
archived "${CALL:-tests}_call"
