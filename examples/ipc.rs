//! Two processes sharing device memory (docs/GUIDE.md's "IPC between processes"): this program
//! is the producer, and starts itself again as the consumer.
//!
//! 1. Plain memory: the producer fills an array and sends its IPC handle and an IPC event's
//!    handle (as bytes, here on the consumer's command line); the consumer opens the array,
//!    doubles it with a kernel and records the event; the producer waits on the event and
//!    checks every element.
//! 2. Stream-ordered pool memory: the producer allocates from an exportable pool and passes the
//!    pool's file descriptor over a Unix socket (SCM_RIGHTS, `cudajit::ipc::send_fd`) with the
//!    allocation's and the event's handles; the consumer imports the pool, opens the
//!    allocation, adds one to it, frees its mapping and records the event, after which the
//!    producer frees the allocation.
//!
//! The consumer also times opening the handle and reading the whole array through it (a
//! device-to-device copy into its own memory, timed with events).
//!
//! Needs a GPU (Linux): on the simulator it says that IPC needs a real GPU and stops.
//!
//!   cargo run --release --example ipc [MiB]     # the array's size, 16 MiB by default

use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::process::{Command, Stdio};

use cudajit::codegen::Kernel;
use cudajit::ipc::{recv_fd, send_fd, IpcEventHandle, IpcMemHandle, IpcPoolPtrHandle};
use cudajit::prelude::*;
use cudajit::MemPool;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .filter_map(|i| u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok())
        .collect()
}

fn usage(msg: &str) -> cudajit::Error {
    cudajit::Error::Usage(msg.to_string())
}

/// `a[i] = a[i] * mul + add` for every element.
fn axpb() -> cudajit::Result<Kernel<(&'static mut [f32], f32, f32)>> {
    Kernel::<(&mut [f32], f32, f32)>::build("ipc_axpb", |k, (a, mul, add)| {
        let i = k.grid1();
        k.if_(i.lt(a.len()), |_| a.set(i, a.at(i) * mul + add));
    })
}

fn main() -> cudajit::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("plain-consumer") => plain_consumer(&args[2], &args[3]),
        Some("pool-consumer") => pool_consumer(&args[2]),
        Some(mib) => match mib.parse::<usize>() {
            Ok(mib) if mib > 0 => producer(mib << 18),
            _ => Err(usage(
                "usage: ipc [MiB]: the array's size in MiB, a positive number",
            )),
        },
        None => producer(16 << 18),
    }
}

