//! With the `cuda` feature: compiles each kernel file of `instances::SOURCES`
//! (src/cuda/instances.rs) for its architecture with nvcc, and writes `$OUT_DIR/ptx.rs`
//! with the PTX of each, in that list's order. Without the feature it does nothing.
//!
//! Generated C++, in `$OUT_DIR`:
//! * `fattn_generated.cuh`: `static_assert`s of every field offset and the size of each params
//!   struct of src/cuda/params.rs (`STRUCTS`); per family and architecture, the list of its
//!   instances from src/cuda/instances.rs as an X-macro (`FATTN_INSTANCES_<FAMILY>_<ARCH>(X)`,
//!   X(DTYPE, NAME, HEAD_DIM, VARIANT, THREADS, ROWS, KEYS, SMEM), the backward's with
//!   COL_SPLITS after SMEM), and the byte tables of instances whose shared memory depends on
//!   the head dim.
//! * `<file>.gen.cu`, the unit nvcc compiles: the kernel file, the header, and the list of
//!   each family the file holds expanded through its `FATTN_INSTANCE_<FAMILY>` macro into the
//!   `extern "C"` entry points, each with the asserts that its launch numbers are the kernel's.
//!
//! `build.rs --codegen DIR` (this file compiled alone with rustc) writes the same C++ into
//! DIR without compiling it: the labs build from it (lab/README.md).
//!
//! nvcc is found through `NVCC`, then `$CUDA_PATH/bin`, `$CUDA_ROOT/bin`, `$CUDA_HOME/bin`,
//! then `PATH` (scripts/cuda-toolkit.sh sets them up without a system toolkit).

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

#[allow(dead_code)]
#[path = "src/cuda/instances.rs"]
mod instances;
#[allow(dead_code)]
#[path = "src/cuda/params.rs"]
mod params;

use instances::{Family, Instance, Smem, Source, INSTANCES, SOURCES};

/// The headers every kernel file includes.
const COMMON_HEADERS: &str = "kernels/common";

fn main() {
    let args: Vec<String> = env::args().collect();
    if let [_, flag, dir] = args.as_slice() {
        if flag == "--codegen" {
            let dir = PathBuf::from(dir);
            fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
            write_generated_cpp(&dir);
            return;
        }
    }

    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/cuda/instances.rs");
    println!("cargo:rerun-if-changed=src/cuda/params.rs");
    if env::var_os("CARGO_FEATURE_CUDA").is_none() {
        return;
    }
    for var in ["NVCC", "CUDA_PATH", "CUDA_ROOT", "CUDA_HOME", "NVCC_FLAGS"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    // Per file, not per directory: cargo would scan a directory recursively. A new header in
    // kernels/common/ is picked up at the next rerun (an edit of any listed file).
    for src in SOURCES {
        println!("cargo:rerun-if-changed={}", src.file);
    }
    let mut headers: Vec<PathBuf> = fs::read_dir(COMMON_HEADERS)
        .unwrap_or_else(|e| panic!("read {COMMON_HEADERS}/: {e}"))
        .map(|entry| entry.expect("read kernels/common/ entry").path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("cuh"))
        .collect();
    headers.sort();
    for h in &headers {
        println!("cargo:rerun-if-changed={}", h.display());
    }

    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));
    write_generated_cpp(&out_dir);
    let nvcc = find_nvcc();

    let started = std::time::Instant::now();
    let mut children = Vec::new();
    for src in SOURCES {
        let stem = stem(src);
        // Every file is compiled whenever cargo reruns this script (only on a kernel change).
        // An mtime shortcut here once shipped stale PTX: a source restored by git carries an
        // older mtime than the PTX built from the edit it replaced.
        let ptx = out_dir.join(format!("{stem}.ptx"));
        let mut cmd = Command::new(&nvcc);
        cmd.arg("--ptx")
            .arg(format!("-arch={}", src.arch.nvcc_arch()))
            .args(["-O3", "-std=c++17", "--expt-relaxed-constexpr"])
            .arg("-I")
            .arg(Path::new(src.file).parent().expect("kernel file in a directory"))
            .arg("-I")
            .arg(&out_dir)
            .arg(out_dir.join(format!("{stem}.gen.cu")))
            .arg("-o")
            .arg(&ptx);
        if let Ok(extra) = env::var("NVCC_FLAGS") {
            cmd.args(extra.split_whitespace());
        }
        let child =
            cmd.spawn().unwrap_or_else(|e| panic!("cannot run nvcc ({}): {e}; set CUDA_PATH or NVCC", nvcc.display()));
        children.push((src, ptx, child));
    }
    for (src, ptx, child) in children {
        let out = child.wait_with_output().expect("wait for nvcc");
        if !out.status.success() {
            let _ = fs::remove_file(&ptx);
            panic!("nvcc failed on {} for {} ({})", src.file, src.arch.nvcc_arch(), out.status);
        }
    }
    println!(
        "cargo:warning=compiled {} kernel file(s) to PTX in {:.1} s",
        SOURCES.len(),
        started.elapsed().as_secs_f64()
    );

    let mut rs = String::from(
        "// Generated by build.rs: the PTX of each entry of instances::SOURCES, in its order.\n\n\
         pub const PTX: &[&str] = &[\n",
    );
    for src in SOURCES {
        writeln!(rs, "    include_str!(concat!(env!(\"OUT_DIR\"), \"/{}.ptx\")),", stem(src)).unwrap();
    }
    rs.push_str("];\n");
    write_if_changed(&out_dir.join("ptx.rs"), &rs);
}

