//! The collectives and point-to-point calls of a [`Communicator`], and [`group`].
//!
//! Each call checks element counts, ranks and devices first (see `shapes`), then binds the
//! rank's context and enqueues the NCCL operation on the given cudajit stream: it returns
//! before the data has moved, like any other stream-ordered call.

use std::ffi::c_void;

use cudajit_sys::nccl as nc;

use super::comm::{refuse_simulator, Communicator};
use super::dtype::{NcclType, ReduceOp};
use super::result::check;
use super::shapes;
use crate::context::Context;
use crate::error::Result;
use crate::memory::{DeviceSlice, DeviceSliceMut};
use crate::stream::Stream;

/// Runs `f` between `ncclGroupStart` and `ncclGroupEnd`, so the NCCL calls it makes are issued
/// together: needed to drive several ranks from one thread, and for send/recv pairs that would
/// otherwise wait on each other. The group is ended even when `f` fails; `f`'s error comes
/// first, then the end's.
pub fn group<R>(f: impl FnOnce() -> Result<R>) -> Result<R> {
    refuse_simulator("nccl::group")?;
    // SAFETY: ncclGroupStart takes no arguments; it is matched by the ncclGroupEnd below.
    check(
        unsafe { nc::ncclGroupStart() },
        "ncclGroupStart",
        std::ptr::null_mut(),
    )?;
    let out = f();
    // SAFETY: ends the group started above.
    let end = check(
        unsafe { nc::ncclGroupEnd() },
        "ncclGroupEnd",
        std::ptr::null_mut(),
    );
    let value = out?;
    end?;
    Ok(value)
}

fn send_ptr<T: NcclType, S: DeviceSlice<T> + ?Sized>(a: &S) -> *const c_void {
    a.device_ptr() as usize as *const c_void
}

fn recv_ptr<T: NcclType, M: DeviceSliceMut<T> + ?Sized>(a: &mut M) -> *mut c_void {
    a.device_ptr() as usize as *mut c_void
}

fn raw_stream(stream: &Stream) -> nc::cudaStream_t {
    stream.raw() as nc::cudaStream_t
}

impl Communicator {
    /// Checks that the stream and the arrays (`(what, context)`) are on this rank's device,
    /// then binds its context.
    fn prepare(
        &self,
        op: &'static str,
        stream: &Stream,
        arrays: &[(&str, &Context)],
    ) -> Result<()> {
        let (rank, dev) = (self.rank(), self.device().ordinal());
        shapes::device(
            op,
            "the stream",
            stream.context().device().ordinal(),
            rank,
            dev,
        )?;
        for (what, ctx) in arrays {
            shapes::device(op, what, ctx.device().ordinal(), rank, dev)?;
        }
        self.context().bind()
    }

    /// Reduces `send` over all ranks with `op` into every rank's `recv` (`ncclAllReduce`).
    /// Both hold the same number of elements.
    pub fn all_reduce<T, S, M>(
        &self,
        send: &S,
        recv: &mut M,
        op: ReduceOp,
        stream: &Stream,
    ) -> Result<()>
    where
        T: NcclType,
        S: DeviceSlice<T> + ?Sized,
        M: DeviceSliceMut<T> + ?Sized,
    {
        shapes::same_len("all_reduce", send.len(), recv.len())?;
        self.prepare(
            "all_reduce",
            stream,
            &[
                ("the input", send.context()),
                ("the output", recv.context()),
            ],
        )?;
        // SAFETY: both ranges hold `len` elements of T on this rank's device (checked above).
        check(
            unsafe {
                nc::ncclAllReduce(
                    send_ptr(send),
                    recv_ptr(recv),
                    send.len(),
                    T::DATA_TYPE,
                    op.raw(),
                    self.raw(),
                    raw_stream(stream),
                )
            },
            "ncclAllReduce",
            self.raw(),
        )
    }

    /// [`all_reduce`](Communicator::all_reduce) in place: `buf` is input and output.
    pub fn all_reduce_in_place<T, M>(
        &self,
        buf: &mut M,
        op: ReduceOp,
        stream: &Stream,
    ) -> Result<()>
    where
        T: NcclType,
        M: DeviceSliceMut<T> + ?Sized,
    {
        self.prepare(
            "all_reduce_in_place",
            stream,
            &[("the buffer", buf.context())],
        )?;
        let p = recv_ptr(buf);
        // SAFETY: in place: NCCL reads and writes the same `len` elements (on this device).
        check(
            unsafe {
                nc::ncclAllReduce(
                    p,
                    p,
                    buf.len(),
                    T::DATA_TYPE,
                    op.raw(),
                    self.raw(),
                    raw_stream(stream),
                )
            },
            "ncclAllReduce",
            self.raw(),
        )
    }

