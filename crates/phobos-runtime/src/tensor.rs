//! Tensors: typed, shaped views of device memory. A `Tensor<T>` is a buffer
//! on one device plus an element offset and a row-major shape; several views
//! may share one buffer. Views are not checked against their buffer when
//! made — a launch checks them (`LaunchError::BufferTooShort`), and so do
//! reads and writes from the host.

use crate::device::{label, Buffer, Device};
use crate::elem::{from_bytes, to_bytes, Elem};
use crate::error::DeviceError;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

/// A row-major tensor of `T` in device memory.
///
/// Kernels take read-only tensors by `&Tensor<T>` and written ones by
/// `&mut Tensor<T>`.
pub struct Tensor<T: Elem> {
    pub(crate) buf: Arc<Buffer>,
    /// Offset of the first element, in elements.
    pub(crate) offset: usize,
    pub(crate) shape: Vec<usize>,
    _elem: PhantomData<T>,
}

impl<T: Elem> Tensor<T> {
    pub(crate) fn from_buffer(buf: Arc<Buffer>, offset: usize, shape: Vec<usize>) -> Tensor<T> {
        Tensor {
            buf,
            offset,
            shape,
            _elem: PhantomData,
        }
    }

    /// The tensor's shape, outermost dimension first.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The number of elements the shape covers.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// True when the shape covers no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The number of elements from this view's start to the end of its buffer.
    pub fn capacity(&self) -> usize {
        (self.buf.bytes / elem_size::<T>()).saturating_sub(self.offset)
    }

    /// The device the tensor lives on.
    pub fn device(&self) -> &Device {
        &self.buf.device
    }

    /// The device address of the first element.
    pub fn address(&self) -> u64 {
        self.buf.addr + (self.offset * elem_size::<T>()) as u64
    }

    /// A view of the same buffer starting `offset` elements after this
    /// view's start, with another shape. Nothing is copied; the view is
    /// checked against the buffer when it is used.
    pub fn view(&self, offset: usize, shape: &[usize]) -> Tensor<T> {
        Tensor::from_buffer(
            Arc::clone(&self.buf),
            self.offset.saturating_add(offset),
            shape.to_vec(),
        )
    }

    /// The same elements with another shape (a view from the same start).
    pub fn reshape(&self, shape: &[usize]) -> Tensor<T> {
        self.view(0, shape)
    }

    pub(crate) fn check_in_bounds(&self, len: usize) -> Result<(), DeviceError> {
        if len > self.capacity() {
            return Err(DeviceError::OutOfBounds {
                offset: self.offset,
                len,
                buffer_len: self.buf.bytes / elem_size::<T>(),
            });
        }
        Ok(())
    }

    /// Copies the tensor's elements to the host (waits for the device).
    pub fn to_vec(&self) -> Result<Vec<T>, DeviceError> {
        let len = self.len();
        self.check_in_bounds(len)?;
        let bytes = self
            .buf
            .device
            .download(self.address(), len * elem_size::<T>())?;
        Ok(from_bytes(&bytes))
    }

    /// Overwrites the tensor's elements with `data`, which must have exactly
    /// `self.len()` elements.
    pub fn copy_from(&mut self, data: &[T]) -> Result<(), DeviceError> {
        if data.len() != self.len() {
            return Err(DeviceError::Shape {
                shape: self.shape.clone(),
                len: data.len(),
            });
        }
        self.check_in_bounds(data.len())?;
        self.buf
            .device
            .upload_bytes(self.address(), &to_bytes(data))
    }
}

impl<T: Elem> Tensor<T> {
    /// Sets every element of the view to `value` on the device. A value
    /// whose bytes are all equal (zero, `-1`, ...) is one `cuMemsetD8`;
    /// any other is uploaded a bounded chunk at a time, so filling a tensor
    /// never needs host memory of its size.
    pub fn fill(&mut self, value: T) -> Result<(), DeviceError> {
        let len = self.len();
        self.check_in_bounds(len)?;
        let one = to_bytes(&[value]);
        let size = one.len();
        let device = &self.buf.device;
        if one.iter().all(|&b| b == one[0]) {
            return device.memset(self.address(), one[0], len * size);
        }
        const CHUNK_ELEMS: usize = 1 << 16;
        let chunk = to_bytes(&vec![value; len.min(CHUNK_ELEMS)]);
        let mut done = 0;
        while done < len {
            let n = (len - done).min(CHUNK_ELEMS);
            device.upload_bytes(self.address() + (done * size) as u64, &chunk[..n * size])?;
            done += n;
        }
        Ok(())
    }
}

impl<T: Elem> fmt::Debug for Tensor<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Tensor<{}>{:?} at {:#x} on {}",
            T::TY.name(),
            self.shape,
            self.address(),
            self.buf.device.name()
        )
    }
}

pub(crate) fn elem_size<T: Elem>() -> usize {
    T::TY.size() as usize
}

// The device's constructors of tensors live with the tensor, so that the
// device (which the backends and the launcher share) does not import it.
impl Device {
    /// Copies host data to a new tensor of the given shape.
    pub fn upload<T: Elem>(&self, data: &[T], shape: &[usize]) -> Result<Tensor<T>, DeviceError> {
        if shape.iter().product::<usize>() != data.len() {
            return Err(DeviceError::Shape {
                shape: shape.to_vec(),
                len: data.len(),
            });
        }
        let buf = self.alloc_buffer(data.len() * elem_size::<T>(), &label::<T>(shape))?;
        self.upload_bytes(buf.addr, &to_bytes(data))?;
        Ok(Tensor::from_buffer(buf, 0, shape.to_vec()))
    }

    /// A new tensor of the given shape with every element zero, set on
    /// the device (`cuMemsetD8`): no host buffer of the tensor's size.
    pub fn zeros<T: Elem>(&self, shape: &[usize]) -> Result<Tensor<T>, DeviceError> {
        let bytes = shape.iter().product::<usize>() * elem_size::<T>();
        let buf = self.alloc_buffer(bytes, &label::<T>(shape))?;
        self.memset(buf.addr, 0, bytes)?;
        Ok(Tensor::from_buffer(buf, 0, shape.to_vec()))
    }
}