/// `kernels/fwd_sm80.cu` → `fwd_sm80`.
fn stem(src: &Source) -> &'static str {
    let name = src.file.rsplit('/').next().expect("file name");
    name.strip_suffix(".cu").unwrap_or_else(|| panic!("{} is not a .cu file", src.file))
}

/// The generated X-macro list of `family`'s instances on `src`'s architecture.
fn list_name(family: Family, src: &Source) -> String {
    format!("FATTN_INSTANCES_{}_{}", family.cpp_tag(), src.arch.cpp_tag())
}

/// Arguments a family's X-macro takes after the common ones.
fn extra_args(family: Family) -> &'static str {
    match family {
        Family::Bwd => ", COL_SPLITS",
        Family::Fwd | Family::Decode | Family::BwdPreprocess | Family::BwdConvert => "",
    }
}

/// Their values for `inst`.
fn extra_values(inst: &Instance) -> String {
    match inst.family {
        Family::Bwd => format!(", {}", inst.col_splits),
        Family::Fwd | Family::Decode | Family::BwdPreprocess | Family::BwdConvert => String::new(),
    }
}

/// Writes `fattn_generated.cuh` and one `<stem>.gen.cu` per kernel file into `dir`.
fn write_generated_cpp(dir: &Path) {
    for inst in INSTANCES {
        assert!(
            SOURCES.iter().any(|src| src.builds(inst)),
            "{}: no kernel file in SOURCES builds its family and architecture",
            inst.name
        );
    }
    let mut h = String::from(
        "// Generated by build.rs from src/cuda/params.rs and src/cuda/instances.rs: do not edit.\n\
         #pragma once\n\n#include <stddef.h>\n\n#include \"common/params.cuh\"\n\n",
    );
    for (name, size, fields) in params::STRUCTS {
        writeln!(h, "static_assert(sizeof({name}) == {size}, \"{name}: size differs from src/cuda/params.rs\");")
            .unwrap();
        for (field, offset) in *fields {
            writeln!(
                h,
                "static_assert(offsetof({name}, {field}) == {offset}, \
                 \"{name}::{field}: offset differs from src/cuda/params.rs\");"
            )
            .unwrap();
        }
    }

    h.push_str(
        "\n// Dynamic shared memory by head dim (index) of the instances whose bytes depend on it.\n\
         namespace fattn_gen {\n",
    );
    for inst in INSTANCES {
        if let Smem::PerHeadDim(bytes) = inst.smem {
            let table: Vec<String> =
                (0..=inst.head_dim).map(|d| if d == 0 { 0 } else { bytes(d) }.to_string()).collect();
            writeln!(
                h,
                "constexpr unsigned {}_smem_bytes[{}] = {{{}}};",
                inst.name,
                inst.head_dim + 1,
                table.join(", ")
            )
            .unwrap();
        }
    }
    h.push_str("}  // namespace fattn_gen\n");

    for src in SOURCES {
        for &family in src.families {
            writeln!(
                h,
                "\n// The {:?} instances of {} ({}): X(DTYPE, NAME, HEAD_DIM, VARIANT, THREADS, ROWS, KEYS, SMEM{}),\n\
                 // VARIANT 0 plain, 1 softcap/ALiBi, 2 both; SMEM 0: per head dim (fattn_gen::NAME_smem_bytes).\n\
                 #define {}(X) \\",
                family,
                src.file,
                src.arch.nvcc_arch(),
                extra_args(family),
                list_name(family, src)
            )
            .unwrap();
            for inst in INSTANCES.iter().filter(|i| i.family == family && src.builds(i)) {
                let smem = match inst.smem {
                    Smem::Bytes(b) => b,
                    Smem::PerHeadDim(_) => 0,
                };
                writeln!(
                    h,
                    "    X({}, {}, {}, {}, {}, {}, {}, {}{}) \\",
                    inst.dtype.cpp_tag(),
                    inst.name,
                    inst.head_dim,
                    inst.variant.cpp_code(),
                    inst.threads,
                    inst.block_rows,
                    inst.key_block,
                    smem,
                    extra_values(inst)
                )
                .unwrap();
            }
            h.push_str("    /* end */\n");
        }
    }
    write_if_changed(&dir.join("fattn_generated.cuh"), &h);

    for src in SOURCES {
        let stem = stem(src);
        let mut unit = format!(
            "// Generated by build.rs: {file} with the entry points of its instances in \
             src/cuda/instances.rs.\n\
             #include \"{stem}.cu\"\n#include \"fattn_generated.cuh\"\n\n",
            file = src.file,
        );
        for &family in src.families {
            writeln!(unit, "{}(FATTN_INSTANCE_{})", list_name(family, src), family.cpp_tag()).unwrap();
        }
        write_if_changed(&dir.join(format!("{stem}.gen.cu")), &unit);
    }
}

/// Writes `text` unless the file already holds it, so that its mtime moves only on a change.
fn write_if_changed(path: &Path, text: &str) {
    if fs::read_to_string(path).is_ok_and(|old| old == text) {
        return;
    }
    fs::write(path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

fn find_nvcc() -> PathBuf {
    if let Some(p) = env::var_os("NVCC") {
        return PathBuf::from(p);
    }
    for var in ["CUDA_PATH", "CUDA_ROOT", "CUDA_HOME"] {
        if let Some(root) = env::var_os(var) {
            let p = Path::new(&root).join("bin").join("nvcc");
            if p.exists() {
                return p;
            }
        }
    }
    PathBuf::from("nvcc")
}
