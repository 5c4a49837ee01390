//! The Python reference against a real interpreter (skipped, saying so, where python3 has
//! no NumPy).

use super::cache::Cache;
use super::python::{ask_ahead, check, end, known, settle};
use crate::experiment::{Dtype, Experiment};
use crate::worker::read_back::ReadBack;
use crate::worker::timeline::Timeline;
use std::process::Command;
use std::sync::Mutex;

/// Whether `python3` here has NumPy: without it the tests below say they are skipped.
fn numpy() -> bool {
    let found = Command::new("python3")
        .args(["-c", "import numpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!(
            "skipped: python3 with NumPy is not installed here (python3 -m pip install numpy)"
        );
    }
    found
}

/// The tests share the worker's one interpreter: each holds this while it runs, so that
/// one that starts another (or asks ahead) does not end another's.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// An experiment of one kernel whose first argument is `x` (four f32 drawn), then `y` and
/// the rest as `rest` writes them (TOML, from `y`'s name on), checked by `function` of a
/// `ref.py` in `dir` that holds `source`.
fn one_kernel(dir: &std::path::Path, source: &str, rest: &str, function: &str) -> Experiment {
    let file = dir.join("ref.py");
    std::fs::write(&file, source).unwrap();
    let args = format!("  {{ name = \"x\", buffer = \"f32\", len = 4, init = \"uniform(0, 1)\" }},\n  {{ name = \"{rest} }},\n");
    Experiment::from_text(&format!("[experiment]\ntitle = \"t\"\n[[kernel]]\nname = \"k\"\nsource = \"k.cu\"\nentry = \"k\"\ngrid = [1]\nblock = [32]\nargs = [\n{args}]\ncheck_python = {{ function = \"{}:{function}\", outputs = [\"y\"] }}\n[[variant]]\nname = \"a\"\n", file.display()))
    .unwrap()
}

/// The tests' turn at the interpreter and a folder for their files, where NumPy is here.
fn with_numpy() -> Option<(std::sync::MutexGuard<'static, ()>, tempfile::TempDir)> {
    let serial = serial();
    numpy().then(|| (serial, tempfile::tempdir().unwrap()))
}

/// An experiment of one kernel checked by `function` of `source`, its `y` an output of four
/// f32, and the `x` its check is given.
fn doubled_x(dir: &std::path::Path, source: &str, function: &str) -> (Experiment, Vec<u8>) {
    let y = "y\", buffer = \"f32\", len = 4, init = \"output\"";
    (
        one_kernel(dir, source, y, function),
        floats(&[1.0, 2.0, 3.0, 4.0]),
    )
}

/// `def`'s output `y` (argument 1), read `got`, checked against its Python function given
/// `data` of the data set `cache` names (`keep`: its result kept for other cells).
fn check_y(
    def: &crate::experiment::Kernel,
    (data, keep): (&[Option<&[u8]>], bool),
    got: &[f32],
    cache: &Cache,
) -> Result<String, crate::worker::failure::Failure> {
    let pc = def.check_python.as_ref().unwrap();
    let got = [(1, output(got))];
    check(
        pc,
        def,
        &def.launches[0],
        (data, keep),
        &got,
        (cache, &mut timeline()),
    )
}

/// A worker's timeline, begun now.
fn timeline() -> Timeline {
    let now = std::time::SystemTime::now();
    let unix = now.duration_since(std::time::UNIX_EPOCH).unwrap();
    Timeline::from_spawn(unix.as_nanos() as u64, std::time::Instant::now(), now)
}

