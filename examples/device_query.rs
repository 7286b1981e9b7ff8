//! What numba's `cuda.detect()` prints, and more: memory, multiprocessors, clocks, caches.
//!
//! `cargo run --release --example device_query`. Without a usable driver it prints the
//! loader's error (every path it tried) and exits with status 1.

use cudajit::{Device, DeviceAttribute as A};

fn main() {
    if let Err(e) = run() {
        eprintln!("device_query: {e}");
        std::process::exit(1);
    }
}

fn run() -> cudajit::Result<()> {
    let version = cudajit::driver_version()?;
    let (summary, any_supported) = cudajit::context::detect_report()?;
    println!("CUDA driver supports CUDA {version}");
    print!("{summary}");
    for dev in cudajit::devices()? {
        print_details(&dev)?;
    }
    if !any_supported {
        eprintln!("no supported device");
        std::process::exit(1);
    }
    Ok(())
}

fn print_details(d: &Device) -> cudajit::Result<()> {
    let ctx = d.primary_context()?;
    let (free, total) = ctx.memory_info()?;
    let gib = |b: usize| b as f64 / (1u64 << 30) as f64;
    let mhz = |a| d.attribute(a).map(|khz| khz as f64 / 1000.0);
    let bus_bits = d.attribute(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)?;
    let mem_mhz = mhz(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)?;
    // Double data rate: two transfers per clock.
    let peak_gbs = 2.0 * mem_mhz * 1e6 * bus_bits as f64 / 8.0 / 1e9;
    println!("\nDevice {}: {}", d.ordinal(), d.name()?);
    let rows: Vec<(&str, String)> = vec![
        ("PCI bus id", d.pci_bus_id()?),
        (
            "Memory",
            format!("{:.1} GiB total, {:.1} GiB free", gib(total), gib(free)),
        ),
        ("Multiprocessors", d.multiprocessor_count()?.to_string()),
        (
            "SM clock",
            format!("{:.0} MHz", mhz(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)?),
        ),
        (
            "Memory clock",
            format!("{mem_mhz:.0} MHz, {bus_bits}-bit bus, ~{peak_gbs:.0} GB/s peak"),
        ),
        (
            "L2 cache",
            format!(
                "{} MiB",
                d.attribute(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? >> 20
            ),
        ),
        (
            "Shared memory / block",
            format!(
                "{} KiB ({} KiB opt-in)",
                d.max_shared_memory_per_block()? >> 10,
                d.max_shared_memory_per_block_optin()? >> 10
            ),
        ),
        (
            "Registers / block",
            d.attribute(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)?
                .to_string(),
        ),
        (
            "Max threads / block",
            d.max_threads_per_block()?.to_string(),
        ),
        (
            "Max threads / SM",
            d.attribute(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?
                .to_string(),
        ),
        ("Warp size", d.warp_size()?.to_string()),
        (
            "Concurrent managed access",
            yes_no(d.attribute(A::CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS)?),
        ),
        (
            "Unified addressing",
            yes_no(d.attribute(A::CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING)?),
        ),
        (
            "Async copy engines",
            d.attribute(A::CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT)?
                .to_string(),
        ),
    ];
    for (k, v) in rows {
        println!("{k:>28}: {v}");
    }
    println!("{:>28}: {}", "Attributes known", d.attributes().len());
    Ok(())
}

fn yes_no(v: i32) -> String {
    if v != 0 { "yes" } else { "no" }.to_string()
}
