//! A kernel's check against a Python function (`check_python`). One interpreter serves the
//! worker process: started at its first such check and kept for the rest (Python with NumPy
//! starts in a tenth of a second, with torch in seconds), fed each data set through files in
//! the run's cache folder (a folder of its own where there is none), one request a line.
//! Its results are kept by data set, so the cells of one point that share a process and
//! their inputs ask once.

use super::cache::Cache;
use super::interpreter::Interpreter;
use crate::experiment::{ArgValue, Dtype, Kernel, LaunchSpec, PythonCheck};
use crate::worker::agreement;
use crate::worker::failure::Failure;
use crate::worker::host_buffer::HostBuffer;
use crate::worker::read_back::{read_file, ReadBack};
use crate::worker::timeline::Timeline;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

/// The data sets whose results are kept: a point's, while its cells run (each may be an
/// output of hundreds of MiB).
const KEPT_RESULTS: usize = 2;
/// The last audited draws whose results are kept (the launches alone after a region check
/// its draw, and a draw asked ahead before its region ran)...
const KEPT_DRAWS: usize = 6;
/// ...while they hold at most this many bytes (but the last).
const KEPT_DRAW_BYTES: usize = 1 << 30;

/// The check of the kernel's outputs `got` (read back, by argument) against `pc`'s function
/// given the inputs `data` (per argument, a buffer's bytes where it holds one), each within
/// the launch's tolerances or its type's. `keep`: the result is kept for other cells of the
/// same data set; else (an audited region's draw) among the last draws ([`KEPT_DRAWS`]).
/// Its steps are phases of `timeline`, from the buffers read back before it ([`Steps`]).
pub fn check(
    pc: &PythonCheck,
    def: &Kernel,
    spec: &LaunchSpec,
    (data, keep): (&[Option<&[u8]>], bool),
    got: &[(usize, ReadBack)],
    (cache, timeline): (&Cache, &mut Timeline),
) -> Result<String, Failure> {
    timeline.mark("Python reference: buffers read back");
    let dtype = |i: usize| match spec.args[i] {
        ArgValue::Buffer { dtype, .. } | ArgValue::Scalar { dtype, .. } => dtype,
    };
    let key = key(pc, cache);
    let mut state = INTERPRETER.lock().unwrap_or_else(|e| e.into_inner());
    let answered = state.collect(Some(&key))?;
    let kept = (state.results.iter().chain(&state.draws)).find(|(k, _)| *k == key);
    let wanted = match (answered, kept) {
        (Some(reply), _) => Arc::new(reply.marked(timeline)),
        (None, Some((_, wanted))) => Arc::clone(wanted),
        (None, None) => {
            let outputs: Vec<(usize, Dtype, usize)> = (got.iter())
                .map(|(o, bytes)| (*o, dtype(*o), bytes.len() / dtype(*o).size()))
                .collect();
            let wanted =
                Arc::new((state.call(pc, def, spec, data, &outputs, cache.dir)?).marked(timeline));
            if keep {
                if state.results.len() == KEPT_RESULTS {
                    state.results.pop_front();
                }
                state.results.push_back((key.clone(), Arc::clone(&wanted)));
            }
            wanted
        }
    };
    if !keep {
        state.keep_draw(key, Arc::clone(&wanted));
    }
    drop(state);
    let mut notes = Vec::new();
    for ((o, mine), want) in got.iter().zip(wanted.iter()) {
        let (name, dtype) = (&def.args[*o].name, dtype(*o));
        let view = |bytes| HostBuffer { name, dtype, bytes };
        let tolerances = spec.tolerances.for_output(dtype);
        notes.push(agreement::compare(
            &view(mine),
            &view(want),
            tolerances,
            None,
        )?);
    }
    timeline.mark("Python reference: compared");
    Ok(format!(
        "against Python `{}`: {}",
        pc.label(),
        notes.join("; ")
    ))
}

