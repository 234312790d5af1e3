//! Streams and events: the order work runs in. A [`Stream`] is an in-order
//! queue of launches and copies on one device; work on different streams
//! may overlap, and an [`Event`] recorded on one stream and waited on by
//! another orders them. Launches are asynchronous; the host waits only
//! when it asks ([`Stream::synchronize`], [`Event::synchronize`],
//! [`Device::synchronize`]) or reads data back.
//!
//! On the CUDA backend a stream is cudarc's `CudaStream` (so a program's
//! own cudarc streams can be wrapped, [`Device::wrap_stream`]) and an event
//! cudarc's `CudaEvent`. On the simulator every operation runs to
//! completion when it is issued, which is one valid schedule of in-order
//! streams: the API and its checks are the same, nothing overlaps, and an
//! event's time is the host's clock when it was recorded.

use crate::device::Buffer;
use crate::device::{Backend, Device};
use crate::elem::{to_bytes, Elem};
use crate::error::DeviceError;
use crate::tensor::{elem_size, Tensor};
use cudarc::driver::{sys, CudaEvent, CudaStream, HostSlice, PinnedHostSlice};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

/// An in-order queue of work on one device (see the module docs).
#[derive(Clone)]
pub struct Stream {
    device: Device,
    kind: StreamKind,
    /// The default stream, which cannot be captured.
    default: bool,
    /// The capture in progress (`begin_capture`), shared by clones.
    capture: Arc<Mutex<Option<Capture>>>,
}

/// What a capture collects besides the driver's graph.
#[derive(Default)]
pub(crate) struct Capture {
    /// The Phobos tensors' buffers the captured launches use, kept alive
    /// as long as the graph is.
    pub(crate) keep: Vec<Arc<Buffer>>,
    /// A captured launch used another library's memory, whose lifetime
    /// the graph cannot extend.
    pub(crate) foreign: bool,
    /// The simulator's captured launches, replayed by `Graph::launch`.
    pub(crate) recorded: Vec<crate::call::Recorded>,
}

#[derive(Clone)]
enum StreamKind {
    Cuda(Arc<CudaStream>),
    /// CUDA's default stream: the null handle, with cudarc's wrapper made
    /// only when asked for ([`Stream::cudarc`]), so that the shorthand
    /// launch functions allocate nothing for it.
    CudaDefault(std::sync::OnceLock<Arc<CudaStream>>),
    /// The simulator runs every operation when it is issued.
    Sim,
}

fn driver(call: &'static str) -> impl Fn(cudarc::driver::DriverError) -> DeviceError {
    move |e| DeviceError::Driver {
        call,
        message: format!("{e}"),
    }
}

impl Device {
    /// A new stream, which does not wait for work on the default stream
    /// (`CU_STREAM_NON_BLOCKING`, as cudarc makes them).
    pub fn new_stream(&self) -> Result<Stream, DeviceError> {
        let kind = match &self.inner.backend {
            Backend::Cuda(c) => {
                let ctx = c.context();
                c.other_streams
                    .store(true, std::sync::atomic::Ordering::Relaxed);
                StreamKind::Cuda(
                    c.bound(|| ctx.new_stream())?
                        .map_err(driver("cuStreamCreate"))?,
                )
            }
            Backend::Sim(_) => StreamKind::Sim,
        };
        Ok(Stream::make(self, kind, false))
    }

    /// The default stream (CUDA's legacy stream), which the shorthand
    /// launch functions and `Device::upload` use.
    pub fn default_stream(&self) -> Stream {
        let kind = match &self.inner.backend {
            Backend::Cuda(_) => StreamKind::CudaDefault(std::sync::OnceLock::new()),
            Backend::Sim(_) => StreamKind::Sim,
        };
        Stream::make(self, kind, true)
    }

