//! The bytes of an IPC handle: a versioned, little-endian record of the driver's 64 bytes, where
//! they come from (process, device) and, for memory, the array they hold (element type, shape,
//! byte offset). Decoding checks every length, so bytes from anywhere give a handle or an error.

use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

use crate::error::{Error, Result, ShapeDisplay};

/// The first bytes of every cudajit IPC handle.
const MAGIC: &[u8; 5] = b"CJIPC";
/// The encoding's version (the byte after the magic).
const VERSION: u8 = 1;
/// The longest element type name a handle carries.
const MAX_TYPE_NAME: usize = 256;
/// The most dimensions a handle's shape has.
const MAX_NDIM: usize = 64;

/// Which kind of handle the bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Plain device memory (`cuIpcGetMemHandle`): [`IpcMemHandle`](super::IpcMemHandle).
    Mem = 1,
    /// An allocation of an exportable pool (`cuMemPoolExportPointer`):
    /// [`IpcPoolPtrHandle`](super::IpcPoolPtrHandle).
    PoolPtr = 2,
    /// An interprocess event (`cuIpcGetEventHandle`): [`IpcEventHandle`](super::IpcEventHandle).
    Event = 3,
}

impl Kind {
    fn from_byte(b: u8) -> Option<Kind> {
        match b {
            1 => Some(Kind::Mem),
            2 => Some(Kind::PoolPtr),
            3 => Some(Kind::Event),
            _ => None,
        }
    }

    /// What the kind is called in messages.
    pub(crate) fn what(self) -> &'static str {
        match self {
            Kind::Mem => "an IPC memory handle (IpcMemHandle)",
            Kind::PoolPtr => "an IPC pool pointer handle (IpcPoolPtrHandle)",
            Kind::Event => "an IPC event handle (IpcEventHandle)",
        }
    }
}

/// A number that differs between processes (and between runs of one), so that a handle can
/// tell whether it is being opened in the process that exported it (which CUDA refuses), even
/// across PID namespaces where two processes may share a PID.
pub(crate) fn process_token() -> u64 {
    static TOKEN: OnceLock<u64> = OnceLock::new();
    *TOKEN.get_or_init(|| {
        // RandomState's keys are random per process (seeded from the OS).
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
            h.write_u128(t.as_nanos());
        }
        h.finish()
    })
}

/// Where a handle was made: the process and the device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Origin {
    /// [`process_token`] of the exporting process.
    pub(crate) token: u64,
    /// Its process id (for messages).
    pub(crate) pid: u32,
    /// The device's UUID.
    pub(crate) uuid: [u8; 16],
    /// The device's ordinal in the exporting process (for messages; ordinals differ between
    /// processes with different `CUDA_VISIBLE_DEVICES`).
    pub(crate) ordinal: u32,
}

impl Origin {
    /// This process, on the device with `uuid` and `ordinal`.
    pub(crate) fn here(uuid: [u8; 16], ordinal: usize) -> Origin {
        Origin {
            token: process_token(),
            pid: std::process::id(),
            uuid,
            ordinal: u32::try_from(ordinal).unwrap_or(u32::MAX),
        }
    }

    /// An error unless this is another process than the one that made the handle.
    pub(crate) fn check_other_process(&self, kind: Kind) -> Result<()> {
        if self.token == process_token() {
            return Err(Error::Ipc {
                message: format!(
                    "cannot open {} in the process that exported it (pid {}): CUDA maps IPC \
                     handles only in other processes; in this process use the original array or \
                     event itself",
                    kind.what(),
                    self.pid
                ),
                code: None,
            });
        }
        Ok(())
    }
}

/// The array a memory handle holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ArrayDesc {
    /// Bytes from the start of the exported allocation to the array's first element.
    pub(crate) byte_offset: u64,
    /// `size_of` the element type.
    pub(crate) elem_size: u32,
    /// `std::any::type_name` of the element type.
    pub(crate) type_name: String,
    /// The shape (C order, contiguous).
    pub(crate) shape: Vec<usize>,
}

/// No array: what a handle without one reads as (no element type matches it).
pub(crate) static NO_ARRAY: ArrayDesc = ArrayDesc {
    byte_offset: 0,
    elem_size: 0,
    type_name: String::new(),
    shape: Vec::new(),
};

impl ArrayDesc {
    /// The array's size in bytes (checked when decoded).
    pub(crate) fn num_bytes(&self) -> usize {
        self.shape.iter().product::<usize>() * self.elem_size as usize
    }

    /// An error unless the handle holds elements of `T`.
    pub(crate) fn check_type<T>(&self) -> Result<()> {
        let want = std::any::type_name::<T>();
        if self.type_name != want || self.elem_size as usize != std::mem::size_of::<T>() {
            return Err(Error::Ipc {
                message: format!(
                    "the handle holds an array of {} ({} bytes each) of shape {}; it cannot be \
                     opened as an array of {want} ({} bytes each)",
                    self.type_name,
                    self.elem_size,
                    ShapeDisplay(&self.shape),
                    std::mem::size_of::<T>()
                ),
                code: None,
            });
        }
        Ok(())
    }

