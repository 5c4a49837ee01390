//! How a cell's launches are put together and checked: the measured kernel with the
//! arguments it takes and its steps, and the check of its output (a CPU reference, or a
//! reference kernel run on the same inputs).

use super::agreement;
use super::buffers::{not_a_buffer, Buffers, Poison, Prepare, POISON};
use super::compiler::Build;
use super::failure::{during, Failure};
use super::host_buffer::HostBuffer;
use super::inputs::HostInputs;
use super::kernels::{KernelKey, Kernels};
use super::read_back::{read_back, ReadBack};
use super::reference;
use super::samples;
use super::stash::Stash;
use super::timeline::Timeline;
use crate::experiment::{ArgValue, CopyOp, Kernel, LaunchSpec};
use crate::method::equal;
use crate::plan::Cell;
use cuda::{self, DeviceBuffer, Dims, Launch, Param};
use std::cell::RefCell;

/// A launch's dimensions.
pub(super) fn dims_of(spec: &LaunchSpec) -> Dims {
    Dims {
        grid: (spec.grid[0], spec.grid[1], spec.grid[2]),
        block: (spec.block[0], spec.block[1], spec.block[2]),
        shared_bytes: spec.shared_bytes,
    }
}

/// What a cell's output is checked against, and with which inputs.
pub(super) struct Checker<'a> {
    pub(super) cell: &'a Cell,
    pub(super) def: Option<&'a Kernel>,
    pub(super) host: &'a HostInputs,
    pub(super) reference: &'a reference::Cache<'a>,
    /// The seed of the sample of a large output a reference kernel's check compares (an
    /// audit's re-check: the launch was checked in full before anything was timed), else
    /// all of it. A CPU reference samples by its cache's own seed.
    pub(super) sample: Option<u64>,
    /// The cell's reference kernel buffers, made by its first check and kept for the next.
    pub(super) kept: &'a RefCell<Option<Buffers>>,
    /// The point's timed inputs on the device, which a reference kernel's buffers copy
    /// there where `host` is that data.
    pub(super) stash: Option<&'a Stash>,
}

impl Checker<'_> {
    /// Checks the output: against its CPU reference, or against a reference kernel run
    /// now, on fresh buffers of the same inputs, each of its arguments given the checked
    /// kernel's of its name (`check_kernel`).
    /// `recorded`: the kernel names CUPTI is recording timed launches of, where the check
    /// runs among them (after the first timed launch): a reference kernel of the same name
    /// would be taken for one.
    pub(super) fn check(
        &self,
        kernels: &mut Kernels,
        timeline: &mut Timeline,
        buffers: &Buffers,
        recorded: Option<&[String]>,
    ) -> Result<String, Failure> {
        let (cell, host) = (self.cell, self.host);
        if let Some((def, pc)) = self.def.and_then(|d| Some((d, d.check_python.as_ref()?))) {
            if pc.gpu {
                let spec = (def, &cell.launch);
                let on = (kernels, timeline);
                return reference::python_gpu::check_launch(pc, spec, (host, buffers), on);
            }
            let data: Vec<Option<&[u8]>> = host.iter().map(|h| h.as_deref()).collect();
            let got = (pc.outputs.iter())
                .map(|&o| Ok((o, buffers.download(o)?)))
                .collect::<Result<Vec<_>, Failure>>()?;
            // An audited region's re-check reads a draw no other cell reads.
            let keep = self.sample.is_none();
            return reference::python::check(
                pc,
                def,
                &cell.launch,
                (&data, keep),
                &got,
                (self.reference, timeline),
            );
        }
        let Some((def, kc)) = self.def.and_then(|d| Some((d, d.check_kernel.as_ref()?))) else {
            if let Some(account) = self.copy_on_gpu(kernels, timeline, buffers)? {
                return Ok(account);
            }
            return check_output(buffers, host, self.def, &cell.launch, self.reference);
        };
        let stashed = self.stash.and_then(|st| st.copies_of(host));
        let inputs = ReferenceInputs {
            data: (kc.from.iter())
                .map(|f| f.and_then(|i| host[i].as_deref()))
                .collect(),
            copies: (kc.from.iter())
                .map(|f| f.and_then(|i| stashed?.get(i)?.as_ref()))
                .collect(),
            fill: None,
            sample: self.sample,
            kept: Some(&mut self.kept.borrow_mut()),
        };
        against_kernel(kernels, timeline, (cell, def), buffers, recorded, inputs)
    }
}