    /// A stream the program already has (made with cudarc on this
    /// device's context, e.g. the one candle or the program's own code
    /// launches on), for Phobos launches ordered with that work. A stream
    /// of another context is refused (`DeviceError::OtherContext`); on the
    /// simulator, `DeviceError::NotCuda`.
    pub fn wrap_stream(&self, stream: Arc<CudaStream>) -> Result<Stream, DeviceError> {
        let Backend::Cuda(c) = &self.inner.backend else {
            return Err(DeviceError::NotCuda {
                what: "a cudarc stream".to_string(),
            });
        };
        if stream.context().cu_ctx() as usize != c.raw_context() {
            return Err(DeviceError::OtherContext {
                what: "the wrapped stream".to_string(),
            });
        }
        let default = stream.cu_stream().is_null();
        if !default {
            c.other_streams
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(Stream::make(self, StreamKind::Cuda(stream), default))
    }
}

impl Stream {
    fn make(device: &Device, kind: StreamKind, default: bool) -> Stream {
        // The default stream never captures: its streams share one empty
        // slot, so that `Device::default_stream` (each shorthand launch)
        // allocates nothing.
        static NEVER: std::sync::OnceLock<Arc<Mutex<Option<Capture>>>> = std::sync::OnceLock::new();
        let capture = if default {
            Arc::clone(NEVER.get_or_init(Arc::default))
        } else {
            Arc::default()
        };
        Stream {
            device: device.clone(),
            kind,
            default,
            capture,
        }
    }

    /// The capture in progress, if any.
    pub(crate) fn capture(&self) -> MutexGuard<'_, Option<Capture>> {
        self.capture.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// True while the stream captures (`begin_capture` .. `end_capture`).
    pub fn is_capturing(&self) -> bool {
        self.capture().is_some()
    }

    /// Refuses `what` while the stream captures: a capture records
    /// launches, and copies and waits would run at once instead.
    fn not_capturing(&self, what: &str) -> Result<(), DeviceError> {
        if self.is_capturing() {
            return Err(DeviceError::Capture {
                what: format!(
                    "{what} on a capturing stream; a graph holds launches only: copy \
                     before `begin_capture` or after `end_capture`"
                ),
            });
        }
        Ok(())
    }

    /// Starts recording the launches issued on this stream into a graph
    /// instead of running them, until [`Stream::end_capture`]. While it
    /// captures, the stream refuses copies and waits, and a launch that
    /// would time autotune variants or wait for the device
    /// (`PHOBOS_SYNC=1`) is refused with `LaunchError::Capture`. The
    /// default stream cannot be captured (CUDA's rule).
    pub fn begin_capture(&self) -> Result<(), DeviceError> {
        if self.default {
            return Err(DeviceError::Capture {
                what: "the default stream cannot be captured; capture a stream from \
                       `Device::new_stream`"
                    .to_string(),
            });
        }
        let mut capture = self.capture();
        if capture.is_some() {
            return Err(DeviceError::Capture {
                what: "the stream is already capturing".to_string(),
            });
        }
        self.cuda("cuStreamBeginCapture", |s| {
            s.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED)
        })?;
        self.device
            .capturing()
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        *capture = Some(Capture::default());
        Ok(())
    }

    /// The device the stream's work runs on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The stream as cudarc holds it (`None` on the simulator), for
    /// ordering cudarc work (copies, other libraries' kernels) with
    /// Phobos launches.
    pub fn cudarc(&self) -> Option<&Arc<CudaStream>> {
        match (&self.kind, self.device.cuda_backend()) {
            (StreamKind::Cuda(s), _) => Some(s),
            (StreamKind::CudaDefault(s), Some(c)) => {
                Some(s.get_or_init(|| c.context().default_stream()))
            }
            _ => None,
        }
    }

    /// The raw stream handle passed to the driver (null for the default
    /// stream and on the simulator).
    pub(crate) fn cu_stream(&self) -> sys::CUstream {
        match &self.kind {
            StreamKind::Cuda(s) => s.cu_stream(),
            StreamKind::CudaDefault(_) | StreamKind::Sim => std::ptr::null_mut(),
        }
    }

    /// Runs `f` (a cudarc call) with the device's context current and the
    /// caller's put back after (on the simulator, just runs it).
    pub(crate) fn bound<R>(&self, f: impl FnOnce() -> R) -> Result<R, DeviceError> {
        match self.device.cuda_backend() {
            Some(c) => c.bound(f),
            None => Ok(f()),
        }
    }