fn floats(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

/// A kernel's output as a check is given it: read back.
fn output(v: &[f32]) -> ReadBack {
    ReadBack::from(floats(v))
}

#[test]
fn a_python_function_checks_an_output_and_names_what_went_wrong() {
    let Some((_serial, dir)) = with_numpy() else {
        return;
    };
    let file = dir.path().join("ref.py");
    std::fs::write(
        &file,
        "def twice(x, n):\n    return 2 * x[:n]\n\ndef short(x, n):\n    return x[:1]\n\ndef boom(x, n):\n    raise ValueError('no luck')\n\ndef ints(x, n):\n    return (2 * x).astype('int64')\n",
    )
    .unwrap();
    let kernel = |name: &str| {
        format!("[[kernel]]\nname = \"{name}\"\nsource = \"k.cu\"\nentry = \"k\"\ngrid = [1]\nblock = [32]\nargs = [\n  {{ name = \"x\", buffer = \"f32\", len = 4, init = \"uniform(0, 1)\" }},\n  {{ name = \"y\", buffer = \"f32\", len = 4, init = \"output\" }},\n  {{ name = \"n\", scalar = \"i32\", value = 4 }},\n]\ncheck_python = {{ function = \"{}:{name}\", outputs = [\"y\"] }}\n", file.display())
    };
    let text = ["twice", "short", "boom", "ints"].map(kernel).join("\n");
    let e = Experiment::from_text(&format!(
        "[experiment]\ntitle = \"t\"\n{text}[[variant]]\nname = \"a\"\n"
    ))
    .unwrap();
    let x = floats(&[1.0, 2.0, 3.0, 4.0]);
    let data = [Some(&x[..]), None, None];
    let cache = Cache::new(None, "k/n=4#1".into(), 1);
    let run = |k: usize, got: &[f32]| {
        let def = &e.kernels[k];
        check_y(def, (&data, true), got, &cache)
    };
    let right = run(0, &[2.0, 4.0, 6.0, 8.0]).unwrap();
    assert_eq!(
        right,
        format!("against Python `{}:twice`: y: max abs error 0.000e0, max rel error 0.000e0 over 4 elements", file.display())
    );
    let wrong = run(0, &[2.0, 4.0, 6.5, 8.0]).unwrap_err().message;
    assert!(
        wrong.contains("1 outside") && wrong.contains("y[2]"),
        "{wrong}"
    );
    let short = run(1, &[0.0; 4]).unwrap_err().message;
    assert!(
        short.contains("returned 1 elements (shape (1,)), the kernel's output holds 4"),
        "{short}"
    );
    let boom = run(2, &[0.0; 4]).unwrap_err().message;
    assert!(
        boom.contains("failed: ValueError: no luck (line 8 of ref.py)"),
        "{boom}"
    );
    // Integers cast to a float output; floats for an integer one would be refused.
    assert!(run(3, &[2.0, 4.0, 6.0, 8.0]).is_ok());
    // The interpreter outlives a failing function, and answers the next request.
    assert!(run(0, &[2.0, 4.0, 6.0, 8.0]).is_ok());
}

#[test]
fn a_buffer_updated_in_place_is_given_as_it_was_before_the_launch() {
    let Some((_serial, dir)) = with_numpy() else {
        return;
    };
    let e = one_kernel(
        dir.path(),
        "def axpy(x, y, a):\n    return a * x + y\n",
        "y\", buffer = \"f32\", len = 4, init = \"uniform(0, 1)\" },\n  { name = \"a\", scalar = \"f32\", value = 2",
        "axpy",
    );
    let def = &e.kernels[0];
    let (x, y) = (
        floats(&[1.0, 2.0, 3.0, 4.0]),
        floats(&[10.0, 20.0, 30.0, 40.0]),
    );
    let data = [Some(&x[..]), Some(&y[..]), None];
    let cache = Cache::new(None, "k#in-place".into(), 1);
    let run = |got: &[f32]| check_y(def, (&data, false), got, &cache);
    assert!(run(&[12.0, 24.0, 36.0, 48.0]).is_ok());
    // A kernel that left `y` as it was, or wrote a * x alone, fails.
    assert!(run(&[10.0, 20.0, 30.0, 40.0]).is_err());
    assert!(run(&[2.0, 4.0, 6.0, 8.0]).is_err());
}

#[test]
fn what_a_function_writes_to_standard_output_is_never_taken_for_its_reply() {
    let Some((_serial, dir)) = with_numpy() else {
        return;
    };
    // From Python and from below it: a stray line on the replies' pipe would answer this
    // request, and every later one the request before it, with a stale file of its size.
    let source = "import os\ndef twice(x):\n    print('hello')\n    os.write(1, b'{\"ok\": true}\\n')\n    return 2 * x\n";
    let (e, x) = doubled_x(dir.path(), source, "twice");
    let (def, data) = (&e.kernels[0], [Some(&x[..]), None]);
    for (set, got) in [
        [2.0, 4.0, 6.0, 8.0],
        [3.0, 4.0, 6.0, 8.0],
        [2.0, 4.0, 6.0, 8.0],
    ]
    .iter()
    .enumerate()
    {
        let cache = Cache::new(None, format!("k#stdout-{set}"), 1);
        let checked = check_y(def, (&data, false), got, &cache);
        assert_eq!(checked.is_ok(), set != 1, "{checked:?}");
    }
}

#[test]
fn a_function_asked_ahead_answers_the_check_of_its_data_set_and_keeps_what_none_asked() {
    let Some((_serial, dir)) = with_numpy() else {
        return;
    };
    let e = one_kernel(
        dir.path(),
        "def twice(x, n):\n    return 2 * x[:n]\n",
        "y\", buffer = \"f32\", len = 4, init = \"output\" },\n  { name = \"n\", scalar = \"i32\", value = 4",
        "twice",
    );
    let def = &e.kernels[0];
    let pc = def.check_python.as_ref().unwrap();
    let (a, b) = (floats(&[1.0, 2.0, 3.0, 4.0]), floats(&[5.0, 6.0, 7.0, 8.0]));
    let caches = [
        Cache::new(Some(dir.path()), "k#draw-a".into(), 1),
        Cache::new(Some(dir.path()), "k#draw-b".into(), 1),
    ];
    let outputs = [(1, Dtype::F32, 4)];
    for (data, cache) in [(&a, &caches[0]), (&b, &caches[1])] {
        let given = [Some(&data[..]), None, None];
        ask_ahead(pc, def, &def.launches[0], &given, &outputs, cache).unwrap();
        assert!(known(pc, cache));
    }
    // Checked with no inputs at all: the answers asked ahead are the references.
    let none = [None, None, None];
    let check_of = |got: &[f32], cache: &Cache| check_y(def, (&none, false), got, cache);
    assert!(check_of(&[2.0, 4.0, 6.0, 8.0], &caches[0]).is_ok());
    assert!(check_of(&[10.0, 12.0, 14.0, 17.0], &caches[1]).is_err());
    // Asked ahead again under other names, never checked: settling reads both answers and
    // keeps them for the next cells of the point, which draw the same, and the check of one
    // then asks nothing.
    let later = [
        Cache::new(Some(dir.path()), "k#draw-c".into(), 1),
        Cache::new(Some(dir.path()), "k#draw-d".into(), 1),
    ];
    for (data, cache) in [(&a, &later[0]), (&b, &later[1])] {
        let given = [Some(&data[..]), None, None];
        ask_ahead(pc, def, &def.launches[0], &given, &outputs, cache).unwrap();
    }
    settle();
    assert!(known(pc, &later[0]) && known(pc, &later[1]));
    assert!(check_of(&[10.0, 12.0, 14.0, 16.0], &later[1]).is_ok());
    // Two requests were on their way at once: two slots' files (an input, an output
    // each), kept to be written over by the next requests, and gone once the interpreter
    // ends.
    let left = || -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|f| f.ok()?.file_name().into_string().ok())
            .filter(|name| name.starts_with("python-"))
            .map(|name| {
                name.split_once('-')
                    .unwrap()
                    .1
                    .split_once('-')
                    .unwrap()
                    .1
                    .to_string()
            })
            .collect();
        names.sort();
        names
    };
    assert_eq!(left(), ["0-0.in", "0-1.out", "1-0.in", "1-1.out"]);
    end();
    assert!(left().is_empty(), "{:?}", left());
}

