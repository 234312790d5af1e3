//! CUDA graphs: a sequence of launches captured on a stream
//! ([`crate::Stream::begin_capture`] .. [`crate::Stream::end_capture`]) and
//! replayed with one call, which saves the host the launch path (checks,
//! argument packing, one driver call per kernel) each time.
//!
//! Each launch is checked when it is captured, exactly as when it runs;
//! the graph then replays the same kernels with the same arguments
//! (tensor addresses and scalar values are fixed at capture). The Phobos
//! tensors the launches used are kept alive by the graph. Other libraries'
//! memory cannot be: a graph that used it replays only through the
//! `unsafe` [`Graph::launch_unchecked`].
//!
//! On the CUDA backend the graph is cudarc's `CudaGraph` (captured in
//! relaxed mode, instantiated once). On the simulator the captured
//! launches are recorded and run again in order.

use crate::call::{EntryCall, Recorded};
use crate::device::Buffer;
use crate::error::DeviceError;
use crate::stream::Stream;
use cudarc::driver::{sys, CudaGraph};
use std::fmt;
use std::sync::Arc;

/// A captured sequence of launches (see the module docs).
pub struct Graph {
    pub(crate) stream: Stream,
    /// The driver's instantiated graph (`None`: the simulator, or an
    /// empty capture).
    pub(crate) cuda: Option<CudaGraph>,
    pub(crate) recorded: Vec<Recorded>,
    /// The buffers the launches use, alive as long as the graph.
    pub(crate) keep: Vec<Arc<Buffer>>,
    pub(crate) foreign: bool,
}

impl Graph {
    /// Replays the captured launches on the stream they were captured on,
    /// in order with its other work (asynchronous on a GPU). A graph that
    /// used another library's memory is refused (`DeviceError::Capture`):
    /// use [`Graph::launch_unchecked`].
    pub fn launch(&self) -> Result<(), DeviceError> {
        self.launch_on(&self.stream)
    }

    /// [`Graph::launch`] on another stream of the same device (or of
    /// another device over the same CUDA context); a stream of another
    /// context is `DeviceError::OtherContext`.
    pub fn launch_on(&self, stream: &Stream) -> Result<(), DeviceError> {
        if self.foreign {
            return Err(DeviceError::Capture {
                what: "the graph uses another library's memory, which it cannot keep \
                       alive; replay it with the unsafe `Graph::launch_unchecked`"
                    .to_string(),
            });
        }
        unsafe { self.launch_unchecked_on(stream) }
    }

    /// [`Graph::launch`] for a graph over other libraries' memory.
    ///
    /// # Safety
    ///
    /// Every foreign buffer a captured launch used is still allocated, and
    /// ordered with this replay as the borrow ordered it at capture (no
    /// other work reads a buffer the graph writes, or writes one it reads,
    /// while the replay may run).
    pub unsafe fn launch_unchecked(&self) -> Result<(), DeviceError> {
        self.launch_unchecked_on(&self.stream)
    }

    /// [`Graph::launch_unchecked`] on another stream, as [`Graph::launch_on`].
    ///
    /// # Safety
    ///
    /// As [`Graph::launch_unchecked`].
    pub unsafe fn launch_unchecked_on(&self, stream: &Stream) -> Result<(), DeviceError> {
        if stream.is_capturing() {
            return Err(DeviceError::Capture {
                what: "replaying a graph on a stream that captures".to_string(),
            });
        }
        let device = self.stream.device();
        if !device.same_context(stream.device()) {
            return Err(DeviceError::OtherContext {
                what: "the stream the graph is replayed on".to_string(),
            });
        }
        if let Some(g) = &self.cuda {
            let c = device.cuda_backend().ok_or_else(|| DeviceError::NotCuda {
                what: "a CUDA graph".to_string(),
            })?;
            let exec = g.cu_graph_exec();
            let raw = stream.cu_stream();
            return c
                .bound(|| cudarc::driver::result::graph::launch(exec, raw))?
                .map_err(|e| DeviceError::Driver {
                    call: "cuGraphLaunch",
                    message: e.to_string(),
                });
        }
        for r in &self.recorded {
            device
                .launch_entry(&EntryCall {
                    site: &r.site,
                    id: &r.id,
                    source: &r.source,
                    entry: &r.entry,
                    variant: &r.variant,
                    grid: r.grid,
                    block: r.block,
                    args: &r.args,
                    cu_stream: stream.cu_stream() as usize,
                    capturing: false,
                })
                .map_err(|e| DeviceError::Simulator(e.to_string()))?;
        }
        Ok(())
    }

    /// The number of launches captured (on the simulator; on a GPU the
    /// driver's graph holds them and this is 0).
    pub fn recorded_launches(&self) -> usize {
        self.recorded.len()
    }

    /// The number of Phobos tensor arguments the graph holds on to (their
    /// buffers stay allocated while the graph lives).
    pub fn tensors_kept(&self) -> usize {
        self.keep.len()
    }

    /// The stream the graph replays on.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }
}

// cudarc's drop makes the context current to destroy the graph; the
// caller's current context is put back.
impl Drop for Graph {
    fn drop(&mut self) {
        if let (Some(g), Some(c)) = (self.cuda.take(), self.stream.device().cuda_backend()) {
            let _ = c.bound(|| drop(g));
        }
    }
}

impl fmt::Debug for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Graph(on {:?})", self.stream)
    }
}

// The graph's constructor lives with the graph, so that the stream (which
// the launcher and the backends use) does not import it.
impl Stream {
    /// Ends the capture and returns the graph of the launches issued since
    /// [`Stream::begin_capture`], ready to replay with [`Graph::launch`].
    pub fn end_capture(&self) -> Result<Graph, DeviceError> {
        let Some(capture) = self.capture().take() else {
            return Err(DeviceError::Capture {
                what: "the stream is not capturing".to_string(),
            });
        };
        self.device()
            .capturing()
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        let flags = sys::CUgraphInstantiate_flags(0);
        let cuda = match self.cudarc() {
            Some(s) => {
                let s = Arc::clone(s);
                self.cuda("cuStreamEndCapture", move |_| s.end_capture(flags))?
                    .flatten()
            }
            None => None,
        };
        Ok(Graph {
            stream: self.clone(),
            cuda,
            recorded: capture.recorded,
            keep: capture.keep,
            foreign: capture.foreign,
        })
    }
}
