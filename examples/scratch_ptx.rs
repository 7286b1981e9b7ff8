#[path = "attention/kernel.rs"]
#[allow(dead_code)]
mod kernel;
use cudajit::codegen::PtxOptions;
fn main() {
    let d: usize = std::env::args()
        .nth(1)
        .map(|x| x.parse().unwrap())
        .unwrap_or(128);
    let att = kernel::Attention::<cudajit::bf16>::new(d, false).unwrap();
    let o = PtxOptions {
        cc: (9, 0),
        ..PtxOptions::default()
    };
    std::fs::write("/tmp/att.ptx", att.kernel().compile_ptx(&o).unwrap()).unwrap();
}