/// What a reference kernel's own buffers hold, and how much of the outputs is compared.
pub(super) struct ReferenceInputs<'a> {
    /// Per argument of the reference kernel, the data uploaded into it (None: an output,
    /// or left to `fill`).
    pub(super) data: Vec<Option<&'a [u8]>>,
    /// Per argument, where the device holds `data`'s bytes already: copied from there.
    pub(super) copies: Vec<Option<&'a DeviceBuffer>>,
    /// What fills the rest once the outputs are zeroed: the audit's draw on the GPU.
    pub(super) fill: Option<Prepare<'a>>,
    /// The seed of the sample of a large output compared (an audit's), else all of it.
    pub(super) sample: Option<u64>,
    /// The buffers of the cell's earlier checks, kept for the next (an audit's: allocating
    /// and freeing them cost a tiny kernel's check more than the rest of it); None: made
    /// for this check and freed after it.
    pub(super) kept: Option<&'a mut Option<Buffers>>,
}

/// The check against a reference kernel (`check_kernel` of `def`), run now on buffers of
/// its own holding `inputs`, each of its arguments given the checked kernel's of its name.
/// `recorded`: the kernel names CUPTI is recording timed launches of, where the check runs
/// among them (after the first timed launch): a reference kernel of the same name would be
/// taken for one.
pub(super) fn against_kernel(
    kernels: &mut Kernels,
    timeline: &mut Timeline,
    (cell, def): (&Cell, &Kernel),
    buffers: &Buffers,
    recorded: Option<&[String]>,
    inputs: ReferenceInputs,
) -> Result<String, Failure> {
    let kc = (def.check_kernel.as_ref()).ok_or_else(|| "no reference kernel".to_string())?;
    let spec = cell
        .reference_launch
        .as_ref()
        .ok_or_else(|| "the plan gave no launch for the reference kernel".to_string())?;
    let key = KernelKey::Reference(kc.kernel, Build::of(spec).hash());
    let loaded = kernels.get(key, Build::of(spec), timeline)?.0;
    let (func, steps) = (loaded.func.clone(), loaded.steps.clone());
    let names = std::iter::once(&loaded.entry).chain(steps.iter().map(|(n, _)| n));
    if let Some(clash) = names
        .clone()
        .find(|n| recorded.is_some_and(|r| r.contains(n)))
    {
        return Err(Failure::from(format!(
            "the reference kernel's `{clash}` has the name of a kernel CUPTI is timing, and would run among its timed launches: rename it, or add warmup = 1 so the check comes first"
        )));
    }
    let reference = kernels.def(kc.kernel);
    let takes = reference.takes.as_deref();
    check_params(&func, &sizes(&spec.args, takes), &reference.entry)?;
    if spec.shared_bytes > 48 * 1024 {
        func.allow_shared_bytes(spec.shared_bytes)?;
    }
    let made;
    let theirs = match inputs.kept {
        // Kept: the data uploaded again, in case the reference wrote into it.
        Some(Some(kept)) => {
            kept.upload_from(&inputs.data, &inputs.copies)?;
            &*kept
        }
        Some(slot) => {
            let made = Buffers::create(&spec.args, &inputs.data, Poison::ByMemset, &inputs.copies)?;
            &*slot.insert(made)
        }
        None => {
            made = Buffers::create(&spec.args, &inputs.data, Poison::ByMemset, &inputs.copies)?;
            &made
        }
    };
    timeline.mark("reference buffers");
    // Zeros where the measured kernel's outputs hold all ones: an element neither kernel
    // writes differs, whatever its type. Then its own resets, as before every launch.
    theirs.fill_outputs(0)?;
    if let Some(fill) = inputs.fill {
        fill(theirs)?;
    }
    theirs.reset()?;
    let params = theirs.params(&spec.args);
    let mut launch = Launch::new(&func, dims_of(spec), &taken(&params, takes));
    let steps = StepCode::Loaded(steps);
    add_steps(&mut launch, kernels.def(kc.kernel), spec, &params, &steps)?;
    launch.enqueue().map_err(during("reference kernel"))?;
    cuda::synchronize().map_err(during("reference kernel"))?;
    timeline.mark("reference kernel");
    let sample = inputs.sample;
    let both = (buffers, theirs);
    against_outputs(kernels, timeline, (cell, def), both, sample)
}