#[test]
fn an_interpreter_that_cannot_start_or_dies_is_named_with_its_last_words() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ref.py");
    std::fs::write(&file, "def f(x):\n    return x\n").unwrap();
    let kernel = |python: &str| {
        format!("[experiment]\ntitle = \"t\"\n[[kernel]]\nname = \"k\"\nsource = \"k.cu\"\nentry = \"k\"\ngrid = [1]\nblock = [32]\nargs = [\n  {{ name = \"x\", buffer = \"f32\", len = 4, init = \"uniform(0, 1)\" }},\n  {{ name = \"y\", buffer = \"f32\", len = 4, init = \"output\" }},\n]\ncheck_python = {{ function = \"{}:f\", outputs = [\"y\"], python = \"{python}\" }}\n[[variant]]\nname = \"a\"\n", file.display())
    };
    let x = floats(&[1.0; 4]);
    let data = [Some(&x[..]), None];
    let run = |python: &str, inputs: &str| {
        let e = Experiment::from_text(&kernel(python)).unwrap();
        let def = &e.kernels[0];
        let cache = Cache::new(None, inputs.into(), 1);
        let pc = def.check_python.as_ref().unwrap();
        check(
            pc,
            def,
            &def.launches[0],
            (&data, true),
            &[(1, output(&[1.0; 4]))],
            (&cache, &mut timeline()),
        )
        .unwrap_err()
        .message
    };
    let missing = run("/nonexistent/python3", "a");
    assert!(
        missing.contains("cannot start `/nonexistent/python3`"),
        "{missing}"
    );
    // `false` ends at once, as an interpreter without NumPy would.
    let ended = run("false", "b");
    assert!(ended.contains("ended its interpreter (`false`)"), "{ended}");
}

