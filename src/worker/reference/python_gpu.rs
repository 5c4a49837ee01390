//! A Python reference on the GPU (`check_python` with `gpu = true`): the function is given
//! torch tensors on the GPU that are copies, made there, of the runner's buffers, which the
//! interpreter's process opens in place (CUDA IPC); it returns its outputs, which the driver
//! writes into buffers of the runner's, compared with the kernel's on the GPU. Nothing crosses
//! the host link: an audited region's re-check costs the function's time on the GPU and a few
//! milliseconds, where reading the draw back and writing it to files cost a second at 16M
//! elements. The interpreter's work runs between the timed regions, never beside them.

use super::python::{request, scalar};
use crate::experiment::{ArgValue, Kernel, LaunchSpec, PythonCheck};
use crate::worker::agreement;
use crate::worker::buffers::{Buffers, POISON};
use crate::worker::failure::{during, Failure};
use crate::worker::kernels::Kernels;
use crate::worker::timeline::Timeline;
use cuda::DeviceBuffer;
use serde_json::{json, Value};

/// The check of the kernel's outputs (`outputs`: argument and its buffer) against `pc`'s
/// function given `inputs` (per argument, the device buffer holding what the launch read:
/// each buffer the kernel only reads, and each it updates in place as it was before the
/// launch; None for the rest), each within the launch's tolerances or its type's. `results`
/// keeps the buffers the function's outputs go into, from one check to the next.
pub fn check(
    pc: &PythonCheck,
    (def, spec): (&Kernel, &LaunchSpec),
    (inputs, outputs): (&[Option<&DeviceBuffer>], &[(usize, &DeviceBuffer)]),
    results: &mut Vec<DeviceBuffer>,
    (kernels, timeline): (&mut Kernels, &mut Timeline),
) -> Result<String, Failure> {
    let sharing = during("sharing a buffer with the Python reference");
    let dtype = |i: usize| match spec.args[i] {
        ArgValue::Buffer { dtype, .. } | ArgValue::Scalar { dtype, .. } => dtype,
    };
    let shared = |name: &str, i: usize, buffer: &DeviceBuffer| -> Result<Value, Failure> {
        let handle = buffer.ipc_handle().map_err(&sharing)?;
        let hex: String = handle.iter().map(|b| format!("{b:02x}")).collect();
        let len = buffer.bytes() / dtype(i).size();
        Ok(json!({ "name": name, "dtype": dtype(i).key(), "len": len, "ipc": hex }))
    };
    let given = |i: usize| !def.writes(i) || def.updates_in_place(i);
    let mut args = Vec::new();
    for (i, arg) in def.args.iter().enumerate().filter(|(i, _)| given(*i)) {
        args.push(match &spec.args[i] {
            ArgValue::Scalar { dtype, bytes } => {
                json!({ "name": arg.name, "value": scalar(*dtype, bytes) })
            }
            ArgValue::Buffer { .. } => {
                let buffer = inputs.get(i).copied().flatten().ok_or_else(|| {
                    Failure::from(format!(
                        "the Python reference has no buffer of `{}` on the GPU",
                        arg.name
                    ))
                })?;
                shared(&arg.name, i, buffer)?
            }
        });
    }
    // Poisoned first: an element the driver leaves unwritten is named as such.
    let making = during("the Python reference's result buffers");
    for (k, (_, mine)) in outputs.iter().enumerate() {
        if results.get(k).is_none_or(|b| b.bytes() != mine.bytes()) {
            let made = DeviceBuffer::alloc(mine.bytes()).map_err(&making)?;
            match results.get_mut(k) {
                Some(kept) => *kept = made,
                None => results.push(made),
            }
        }
        results[k].fill(POISON).map_err(&making)?;
    }
    let results = &results[..outputs.len()];
    let outs = (outputs.iter().zip(results))
        .map(|((o, _), theirs)| shared(&def.args[*o].name, *o, theirs))
        .collect::<Result<Vec<_>, Failure>>()?;
    cuda::synchronize().map_err(&sharing)?;
    timeline.mark("Python reference on the GPU: buffers shared");
    let asked = json!({
        "file": pc.path, "function": pc.function, "torch": true, "gpu": true,
        "args": args, "outputs": outs,
    });
    request(pc, &asked)?;
    timeline.mark("Python reference on the GPU: its answer");
    let mut notes = Vec::new();
    for ((o, mine), theirs) in outputs.iter().zip(results) {
        let tolerances = spec.tolerances.for_output(dtype(*o));
        let meta = (def.args[*o].name.as_str(), dtype(*o), tolerances);
        let compared =
            agreement::on_gpu(kernels, timeline, (Some(*mine), Some(theirs)), meta, None)?;
        notes.push(compared.ok_or_else(|| {
            Failure::from(format!(
                "`{}` is not in device memory: a Python reference on the GPU compares outputs there (leave gpu = true out)",
                def.args[*o].name
            ))
        })?);
    }
    timeline.mark("Python reference on the GPU: compared");
    Ok(format!(
        "against Python `{}` on the GPU: {}",
        pc.label(),
        notes.join("; ")
    ))
}

