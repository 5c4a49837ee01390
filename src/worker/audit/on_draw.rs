//! An audited region's check on its own draw, without its inputs crossing the host link:
//! a reference kernel (`check_kernel`) runs on buffers of its own drawn with the same seed
//! and salts, a `matmul` reference is computed in float64 on the GPU at the check's sample
//! of elements, a `copy` is compared on the GPU, and so is a reference kernel's output,
//! every element. Only where an output lives outside device memory is a large one read back
//! at a sample drawn from the region's own seed.

use super::draw::{Draws, Entry};
use crate::experiment::{ArgValue, Dtype, Kernel, PythonCheck};
use crate::method::equal;
use crate::worker::assemble::{against_kernel, ReferenceInputs};
use crate::worker::buffers::{Buffers, POISON};
use crate::worker::failure::{during, Failure};
use crate::worker::host_buffer::HostBuffer;
use crate::worker::kernels::KernelKey;
use crate::worker::prepare::ReadyCell;
use crate::worker::read_back::{read_back, ReadBack};
use crate::worker::reference;
use crate::worker::session::Session;
use cuda::{self, CudaError, DeviceBuffer, Dims, Launch, Param};
use std::cell::RefCell;

/// The audited output checked against the reference on the draw of `seed`, which the
/// measured inputs hold (read back unchanged after), at a sample (where one is read back)
/// drawn from the run's seed, the draw's and `salt` (each launch alone after a region its
/// own); `recorded`: the kernels CUPTI is recording, which the reference kernel must not be
/// taken for.
pub(super) fn check(
    s: &mut Session,
    ready: ReadyCell,
    (draws, scratch): (&Draws, &mut Scratch),
    (seed, salt): (u64, u64),
    recorded: Option<&[String]>,
) -> Result<String, Failure> {
    let inputs = Inputs {
        buffers: &ready.data.sets[0],
        redrawn: Vec::new(),
        salt,
    };
    check_against(s, ready, (draws, scratch), seed, &inputs, recorded)
}

/// Device buffers a cell's checks reuse (an allocation and its free cost more than the
/// check's kernel): the table of draws into the reference kernel's buffers (the cell's,
/// `Session::reference_buffers`).
#[derive(Default)]
pub(super) struct Scratch {
    reference_draws: RefCell<Option<Draws>>,
    /// A Python check on the GPU's: the buffers updated in place drawn again, and its
    /// results (an allocation and a free of each cost a region's check milliseconds).
    python_draws: Option<OwnDraws>,
    python_results: Vec<DeviceBuffer>,
}

/// The buffer in `slot`, of `bytes`: the one there where it is of that size, else a new one.
fn sized(slot: &mut Option<DeviceBuffer>, bytes: usize) -> Result<&DeviceBuffer, CudaError> {
    if slot.as_ref().is_none_or(|b| b.bytes() != bytes) {
        *slot = Some(DeviceBuffer::alloc(bytes)?);
    }
    Ok(slot.as_ref().expect("made above"))
}

/// Buffers of their own for the drawn arguments `pick` keeps, with the table that draws
/// into them the measured inputs' distributions, types and salts: what a draw wrote there,
/// without touching the measured buffers.
struct OwnDraws {
    copies: Vec<(usize, DeviceBuffer)>,
    table: Draws,
}

impl OwnDraws {
    fn of(
        ready: ReadyCell,
        draws: &Draws,
        pick: impl Fn(usize) -> bool,
    ) -> Result<OwnDraws, CudaError> {
        let (buffers, args) = (&ready.data.sets[0], &ready.cell.launch.args);
        let mut copies = Vec::new();
        let mut entries = Vec::new();
        for &i in draws.args.iter().filter(|&&i| pick(i)) {
            let Some(buf) = buffers.buffer(i) else {
                continue;
            };
            let copy = DeviceBuffer::alloc(buf.bytes())?;
            entries.extend(Entry::of(args, i, &copy).map(|e| (i, e)));
            copies.push((i, copy));
        }
        let table = Draws::new(draws.kernel.clone(), &entries)?;
        Ok(OwnDraws { copies, table })
    }

