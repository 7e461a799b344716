//! GGUF tensors into weft: create a context's tensors from a file's infos, load their data
//! into whatever buffers those tensors were allocated in (any backend), and gather tensors
//! into a writer.

use super::{GgufFile, GgufWriter};
use crate::backend::{tensor_read, tensor_set};
use crate::context::Context;
use crate::tensor::Tensor;
use crate::{ensure, Error, Result};

/// One tensor per tensor info, in file order, named as in the file (not yet allocated when
/// the context has no_alloc; then allocate them on a backend and call [`load_tensors`]).
pub fn create_tensors(file: &GgufFile, ctx: &Context) -> Result<Vec<Tensor>> {
    file.tensors()
        .iter()
        .map(|info| {
            let t = ctx.new_tensor(info.ty, &info.ne).map_err(|e| e.context(format!("gguf tensor '{}'", info.name)))?;
            t.set_name(&info.name);
            Ok(t)
        })
        .collect()
}

/// Copy each tensor's data from the file, matched by name; type and shape must agree.
/// Tensors the file lacks are an error (a model missing a weight is not loadable).
pub fn load_tensors(file: &GgufFile, tensors: &[Tensor]) -> Result<()> {
    for t in tensors {
        let name = t.name();
        let info =
            file.tensor(&name).ok_or_else(|| Error::invalid(format!("gguf: the file has no tensor named '{name}'")))?;
        ensure!(
            info.ty == t.ty() && info.ne == t.ne(),
            "gguf: tensor '{name}' is {} {:?} in the file but {} {:?} here",
            info.ty,
            info.ne,
            t.ty(),
            t.ne()
        );
        ensure!(t.is_contiguous(), "gguf: tensor '{name}' must be contiguous to load");
        tensor_set(t, file.tensor_data(info), 0)?;
        file.check_intact()?;
    }
    Ok(())
}

/// Add a tensor's current data (read from any backend) to a writer under its own name,
/// with ggml's trimmed shape.
pub fn add_tensor_from(writer: &mut GgufWriter<'_>, t: &Tensor) -> Result<()> {
    ensure!(t.is_contiguous(), "gguf writer: tensor '{}' must be contiguous", t.label());
    // Checked reads: an unallocated tensor is an error before anything is allocated.
    let data = tensor_read(t, 0, t.nbytes())?;
    let ne = t.ne();
    writer.add_tensor(t.name(), t.ty(), &ne[..t.n_dims()], data)
}