    /// The shape as the dimension type `D`, or an error when `D` has another number of axes.
    pub(crate) fn dim<D: ndarray::Dimension>(&self) -> Result<D> {
        if let Some(n) = D::NDIM {
            if n != self.shape.len() {
                return Err(Error::Ipc {
                    message: format!(
                        "the handle holds an array of shape {} ({} axes); it cannot be opened \
                         with {n} axes (open it with that many, or as IxDyn)",
                        ShapeDisplay(&self.shape),
                        self.shape.len()
                    ),
                    code: None,
                });
            }
        }
        let mut dim = D::zeros(self.shape.len());
        dim.slice_mut().copy_from_slice(&self.shape);
        Ok(dim)
    }
}

/// A decoded handle: its kind, the driver's bytes, where it comes from, and (for memory) the
/// array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    pub(crate) kind: Kind,
    pub(crate) raw: [u8; 64],
    pub(crate) origin: Origin,
    /// `Some` for memory kinds, `None` for events.
    pub(crate) array: Option<ArrayDesc>,
}

impl Record {
    /// The record's bytes.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(128);
        out.extend_from_slice(MAGIC);
        out.push(VERSION);
        out.push(self.kind as u8);
        out.push(0);
        out.extend_from_slice(&self.raw);
        out.extend_from_slice(&self.origin.token.to_le_bytes());
        out.extend_from_slice(&self.origin.pid.to_le_bytes());
        out.extend_from_slice(&self.origin.uuid);
        out.extend_from_slice(&self.origin.ordinal.to_le_bytes());
        if let Some(a) = &self.array {
            out.extend_from_slice(&a.byte_offset.to_le_bytes());
            out.extend_from_slice(&a.elem_size.to_le_bytes());
            let name = a.type_name.as_bytes();
            out.extend_from_slice(&(name.len() as u16).to_le_bytes());
            out.extend_from_slice(name);
            out.push(a.shape.len() as u8);
            for d in &a.shape {
                out.extend_from_slice(&(*d as u64).to_le_bytes());
            }
        }
        out
    }

    /// Decodes a record of kind `want`.
    pub(crate) fn decode(bytes: &[u8], want: Kind) -> Result<Record> {
        let mut r = Reader { bytes, at: 0 };
        if r.take(5).ok() != Some(&MAGIC[..]) {
            return Err(bad(
                "these bytes are not a cudajit IPC handle (no `CJIPC` mark)",
            ));
        }
        let version = r.u8()?;
        if version != VERSION {
            return Err(bad(&format!(
                "the handle's format is version {version}; this cudajit reads version {VERSION} \
                 (use the same cudajit version in both processes)"
            )));
        }
        let kind = Kind::from_byte(r.u8()?)
            .ok_or_else(|| bad("the handle's kind byte is unknown (corrupt bytes?)"))?;
        if kind != want {
            return Err(bad(&format!(
                "these bytes are {}, not {}",
                kind.what(),
                want.what()
            )));
        }
        r.u8()?;
        let raw: [u8; 64] = r.array()?;
        let origin = Origin {
            token: u64::from_le_bytes(r.array()?),
            pid: u32::from_le_bytes(r.array()?),
            uuid: r.array()?,
            ordinal: u32::from_le_bytes(r.array()?),
        };
        let array = match kind {
            Kind::Event => None,
            Kind::Mem | Kind::PoolPtr => Some(r.array_desc()?),
        };
        if r.at != bytes.len() {
            return Err(bad(&format!(
                "{} bytes follow the handle (corrupt or concatenated bytes?)",
                bytes.len() - r.at
            )));
        }
        Ok(Record {
            kind,
            raw,
            origin,
            array,
        })
    }
}

/// A decoding error.
fn bad(why: &str) -> Error {
    Error::Ipc {
        message: format!("invalid IPC handle bytes: {why}"),
        code: None,
    }
}

/// Reads the fields of a record, every read checked against the length.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or_else(|| {
            bad(&format!(
                "truncated: {} bytes, more expected after byte {}",
                self.bytes.len(),
                self.at
            ))
        })?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    fn array_desc(&mut self) -> Result<ArrayDesc> {
        let byte_offset = u64::from_le_bytes(self.array()?);
        let elem_size = u32::from_le_bytes(self.array()?);
        let name_len = u16::from_le_bytes(self.array()?) as usize;
        if name_len > MAX_TYPE_NAME {
            return Err(bad(&format!("an element type name of {name_len} bytes")));
        }
        let type_name = std::str::from_utf8(self.take(name_len)?)
            .map_err(|_| bad("the element type name is not UTF-8"))?
            .to_string();
        let ndim = self.u8()? as usize;
        if ndim > MAX_NDIM {
            return Err(bad(&format!("{ndim} dimensions (at most {MAX_NDIM})")));
        }
        let mut shape = Vec::with_capacity(ndim);
        for _ in 0..ndim {
            let d = u64::from_le_bytes(self.array()?);
            shape.push(usize::try_from(d).map_err(|_| bad("a dimension too large for this host"))?);
        }
        if elem_size == 0 {
            return Err(bad("an element size of 0"));
        }
        let bytes = shape
            .iter()
            .try_fold(elem_size as usize, |acc, &d| acc.checked_mul(d))
            .and_then(|b| b.checked_add(usize::try_from(byte_offset).ok()?));
        if bytes.is_none() {
            return Err(bad(&format!(
                "shape {} of {elem_size}-byte elements at offset {byte_offset} overflows",
                ShapeDisplay(&shape)
            )));
        }
        Ok(ArrayDesc {
            byte_offset,
            elem_size,
            type_name,
            shape,
        })
    }
}
