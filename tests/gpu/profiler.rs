use crate::common::ctx;

#[test]
#[ignore = "needs a CUDA GPU"]
fn profiler_calls() {
    let _lock = crate::common::drop_errors_lock();
    let c = ctx();
    let _g = c.make_current().unwrap();
    cudajit::profile_start().unwrap();
    cudajit::profile_stop().unwrap();
    {
        let _p = cudajit::profiling().unwrap();
        c.synchronize().unwrap();
    }
    assert!(cudajit::take_drop_errors().is_empty());
}
