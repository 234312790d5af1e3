//! Other libraries' memory as kernel arguments, without copies.
//!
//! - Typed, for the cudarc version this crate uses: [`Stream::borrow`]
//!   takes a `&CudaSlice<T>` or `&CudaView<T>` as a read-only tensor of a
//!   given shape, [`Stream::borrow_mut`] a `&mut CudaSlice<T>` or
//!   `&mut CudaViewMut<T>` as a written one. Rust's borrow rules then give
//!   the same guarantees as for [`Tensor`]s (one writer, or many readers),
//!   and the launch checks (shape, buffer length, alignment, read/write
//!   aliasing) see the foreign buffer as they see a tensor. cudarc's own
//!   stream ordering is kept: borrowing makes the stream wait for the
//!   slice's earlier writes (and, for a written borrow, reads), and
//!   dropping the borrow records the stream's work on the slice's events.
//! - Raw, for any other cudarc version or library:
//!   [`ForeignTensor::from_raw`] and [`ForeignTensorMut::from_raw`] take a
//!   device pointer, its length in elements, a shape and the CUDA context
//!   the memory belongs to; `unsafe`, with the contract on each.
//!
//! Misuse is an error, not undefined behaviour: memory of another context
//! is `DeviceError::OtherContext`, a buffer shorter than its shape
//! `DeviceError::ForeignTooSmall`, and on the simulator (which has no
//! CUDA memory) `DeviceError::NotCuda`.

use crate::device::Device;
use crate::elem::Elem;
use crate::error::DeviceError;
use crate::launch::{Arg, TensorArg};
use crate::stream::Stream;
use crate::tensor::Tensor;
use cudarc::driver::{DevicePtr, DevicePtrMut, DeviceSlice, SyncOnDrop};
use std::ffi::c_void;
use std::fmt;
use std::marker::PhantomData;

/// A read-only tensor argument over memory another library owns (see the
/// module docs), valid for `'a`.
pub struct ForeignTensor<'a, T: Elem> {
    device: Device,
    /// The stream the borrow was made for (raw handle; `None`: any).
    stream: Option<usize>,
    address: u64,
    len: usize,
    shape: Vec<usize>,
    /// cudarc's record of this stream's use of the slice, made on drop.
    sync: Option<SyncOnDrop<'a>>,
    _elem: PhantomData<&'a [T]>,
}

/// A written tensor argument over memory another library owns (see the
/// module docs), valid for `'a`. It is also a read-only argument.
pub struct ForeignTensorMut<'a, T: Elem> {
    inner: ForeignTensor<'a, T>,
    _elem: PhantomData<&'a mut [T]>,
}

/// The context's raw handle for `device`, or `NotCuda`.
fn context_of(device: &Device, what: &str) -> Result<usize, DeviceError> {
    device.raw_context().ok_or_else(|| DeviceError::NotCuda {
        what: what.to_string(),
    })
}

fn check_len(len: usize, shape: &[usize]) -> Result<(), DeviceError> {
    let needed = shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .unwrap_or(usize::MAX);
    if needed > len {
        return Err(DeviceError::ForeignTooSmall {
            shape: shape.to_vec(),
            needed,
            len,
        });
    }
    Ok(())
}

impl Stream {
    /// `slice` (a cudarc `CudaSlice<T>` or `CudaView<T>` on this device's
    /// context) as a read-only tensor of `shape` for launches on this
    /// stream. The stream first waits for the slice's earlier writes;
    /// dropping the result records this stream's reads for later writers.
    pub fn borrow<'a, T: Elem, S: DevicePtr<T>>(
        &'a self,
        slice: &'a S,
        shape: &[usize],
    ) -> Result<ForeignTensor<'a, T>, DeviceError> {
        let (cuda, _) = self.foreign_checks(slice, shape)?;
        let (address, sync) = self.bound(|| slice.device_ptr(cuda))?;
        Ok(ForeignTensor {
            device: self.device().clone(),
            stream: Some(cuda.cu_stream() as usize),
            address,
            len: slice.len(),
            shape: shape.to_vec(),
            sync: Some(sync),
            _elem: PhantomData,
        })
    }

    /// `slice` (a cudarc `&mut CudaSlice<T>` or `&mut CudaViewMut<T>` on
    /// this device's context) as a written tensor of `shape` for launches
    /// on this stream. The stream first waits for the slice's earlier
    /// reads and writes; dropping the result records this stream's writes.
    pub fn borrow_mut<'a, T: Elem, S: DevicePtrMut<T>>(
        &'a self,
        slice: &'a mut S,
        shape: &[usize],
    ) -> Result<ForeignTensorMut<'a, T>, DeviceError> {
        let (cuda, _) = self.foreign_checks(&*slice, shape)?;
        let len = slice.len();
        let (address, sync) = self.bound(|| slice.device_ptr_mut(cuda))?;
        Ok(ForeignTensorMut {
            inner: ForeignTensor {
                device: self.device().clone(),
                stream: Some(cuda.cu_stream() as usize),
                address,
                len,
                shape: shape.to_vec(),
                sync: Some(sync),
                _elem: PhantomData,
            },
            _elem: PhantomData,
        })
    }

    /// The checks of a typed borrow: a CUDA stream, the slice in its
    /// context, long enough for `shape`.
    fn foreign_checks<T, S: DeviceSlice<T> + ?Sized>(
        &self,
        slice: &S,
        shape: &[usize],
    ) -> Result<(&std::sync::Arc<cudarc::driver::CudaStream>, usize), DeviceError> {
        let ctx = context_of(self.device(), "a cudarc buffer")?;
        let cuda = self.cudarc().ok_or_else(|| DeviceError::NotCuda {
            what: "a cudarc buffer".to_string(),
        })?;
        if slice.stream().context().cu_ctx() as usize != ctx {
            return Err(DeviceError::OtherContext {
                what: "the borrowed cudarc buffer".to_string(),
            });
        }
        check_len(slice.len(), shape)?;
        Ok((cuda, ctx))
    }
}