/// The producer, sharing `n` f32.
fn producer(n: usize) -> cudajit::Result<()> {
    let ctx = Device::get(0)?.primary_context()?;
    let stream = ctx.new_stream()?;
    let host: Vec<f32> = (0..n).map(|i| (i % 977) as f32).collect();
    let a = stream.to_device(&host)?;
    let event = ctx.new_ipc_event()?;
    let handle = match a.ipc_handle() {
        Ok(h) => h,
        Err(e) => {
            println!("producer: {e}");
            return Ok(());
        }
    };
    stream.synchronize()?; // the data is complete before the consumer sees the handle
    println!(
        "producer (pid {}): {n} f32 on device 0; handle is {} bytes",
        std::process::id(),
        handle.to_bytes().len()
    );
    let mut consumer = Command::new(std::env::current_exe().map_err(|e| usage(&e.to_string()))?)
        .args([
            "plain-consumer",
            &hex(&handle.to_bytes()),
            &hex(&event.ipc_handle()?.to_bytes()),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| usage(&format!("starting the consumer: {e}")))?;
    let mut lines = BufReader::new(consumer.stdout.take().expect("piped")).lines();
    for line in lines.by_ref() {
        let line = line.map_err(|e| usage(&e.to_string()))?;
        println!("  {line}");
        if line.contains("recorded") {
            break;
        }
    }
    stream.wait_event(&event)?; // the consumer's kernel, across processes
    let got = a.to_vec_async(&stream)?;
    let bad = got
        .iter()
        .zip(&host)
        .filter(|(g, h)| **g != 2.0 * **h)
        .count();
    println!("producer: the consumer doubled the array in place; {bad} of {n} elements wrong");
    writeln!(consumer.stdin.as_mut().expect("piped"), "done").map_err(|e| usage(&e.to_string()))?;
    for line in lines {
        println!("  {}", line.map_err(|e| usage(&e.to_string()))?);
    }
    consumer.wait().map_err(|e| usage(&e.to_string()))?;
    drop(a); // only after the consumer closed its mapping

    // Pool memory, the pool's file descriptor over a Unix socket.
    let pool = ctx.new_exportable_mem_pool()?;
    let mut b = stream.alloc_from_pool::<f32, _>(&pool, n)?;
    b.copy_from_host_async(&host, &stream)?;
    event.record(&stream)?; // the allocation and the copy, which the consumer waits for
    let ptr = b.pool_ipc_handle()?.to_bytes();
    let mut payload = (ptr.len() as u32).to_le_bytes().to_vec();
    payload.extend_from_slice(&ptr);
    payload.extend_from_slice(&event.ipc_handle()?.to_bytes());
    let path = std::env::temp_dir().join(format!("cudajit-ipc-example-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).map_err(|e| usage(&e.to_string()))?;
    let mut consumer = Command::new(std::env::current_exe().map_err(|e| usage(&e.to_string()))?)
        .args(["pool-consumer", path.to_str().expect("a UTF-8 temp path")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| usage(&format!("starting the consumer: {e}")))?;
    let (sock, _) = listener.accept().map_err(|e| usage(&e.to_string()))?;
    send_fd(&sock, pool.export_fd()?.as_fd(), &payload)?;
    let mut lines = BufReader::new(consumer.stdout.take().expect("piped")).lines();
    for line in lines.by_ref() {
        let line = line.map_err(|e| usage(&e.to_string()))?;
        println!("  {line}");
        if line.contains("recorded") {
            break;
        }
    }
    stream.wait_event(&event)?; // the consumer's kernel and its free of the imported pointer
    let got = b.to_vec_async(&stream)?;
    let bad = got
        .iter()
        .zip(&host)
        .filter(|(g, h)| **g != **h + 1.0)
        .count();
    println!("producer: the consumer added one to the pool array; {bad} of {n} elements wrong");
    drop(b); // freed on `stream`, after the consumer's free
    writeln!(consumer.stdin.as_mut().expect("piped"), "done").map_err(|e| usage(&e.to_string()))?;
    for line in lines {
        println!("  {}", line.map_err(|e| usage(&e.to_string()))?);
    }
    consumer.wait().map_err(|e| usage(&e.to_string()))?;
    let _ = std::fs::remove_file(&path);
    stream.synchronize()?;
    Ok(())
}

fn plain_consumer(mem: &str, ev: &str) -> cudajit::Result<()> {
    let ctx = Device::get(0)?.primary_context()?;
    let stream = ctx.new_stream()?;
    let handle = IpcMemHandle::from_bytes(&unhex(mem))?;
    let event = IpcEventHandle::from_bytes(&unhex(ev))?.open(&ctx)?;
    let t = std::time::Instant::now();
    let mut a: DeviceArray<f32> = handle.open(&ctx)?;
    let open_ms = t.elapsed().as_secs_f64() * 1e3;
    println!(
        "consumer (pid {}): opened {} {} of the producer (pid {}) in {open_ms:.3} ms",
        std::process::id(),
        a.len(),
        handle.type_name(),
        handle.exporter_pid()
    );
    // Reading the whole array through the mapping: a copy into this process's own memory.
    let mut local = ctx.alloc::<f32, _>(a.len())?;
    local.copy_from_device_async(&a, &stream)?; // warm-up
    let (start, end) = (ctx.new_event()?, ctx.new_event()?);
    start.record(&stream)?;
    local.copy_from_device_async(&a, &stream)?;
    end.record(&stream)?;
    end.synchronize()?;
    let ms = end.elapsed_ms_since(&start)?;
    let bytes = a.num_bytes() as f64;
    println!(
        "consumer: read {:.1} MiB through the handle in {ms:.3} ms ({:.0} GB/s: a read and a \
         write of each byte)",
        bytes / (1 << 20) as f64,
        2.0 * bytes / (ms as f64 * 1e6)
    );
    drop(local);
    axpb()?.launch(
        &stream,
        LaunchConfig::for_num_elems(a.len(), 256)?,
        (&mut a, 2.0, 0.0),
    )?;
    event.record(&stream)?;
    println!("consumer: doubled it and recorded the event");
    std::io::stdout().flush().ok();
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).ok();
    drop(a); // closes the mapping
    println!("consumer: closed the mapping");
    Ok(())
}

fn pool_consumer(path: &str) -> cudajit::Result<()> {
    let ctx = Device::get(0)?.primary_context()?;
    let stream = ctx.new_stream()?;
    let sock = UnixStream::connect(path).map_err(|e| usage(&e.to_string()))?;
    let (fd, payload) = recv_fd(&sock)?;
    let split = 4 + u32::from_le_bytes(payload[..4].try_into().expect("4 bytes")) as usize;
    let ptr = IpcPoolPtrHandle::from_bytes(&payload[4..split])?;
    let event = IpcEventHandle::from_bytes(&payload[split..])?.open(&ctx)?;
    let pool = MemPool::import_fd(&ctx, fd.as_fd())?;
    let mut b: DeviceArray<f32> = ptr.open(&pool, &stream)?;
    println!(
        "consumer: imported the pool and opened {} {}",
        b.len(),
        ptr.type_name()
    );
    stream.wait_event(&event)?; // the producer's allocation and copy
    axpb()?.launch(
        &stream,
        LaunchConfig::for_num_elems(b.len(), 256)?,
        (&mut b, 1.0, 1.0),
    )?;
    drop(b); // freed in the stream's order, before the event below
    event.record(&stream)?;
    println!("consumer: added one, freed the imported pointer, recorded the event");
    std::io::stdout().flush().ok();
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).ok();
    stream.synchronize()?;
    drop(pool);
    println!("consumer: released the imported pool");
    Ok(())
}
