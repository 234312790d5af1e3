//! The step-through drawing of a Phobos kernel: trace from the simulator, rendered as a self-contained HTML page.