#[test]
fn a_checks_steps_are_phases_apart_what_the_runner_moves_and_what_the_function_costs() {
    let Some((_serial, dir)) = with_numpy() else {
        return;
    };
    let (e, x) = doubled_x(dir.path(), "def double(x):\n    return 2 * x\n", "double");
    let def = &e.kernels[0];
    let pc = def.check_python.as_ref().unwrap();
    let phases = |asked_ahead: bool| -> Vec<String> {
        let cache = Cache::new(None, format!("k#steps{asked_ahead}"), 1);
        let given = [Some(&x[..]), None];
        let outputs = [(1, Dtype::F32, 4)];
        if asked_ahead {
            ask_ahead(pc, def, &def.launches[0], &given, &outputs, &cache).unwrap();
        }
        let data = if asked_ahead { [None, None] } else { given };
        let got = [(1, output(&[2.0, 4.0, 6.0, 8.0]))];
        let mut t = timeline();
        let steps = (&cache, &mut t);
        check(pc, def, &def.launches[0], (&data, false), &got, steps).unwrap();
        (t.take().into_iter().map(|p| p.name))
            .filter(|n| n.starts_with("Python"))
            .collect()
    };
    let named = |steps: &[&str]| -> Vec<String> {
        (steps.iter())
            .map(|s| format!("Python reference: {s}"))
            .collect()
    };
    let asked_now = ["buffers read back", "data written", "its answer"];
    assert_eq!(
        phases(false),
        named(&[&asked_now[..], &["result read", "compared"]].concat())
    );
    // Asked ahead: its data went before the samples; the wait for what is left of it.
    assert_eq!(
        phases(true),
        named(&["buffers read back", "its answer", "result read", "compared"])
    );
}

#[test]
fn a_check_on_the_gpu_without_torch_with_cuda_says_what_it_needs() {
    let _serial = serial();
    if !numpy() {
        return;
    }
    let cuda = Command::new("python3")
        .args(["-c", "import torch; assert torch.cuda.is_available()"])
        .output()
        .is_ok_and(|o| o.status.success());
    if cuda {
        eprintln!("skipped: python3 here has torch with CUDA (tests/gpu_kernels.rs runs it)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exp = one_kernel(
        dir.path(),
        "def f(x):\n    return x\n",
        "y\", buffer = \"f32\", len = 4, init = \"output\"",
        "f",
    );
    let pc = exp.kernels[0].check_python.as_ref().unwrap();
    let asked = serde_json::json!({
        "file": pc.path, "function": "f", "torch": true, "gpu": true, "args": [], "outputs": [],
    });
    let e = super::python::request(pc, &asked).unwrap_err();
    assert!(
        e.message.contains("gpu = true needs torch with CUDA"),
        "{}",
        e.message
    );
}

#[test]
fn an_audited_draws_answer_serves_the_launches_alone_on_it_and_the_next_cells() {
    let Some((_serial, dir)) = with_numpy() else {
        return;
    };
    let (e, x) = doubled_x(dir.path(), "def double(x):\n    return 2 * x\n", "double");
    let def = &e.kernels[0];
    let pc = def.check_python.as_ref().unwrap();
    // Whether the check of the draw named `inputs` asked the function (an answer's phase).
    let asked = |inputs: &str| -> bool {
        let cache = Cache::new(None, inputs.into(), 1);
        let got = [(1, output(&[2.0, 4.0, 6.0, 8.0]))];
        let mut t = timeline();
        let data = [Some(&x[..]), None];
        check(
            pc,
            def,
            &def.launches[0],
            (&data, false),
            &got,
            (&cache, &mut t),
        )
        .unwrap();
        (t.take().iter()).any(|p| p.name == "Python reference: its answer")
    };
    // A region's check asks; the launches alone after it, on its draw, do not, and need no
    // inputs read back for it.
    assert!(asked("k#draw1"));
    assert!(known(pc, &Cache::new(None, "k#draw1".into(), 1)));
    assert!(!asked("k#draw1") && !asked("k#draw1"));
    // The next region's draw is asked, and the first is kept beside it, past the cell's
    // end: the next cells of the point draw the same.
    assert!(asked("k#draw2"));
    settle();
    assert!(!asked("k#draw1") && !asked("k#draw2"));
    // The oldest go once more are kept.
    for k in 3..=8 {
        assert!(asked(&format!("k#draw{k}")));
    }
    assert!(asked("k#draw1") && !asked("k#draw8"));
}