    /// Writes the draw of `seed` into the buffers, and waits for it.
    fn draw(&self, seed: u64) -> Result<(), CudaError> {
        self.table.write(seed)?;
        cuda::synchronize()
    }

    fn buffer(&self, i: usize) -> Option<&DeviceBuffer> {
        self.copies.iter().find(|(j, _)| *j == i).map(|(_, b)| b)
    }
}

/// Whether the output, which failed its check on a new draw, passes it on the `earlier`
/// draw (drawn again into buffers of its own): the audited launch left the earlier
/// launches' result in place.
pub(super) fn stale(
    s: &mut Session,
    ready: ReadyCell,
    (draws, scratch): (&Draws, &mut Scratch),
    earlier: u64,
) -> Result<bool, Failure> {
    let again = OwnDraws::of(ready, draws, |_| true)?;
    again.draw(earlier)?;
    let inputs = Inputs {
        buffers: &ready.data.sets[0],
        redrawn: again.copies,
        salt: 0,
    };
    Ok(check_against(s, ready, (draws, scratch), earlier, &inputs, None).is_ok())
}

/// What argument `i` held before the audited launch that updated it in place: its draw of
/// `seed` written again into a buffer of its own and read back, or the timed data where
/// the GPU does not draw it (as a reference kernel is given).
fn drawn_again(
    ready: ReadyCell,
    draws: &Draws,
    i: usize,
    seed: u64,
) -> Result<Option<ReadBack>, Failure> {
    let again = OwnDraws::of(ready, draws, |j| j == i)?;
    let Some(copy) = again.buffer(i) else {
        return Ok(ready.data.timed[i].clone().map(ReadBack::from));
    };
    again.draw(seed)?;
    Ok(Some(read_back(copy)?))
}

/// Asks the Python reference ahead for the audited regions to come, the draws of `seeds`:
/// each drawn into buffers of its own and read back before the samples start, so that the
/// interpreter computes while the GPU times and the regions' checks only compare. Asks
/// nothing where the kernel has no `check_python`, where an argument it is given has no
/// data here, or where the device has no room for a copy of the inputs (its checks then ask
/// as they run, as without this).
pub(super) fn ask_python_ahead(
    s: &Session,
    ready: ReadyCell,
    draws: &Draws,
    seeds: &[u64],
) -> Result<(), Failure> {
    let (cell, data, def) = (ready.cell, ready.data, ready.kernel()?);
    // On the GPU the function runs between timed regions, never beside them.
    let ahead = |pc: &&PythonCheck| !seeds.is_empty() && !pc.gpu;
    let Some(pc) = def.check_python.as_ref().filter(ahead) else {
        return Ok(());
    };
    let (buffers, args) = (&data.sets[0], &cell.launch.args);
    let Ok(again) = OwnDraws::of(ready, draws, |_| true) else {
        return Ok(());
    };
    let given = |i: usize| !def.writes(i) || def.updates_in_place(i);
    let buffer_arg = |i: usize| matches!(args[i], ArgValue::Buffer { .. });
    let undrawn = |i: usize| again.buffer(i).is_none();
    if (0..args.len()).any(|i| given(i) && buffer_arg(i) && undrawn(i) && data.timed[i].is_none()) {
        return Ok(());
    }
    let mut outputs = Vec::new();
    for &o in &pc.outputs {
        match (&args[o], buffers.buffer(o)) {
            (ArgValue::Buffer { dtype, .. }, Some(b)) => {
                outputs.push((o, *dtype, b.bytes() / dtype.size()))
            }
            _ => return Ok(()),
        }
    }
    for &seed in seeds {
        // Known: asked by a cell of the point before, which drew the same (`among`).
        let cache = draw_cache(s.run_cache.as_deref(), s.sample_seed, ready, seed);
        if reference::python::known(pc, &cache) {
            continue;
        }
        again.draw(seed)?;
        let mut host = Vec::with_capacity(args.len());
        for i in 0..args.len() {
            host.push(match again.buffer(i) {
                Some(b) => Some(read_back(b)?),
                None if given(i) => data.timed[i].clone().map(ReadBack::from),
                None => None,
            });
        }
        let host: Vec<Option<&[u8]>> = host.iter().map(Option::as_deref).collect();
        reference::python::ask_ahead(pc, def, &cell.launch, &host, &outputs, &cache)?;
    }
    Ok(())
}

