//! Where ptxas is (the codegen tests assemble every kernel with it).

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// ptxas: `CUDAJIT_PTXAS`, PATH, `/usr/local/cuda/bin`, or PyPI's nvidia-cuda-nvcc-cu12 wheel.
pub fn ptxas() -> PathBuf {
    static PTXAS: OnceLock<Option<PathBuf>> = OnceLock::new();
    PTXAS
        .get_or_init(|| {
            if let Some(p) = std::env::var_os("CUDAJIT_PTXAS").filter(|p| !p.is_empty()) {
                return Some(PathBuf::from(p));
            }
            let on_path = Command::new("ptxas").arg("--version").output().is_ok_and(|o| o.status.success());
            if on_path {
                return Some(PathBuf::from("ptxas"));
            }
            let cuda = PathBuf::from("/usr/local/cuda/bin/ptxas");
            if cuda.exists() {
                return Some(cuda);
            }
            let out = Command::new("python3")
                .args([
                    "-c",
                    "import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], 'cuda_nvcc', 'bin', 'ptxas'))",
                ])
                .output()
                .ok()?;
            let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            p.exists().then_some(p)
        })
        .clone()
        .expect("ptxas not found: `pip install nvidia-cuda-nvcc-cu12` (scripts/setup.sh does), or set CUDAJIT_PTXAS")
}