/// When a request's steps ended, for the check's phases: its data written (None where it
/// was sent ahead); the interpreter's answer (its read, the function, its write; of a
/// request sent ahead, what was left of them); the result read back. What the runner moves
/// and what the function costs, apart.
struct Steps {
    written: Option<Instant>,
    answered: Instant,
    read: Instant,
}

/// A reply: the function's outputs, as bytes of each output's type, and its steps.
struct Reply {
    outputs: Vec<ReadBack>,
    steps: Steps,
}

impl Reply {
    /// Its steps marked as phases of `timeline`; its outputs.
    fn marked(self, timeline: &mut Timeline) -> Vec<ReadBack> {
        let Steps {
            written,
            answered,
            read,
        } = self.steps;
        if let Some(at) = written {
            timeline.mark_at("Python reference: data written", at);
        }
        timeline.mark_at("Python reference: its answer", answered);
        timeline.mark_at("Python reference: result read", read);
        self.outputs
    }
}

/// Asks `pc`'s function now for the outputs (`outputs`: argument, type, elements) of the
/// inputs `data` of the data set `cache` names, and returns without its answer: the
/// interpreter works on it while the GPU times, and [`check`] of that data set takes it
/// (an audited region's draw, known before its region runs).
pub fn ask_ahead(
    pc: &PythonCheck,
    def: &Kernel,
    spec: &LaunchSpec,
    data: &[Option<&[u8]>],
    outputs: &[(usize, Dtype, usize)],
    cache: &Cache,
) -> Result<(), Failure> {
    let mut state = INTERPRETER.lock().unwrap_or_else(|e| e.into_inner());
    let sent = state.send(pc, def, spec, data, outputs, cache.dir)?;
    state.pending.push_back((key(pc, cache), sent));
    Ok(())
}

/// Whether `pc`'s answer for the data set `cache` names is kept, or was asked ahead and is
/// on its way: its check then needs no inputs (a launch alone on an audited draw finds its
/// region's answer kept).
pub fn known(pc: &PythonCheck, cache: &Cache) -> bool {
    let key = key(pc, cache);
    let state = INTERPRETER.lock().unwrap_or_else(|e| e.into_inner());
    let kept = (state.results.iter().chain(&state.draws)).any(|(k, _)| *k == key);
    kept || state.pending.iter().any(|(k, _)| *k == key)
}

/// What names a function's answer for a data set among those kept and those on their way.
fn key(pc: &PythonCheck, cache: &Cache) -> String {
    format!("{}#{}", pc.label(), cache.inputs)
}

/// Sends `request` (one of the driver's request lines) and waits for its reply: a check
/// whose data go to the interpreter another way than files (`python_gpu.rs`). The replies to
/// requests sent ahead are read first.
pub(super) fn request(pc: &PythonCheck, request: &Value) -> Result<(), Failure> {
    let mut state = INTERPRETER.lock().unwrap_or_else(|e| e.into_inner());
    state.collect(None)?;
    state.send_line(pc, request.clone())?;
    state.await_reply(pc)
}

/// Reads every reply still to come (a cell's draws asked ahead whose regions did not run),
/// so that the next check waits for none and the interpreter is idle while the next cell
/// is timed; what they answered is kept as a checked draw's is.
pub fn settle() {
    let mut state = INTERPRETER.lock().unwrap_or_else(|e| e.into_inner());
    let _dropped = state.collect(None);
}

/// Ends the interpreter where one runs: a worker about to exit leaves none computing.
pub fn end() {
    INTERPRETER.lock().unwrap_or_else(|e| e.into_inner()).end();
}

