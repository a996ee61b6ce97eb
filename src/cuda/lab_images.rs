//! Lab only: kernel images from files instead of the fatbins build.rs embedded, so that one
//! device call can time several builds of one kernel file with one test or bench binary.
//!
//! `FUSED_ATTN_LAB_KERNEL_IMAGES=fwd_sm90=/tmp/a.fatbin,decode_sm80=/tmp/b.fatbin` (read once
//! per process): each named kernel file (the stem of its path in [`SOURCES`]) is loaded from
//! that file, a fatbin or cubin of the same source tree's kernels (its params structs and
//! entry points must be this build's: `lab/fatbin-variant.sh` builds one with extra nvcc
//! flags). Unset or empty: the embedded fatbins. A malformed value, an unknown file name or an
//! unreadable image fails the load of the module it names with an error that says so; the
//! other files load as usual.
//!
//! Why: a lab A/B of a kernel change needs a second bench binary per variant (15 MB packed,
//! and a device call carries at most 64 MiB), where a variant's fwd_sm90 fatbin for sm_90a
//! alone is ~0.3 MB.

use std::path::PathBuf;
use std::sync::OnceLock;

use candle_core::{bail, Result};

use super::instances::SOURCES;

/// The variable's name, for messages.
const VAR: &str = "FUSED_ATTN_LAB_KERNEL_IMAGES";

/// The stem of a kernel file's path: "kernels/fwd_sm90.cu" → "fwd_sm90".
fn stem(file: &str) -> &str {
    let name = file.rsplit('/').next().unwrap_or(file);
    name.strip_suffix(".cu").unwrap_or(name)
}

/// Parses the variable's value into one optional path per entry of [`SOURCES`].
pub(super) fn parse(spec: &str) -> std::result::Result<Vec<Option<PathBuf>>, String> {
    let mut paths = vec![None; SOURCES.len()];
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let Some((name, path)) = item.split_once('=') else {
            return Err(format!("{VAR}: `{item}` is not NAME=PATH"));
        };
        let (name, path) = (name.trim(), path.trim());
        let Some(at) = SOURCES.iter().position(|s| stem(s.file) == name) else {
            let known: Vec<&str> = SOURCES.iter().map(|s| stem(s.file)).collect();
            return Err(format!("{VAR}: no kernel file `{name}` (the files: {})", known.join(", ")));
        };
        if path.is_empty() {
            return Err(format!("{VAR}: `{name}` has an empty path"));
        }
        if paths[at].is_some() {
            return Err(format!("{VAR}: `{name}` is named twice"));
        }
        paths[at] = Some(PathBuf::from(path));
    }
    Ok(paths)
}

/// The variable, parsed once per process.
fn overrides() -> &'static std::result::Result<Vec<Option<PathBuf>>, String> {
    static PARSED: OnceLock<std::result::Result<Vec<Option<PathBuf>>, String>> = OnceLock::new();
    PARSED.get_or_init(|| parse(&std::env::var(VAR).unwrap_or_default()))
}

/// The image kernel file `at` (index in [`SOURCES`]) loads from instead of its embedded
/// fatbin, with a label for messages, or `None`: the embedded one.
pub(super) fn image(at: usize) -> Result<Option<(Vec<u8>, String)>> {
    let paths = match overrides() {
        Ok(paths) => paths,
        Err(e) => bail!("fused-attn cuda: {e}"),
    };
    let Some(path) = paths.get(at).and_then(Option::as_ref) else { return Ok(None) };
    let bytes = std::fs::read(path)
        .map_err(|e| candle_core::Error::Msg(format!("fused-attn cuda: {VAR}: reading {}: {e}", path.display())))?;
    if bytes.is_empty() {
        bail!("fused-attn cuda: {VAR}: {} is empty", path.display())
    }
    Ok(Some((bytes, format!("the lab image {} ({VAR})", path.display()))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(name: &str) -> usize {
        SOURCES.iter().position(|s| stem(s.file) == name).expect("a kernel file of that name")
    }

    #[test]
    fn names_map_to_their_kernel_files() {
        assert_eq!(stem("kernels/fwd_sm90.cu"), "fwd_sm90");
        let paths = parse(" fwd_sm90=/tmp/a.fatbin , decode_sm80 = /tmp/b.fatbin,").unwrap();
        assert_eq!(paths[at("fwd_sm90")], Some(PathBuf::from("/tmp/a.fatbin")));
        assert_eq!(paths[at("decode_sm80")], Some(PathBuf::from("/tmp/b.fatbin")));
        assert_eq!(paths.iter().filter(|p| p.is_some()).count(), 2);
        assert!(parse("").unwrap().iter().all(Option::is_none));
    }

    #[test]
    fn malformed_values_say_what_is_wrong() {
        let err = parse("fwd_sm90").unwrap_err();
        assert!(err.contains("`fwd_sm90` is not NAME=PATH"), "{err}");
        let err = parse("fwd_sm91=/x").unwrap_err();
        assert!(err.contains("no kernel file `fwd_sm91`") && err.contains("fwd_sm90"), "{err}");
        let err = parse("fwd_sm90=").unwrap_err();
        assert!(err.contains("empty path"), "{err}");
        let err = parse("fwd_sm90=/a,fwd_sm90=/b").unwrap_err();
        assert!(err.contains("named twice"), "{err}");
    }
}