/// The check against a Python function given its data through files, on the draw of
/// `seed` held by `inputs`.
fn python_by_files(
    s: &mut Session,
    ready: ReadyCell,
    draws: &Draws,
    (seed, inputs): (u64, &Inputs),
    pc: &PythonCheck,
) -> Result<String, Failure> {
    let (cell, data, def) = (ready.cell, ready.data, ready.kernel()?);
    let buffers = &data.sets[0];
    let cache = draw_cache(s.run_cache.as_deref(), s.sample_seed, ready, seed);
    // The draw read back: the function is given what the audited launch read, a
    // buffer it updates in place drawn again (the launch has changed it); nothing
    // where it was asked ahead.
    let mut data = Vec::new();
    if !reference::python::known(pc, &cache) {
        for i in 0..def.args.len() {
            data.push(match inputs.buffer(i) {
                Some(b) if !def.writes(i) => Some(read_back(b)?),
                Some(_) if def.updates_in_place(i) => drawn_again(ready, draws, i, seed)?,
                _ => None,
            });
        }
    }
    let data: Vec<Option<&[u8]>> = data.iter().map(Option::as_deref).collect();
    let got = (pc.outputs.iter())
        .map(|&o| Ok((o, buffers.download(o)?)))
        .collect::<Result<Vec<_>, Failure>>()?;
    let steps = (&cache, &mut s.timeline);
    reference::python::check(pc, def, &cell.launch, (&data, false), &got, steps)
}

/// The check against a Python function on the GPU (`gpu = true`) on the draw of `seed`:
/// given the region's buffers it only reads as they are, and each it updates in place drawn
/// again into a buffer of its own (or, where no draw reaches it, the timed data uploaded).
fn python_on_gpu(
    s: &mut Session,
    ready: ReadyCell,
    (draws, scratch): (&Draws, &mut Scratch),
    (seed, inputs): (u64, &Inputs),
    pc: &PythonCheck,
) -> Result<String, Failure> {
    let (cell, data, def) = (ready.cell, ready.data, ready.kernel()?);
    let again = match &mut scratch.python_draws {
        Some(kept) => kept,
        none => none.insert(OwnDraws::of(ready, draws, |i| def.updates_in_place(i))?),
    };
    again.draw(seed)?;
    use reference::python_gpu::{given, own, uploaded_in_place};
    let uploaded = uploaded_in_place(def, &data.timed, |i| again.buffer(i).is_some())?;
    let again = &*again;
    let before = |i| again.buffer(i).or_else(|| own(&uploaded, i));
    let given = given(def, before, |i| inputs.buffer(i));
    let outputs = reference::python_gpu::outputs_of(pc, &data.sets[0])?;
    let spec = (def, &cell.launch);
    let on = (&mut s.kernels, &mut s.timeline);
    let results = &mut scratch.python_results;
    reference::python_gpu::check(pc, spec, (&given, &outputs), results, on)
}

/// What names the draw of `seed` for a Python reference: its result asked ahead is found
/// by the check of the same draw.
fn draw_cache<'a>(
    run_cache: Option<&'a std::path::Path>,
    sample_seed: u64,
    ready: ReadyCell,
    seed: u64,
) -> reference::Cache<'a> {
    let inputs = format!("{}#draw{seed}", ready.data.point);
    reference::Cache::new(run_cache, inputs, sample_seed)
}

/// The inputs a check reads: the measured buffers, with the drawn ones of `redrawn` in
/// their place where it holds them.
struct Inputs<'a> {
    buffers: &'a Buffers,
    redrawn: Vec<(usize, DeviceBuffer)>,
    /// Mixed into the sample's seed (see [`check`]).
    salt: u64,
}

impl Inputs<'_> {
    fn buffer(&self, i: usize) -> Option<&DeviceBuffer> {
        match self.redrawn.iter().find(|(j, _)| *j == i) {
            Some((_, b)) => Some(b),
            None => self.buffers.buffer(i),
        }
    }
}