/// The worker's interpreter, where one runs, and the results it gave by data set.
#[derive(Default)]
struct State {
    running: Option<Interpreter>,
    results: VecDeque<(String, Arc<Vec<ReadBack>>)>,
    /// The last audited draws' results, apart from those (see [`KEPT_DRAWS`]).
    draws: VecDeque<(String, Arc<Vec<ReadBack>>)>,
    /// Requests sent ahead whose replies are not read yet, in the order they were sent
    /// (the interpreter answers in that order), each with the data set it names.
    pending: VecDeque<(String, Sent)>,
    /// Where the data sets go when the run has no cache folder.
    scratch: Option<tempfile::TempDir>,
    /// Every file a request wrote: kept and written over in place by the next request of
    /// its slot (see [`Sent::slot`]), removed when the interpreter ends.
    files: Vec<PathBuf>,
    /// Requests sent to the running interpreter and replies read from it: each reply names
    /// its request's number.
    requests: u64,
    replies: u64,
}

/// A request sent: its outputs (argument, type, elements) and their files.
struct Sent {
    /// Its files' number: the lowest no request still waiting for its reply holds. The
    /// files are written over in place from one request to the next: their pages are not
    /// allocated and faulted in again each time (64 MiB cost tens of ms).
    slot: usize,
    outputs: Vec<(usize, Dtype, usize, PathBuf)>,
    names: Vec<String>,
    /// The check it was sent for: its timeout and label.
    pc: PythonCheck,
}

/// Writes `bytes` over the file at `path` in place (made where there is none), cut to
/// their length.
fn write_over(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = (std::fs::OpenOptions::new())
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    file.write_all(bytes)?;
    file.set_len(bytes.len() as u64)
}

static INTERPRETER: LazyLock<Mutex<State>> = LazyLock::new(Mutex::default);

impl State {
    /// Keeps an audited draw's `result` (see [`KEPT_DRAWS`]), letting the oldest go.
    fn keep_draw(&mut self, key: String, result: Arc<Vec<ReadBack>>) {
        self.draws.retain(|(k, _)| *k != key);
        self.draws.push_back((key, result));
        let bytes = |d: &VecDeque<(_, Arc<Vec<ReadBack>>)>| -> usize {
            d.iter().flat_map(|(_, r)| r.iter().map(|b| b.len())).sum()
        };
        let over = |d: &VecDeque<_>| d.len() > KEPT_DRAWS || bytes(d) > KEPT_DRAW_BYTES;
        while self.draws.len() > 1 && over(&self.draws) {
            self.draws.pop_front();
        }
    }

    /// The function's outputs (by `outputs`: argument, type, elements), as bytes of each
    /// output's type; the replies to requests sent ahead are read first.
    fn call(
        &mut self,
        pc: &PythonCheck,
        def: &Kernel,
        spec: &LaunchSpec,
        data: &[Option<&[u8]>],
        outputs: &[(usize, Dtype, usize)],
        dir: Option<&Path>,
    ) -> Result<Reply, Failure> {
        self.collect(None)?;
        let sent = self.send(pc, def, spec, data, outputs, dir)?;
        let written = Instant::now();
        let mut reply = self.receive(sent)?;
        reply.steps.written = Some(written);
        Ok(reply)
    }

    /// Reads the replies sent ahead, in order: up to the one for data set `key`, returned
    /// (or the failure that lost it), or all of them where `key` is None or names none.
    /// The others' answers are dropped: each was an audited region's draw, which no other
    /// check reads.
    fn collect(&mut self, key: Option<&str>) -> Result<Option<Reply>, Failure> {
        let wanted = key.filter(|k| self.pending.iter().any(|(p, _)| p == k));
        while let Some((name, sent)) = self.pending.pop_front() {
            let got = self.receive(sent);
            if Some(name.as_str()) == wanted {
                return got.map(Some);
            }
            match (wanted, got) {
                (Some(_), Err(lost)) => return Err(lost),
                // A draw asked ahead whose region did not run yet: a later one of the run
                // may.
                (_, Ok(reply)) => self.keep_draw(name, Arc::new(reply.outputs)),
                (None, Err(_)) => {}
            }
        }
        Ok(None)
    }

