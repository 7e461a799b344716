// The iq4_nl values of ggml-common.h as a WGSL constant, included by dequant.wgsl's iq4_nl and
// iq4_xs sections and by quantize.wgsl. GENERATED from the engine's table
// (crates/weft/src/types/quant/grids.rs); the test ops::quant::tests::iq_tables_match_the_engine
// fails when they differ and rewrites this file when run with WEFT_WRITE_IQ_TABLES=1. Do not
// edit by hand. (The grid I-quants' tables are a storage buffer: iq_grids.wgsl.)

const KVALUES_IQ4NL = array<f32, 16>(
    -127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0, 1.0, 13.0, 25.0, 38.0, 53.0, 69.0, 89.0, 113.0,
);