impl<'a, T: Elem> ForeignTensor<'a, T> {
    /// A read-only tensor of `shape` over `len` elements of `T` at device
    /// address `ptr`, for memory any library allocated (another cudarc
    /// version, candle's or Burn's storage, a C library).
    ///
    /// # Safety
    ///
    /// - `ptr..ptr + len * size_of::<T>()` is memory allocated in
    ///   `context` (a `CUcontext`, from any cudarc version, cast to a
    ///   pointer) holding initialized values of `T`, and stays allocated
    ///   while the result, and every launch that used it, may run (the
    ///   caller orders the memory's owner after those launches, e.g. with
    ///   an [`crate::Event`]);
    /// - nothing writes that memory while launches reading it may run.
    ///
    /// Checked, not assumed: `context` is the device's context
    /// (`DeviceError::OtherContext`), `len` covers `shape`
    /// (`DeviceError::ForeignTooSmall`), the device is a GPU
    /// (`DeviceError::NotCuda`).
    pub unsafe fn from_raw(
        device: &Device,
        ptr: u64,
        len: usize,
        shape: &[usize],
        context: *mut c_void,
    ) -> Result<ForeignTensor<'a, T>, DeviceError> {
        let ctx = context_of(device, "a raw device pointer")?;
        if context as usize != ctx {
            return Err(DeviceError::OtherContext {
                what: "the raw device pointer".to_string(),
            });
        }
        check_len(len, shape)?;
        Ok(ForeignTensor {
            device: device.clone(),
            stream: None,
            address: ptr,
            len,
            shape: shape.to_vec(),
            sync: None,
            _elem: PhantomData,
        })
    }

    /// The shape the memory is borrowed with.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The device address of the first element.
    pub fn address(&self) -> u64 {
        self.address
    }

    fn arg(&self) -> Arg<'_> {
        Arg::Tensor(TensorArg::foreign(
            &self.device,
            self.stream,
            T::TY,
            &self.shape,
            self.address,
            self.len,
        ))
    }
}

impl<'a, T: Elem> ForeignTensorMut<'a, T> {
    /// [`ForeignTensor::from_raw`] for memory the kernel writes.
    ///
    /// # Safety
    ///
    /// As [`ForeignTensor::from_raw`], and besides: nothing else reads or
    /// writes that memory while launches writing it may run.
    pub unsafe fn from_raw(
        device: &Device,
        ptr: u64,
        len: usize,
        shape: &[usize],
        context: *mut c_void,
    ) -> Result<ForeignTensorMut<'a, T>, DeviceError> {
        Ok(ForeignTensorMut {
            inner: ForeignTensor::from_raw(device, ptr, len, shape, context)?,
            _elem: PhantomData,
        })
    }

    /// The shape the memory is borrowed with.
    pub fn shape(&self) -> &[usize] {
        &self.inner.shape
    }

    /// The device address of the first element.
    pub fn address(&self) -> u64 {
        self.inner.address
    }
}

impl<T: Elem> Drop for ForeignTensor<'_, T> {
    fn drop(&mut self) {
        // cudarc records the event with `cuCtxSetCurrent`; the caller's
        // current context is put back.
        if let Some(sync) = self.sync.take() {
            if let Some(cuda) = self.device.cuda_backend() {
                let _ = cuda.bound(|| drop(sync));
            }
        }
    }
}

impl<T: Elem> fmt::Debug for ForeignTensor<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ForeignTensor<{}>{:?} at {:#x} ({} elements)",
            T::TY.name(),
            self.shape,
            self.address,
            self.len
        )
    }
}

impl<T: Elem> fmt::Debug for ForeignTensorMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Mut{:?}", self.inner)
    }
}

/// A tensor a kernel reads: a [`Tensor`], or another library's memory
/// ([`ForeignTensor`], [`ForeignTensorMut`]). The stream forms of the
/// generated launch functions take `&impl TensorIn<T>`.
pub trait TensorIn<T: Elem> {
    /// The launch argument: what the checks need to know.
    fn arg(&self) -> Arg<'_>;
}

/// A tensor a kernel writes: a [`Tensor`] or a [`ForeignTensorMut`],
/// taken as `&mut impl TensorOut<T>`.
pub trait TensorOut<T: Elem>: TensorIn<T> {}

impl<T: Elem> TensorIn<T> for Tensor<T> {
    fn arg(&self) -> Arg<'_> {
        Arg::from(self)
    }
}
impl<T: Elem> TensorOut<T> for Tensor<T> {}

impl<T: Elem> TensorIn<T> for ForeignTensor<'_, T> {
    fn arg(&self) -> Arg<'_> {
        ForeignTensor::arg(self)
    }
}

impl<T: Elem> TensorIn<T> for ForeignTensorMut<'_, T> {
    fn arg(&self) -> Arg<'_> {
        self.inner.arg()
    }
}
impl<T: Elem> TensorOut<T> for ForeignTensorMut<'_, T> {}

impl<'a, T: Elem> From<&'a ForeignTensor<'_, T>> for Arg<'a> {
    fn from(t: &'a ForeignTensor<'_, T>) -> Arg<'a> {
        t.arg()
    }
}

impl<'a, T: Elem> From<&'a mut ForeignTensorMut<'_, T>> for Arg<'a> {
    fn from(t: &'a mut ForeignTensorMut<'_, T>) -> Arg<'a> {
        t.inner.arg()
    }
}