    /// Writes the inputs' files and sends the request, without waiting for its reply.
    fn send(
        &mut self,
        pc: &PythonCheck,
        def: &Kernel,
        spec: &LaunchSpec,
        data: &[Option<&[u8]>],
        outputs: &[(usize, Dtype, usize)],
        dir: Option<&Path>,
    ) -> Result<Sent, Failure> {
        let dir = match dir {
            Some(d) => d.to_path_buf(),
            None => match &self.scratch {
                Some(t) => t.path().to_path_buf(),
                None => {
                    let made = tempfile::tempdir().map_err(|e| {
                        Failure::from(format!(
                            "cannot make a folder for the Python reference's data: {e}"
                        ))
                    })?;
                    self.scratch.insert(made).path().to_path_buf()
                }
            },
        };
        let slot = (0..)
            .find(|n| self.pending.iter().all(|(_, p)| p.slot != *n))
            .expect("a free slot");
        let file = |i: usize, end: &str| {
            dir.join(format!("python-{}-{slot}-{i}.{end}", std::process::id()))
        };
        let sent = Sent {
            slot,
            outputs: (outputs.iter())
                .map(|&(o, dtype, len)| (o, dtype, len, file(o, "out")))
                .collect(),
            names: outputs
                .iter()
                .map(|&(o, ..)| def.args[o].name.clone())
                .collect(),
            pc: pc.clone(),
        };
        let mut written = Vec::new();
        let result = (|| {
            let mut args = Vec::new();
            // Its inputs, and each buffer it updates in place as it was before the launch.
            let given = |i: usize| !def.writes(i) || def.updates_in_place(i);
            for (i, arg) in def.args.iter().enumerate().filter(|(i, _)| given(*i)) {
                match &spec.args[i] {
                    ArgValue::Scalar { dtype, bytes } => {
                        args.push(json!({ "name": arg.name, "value": scalar(*dtype, bytes) }))
                    }
                    ArgValue::Buffer { dtype, .. } => {
                        let bytes = data.get(i).copied().flatten().ok_or_else(|| {
                            Failure::from(format!(
                                "the Python reference has no data for `{}`",
                                arg.name
                            ))
                        })?;
                        let path = file(i, "in");
                        written.push(path.clone());
                        write_over(&path, bytes).map_err(|e| {
                            Failure::from(format!("cannot write {}: {e}", path.display()))
                        })?;
                        args.push(json!({ "name": arg.name, "dtype": dtype.key(), "path": path }));
                    }
                }
            }
            let outs: Vec<Value> = (sent.outputs.iter())
                .map(|(o, dtype, len, path)| {
                    json!({ "name": def.args[*o].name, "dtype": dtype.key(), "len": len, "path": path })
                })
                .collect();
            written.extend(sent.outputs.iter().map(|(.., path)| path.clone()));
            let request = json!({
                "file": pc.path, "function": pc.function, "torch": pc.torch,
                "args": args, "outputs": outs,
            });
            self.send_line(pc, request)
        })();
        for path in written {
            if !self.files.contains(&path) {
                self.files.push(path);
            }
        }
        result.map(|()| sent)
    }

    /// Waits for the reply to `sent` and reads its outputs.
    fn receive(&mut self, sent: Sent) -> Result<Reply, Failure> {
        self.await_reply(&sent.pc).and_then(|()| {
            let answered = Instant::now();
            let outputs = (sent.outputs.iter().zip(&sent.names))
                .map(|((_, dtype, len, path), name)| {
                    let bytes = len * dtype.size();
                    match read_file(path, bytes) {
                        Ok(Ok(read)) => Ok(read),
                        Ok(Err(size)) => Err(Failure::from(format!(
                            "the Python reference wrote {size} bytes of `{name}`, not {bytes}"
                        ))),
                        Err(e) => Err(Failure::from(format!(
                            "the Python reference wrote no `{name}`: {e}"
                        ))),
                    }
                })
                .collect::<Result<_, Failure>>()?;
            let read = Instant::now();
            let steps = Steps {
                written: None,
                answered,
                read,
            };
            Ok(Reply { outputs, steps })
        })
    }

