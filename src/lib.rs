//! weft-node: the Node.js binding of the weft engine. One file per JS class; every method
//! converts its arguments, calls the engine and maps its errors (error.rs). No compute
//! logic lives here.
#![deny(clippy::all)]

#[macro_use]
extern crate napi_derive;

mod allocator;
mod args;
mod backend;
mod context;
mod context_nn;
mod enums;
mod error;
mod gguf;
mod gguf_values;
mod graph;
mod init;
mod memory;
mod options;
mod quant;
mod task;
mod tensor;