    /// True for CUDA's default (legacy) stream and for every simulator stream.
    pub(crate) fn is_default(&self) -> bool {
        self.cu_stream().is_null()
    }

    /// Runs a cudarc call with the device's context current and the
    /// caller's put back after; a driver error becomes a `DeviceError`
    /// naming `call`.
    pub(crate) fn cuda<R>(
        &self,
        call: &'static str,
        f: impl FnOnce(&Arc<CudaStream>) -> Result<R, cudarc::driver::DriverError>,
    ) -> Result<Option<R>, DeviceError> {
        match (self.cudarc(), self.device.cuda_backend()) {
            (Some(s), Some(c)) => Ok(Some(c.bound(|| f(s))?.map_err(driver(call))?)),
            _ => Ok(None),
        }
    }

    /// Waits until every operation issued on this stream so far has
    /// finished (other streams' work may still run).
    pub fn synchronize(&self) -> Result<(), DeviceError> {
        self.not_capturing("waiting for the stream")?;
        self.cuda("cuStreamSynchronize", |s| s.synchronize())?;
        Ok(())
    }

    /// An event marking the work issued on this stream so far: another
    /// stream can wait for it ([`Stream::wait`]), the host can
    /// ([`Event::synchronize`]), and two events time the work between
    /// them ([`Event::elapsed_ms`]).
    pub fn record(&self) -> Result<Event, DeviceError> {
        self.not_capturing("recording an event")?;
        let kind = match self.cuda("cuEventRecord", |s| {
            s.record_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
        })? {
            Some(e) => EventKind::Cuda(e),
            None => EventKind::Sim(Instant::now()),
        };
        Ok(Event {
            device: self.device.clone(),
            kind,
        })
    }

    /// Makes the work issued on this stream from now on wait for `event`
    /// (recorded on any stream of the same device) without blocking the
    /// host. An event of another device is `DeviceError::OtherContext`.
    pub fn wait(&self, event: &Event) -> Result<(), DeviceError> {
        self.not_capturing("waiting for an event")?;
        if !event.device.same_context(&self.device) {
            return Err(DeviceError::OtherContext {
                what: "the event waited on".to_string(),
            });
        }
        if let EventKind::Cuda(e) = &event.kind {
            self.cuda("cuStreamWaitEvent", |s| s.wait(e))?;
        }
        Ok(())
    }

    /// Copies host data to a new tensor, ordered on this stream. The host
    /// slice may be reused as soon as this returns: the driver stages
    /// pageable memory before the call returns.
    pub fn upload<T: Elem>(&self, data: &[T], shape: &[usize]) -> Result<Tensor<T>, DeviceError> {
        self.not_capturing("a copy from the host")?;
        if shape.iter().product::<usize>() != data.len() {
            return Err(DeviceError::Shape {
                shape: shape.to_vec(),
                len: data.len(),
            });
        }
        let buf = self.device.alloc_buffer(
            data.len() * elem_size::<T>(),
            &crate::device::label::<T>(shape),
        )?;
        let mut t = Tensor::from_buffer(buf, 0, shape.to_vec());
        self.copy_to(data, &mut t)?;
        Ok(t)
    }

    /// A new tensor of zeros, set on the device in this stream's order.
    pub fn zeros<T: Elem>(&self, shape: &[usize]) -> Result<Tensor<T>, DeviceError> {
        self.not_capturing("a memset")?;
        let bytes = shape.iter().product::<usize>() * elem_size::<T>();
        let buf = self
            .device
            .alloc_buffer(bytes, &crate::device::label::<T>(shape))?;
        let addr = buf.addr;
        if self
            .cuda("cuMemsetD8Async", |s| unsafe {
                cudarc::driver::result::memset_d8_async(addr, 0, bytes, s.cu_stream())
            })?
            .is_none()
        {
            self.device.memset(addr, 0, bytes)?;
        }
        Ok(Tensor::from_buffer(buf, 0, shape.to_vec()))
    }

