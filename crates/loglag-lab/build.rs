//! Records the git revision, for the report's metadata. Absent outside a git checkout.
fn main() {
    if let Ok(out) = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
    {
        if out.status.success() {
            let rev = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            println!("cargo:rustc-env=LOGLAG_GIT_REVISION={rev}");
        }
    }
    println!("cargo:rerun-if-changed=../../.git/HEAD");
    println!("cargo:rerun-if-changed=../../.git/refs");
}