/// The check of the measured output against the reference on the draw of `seed` held by
/// `inputs`.
fn check_against(
    s: &mut Session,
    ready: ReadyCell,
    (draws, scratch): (&Draws, &mut Scratch),
    seed: u64,
    inputs: &Inputs,
    recorded: Option<&[String]>,
) -> Result<String, Failure> {
    let (cell, data, def) = (ready.cell, ready.data, ready.kernel()?);
    let buffers = &data.sets[0];
    // Each region draws its own sample where one is read back, from the run's seed.
    let sample_seed = seed ^ s.sample_seed ^ inputs.salt;
    if let Some(pc) = def.check_python.as_ref().filter(|pc| pc.gpu) {
        return python_on_gpu(s, ready, (draws, scratch), (seed, inputs), pc);
    }
    if let Some(pc) = &def.check_python {
        return python_by_files(s, ready, draws, (seed, inputs), pc);
    }
    if let Some(kc) = &def.check_kernel {
        let drawn = |j: &usize| draws.args.contains(j);
        let reference_draws = &scratch.reference_draws;
        // Enqueued ahead of the reference kernel, whose wait covers it.
        let fill = |theirs: &Buffers| -> Result<(), Failure> {
            let mut table = reference_draws.borrow_mut();
            let on = match &mut *table {
                Some(on) => on,
                None => {
                    let pick = |i: usize| kc.from.get(i).copied().flatten().filter(drawn);
                    let args = &cell.launch.args;
                    table.insert(Draws::of(draws.kernel.clone(), args, theirs, pick)?)
                }
            };
            (on.write(seed)).map_err(during("audit: drawing the reference's inputs"))
        };
        let stashed = (s.timed_stash.as_ref()).and_then(|st| st.copies_of(&data.timed));
        let mut kept_slot = s.reference_buffers.borrow_mut();
        let reference = ReferenceInputs {
            data: (kc.from.iter())
                .map(|f| {
                    f.filter(|j| !drawn(j))
                        .and_then(|j| data.timed[j].as_deref())
                })
                .collect(),
            copies: (kc.from.iter())
                .map(|f| {
                    f.filter(|j| !drawn(j))
                        .and_then(|j| stashed?.get(j)?.as_ref())
                })
                .collect(),
            fill: Some(&fill),
            sample: Some(sample_seed),
            kept: Some(&mut kept_slot),
        };
        let (kernels, timeline) = (&mut s.kernels, &mut s.timeline);
        return against_kernel(kernels, timeline, (cell, def), buffers, recorded, reference);
    }
    let Some(check) = &def.check else {
        return Ok("no output to check".into());
    };
    let out = (buffers.buffer(check.output))
        .ok_or_else(|| "the checked output is not a buffer".to_string())?;
    let arg = |i: usize| -> Result<(&DeviceBuffer, Dtype), Failure> {
        match (inputs.buffer(i), &cell.launch.args[i]) {
            (Some(b), ArgValue::Buffer { dtype, .. }) => Ok((b, *dtype)),
            _ => Err(Failure::from(format!(
                "the check's argument `{}` is not a buffer",
                def.args[i].name
            ))),
        }
    };
    let (_, out_type) = arg(check.output)?;
    match check.reference.as_str() {
        "copy" => copy(s, def, (out, arg(check.inputs[0])?.0), check.output),
        "matmul" => {
            let dims = &cell.launch.check_dims;
            let (a, b) = (arg(check.inputs[0])?, arg(check.inputs[1])?);
            let tolerance = cell.launch.tolerances.tolerance;
            let name = &def.args[check.output].name;
            let sample = (sample_seed, tolerance);
            matmul(s, (a, b), (name, out, out_type), dims, sample)
        }
        other => Err(Failure::from(format!("unknown reference `{other}`"))),
    }
}