/// The checked outputs in `buffers` against the reference kernel's in `theirs`, which ran
/// on the same inputs (a large output outside device memory compared at the sample of
/// `sample`, else all of it): the check's compare, and all of a launch alone's after an
/// audited region, whose reference ran for the region's check.
pub(super) fn against_outputs(
    kernels: &mut Kernels,
    timeline: &mut Timeline,
    (cell, def): (&Cell, &Kernel),
    (buffers, theirs): (&Buffers, &Buffers),
    sample: Option<u64>,
) -> Result<String, Failure> {
    let kc = (def.check_kernel.as_ref()).ok_or_else(|| "no reference kernel".to_string())?;
    let spec = (cell.reference_launch.as_ref())
        .ok_or_else(|| "the plan gave no launch for the reference kernel".to_string())?;
    let mut notes = Vec::new();
    for &o in &kc.outputs {
        let r = (kc.reference_arg(o)).ok_or_else(|| {
            format!(
                "the reference kernel has no argument `{}`",
                def.args[o].name
            )
        })?;
        let dtype = match spec.args[r] {
            ArgValue::Buffer { dtype, .. } | ArgValue::Scalar { dtype, .. } => dtype,
        };
        let len = buffers.buffer(o).map_or(0, |b| b.bytes() / dtype.size());
        let name = &def.args[o].name;
        let tolerances = cell.launch.tolerances.for_output(dtype);
        // Both in device memory: compared there, in microseconds (an audit's large one at a
        // sample of its own). Elsewhere they are read back (a large one at a sample).
        let outputs = (buffers.buffer(o), theirs.buffer(r));
        let meta = (name.as_str(), dtype, tolerances);
        if let Some(note) = agreement::on_gpu(kernels, timeline, outputs, meta, sample)? {
            notes.push(note);
            continue;
        }
        let ranges = sample.and_then(|seed| samples::read_back(len, seed));
        let want = theirs.buffer(r).ok_or_else(not_a_buffer)?;
        let (got, want) = match &ranges {
            Some(elements) => {
                let bytes: Vec<_> = (elements.iter())
                    .map(|e| e.start * dtype.size()..e.end * dtype.size())
                    .collect();
                let want = want.download_ranges(&bytes).map_err(Failure::message)?;
                (buffers.download_ranges(o, &bytes)?, ReadBack::from(want))
            }
            None => (buffers.download(o)?, read_back(want)?),
        };
        let view = |bytes| HostBuffer { name, dtype, bytes };
        notes.push(agreement::compare(
            &view(&got),
            &view(&want),
            tolerances,
            ranges.as_deref(),
        )?);
    }
    timeline.mark("reference compare");
    Ok(format!(
        "against kernel `{}`: {}",
        kernels.def(kc.kernel).name,
        notes.join("; ")
    ))
}

impl Checker<'_> {
    /// A `copy` check of two buffers in device memory, compared on the GPU (through the host,
    /// the check of a GiB copy took over a second); None where the check is another, or a
    /// buffer lives elsewhere.
    fn copy_on_gpu(
        &self,
        kernels: &mut Kernels,
        timeline: &mut Timeline,
        buffers: &Buffers,
    ) -> Result<Option<String>, Failure> {
        let Some((def, check)) = (self.def)
            .filter(|d| !d.unchecked)
            .and_then(|d| Some((d, d.check.as_ref()?)))
            .filter(|(_, c)| c.reference == "copy")
        else {
            return Ok(None);
        };
        let in_device = |i: usize| buffers.buffer(i).filter(|b| b.in_device_memory());
        let (Some(out), Some(src)) = (in_device(check.output), in_device(check.inputs[0])) else {
            return Ok(None);
        };
        let ArgValue::Buffer { dtype, .. } = self.cell.launch.args[check.output] else {
            return Ok(None);
        };
        if out.bytes() != src.bytes() {
            return Ok(None);
        }
        let compare = kernels.comparison(KernelKey::FirstDifference, timeline)?;
        let (size, name) = (dtype.size(), &def.args[check.output].name);
        let Some(byte) =
            equal::first_difference(compare, out, src, None).map_err(during("copy check"))?
        else {
            return Ok(Some(format!(
                "copy: all {} elements equal",
                out.bytes() / size
            )));
        };
        let e = byte / size;
        let at = e * size..(e + 1) * size;
        let poisoned = buffers.download_ranges(check.output, std::slice::from_ref(&at))?[at]
            .iter()
            .all(|b| *b == POISON);
        Err(Failure::from(match poisoned {
            true => format!("output `{name}` was not written: element {e} still holds the poison"),
            false => format!(
                "copy check failed: {name}[{e}] differs from {}",
                def.args[check.inputs[0]].name
            ),
        }))
    }
}