    /// Overwrites `dst`'s elements with `data` (exactly `dst.len()`
    /// elements), ordered on this stream; `data` may be reused at once.
    pub fn copy_to<T: Elem>(&self, data: &[T], dst: &mut Tensor<T>) -> Result<(), DeviceError> {
        self.not_capturing("a copy from the host")?;
        if data.len() != dst.len() {
            return Err(DeviceError::Shape {
                shape: dst.shape().to_vec(),
                len: data.len(),
            });
        }
        dst.check_in_bounds(data.len())?;
        self.check_tensor(dst.device())?;
        let bytes = to_bytes(data);
        if bytes.is_empty() {
            return Ok(());
        }
        let addr = dst.address();
        if self
            .cuda("cuMemcpyHtoDAsync", |s| unsafe {
                cudarc::driver::result::memcpy_htod_async(addr, &bytes[..], s.cu_stream())
            })?
            .is_none()
        {
            self.device.upload_bytes(addr, &bytes)?;
        }
        Ok(())
    }

    /// Copies `src`'s elements to the host once the work issued on this
    /// stream before has finished; waits for this stream only, not the
    /// whole device.
    pub fn download<T: Elem>(&self, src: &Tensor<T>) -> Result<Vec<T>, DeviceError> {
        self.not_capturing("a copy to the host")?;
        let len = src.len();
        src.check_in_bounds(len)?;
        self.check_tensor(src.device())?;
        let mut bytes = vec![0u8; len * elem_size::<T>()];
        let addr = src.address();
        if bytes.is_empty() {
            return Ok(Vec::new());
        }
        match self.cuda("cuMemcpyDtoHAsync", |s| unsafe {
            cudarc::driver::result::memcpy_dtoh_async(&mut bytes[..], addr, s.cu_stream())?;
            cudarc::driver::result::stream::synchronize(s.cu_stream())
        })? {
            Some(()) => Ok(crate::elem::from_bytes(&bytes)),
            None => src.to_vec(),
        }
    }

    /// Copies `src` into page-locked host memory (cudarc's
    /// `PinnedHostSlice`, `ctx.alloc_pinned`) without waiting: the copy is
    /// ordered on this stream and overlaps other work; reading `dst`
    /// (`as_slice`) waits for it. `dst` must hold `src.len()` elements and
    /// belong to the device's context.
    pub fn download_pinned<T: Elem>(
        &self,
        src: &Tensor<T>,
        dst: &mut PinnedHostSlice<T>,
    ) -> Result<(), DeviceError> {
        self.not_capturing("a copy to the host")?;
        let len = src.len();
        src.check_in_bounds(len)?;
        self.check_tensor(src.device())?;
        self.check_pinned(dst.context(), dst.len(), len, src.shape())?;
        let addr = src.address();
        self.cuda("cuMemcpyDtoHAsync", |s| unsafe {
            let (host, _record) = dst.stream_synced_mut_slice(s);
            cudarc::driver::result::memcpy_dtoh_async(&mut host[..len], addr, s.cu_stream())
        })?;
        Ok(())
    }

    /// Copies page-locked host memory into `dst` without waiting, ordered
    /// on this stream; `src` may be written again once the stream has done
    /// the copy (cudarc's `PinnedHostSlice` waits for it).
    pub fn upload_pinned<T: Elem>(
        &self,
        src: &PinnedHostSlice<T>,
        dst: &mut Tensor<T>,
    ) -> Result<(), DeviceError> {
        self.not_capturing("a copy from the host")?;
        let len = dst.len();
        dst.check_in_bounds(len)?;
        self.check_tensor(dst.device())?;
        self.check_pinned(src.context(), src.len(), len, dst.shape())?;
        let addr = dst.address();
        self.cuda("cuMemcpyHtoDAsync", |s| unsafe {
            let (host, _record) = src.stream_synced_slice(s);
            cudarc::driver::result::memcpy_htod_async(addr, &host[..len], s.cu_stream())
        })?;
        Ok(())
    }