/// A copy's output against its source, compared on the GPU.
fn copy(
    s: &mut Session,
    def: &Kernel,
    (out, src): (&DeviceBuffer, &DeviceBuffer),
    output: usize,
) -> Result<String, Failure> {
    let compare = s
        .kernels
        .comparison(KernelKey::FirstDifference, &mut s.timeline)?;
    let differs =
        equal::first_difference(compare, out, src, None).map_err(during("audit: copy check"))?;
    let name = &def.args[output].name;
    let Some(byte) = differs else {
        return Ok(format!("copy: all {} bytes equal", out.bytes()));
    };
    let at = byte..byte + 1;
    let poisoned = out.download_ranges(std::slice::from_ref(&at))?[byte] == POISON;
    Err(Failure::from(match poisoned {
        true => format!("output `{name}` was not written: byte {byte} still holds the poison"),
        false => format!("copy check failed: {name} differs from its source at byte {byte}"),
    }))
}

/// Threads per block of the matmul reference.
const MATMUL_BLOCK: u32 = 256;

/// `out = a (m x k) * b (k x n)` at the check's sample of elements (drawn from
/// `sample_seed`), against the float64 reference computed on the GPU.
fn matmul(
    s: &mut Session,
    ((a, a_type), (b, b_type)): ((&DeviceBuffer, Dtype), (&DeviceBuffer, Dtype)),
    (name, out, out_type): (&str, &DeviceBuffer, Dtype),
    dims: &[i64],
    (sample_seed, tolerance): (u64, Option<f64>),
) -> Result<String, Failure> {
    let [m, k, n] = [0, 1, 2].map(|i| dims.get(i).copied().unwrap_or(0).max(0) as usize);
    let elements = |buf: &DeviceBuffer, t: Dtype| buf.bytes() / t.size();
    if elements(a, a_type) < m * k || elements(b, b_type) < k * n || elements(out, out_type) < m * n
    {
        return Err(Failure::from(format!(
            "matmul {m}x{k}x{n} does not fit the buffers ({}, {}, {} elements)",
            elements(a, a_type),
            elements(b, b_type),
            elements(out, out_type)
        )));
    }
    let cells = reference::matmul_sample(m, n, sample_seed);
    // A sample's elements go up as indices; all of them need none.
    let sampled = cells.len() < m * n;
    let indices: Vec<u8> = match sampled {
        true => cells
            .iter()
            .flat_map(|&c| (c as u64).to_ne_bytes())
            .collect(),
        false => Vec::new(),
    };
    let on_device = sized(&mut s.matmul_scratch.cells, indices.len())?;
    if sampled {
        on_device.upload(&indices)?;
    }
    // The reference's doubles, then the output's elements at the same cells: one read back.
    let size = out_type.size();
    let found = sized(&mut s.matmul_scratch.found, cells.len() * (8 + size))?;
    let func = s
        .kernels
        .function(KernelKey::AuditMatmul, &mut s.timeline)?;
    let code = |t: Dtype| Param::bytes(&t.code().to_ne_bytes());
    let values = [
        Param::Buffer(a),
        code(a_type),
        Param::Buffer(b),
        code(b_type),
        Param::u64(k as u64),
        Param::u64(n as u64),
        match sampled {
            true => Param::Buffer(on_device),
            false => Param::u64(0),
        },
        Param::u64(cells.len() as u64),
        Param::Buffer(out),
        Param::bytes(&(size as u32).to_ne_bytes()),
        Param::Buffer(found),
    ];
    // A warp a cell (`kernels/audit.cu`).
    let threads = (cells.len() as u32).saturating_mul(32);
    let dims = Dims {
        grid: (threads.div_ceil(MATMUL_BLOCK).max(1), 1, 1),
        block: (MATMUL_BLOCK, 1, 1),
        shared_bytes: 0,
    };
    let reference_run = during("audit: the matmul reference");
    Launch::new(&func, dims, &values)
        .enqueue()
        .map_err(&reference_run)?;
    let found = found.download().map_err(&reference_run)?;
    s.timeline.mark("audit matmul reference");
    let (want, got) = found.split_at(cells.len() * 8);
    let want: Vec<f64> = (want.chunks_exact(8))
        .map(|c| f64::from_ne_bytes(c.try_into().expect("8 bytes")))
        .collect();
    // The output's elements at the cells, in their order, as the judge reads them.
    let view = HostBuffer {
        name,
        dtype: out_type,
        bytes: got,
    };
    reference::matmul_judge(&view, (m, n), &cells, &want, tolerance)
}
