//! What the benchmarks that compare with Python tools share: a module installed into the libtorch environment
//! when missing, and a script's JSON report read from its output.

use std::ffi::OsStr;
use std::process::Command;

use serde_json::Value;

/// Installs `package` with pip when `module` cannot be imported (once per machine).
pub fn ensure_module(module: &str, package: &str) -> Result<(), String> {
    let present = Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .status()
        .is_ok_and(|s| s.success());
    if present {
        return Ok(());
    }
    eprintln!("installing {package} into the libtorch environment (once)");
    let installed = Command::new("python3")
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            package,
        ])
        .status()
        .map_err(|e| format!("python3 could not run: {e}"))?;
    match installed.success() {
        true => Ok(()),
        false => Err(format!("pip could not install {package}")),
    }
}

/// Runs `python3 script args…` and returns the last line of its output that is a JSON value; `what` names the
/// run in errors.
pub fn json_report<I, S>(what: &str, script: &str, args: I) -> Result<Value, String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let output = Command::new("python3")
        .arg(script)
        .args(args)
        .output()
        .map_err(|e| format!("python3 could not run: {e}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(format!("{what} failed: {}", stderr.lines().last().unwrap_or("")));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    stdout
        .lines()
        .rev()
        .find_map(|line| serde_json::from_str(line).ok())
        .ok_or_else(|| format!("{what} printed no report: {stdout}"))
}