    /// A pinned buffer of `pinned_len` elements in `ctx` for a copy of a
    /// tensor of `shape` (`len` elements) on this stream.
    fn check_pinned(
        &self,
        ctx: &Arc<cudarc::driver::CudaContext>,
        pinned_len: usize,
        len: usize,
        shape: &[usize],
    ) -> Result<(), DeviceError> {
        match self.device.raw_context() {
            None => Err(DeviceError::NotCuda {
                what: "pinned host memory".to_string(),
            }),
            Some(c) if c != ctx.cu_ctx() as usize => Err(DeviceError::OtherContext {
                what: "the pinned host buffer".to_string(),
            }),
            Some(_) if pinned_len != len => Err(DeviceError::Shape {
                shape: shape.to_vec(),
                len: pinned_len,
            }),
            Some(_) => Ok(()),
        }
    }

    fn check_tensor(&self, device: &Device) -> Result<(), DeviceError> {
        if device.same_context(&self.device) {
            Ok(())
        } else {
            Err(DeviceError::OtherContext {
                what: "the tensor".to_string(),
            })
        }
    }
}

// cudarc's drops make the context current (`cuCtxSetCurrent`) to destroy
// a stream or an event; the caller's current context is put back.
impl Drop for Stream {
    fn drop(&mut self) {
        // The last handle of a capturing stream ends the capture (its graph
        // discarded), so that the device can be waited for again.
        if !self.default && Arc::strong_count(&self.capture) == 1 && self.capture().take().is_some()
        {
            self.device
                .capturing()
                .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
            if let StreamKind::Cuda(s) = &self.kind {
                let s = Arc::clone(s);
                let flags = sys::CUgraphInstantiate_flags(0);
                let _ = self.cuda("cuStreamEndCapture", move |_| {
                    s.end_capture(flags).map(drop)
                });
            }
        }
        if let (StreamKind::Cuda(_), Some(c)) = (&self.kind, self.device.cuda_backend()) {
            let kind = std::mem::replace(&mut self.kind, StreamKind::Sim);
            let _ = c.bound(|| drop(kind));
        }
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        if let (EventKind::Cuda(_), Some(c)) = (&self.kind, self.device.cuda_backend()) {
            let kind = std::mem::replace(&mut self.kind, EventKind::Sim(Instant::now()));
            let _ = c.bound(|| drop(kind));
        }
    }
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Stream({:p} on {})",
            self.cu_stream(),
            self.device.name()
        )
    }
}

/// A point in a stream's work (see [`Stream::record`]).
pub struct Event {
    device: Device,
    kind: EventKind,
}

enum EventKind {
    Cuda(CudaEvent),
    Sim(Instant),
}

impl Event {
    /// Waits until the work the event marks has finished.
    pub fn synchronize(&self) -> Result<(), DeviceError> {
        match (&self.kind, &self.device.inner.backend) {
            (EventKind::Cuda(e), Backend::Cuda(c)) => c
                .bound(|| e.synchronize())?
                .map_err(driver("cuEventSynchronize")),
            _ => Ok(()),
        }
    }

    /// Milliseconds from this event to `end` (recorded later, on the same
    /// device), waiting for both first. On the simulator, host time.
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32, DeviceError> {
        if !self.device.same_context(&end.device) {
            return Err(DeviceError::OtherContext {
                what: "the end event".to_string(),
            });
        }
        match (&self.kind, &end.kind, &self.device.inner.backend) {
            (EventKind::Cuda(a), EventKind::Cuda(b), Backend::Cuda(c)) => c
                .bound(|| a.elapsed_ms(b))?
                .map_err(driver("cuEventElapsedTime")),
            (EventKind::Sim(a), EventKind::Sim(b), _) => {
                Ok(b.saturating_duration_since(*a).as_secs_f32() * 1e3)
            }
            _ => Err(DeviceError::OtherContext {
                what: "the end event".to_string(),
            }),
        }
    }

    /// The device the event was recorded on.
    pub fn device(&self) -> &Device {
        &self.device
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Event(on {})", self.device.name())
    }
}