    /// Copies `send` of rank `root` into every rank's `recv` (`ncclBroadcast`). `send` is read
    /// only on the root; every rank passes arrays of the same length.
    pub fn broadcast<T, S, M>(
        &self,
        send: &S,
        recv: &mut M,
        root: usize,
        stream: &Stream,
    ) -> Result<()>
    where
        T: NcclType,
        S: DeviceSlice<T> + ?Sized,
        M: DeviceSliceMut<T> + ?Sized,
    {
        shapes::same_len("broadcast", send.len(), recv.len())?;
        shapes::rank_in("broadcast", "root", root, self.size())?;
        self.prepare(
            "broadcast",
            stream,
            &[
                ("the input", send.context()),
                ("the output", recv.context()),
            ],
        )?;
        // SAFETY: both ranges hold `len` elements of T on this rank's device; root is a rank.
        check(
            unsafe {
                nc::ncclBroadcast(
                    send_ptr(send),
                    recv_ptr(recv),
                    send.len(),
                    T::DATA_TYPE,
                    root as _,
                    self.raw(),
                    raw_stream(stream),
                )
            },
            "ncclBroadcast",
            self.raw(),
        )
    }

    /// [`broadcast`](Communicator::broadcast) in place: the root's `buf` is copied into every
    /// other rank's `buf`.
    pub fn broadcast_in_place<T, M>(&self, buf: &mut M, root: usize, stream: &Stream) -> Result<()>
    where
        T: NcclType,
        M: DeviceSliceMut<T> + ?Sized,
    {
        shapes::rank_in("broadcast_in_place", "root", root, self.size())?;
        self.prepare(
            "broadcast_in_place",
            stream,
            &[("the buffer", buf.context())],
        )?;
        let p = recv_ptr(buf);
        // SAFETY: in place on `len` elements of this device; root is a rank.
        check(
            unsafe {
                nc::ncclBroadcast(
                    p,
                    p,
                    buf.len(),
                    T::DATA_TYPE,
                    root as _,
                    self.raw(),
                    raw_stream(stream),
                )
            },
            "ncclBroadcast",
            self.raw(),
        )
    }

    /// Reduces `send` over all ranks with `op` into `recv` of rank `root` (`ncclReduce`).
    /// Every rank passes arrays of the same length; `recv` is written only on the root.
    pub fn reduce<T, S, M>(
        &self,
        send: &S,
        recv: &mut M,
        op: ReduceOp,
        root: usize,
        stream: &Stream,
    ) -> Result<()>
    where
        T: NcclType,
        S: DeviceSlice<T> + ?Sized,
        M: DeviceSliceMut<T> + ?Sized,
    {
        shapes::same_len("reduce", send.len(), recv.len())?;
        shapes::rank_in("reduce", "root", root, self.size())?;
        self.prepare(
            "reduce",
            stream,
            &[
                ("the input", send.context()),
                ("the output", recv.context()),
            ],
        )?;
        // SAFETY: both ranges hold `len` elements of T on this rank's device; root is a rank.
        check(
            unsafe {
                nc::ncclReduce(
                    send_ptr(send),
                    recv_ptr(recv),
                    send.len(),
                    T::DATA_TYPE,
                    op.raw(),
                    root as _,
                    self.raw(),
                    raw_stream(stream),
                )
            },
            "ncclReduce",
            self.raw(),
        )
    }

    /// Gathers every rank's `send` into every rank's `recv`, rank `r`'s at elements
    /// `r * send.len()..` (`ncclAllGather`). `recv` holds `size() * send.len()` elements.
    pub fn all_gather<T, S, M>(&self, send: &S, recv: &mut M, stream: &Stream) -> Result<()>
    where
        T: NcclType,
        S: DeviceSlice<T> + ?Sized,
        M: DeviceSliceMut<T> + ?Sized,
    {
        shapes::all_gather(send.len(), recv.len(), self.size())?;
        self.prepare(
            "all_gather",
            stream,
            &[
                ("the input", send.context()),
                ("the output", recv.context()),
            ],
        )?;
        // SAFETY: `send` holds `len` elements, `recv` size × len (checked), on this device.
        check(
            unsafe {
                nc::ncclAllGather(
                    send_ptr(send),
                    recv_ptr(recv),
                    send.len(),
                    T::DATA_TYPE,
                    self.raw(),
                    raw_stream(stream),
                )
            },
            "ncclAllGather",
            self.raw(),
        )
    }