/// The check of a launch against `pc`'s function on the GPU: given the kernel's buffers it
/// only reads as they are, and each it updates in place as it was before the launch
/// (`host`, uploaded again into a buffer of its own).
pub fn check_launch(
    pc: &PythonCheck,
    (def, spec): (&Kernel, &LaunchSpec),
    (host, buffers): (&[Option<Vec<u8>>], &Buffers),
    on: (&mut Kernels, &mut Timeline),
) -> Result<String, Failure> {
    let before = uploaded_in_place(def, host, |_| false)?;
    let inputs = given(def, |i| own(&before, i), |i| buffers.buffer(i));
    let outputs = outputs_of(pc, buffers)?;
    check(pc, (def, spec), (&inputs, &outputs), &mut Vec::new(), on)
}

/// The buffers of `pc`'s outputs among the kernel's `buffers`.
pub fn outputs_of<'b>(
    pc: &PythonCheck,
    buffers: &'b Buffers,
) -> Result<Vec<(usize, &'b DeviceBuffer)>, Failure> {
    let missing = || Failure::from("an output has no buffer".to_string());
    (pc.outputs.iter())
        .map(|&o| Ok((o, buffers.buffer(o).ok_or_else(missing)?)))
        .collect()
}

/// Each argument `def` updates in place that `redrawn` does not hold, its data of `host`
/// uploaded into a buffer of its own: as it was before the launch.
pub fn uploaded_in_place(
    def: &Kernel,
    host: &[Option<Vec<u8>>],
    redrawn: impl Fn(usize) -> bool,
) -> Result<Vec<(usize, DeviceBuffer)>, Failure> {
    let mut uploaded = Vec::new();
    for (i, data) in host.iter().enumerate() {
        if let (true, false, Some(data)) = (def.updates_in_place(i), redrawn(i), data) {
            let copy = DeviceBuffer::alloc(data.len())?;
            copy.upload(data)?;
            uploaded.push((i, copy));
        }
    }
    Ok(uploaded)
}

/// The buffer of argument `i` among `buffers`, where they hold one.
pub fn own(buffers: &[(usize, DeviceBuffer)], i: usize) -> Option<&DeviceBuffer> {
    buffers.iter().find(|(j, _)| *j == i).map(|(_, b)| b)
}

/// What the function is given, per argument: each buffer updated in place as `before` holds
/// it, each the kernel only reads as `read` does, nothing for the rest.
pub fn given<'a>(
    def: &Kernel,
    before: impl Fn(usize) -> Option<&'a DeviceBuffer>,
    read: impl Fn(usize) -> Option<&'a DeviceBuffer>,
) -> Vec<Option<&'a DeviceBuffer>> {
    (0..def.args.len())
        .map(|i| match (def.updates_in_place(i), def.writes(i)) {
            (true, _) => before(i),
            (false, false) => read(i),
            (false, true) => None,
        })
        .collect()
}