/// The bytes each argument takes as a kernel parameter; `pick`: only these arguments.
pub fn sizes(args: &[ArgValue], pick: Option<&[usize]>) -> Vec<usize> {
    let size = |a: &ArgValue| match a {
        ArgValue::Buffer { .. } => 8,
        ArgValue::Scalar { dtype, .. } => dtype.size(),
    };
    match pick {
        Some(pick) => pick.iter().map(|&i| size(&args[i])).collect(),
        None => args.iter().map(size).collect(),
    }
}

/// Refuses an argument list that does not match the kernel's parameters, which the driver
/// would read past or misread.
pub(super) fn check_params(
    func: &cuda::Function,
    given: &[usize],
    entry: &str,
) -> Result<(), Failure> {
    match params_differ(&func.param_sizes()?, given, entry) {
        None => Ok(()),
        Some(m) => Err(Failure::from(m)),
    }
}

/// What is wrong with an argument list of `given` bytes per parameter for a kernel that
/// takes `want`; None where they agree.
pub fn params_differ(want: &[usize], given: &[usize], entry: &str) -> Option<String> {
    if want == given {
        return None;
    }
    let which = match given.len().cmp(&want.len()) {
        std::cmp::Ordering::Greater => format!(
            "; arguments {} to {} (counted from 1) have no parameter to go to",
            want.len() + 1,
            given.len()
        ),
        std::cmp::Ordering::Less => format!(
            "; parameters {} to {} get no argument",
            given.len() + 1,
            want.len()
        ),
        std::cmp::Ordering::Equal => {
            let at = (want.iter().zip(given))
                .position(|(w, g)| w != g)
                .unwrap_or(0);
            format!(
                "; argument {} is {} bytes where the parameter takes {}",
                at + 1,
                given[at],
                want[at]
            )
        }
    };
    Some(format!(
        "the kernel `{entry}` takes {} parameter(s) of {want:?} bytes, but the experiment gives {} of {given:?} bytes{which}: list every parameter in `args`, in order, with its type, or, where `args` also hold buffers another entry takes, name this one's own in order with `takes = [...]`",
        want.len(),
        given.len()
    ))
}

/// The parameters an entry takes: all of `values`, or those `takes` picks.
pub(super) fn taken<'b>(values: &[Param<'b>], takes: Option<&[usize]>) -> Vec<Param<'b>> {
    match takes {
        Some(t) => t.iter().map(|&i| values[i]).collect(),
        None => values.to_vec(),
    }
}

/// A kernel's steps, loaded or waiting for their first launch.
pub(super) enum StepCode {
    Loaded(Vec<(String, cuda::Function)>),
    Lazy(Vec<cuda::LazyFunction>),
}

/// A copy of buffer `values[to]` from `values[from]`, the whole destination.
pub(super) fn copy_launch<'b>(
    op: CopyOp,
    values: &[Param<'b>],
    to: usize,
    from: usize,
) -> Result<Launch<'b>, Failure> {
    let (Param::Buffer(dst), Param::Buffer(src)) = (values[to], values[from]) else {
        return Err(Failure::from(
            "a copy between arguments that are not buffers".to_string(),
        ));
    };
    Ok(Launch::copy(dst, src, op.sync)?)
}