    /// [`all_gather`](Communicator::all_gather) in place: `buf` holds `size()` equal blocks and
    /// this rank's block (block `rank()`) is its input.
    pub fn all_gather_in_place<T, M>(&self, buf: &mut M, stream: &Stream) -> Result<()>
    where
        T: NcclType,
        M: DeviceSliceMut<T> + ?Sized,
    {
        let block = shapes::in_place_blocks("all_gather_in_place", buf.len(), self.size())?;
        self.prepare(
            "all_gather_in_place",
            stream,
            &[("the buffer", buf.context())],
        )?;
        let base = recv_ptr(buf);
        let own = (base as usize + self.rank() * block * std::mem::size_of::<T>()) as *const c_void;
        // SAFETY: in place as NCCL defines it: the input is block `rank` of the output.
        check(
            unsafe {
                nc::ncclAllGather(
                    own,
                    base,
                    block,
                    T::DATA_TYPE,
                    self.raw(),
                    raw_stream(stream),
                )
            },
            "ncclAllGather",
            self.raw(),
        )
    }

    /// Reduces `send` over all ranks with `op` and leaves block `rank()` of the result in
    /// `recv` (`ncclReduceScatter`). `send` holds `size() * recv.len()` elements.
    pub fn reduce_scatter<T, S, M>(
        &self,
        send: &S,
        recv: &mut M,
        op: ReduceOp,
        stream: &Stream,
    ) -> Result<()>
    where
        T: NcclType,
        S: DeviceSlice<T> + ?Sized,
        M: DeviceSliceMut<T> + ?Sized,
    {
        shapes::reduce_scatter(send.len(), recv.len(), self.size())?;
        self.prepare(
            "reduce_scatter",
            stream,
            &[
                ("the input", send.context()),
                ("the output", recv.context()),
            ],
        )?;
        // SAFETY: `recv` holds `len` elements, `send` size × len (checked), on this device.
        check(
            unsafe {
                nc::ncclReduceScatter(
                    send_ptr(send),
                    recv_ptr(recv),
                    recv.len(),
                    T::DATA_TYPE,
                    op.raw(),
                    self.raw(),
                    raw_stream(stream),
                )
            },
            "ncclReduceScatter",
            self.raw(),
        )
    }

    /// [`reduce_scatter`](Communicator::reduce_scatter) in place: `buf` holds `size()` equal
    /// blocks; the reduced block `rank()` is written over block `rank()`.
    pub fn reduce_scatter_in_place<T, M>(
        &self,
        buf: &mut M,
        op: ReduceOp,
        stream: &Stream,
    ) -> Result<()>
    where
        T: NcclType,
        M: DeviceSliceMut<T> + ?Sized,
    {
        let block = shapes::in_place_blocks("reduce_scatter_in_place", buf.len(), self.size())?;
        self.prepare(
            "reduce_scatter_in_place",
            stream,
            &[("the buffer", buf.context())],
        )?;
        let base = recv_ptr(buf);
        let own = (base as usize + self.rank() * block * std::mem::size_of::<T>()) as *mut c_void;
        // SAFETY: in place as NCCL defines it: the output is block `rank` of the input.
        check(
            unsafe {
                nc::ncclReduceScatter(
                    base,
                    own,
                    block,
                    T::DATA_TYPE,
                    op.raw(),
                    self.raw(),
                    raw_stream(stream),
                )
            },
            "ncclReduceScatter",
            self.raw(),
        )
    }

    /// Sends `buf` to rank `peer`, which must [`recv`](Communicator::recv) as many elements of
    /// the same type (`ncclSend`). Pair sends and receives inside [`group`].
    pub fn send<T, S>(&self, buf: &S, peer: usize, stream: &Stream) -> Result<()>
    where
        T: NcclType,
        S: DeviceSlice<T> + ?Sized,
    {
        shapes::rank_in("send", "peer", peer, self.size())?;
        self.prepare("send", stream, &[("the sent array", buf.context())])?;
        // SAFETY: `len` elements of T on this rank's device; peer is a rank.
        check(
            unsafe {
                nc::ncclSend(
                    send_ptr(buf),
                    buf.len(),
                    T::DATA_TYPE,
                    peer as _,
                    self.raw(),
                    raw_stream(stream),
                )
            },
            "ncclSend",
            self.raw(),
        )
    }

    /// Receives into `buf` what rank `peer` [`send`](Communicator::send)s (`ncclRecv`).
    pub fn recv<T, M>(&self, buf: &mut M, peer: usize, stream: &Stream) -> Result<()>
    where
        T: NcclType,
        M: DeviceSliceMut<T> + ?Sized,
    {
        shapes::rank_in("recv", "peer", peer, self.size())?;
        self.prepare("recv", stream, &[("the receiving array", buf.context())])?;
        // SAFETY: `len` elements of T on this rank's device; peer is a rank.
        check(
            unsafe {
                nc::ncclRecv(
                    recv_ptr(buf),
                    buf.len(),
                    T::DATA_TYPE,
                    peer as _,
                    self.raw(),
                    raw_stream(stream),
                )
            },
            "ncclRecv",
            self.raw(),
        )
    }
}
