use cudajit::{Device, DeviceAttribute};

#[test]
#[ignore = "needs a CUDA GPU"]
fn devices_and_properties() {
    assert!(cudajit::is_available());
    let n = cudajit::device_count().unwrap();
    assert!(n >= 1);
    assert_eq!(cudajit::devices().unwrap().len(), n);
    let d = Device::get(0).unwrap();
    let name = d.name().unwrap();
    assert!(!name.is_empty(), "device name");
    let (major, minor) = d.compute_capability().unwrap();
    assert!(major >= 5 && minor < 10, "cc {major}.{minor}");
    let uuid = d.uuid().unwrap();
    assert!(uuid.starts_with("GPU-") && uuid.len() == 40, "{uuid}");
    let bus = d.pci_bus_id().unwrap();
    assert_eq!(bus.matches(':').count(), 2, "{bus}");
    assert!(d.total_memory().unwrap() > 1 << 30);
    assert!(d.multiprocessor_count().unwrap() > 0);
    assert_eq!(d.warp_size().unwrap(), 32);
    assert!(d.max_threads_per_block().unwrap() >= 512);
    let attrs = d.attributes();
    assert!(attrs.len() > 100, "{} attributes", attrs.len());
    let sms = attrs
        .iter()
        .find(|(n, _)| *n == "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT")
        .unwrap()
        .1;
    assert_eq!(sms as u32, d.multiprocessor_count().unwrap());
    assert!(
        d.attribute(DeviceAttribute::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)
            .unwrap()
            > 0
    );
    let v = cudajit::driver_version().unwrap();
    assert!(v.major >= 12, "driver {v}");
    println!("{name}: cc {major}.{minor}, {uuid}, {bus}, driver CUDA {v}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn detect_reports_supported_devices() {
    assert!(cudajit::detect());
    let (text, any) = cudajit::context::detect_report().unwrap();
    assert!(any);
    assert!(
        text.contains("[SUPPORTED]") && text.contains("Compute Capability"),
        "{text}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_ordinal_is_an_error() {
    let n = cudajit::device_count().unwrap();
    let e = Device::get(n).unwrap_err();
    assert!(e.to_string().contains("no CUDA device"), "{e}");
}