/// Adds the kernel's steps to `launch` (before or after it), each given its arguments from
/// `values`.
pub(super) fn add_steps<'b>(
    launch: &mut Launch<'b>,
    def: &Kernel,
    spec: &LaunchSpec,
    values: &[Param<'b>],
    code: &StepCode,
) -> Result<(), Failure> {
    // The code holds the kernel steps' functions only, in order.
    let mut kernel_steps = 0;
    for (step, shape) in def.steps.iter().zip(&spec.steps) {
        let dims = Dims {
            grid: (shape.0[0], shape.0[1], shape.0[2]),
            block: (shape.1[0], shape.1[1], shape.1[2]),
            shared_bytes: shape.2,
        };
        let mine: Vec<Param<'b>> = step.args.iter().map(|&a| values[a]).collect();
        let next = match (step.copy, code) {
            (Some(op), _) => copy_launch(op, values, step.args[0], step.args[1])?,
            (None, StepCode::Loaded(funcs)) => {
                let (name, func) = &funcs[kernel_steps];
                check_params(func, &sizes(&spec.args, Some(&step.args)), name)?;
                if shape.2 > 48 * 1024 {
                    func.allow_shared_bytes(shape.2)?;
                }
                Launch::new(func, dims, &mine)
            }
            (None, StepCode::Lazy(funcs)) => Launch::lazy(funcs[kernel_steps].clone(), dims, &mine),
        };
        kernel_steps += usize::from(step.copy.is_none());
        if step.before {
            launch.before(next, step.args.clone());
        } else {
            launch.then(next, step.args.clone());
        }
    }
    Ok(())
}

/// Compares the kernel's output in `buffers` with its reference computed from `host` (the
/// inputs the launch read); Ok holds a one-line account.
fn check_output(
    buffers: &Buffers,
    host: &HostInputs,
    kernel: Option<&Kernel>,
    spec: &LaunchSpec,
    cache: &reference::Cache,
) -> Result<String, Failure> {
    if kernel.is_some_and(|k| k.unchecked) {
        return Ok("UNCHECKED (unchecked = true)".into());
    }
    let Some((kernel, wanted)) = kernel.and_then(|k| Some((k, k.check.as_ref()?))) else {
        return Ok("no output to check".into());
    };
    let dtype = |i: usize| match spec.args[i] {
        ArgValue::Buffer { dtype, .. } | ArgValue::Scalar { dtype, .. } => dtype,
    };
    let out_bytes = match cache.elements_read(&wanted.reference, &spec.check_dims) {
        Some(elements) => {
            let size = dtype(wanted.output).size();
            let bytes: Vec<_> = elements
                .iter()
                .map(|e| e.start * size..e.end * size)
                .collect();
            buffers.download_ranges(wanted.output, &bytes)?
        }
        None => buffers.download(wanted.output)?,
    };
    let inputs: Vec<HostBuffer> = wanted
        .inputs
        .iter()
        .map(|&i| HostBuffer {
            name: &kernel.args[i].name,
            dtype: dtype(i),
            bytes: host[i].as_deref().unwrap_or(&[]),
        })
        .collect();
    let out = HostBuffer {
        name: &kernel.args[wanted.output].name,
        dtype: dtype(wanted.output),
        bytes: &out_bytes,
    };
    reference::check(
        &wanted.reference,
        &inputs,
        &out,
        &spec.check_dims,
        spec.tolerances.tolerance,
        cache,
    )
}

#[cfg(test)]
mod tests {
    use super::params_differ;

    #[test]
    fn a_mismatched_argument_list_says_which_arguments_and_how_to_name_an_entrys_own() {
        assert_eq!(params_differ(&[8, 4], &[8, 4], "k"), None);
        let surplus = params_differ(&[8, 4], &[8, 4, 8], "k").unwrap();
        assert!(
            surplus.contains("arguments 3 to 3 (counted from 1) have no parameter"),
            "{surplus}"
        );
        assert!(surplus.contains("`takes = [...]`"), "{surplus}");
        let short = params_differ(&[8, 4, 4], &[8], "k").unwrap();
        assert!(
            short.contains("parameters 2 to 3 get no argument"),
            "{short}"
        );
        let wide = params_differ(&[8, 4], &[8, 8], "k").unwrap();
        assert!(
            wide.contains("argument 2 is 8 bytes where the parameter takes 4"),
            "{wide}"
        );
    }
}
