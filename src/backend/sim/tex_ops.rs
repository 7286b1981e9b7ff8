//! Texture fetches and surface loads and stores in a block: each active lane's handle and
//! coordinates read from its registers, the object looked up in the simulator's table
//! (`texture.rs`), the texel sampled (`tex_sample.rs`). A handle that names no live object,
//! a fetch of the wrong dimension and a surface access out of range are faults.

use super::block::{try_lanes, Block, Frame, Mask};
use super::fault::Fault;
use super::global;
use super::hopper::reg;
use super::tex_sample::fetch;
use super::texture::{surface, texture, View};
use crate::backend::texture::TexDesc;
use crate::error::FaultKind;
use crate::ir::{ScalarTy, SurfStore, TexOp, ValueId};

impl Block<'_> {
    /// A texture fetch or surface load, for the lanes `m`.
    pub(super) fn texture_op(
        &mut self,
        fr: &mut Frame<'_>,
        dst: ValueId,
        op: &TexOp,
        m: &Mask,
    ) -> Result<(), Fault> {
        let (n, f) = (self.n, fr.f);
        let ty = f.values[dst.0 as usize].ty;
        let d = dst.0 as usize * n;
        match op {
            TexOp::Fetch {
                tex,
                kind,
                dims,
                coords,
                channel,
            } => {
                let int_coords = coords
                    .first()
                    .is_some_and(|c| f.values[c.0 as usize].ty != ScalarTy::F32);
                let mut last: Option<(u64, View, TexDesc)> = None;
                let mut cs = Vec::with_capacity(coords.len());
                try_lanes(m, self.nw, |t| {
                    let h = reg(fr, n, *tex, t);
                    let (v, desc) = match last {
                        Some((lh, v, desc)) if lh == h => (v, desc),
                        _ => {
                            let (v, desc) = texture(h).ok_or_else(|| {
                                Fault::new(
                                    FaultKind::Unsupported,
                                    format!(
                                        "{} fetches from texture object {h:#x}, which is not a live texture object",
                                        self.who(t)
                                    ),
                                )
                            })?;
                            last = Some((h, v, desc));
                            (v, desc)
                        }
                    };
                    let layered = *kind == crate::ir::TexFetch::Layered;
                    if v.dims != *dims || v.layered != layered {
                        let l = |b: bool| if b { "layered " } else { "" };
                        return Err(Fault::new(
                            FaultKind::Unsupported,
                            format!(
                                "{} makes a {}{dims}-D fetch from a {}{}-D texture object",
                                self.who(t),
                                l(layered),
                                l(v.layered),
                                v.dims
                            ),
                        ));
                    }
                    cs.clear();
                    cs.extend(coords.iter().map(|c| reg(fr, n, *c, t)));
                    fr.regs[d + t] =
                        fetch(&v, &desc, *kind, &cs, int_coords, *channel as usize, ty);
                    Ok(())
                })
            }
            TexOp::SurfLoad { surf, dims, coords } => try_lanes(m, self.nw, |t| {
                let addr = self.surface_addr(fr, *surf, *dims, coords, ty, t, "reads")?;
                // SAFETY: `surface_addr` checked the element lies in the surface's array,
                // naturally aligned.
                fr.regs[d + t] = unsafe { global::load(addr, ty) };
                Ok(())
            }),
        }
    }

    /// A surface store, for the lanes `m`.
    pub(super) fn surf_store(
        &mut self,
        fr: &mut Frame<'_>,
        s: &SurfStore,
        m: &Mask,
    ) -> Result<(), Fault> {
        let n = self.n;
        let ty = fr.f.values[s.value.0 as usize].ty;
        try_lanes(m, self.nw, |t| {
            let addr = self.surface_addr(fr, s.surf, s.dims, &s.coords, ty, t, "writes")?;
            let bits = reg(fr, n, s.value, t);
            // SAFETY: as for the load.
            unsafe { global::store(addr, ty, bits) };
            Ok(())
        })
    }

    /// The address of the element of type `ty` at `coords` (x in elements) of surface `surf`
    /// for lane `t`, or the fault of an access out of range (the `.trap` mode).
    #[allow(clippy::too_many_arguments)]
    fn surface_addr(
        &self,
        fr: &Frame<'_>,
        surf: ValueId,
        dims: u8,
        coords: &[ValueId],
        ty: ScalarTy,
        t: usize,
        what: &str,
    ) -> Result<u64, Fault> {
        let n = self.n;
        let h = reg(fr, n, surf, t);
        let v = surface(h).ok_or_else(|| {
            Fault::new(
                FaultKind::Unsupported,
                format!(
                    "{} {what} surface object {h:#x}, which is not a live surface object",
                    self.who(t)
                ),
            )
        })?;
        if v.dims != dims {
            return Err(Fault::new(
                FaultKind::Unsupported,
                format!(
                    "{} makes a {dims}-D access to a {}-D surface object",
                    self.who(t),
                    v.dims
                ),
            ));
        }
        let size = ty.size();
        let c: Vec<i64> = coords
            .iter()
            .map(|c| reg(fr, n, *c, t) as u32 as i32 as i64)
            .collect();
        let xb = c[0] * size as i64;
        let row = (v.extent[0] * v.texel.bytes()) as i64;
        let ok = xb >= 0
            && xb + size as i64 <= row
            && (dims < 2 || (0..v.extent[1] as i64).contains(&c[1]))
            && (dims < 3 || (0..v.extent[2] as i64).contains(&c[2]));
        if !ok {
            return Err(Fault::new(
                FaultKind::OutOfBounds,
                format!(
                    "{} {what} surface element {:?} of {} bytes, outside the surface's {} x {} x {} texels of {} bytes",
                    self.who(t),
                    &c[..dims as usize],
                    size,
                    v.extent[0],
                    v.extent[1],
                    v.extent[2],
                    v.texel.bytes()
                ),
            ));
        }
        let y = if dims >= 2 { c[1] as usize } else { 0 };
        let z = if dims >= 3 { c[2] as usize } else { 0 };
        let addr = v.base + (z * v.slice + y * v.pitch + xb as usize) as u64;
        if addr % size as u64 != 0 {
            return Err(Fault::new(
                FaultKind::Misaligned,
                format!("{} {what} a {size}-byte surface element at a byte offset that is not a multiple of {size}", self.who(t)),
            ));
        }
        Ok(addr)
    }
}
