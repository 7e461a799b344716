// The I-quants' grids and their sign table, read from one storage buffer each device
// uploads once (GpuContext::iq_grids, the engine's tables laid out by ops/quant.rs's
// iq_grid_words; a test there checks the offsets below). Storage, not WGSL `const` arrays:
// a const array indexed at run time is copied into every invocation, and lavapipe's LLVM
// took minutes to compile each shader that did so.
// 64-bit grid entries are two u32 words, low word first (element 0 in the lowest byte).
// The encoder binds the buffer for every pipeline whose key has a grid type's QT_ flag
// (ops/quant.rs's uses_iq_grids).

@group(0) @binding(15) var<storage, read> iq_grids: array<u32>;

const IQ2XXS_GRID_AT: u32 = 0u;
const IQ2XS_GRID_AT: u32 = 512u;
const IQ2S_GRID_AT: u32 = 1536u;
const IQ3XXS_GRID_AT: u32 = 3584u;
const IQ3S_GRID_AT: u32 = 3840u;
const IQ1S_GRID_AT: u32 = 4352u;
const KSIGNS_IQ2XS_AT: u32 = 8448u;

// Word i of the table at offset `at`.
fn iq_grid(at: u32, i: u32) -> u32 {
    return iq_grids[at + i];
}
