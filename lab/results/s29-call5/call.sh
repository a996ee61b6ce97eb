# Session 29 call 5: where the small rows' cold-cache time goes (call 4: ours 16.05 µs cold
# against 11.73 warm under ncu, cuDNN 11.14 against 10.14). A lab build of HEAD with phase
# stamps of each CTA's first item (examples/lab_stamps.rs `# phase` lines: Q landed, first K
# landed, first Q·Kᵀ, first softmax, loop, last V, last P·V, cluster partial, epilogue,
# stores), run under ncu with cache control all (cold) and none (warm), and without ncu.
. lab/decode/check_ab.sh
body() {
  gpu_info
  mkdir -p /tmp/st && xz -dc device-pack/lab_stamps.xz > /tmp/st/lab_stamps && chmod +x /tmp/st/lab_stamps
  for c in "" causal; do
    for mode in all none; do
      timeout 90 ncu --cache-control $mode --metrics gpu__time_duration.sum -k regex:fattn_fwd --csv \
        /tmp/st/lab_stamps 1 8 8 512 64 $c > "$R/phases_${mode}_small${c:+_causal}.txt" 2>&1; echo "ncu $mode small $c rc=$?"
    done
    timeout 60 /tmp/st/lab_stamps 1 8 8 512 64 $c > "$R/phases_noncu_small${c:+_causal}.txt" 2>&1; echo "no ncu small $c rc=$?"
  done
  gzip "$R"/phases_*.txt
  cd "$L"
}
archived body
