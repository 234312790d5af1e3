//! A Phobos starter: runs `kernels/axpy.pho` on the GPU when there is one,
//! else on the CPU simulator (`PHOBOS_BACKEND=sim|cuda` forces one), and
//! checks the result on the CPU.

mod kernels {
    include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
}

use std::error::Error;

fn main() -> Result<(), Box<dyn Error>> {
    let dev = phobos_runtime::Device::auto()?;
    let n = 1000;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let y: Vec<f32> = (0..n).map(|i| (n - i) as f32).collect();

    let xt = dev.upload(&x, &[n])?;
    let mut yt = dev.upload(&y, &[n])?;
    kernels::axpy(&dev, 2.0, &xt, &mut yt)?;
    let out = yt.to_vec()?;

    let wrong = (0..n).filter(|&i| out[i] != 2.0 * x[i] + y[i]).count();
    println!("axpy on {}: {n} elements, {wrong} wrong", dev.name());
    if wrong > 0 {
        return Err(format!("{wrong} elements differ from the CPU result").into());
    }
    Ok(())
}