    /// Sends one request (a line), numbered, starting the interpreter where none of `pc`'s
    /// runs.
    fn send_line(&mut self, pc: &PythonCheck, mut request: Value) -> Result<(), Failure> {
        if self
            .running
            .as_ref()
            .is_some_and(|r| r.program != pc.python)
        {
            self.end();
        }
        if self.running.is_none() {
            self.running = Some(Interpreter::start(&pc.python)?);
            (self.requests, self.replies) = (0, 0);
        }
        self.requests += 1;
        request["id"] = json!(self.requests);
        let running = self.running.as_mut().expect("started above");
        match writeln!(running.stdin, "{request}").and_then(|_| running.stdin.flush()) {
            Ok(()) => Ok(()),
            Err(_) => Err(self.ended(pc)),
        }
    }

    /// Waits for the next reply, at most the check's timeout; an interpreter that failed
    /// or ran over is ended, and the next call starts another.
    fn await_reply(&mut self, pc: &PythonCheck) -> Result<(), Failure> {
        let Some(running) = self.running.as_mut() else {
            return Err(self.ended(pc));
        };
        let reply = running
            .replies
            .recv_timeout(Duration::from_secs_f64(pc.timeout_s));
        let failed =
            |why: String| Failure::from(format!("the Python reference `{}` {why}", pc.label()));
        match reply {
            Ok(line) => {
                self.replies += 1;
                let reply: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
                // A line that is not the reply to the oldest request leaves every later one
                // answering the request before it: the interpreter is ended.
                if reply.get("id").and_then(Value::as_u64) != Some(self.replies) {
                    self.end();
                    return Err(failed(format!(
                        "answered `{line}`, not its reply: does something it calls write to the process's standard output?"
                    )));
                }
                match reply.get("error").and_then(Value::as_str) {
                    Some(error) => Err(failed(format!("failed: {error}"))),
                    None => Ok(()),
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                self.end();
                Err(failed(format!(
                    "took more than {} s: give check_python a longer timeout (timeout = \"300s\"), or a smaller sweep",
                    pc.timeout_s
                )))
            }
            Err(RecvTimeoutError::Disconnected) => Err(self.ended(pc)),
        }
    }

    /// The failure of an interpreter that ended, with its last words; it is ended here.
    fn ended(&mut self, pc: &PythonCheck) -> Failure {
        // Killed first: one that closed its pipes but lives on would hold up the wait.
        if let Some(r) = self.running.as_mut() {
            let _ = r.child.kill();
        }
        let stderr = (self.running.as_mut()).map_or(String::new(), Interpreter::stderr_tail);
        self.end();
        Failure::from(format!(
            "the Python reference `{}` ended its interpreter (`{}`): {stderr}. It needs NumPy (python3 -m pip install numpy), and torch for torch = true; check_python's python = \"...\" names another interpreter",
            pc.label(),
            pc.python
        ))
    }

    /// Ends the interpreter; the requests sent ahead go unanswered (a check of their data
    /// asks again).
    fn end(&mut self) {
        if let Some(mut r) = self.running.take() {
            let _ = r.child.kill();
            let _ = r.child.wait();
        }
        self.pending.clear();
        for path in self.files.drain(..) {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A scalar argument as the function is given it: a number.
pub(super) fn scalar(dtype: Dtype, bytes: &[u8]) -> Value {
    match dtype.read_int(bytes) {
        Some(v) => match (i64::try_from(v), u64::try_from(v)) {
            (Ok(small), _) => json!(small),
            (_, Ok(large)) => json!(large),
            _ => json!(dtype.read(bytes)),
        },
        None => json!(dtype.read(bytes)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_written_over_holds_the_new_bytes_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("slot");
        write_over(&path, &[1; 8]).unwrap();
        write_over(&path, &[2; 4]).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), [2; 4]);
    }
}
