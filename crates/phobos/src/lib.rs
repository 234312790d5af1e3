//! The Phobos runtime: tensors, launch checks, and one device abstraction over CUDA (cudarc) and the CPU simulator.
