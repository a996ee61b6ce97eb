RAYON (default) device-pack/cpu_varlen_test --test-threads 2  # the cpu_varlen test binary of 09cf1a8, stripped, on the Sapphire Rapids host (AMX): every CPU path incl. avx512-amx
