//! Every kind of bad experiment file gets a clear error naming file, line and column, a
//! non-zero exit, and no panic. `runner plan` validates without a GPU.

mod common;
use common::*;

/// Runs `runner plan` on `text` and returns stderr, asserting a clean failure.
fn plan_error(text: &str) -> String {
    let (_dir, path) = write_experiment("bad.toml", text);
    let out = run(&["plan", path.to_str().unwrap()]);
    let err = stderr(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "expected exit 1, stderr:\n{err}"
    );
    assert!(!err.contains("panicked"), "panicked:\n{err}");
    assert!(err.starts_with("error: "), "{err}");
    assert!(
        err.contains("bad.toml"),
        "error does not name the file:\n{err}"
    );
    err
}

fn good() -> String {
    matmul_experiment(&kernels_dir())
}

/// The 1-based line of the first occurrence of `needle` in `text`.
fn line_of(text: &str, needle: &str) -> usize {
    text[..text.find(needle).expect("needle in text")]
        .matches('\n')
        .count()
        + 1
}

fn assert_at_line(err: &str, text: &str, needle: &str) {
    let want = format!("bad.toml:{}:", line_of(text, needle));
    assert!(err.contains(&want), "expected {want} in:\n{err}");
}

#[test]
fn the_valid_experiment_plans() {
    let (_dir, path) = write_experiment("ok.toml", &good());
    let out = run(&["plan", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("matmul/n=64/events"), "{text}");
    assert!(text.contains("floor/host_sync"), "{text}");
    assert!(text.contains("estimated time"), "{text}");
}

#[test]
fn malformed_toml() {
    let text = good().replace("[sweep]", "[sweep");
    let err = plan_error(&text);
    assert_at_line(&err, &text, "[sweep");
}

#[test]
fn unknown_key_lists_the_valid_ones() {
    let text = good().replace("samples = 20", "samplez = 20");
    let err = plan_error(&text);
    assert_at_line(&err, &text, "samplez");
    assert!(err.contains("samplez") && err.contains("samples"), "{err}");
}

#[test]
fn wrong_type() {
    let text = good().replace("warmup = 5", "warmup = true");
    let err = plan_error(&text);
    assert_at_line(&err, &text, "warmup = true");
}

#[test]
fn unknown_timer_lists_the_timers() {
    let text = good().replace("timer = \"events\"", "timer = \"evnts\"");
    let err = plan_error(&text);
    assert_at_line(&err, &text, "evnts");
    assert!(err.contains("host_sync") && err.contains("events"), "{err}");
}

#[test]
fn empty_sweep() {
    let text = good().replace("n = [64, 96]", "n = []");
    let err = plan_error(&text);
    assert_at_line(&err, &text, "n = []");
    assert!(err.contains("empty"), "{err}");
}

#[test]
fn malformed_range_sweep() {
    let text = good().replace("n = [64, 96]", "n = \"64..x step 32\"");
    let err = plan_error(&text);
    assert!(
        err.contains("step 32") && err.contains("2^8..2^12"),
        "{err}"
    );
}

#[test]
fn missing_kernel_source() {
    let text = good().replace("matmul.cu", "nope.cu");
    let err = plan_error(&text);
    assert_at_line(&err, &text, "nope.cu");
    assert!(err.contains("cannot read kernel source"), "{err}");
}

#[test]
fn unknown_kernel_entry() {
    let text = good().replace("entry = \"matMulKernel\"", "entry = \"matmul_kernel\"");
    let err = plan_error(&text);
    assert_at_line(&err, &text, "matmul_kernel");
    assert!(err.contains("has no function `matmul_kernel`"), "{err}");
}

#[test]
fn unknown_variant_in_report() {
    let text = good().replace("baseline = \"events\"", "baseline = \"event\"");
    let err = plan_error(&text);
    assert_at_line(&err, &text, "baseline = \"event\"");
    assert!(
        err.contains("unknown variant `event`") && err.contains("events, sync"),
        "{err}"
    );
}

#[test]
fn expression_with_an_unknown_name() {
    let text = good().replace(
        "(n + 31) // 32\", \"(n + 31) // 32\"",
        "(n + 31) // q\", \"(n + 31) // 32\"",
    );
    let err = plan_error(&text);
    assert_at_line(&err, &text, "// q");
    assert!(
        err.contains("l2_bytes") && err.contains("sm_count"),
        "hint lists the names:\n{err}"
    );
}

#[test]
fn expression_syntax_error() {
    let text = good().replace(
        "len = \"n * n\", init = \"output\"",
        "len = \"n * * n\", init = \"output\"",
    );
    let err = plan_error(&text);
    assert_at_line(&err, &text, "n * * n");
    assert!(err.contains("cannot parse expression"), "{err}");
}

#[test]
fn fractional_expression() {
    let text = good().replace("samples = 20", "samples = \"n / 7\"");
    let err = plan_error(&text);
    assert!(
        err.contains("not a whole number") && err.contains("//"),
        "{err}"
    );
}

#[test]
fn unknown_reference() {
    let text = good().replace("reference = \"matmul\"", "reference = \"gemm\"");
    let err = plan_error(&text);
    assert!(
        err.contains("unknown reference `gemm`") && err.contains("matmul, copy"),
        "{err}"
    );
}

#[test]
fn output_without_a_check() {
    let text = good().replace("check = { reference = \"matmul\", inputs = [\"A\", \"B\"], output = \"C\", dims = [\"n\", \"n\", \"n\"] }", "");
    let err = plan_error(&text);
    assert!(err.contains("writes `C` but has no check"), "{err}");
}

#[test]
fn inits_are_named_and_an_unknown_one_lists_them() {
    let text = good().replacen("init = \"uniform(0, 100)\"", "init = \"gaussian(0, 1)\"", 1);
    let err = plan_error(&text);
    assert!(
        err.contains("unknown init `gaussian(0, 1)`") && err.contains("normal(mean, std)"),
        "{err}"
    );
    // Zeros only where asked for by name: a uniform range of zeros is still refused.
    let text = good().replacen("init = \"uniform(0, 100)\"", "init = \"uniform(0, 0)\"", 1);
    assert!(plan_error(&text).contains("lo < hi"));
    let text = good().replacen("init = \"uniform(0, 100)\"", "init = \"zeros\"", 1);
    let (_dir, path) = write_experiment("ok.toml", &text);
    assert!(run(&["plan", path.to_str().unwrap()]).status.success());
}

#[test]
fn processes_without_fresh_process() {
    let text = good().replace("name = \"sync\"\n", "name = \"sync\"\nprocesses = 4\n");
    let err = plan_error(&text);
    assert!(
        err.contains("processes needs fresh_process = true"),
        "{err}"
    );
}

#[test]
fn published_value_for_a_missing_point() {
    let text = good() + "\n[[report.published]]\nvariant = \"sync\"\nsource = \"post\"\nunit = \"ms\"\nvalues = { 65 = 1.0 }\n";
    let err = plan_error(&text);
    assert!(err.contains("`65`, which is not a sweep point"), "{err}");
}

#[test]
fn no_variants() {
    let text = good().replace("[[variant]]", "[[nope]]");
    let err = plan_error(&text);
    assert!(err.contains("nope"), "{err}");
}

#[test]
fn missing_experiment_file() {
    let out = run(&["plan", "does/not/exist.toml"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("does/not/exist.toml") && err.contains("cannot read"),
        "{err}"
    );
}

#[test]
fn unknown_clock_policy() {
    let text = good() + "\n[environment]\nclocks = { pin = 1500 }\n";
    let err = plan_error(&text);
    assert_at_line(&err, &text, "clocks = { pin");
    assert!(err.contains("expect") && err.contains("lock"), "{err}");
}

#[test]
fn flush_size_that_is_not_positive() {
    let text = good().replace(
        "name = \"sync\"\n",
        "name = \"sync\"\ncache = \"flush\"\nflush_bytes = \"l2_bytes - l2_bytes\"\n",
    );
    let err = plan_error(&text);
    assert_at_line(&err, &text, "flush_bytes");
    assert!(
        err.contains("flush_bytes is 0") && err.contains("at least 1"),
        "{err}"
    );
}

#[test]
fn unknown_flush_method_lists_the_choices() {
    let text = good().replace(
        "name = \"sync\"\n",
        "name = \"sync\"\ncache = \"flush\"\nflush_method = \"evict\"\n",
    );
    let err = plan_error(&text);
    assert_at_line(&err, &text, "flush_method");
    for choice in ["memset", "kernel", "read"] {
        assert!(err.contains(choice), "{choice} missing from:\n{err}");
    }
}

/// The `sync` variant with extra knobs.
fn with_sync_knobs(knobs: &str) -> String {
    good().replace("name = \"sync\"\n", &format!("name = \"sync\"\n{knobs}\n"))
}

#[test]
fn misspelt_cuda_variable_names_the_right_one() {
    let text = with_sync_knobs("env = { CUDA_FORCE_JTI = \"1\" }");
    let err = plan_error(&text);
    assert_at_line(&err, &text, "CUDA_FORCE_JTI");
    assert!(err.contains("did you mean `CUDA_FORCE_JIT`"), "{err}");
}

#[test]
fn bad_value_of_a_known_cuda_variable() {
    let text = with_sync_knobs("env = { CUDA_MODULE_LOADING = \"lazy\" }");
    let err = plan_error(&text);
    assert_at_line(&err, &text, "CUDA_MODULE_LOADING");
    assert!(err.contains("LAZY or EAGER"), "{err}");
}

#[test]
fn other_variables_are_allowed() {
    let text = with_sync_knobs("env = { OMP_NUM_THREADS = 4, CUDA_FORCE_JIT = 1 }");
    let (_dir, path) = write_experiment("ok.toml", &text);
    let out = run(&["plan", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("environment: CUDA_FORCE_JIT=1, OMP_NUM_THREADS=4"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn jit_cache_and_a_cache_variable_conflict() {
    let text = with_sync_knobs("env = { CUDA_CACHE_PATH = \"/tmp/x\" }\njit_cache = \"empty\"");
    let err = plan_error(&text);
    assert_at_line(&err, &text, "CUDA_CACHE_PATH");
    assert!(err.contains("jit_cache"), "{err}");
}

#[test]
fn unknown_jit_cache_state() {
    let text = with_sync_knobs("jit_cache = \"cold\"");
    let err = plan_error(&text);
    assert_at_line(&err, &text, "jit_cache");
    assert!(err.contains("empty") && err.contains("warm"), "{err}");
}

#[test]
fn architecture_that_does_not_fit_the_compile_mode() {
    let text = with_sync_knobs("compile = \"ptx\"\narch = \"sm_90\"");
    let err = plan_error(&text);
    assert_at_line(&err, &text, "arch = ");
    assert!(err.contains("compute_80"), "{err}");
}

#[test]
fn timeout_that_is_not_a_duration() {
    let text = with_sync_knobs("timeout = \"soon\"");
    let err = plan_error(&text);
    assert_at_line(&err, &text, "timeout");
    assert!(err.contains("30s"), "{err}");
}

#[test]
fn batch_and_graph_exclude_each_other() {
    let text = with_sync_knobs("batch = 10\ngraph = 10");
    let err = plan_error(&text);
    assert_at_line(&err, &text, "graph = 10");
    assert!(err.contains("exclude"), "{err}");
}

#[test]
fn a_saturated_queue_needs_events() {
    let err = plan_error(&with_sync_knobs("queue = \"saturate\""));
    assert!(err.contains("needs timer = \"events\""), "{err}");
}

#[test]
fn a_wait_length_needs_a_saturated_queue() {
    let text = with_sync_knobs("queue_wait_us = 100");
    let err = plan_error(&text);
    assert_at_line(&err, &text, "queue_wait_us");
}

#[test]
fn bias_pairs_name_known_variants() {
    let text = good().replace("[report]", "[report]\nbias = [[\"sync\", \"cupti\"]]");
    let err = plan_error(&text);
    assert_at_line(&err, &text, "\"cupti\"]]");
    assert!(err.contains("unknown variant `cupti`"), "{err}");
}

#[test]
fn rounds_need_an_order_that_takes_turns() {
    let text = with_sync_knobs("rounds = 5");
    let err = plan_error(&text);
    assert_at_line(&err, &text, "rounds = 5");
    assert!(err.contains("interleaved"), "{err}");
}

#[test]
fn fresh_processes_cannot_be_interleaved() {
    let text = with_sync_knobs("order = \"interleaved\"\nfresh_process = true");
    let err = plan_error(&text);
    assert!(err.contains("fresh_process"), "{err}");
}

#[test]
fn gpu_warmup_that_is_not_a_duration() {
    let text = good() + "\n[environment]\ngpu_warmup = \"a while\"\n";
    let err = plan_error(&text);
    assert_at_line(&err, &text, "gpu_warmup");
}

#[test]
fn adaptive_stop_with_a_timer_that_reads_later() {
    let text = with_sync_knobs("timer = \"cupti\"\nstop = { rsd_pct = 1.0 }");
    let err = plan_error(&text.replace("timer = \"host_sync\"\n", ""));
    assert!(err.contains("stop needs a timer"), "{err}");
}

#[test]
fn adaptive_stop_with_an_unknown_field() {
    let text = with_sync_knobs("stop = { rsd = 1.0 }");
    let err = plan_error(&text);
    assert_at_line(&err, &text, "stop = ");
    assert!(err.contains("rsd_pct"), "{err}");
}

#[test]
fn rotating_buffers_apply_to_graphs_and_need_one_set_at_least() {
    let text = with_sync_knobs("graph = 4\nrotate = 3");
    let (_dir, path) = write_experiment("ok.toml", &text);
    assert!(run(&["plan", path.to_str().unwrap()]).status.success());
    let text = with_sync_knobs("graph = 4\nrotate = 0");
    let err = plan_error(&text);
    assert_at_line(&err, &text, "rotate = 0");
}

#[test]
fn names_that_are_not_identifiers_are_refused_where_they_stand() {
    for (from, to) in [
        ("name = \"sync\"", "name = \"host,sync\""),
        ("name = \"matmul\"", "name = \"../../../../tmp/pwned\""),
        ("name = \"matmul\"", "name = \"gemm/v2\""),
        ("name = \"events\"", "name = \"two words\""),
    ] {
        let text = good().replace(from, to);
        let err = plan_error(&text);
        assert_at_line(&err, &text, to);
        assert!(err.contains("not an identifier"), "{err}");
    }
}

#[test]
fn a_huge_sweep_is_refused_at_once_with_its_size() {
    let started = std::time::Instant::now();
    let text = good().replace("n = [64, 96]", "n = \"1..1000000000\"");
    let err = plan_error(&text);
    assert!(err.contains("1000000000 values"), "{err}");
    let text = good().replace("n = [64, 96]", "n = \"1..90000\"\nm = \"1..90000\"");
    let err = plan_error(&text);
    assert!(err.contains("cells") && err.contains("hint"), "{err}");
    assert!(started.elapsed().as_secs() < 10, "refused before expanding");
}

#[test]
fn launch_limits_are_checked_against_the_device() {
    for (from, to, says) in [
        (
            "block = [32, 32]",
            "block = [2048]",
            "block dimension x is 2048",
        ),
        ("block = [32, 32]", "block = [64, 32]", "2048 threads"),
        (
            "grid = [\"(n + 31) // 32\", \"(n + 31) // 32\"]",
            "grid = [0]",
            "grid dimension x is 0",
        ),
        (
            "block = [32, 32]",
            "block = [32, 32]\nshared_bytes = 1000000",
            "shared_bytes is 1000000",
        ),
        (
            "len = \"n * n\", init = \"output\"",
            "len = \"2 ** 42\", init = \"output\"",
            "larger than the device's memory",
        ),
        (
            "len = \"n * n\", init = \"output\"",
            "len = \"0 - n\", init = \"output\"",
            "negative length",
        ),
        (
            "len = \"n * n\", init = \"output\"",
            "len = 2.5, init = \"output\"",
            "not a whole number",
        ),
        (
            "value = \"n\" }",
            "value = \"2 ** 32\" }",
            "does not fit i32",
        ),
    ] {
        let text = good().replace(from, to);
        assert_ne!(text, good(), "{from}");
        let err = plan_error(&text);
        assert!(err.contains(says), "{says} in {err}");
        assert!(err.contains("an assumed H100"), "{err}");
        // A value over a limit is no expression's fault: its hint is the limit's (a length
        // of 2.5 is the expression's: integer division is `//`).
        let of_expression = says == "not a whole number";
        assert_eq!(err.contains("expressions may use"), of_expression, "{err}");
    }
}

/// Each failure's hint fits it: an expression that fails names what expressions may use, a
/// launch over the device's limits how to keep within them, an init its buffer's type.
#[test]
fn a_launch_error_hints_at_its_own_fix() {
    for (from, to, hint) in [
        (
            "block = [32, 32]",
            "block = [2048]",
            "keep it within the limit there (e.g. \"1024 if n > 1024 else n\")",
        ),
        (
            "grid = [\"(n + 31) // 32\", \"(n + 31) // 32\"]",
            "grid = [\"(n + 31) // tile\", \"(n + 31) // 32\"]",
            "expressions may use the sweep parameters and device facts",
        ),
        (
            "init = \"uniform(0, 100)\" },",
            "init = \"uniform(0, 1e40)\" },",
            "an init's values must fit its buffer's type",
        ),
    ] {
        let text = good().replacen(from, to, 1);
        assert_ne!(text, good(), "{from}");
        let err = plan_error(&text);
        assert!(err.contains(hint), "{hint} in {err}");
    }
}

#[test]
fn a_clock_lock_outside_the_supported_clocks_is_refused() {
    let text = good() + "\n[environment]\nclocks = { lock = 99999 }\n";
    let err = plan_error(&text);
    assert_at_line(&err, &text, "clocks = ");
    assert!(err.contains("99999 MHz") && err.contains("1980"), "{err}");
}

#[test]
fn a_kernel_may_be_timed_unchecked_by_choice_but_not_with_a_check_too() {
    let check = "check = { reference = \"matmul\", inputs = [\"A\", \"B\"], output = \"C\", dims = [\"n\", \"n\", \"n\"] }";
    let text = good().replace(check, "unchecked = true");
    let (_dir, path) = write_experiment("ok.toml", &text);
    let out = run(&["plan", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = good().replace(check, &format!("{check}\nunchecked = true"));
    let err = plan_error(&text);
    assert_at_line(&err, &text, "unchecked = true");
    assert!(err.contains("cannot be unchecked"), "{err}");
}

#[test]
fn declared_work_must_not_be_negative() {
    let text = good().replace("block = [32, 32]", "block = [32, 32]\nbytes = \"0 - n\"");
    let err = plan_error(&text);
    assert_at_line(&err, &text, "bytes = ");
    assert!(err.contains("bytes is -64"), "{err}");
}

/// The matmul with `keys` added to its kernel table.
fn with_kernel_keys(keys: &str) -> String {
    good().replace("block = [32, 32]", &format!("block = [32, 32]\n{keys}"))
}

#[test]
fn bytes_and_reads_or_writes_exclude_each_other() {
    for apart in ["reads = \"4 * n\"", "writes = \"4 * n\""] {
        let text = with_kernel_keys(&format!("bytes = \"8 * n\"\n{apart}"));
        let err = plan_error(&text);
        assert_at_line(&err, &text, "bytes = ");
        assert!(
            err.contains("gives bytes and also reads or writes"),
            "{err}"
        );
        assert!(err.contains("hint: bytes is reads + writes"), "{err}");
    }
    let text = with_kernel_keys("reads = \"4 * n\"\nwrites = \"0 - n\"");
    let err = plan_error(&text);
    assert_at_line(&err, &text, "writes = ");
    assert!(err.contains("writes is -64"), "{err}");
}

#[test]
fn a_declared_peak_and_a_flops_type_exclude_each_other() {
    let peak = "peak = { per_sm_clock = 512, name = \"INT8 dp4a (operations)\" }";
    let text = with_kernel_keys(&format!("flops_type = \"i32\"\n{peak}"));
    let err = plan_error(&text);
    assert_at_line(&err, &text, "peak = ");
    assert!(err.contains("gives both flops_type and peak"), "{err}");
    assert!(err.contains("hint: keep one"), "{err}");
    let (_dir, path) = write_experiment("ok.toml", &with_kernel_keys(peak));
    let out = run(&["plan", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_declared_peak_that_is_not_a_positive_rate_with_a_name_is_refused() {
    for (peak, says) in [
        (
            "{ per_sm_clock = -512, name = \"x\" }",
            "per_sm_clock is -512",
        ),
        ("{ per_sm_clock = 0, name = \"x\" }", "per_sm_clock is 0"),
        (
            "{ per_sm_clock = \"many\", name = \"x\" }",
            "is not a number",
        ),
        (
            "{ per_sm_clock = 512, name = \"x\", unit = \"ops\" }",
            "no key `unit`",
        ),
        ("{ per_sm_clock = 512 }", "needs a name"),
        ("512", "is not a table"),
    ] {
        let text = with_kernel_keys(&format!("peak = {peak}"));
        let err = plan_error(&text);
        assert_at_line(&err, &text, "peak = ");
        assert!(err.contains(says), "{peak}: {err}");
        assert!(
            err.contains("hint: write peak = { per_sm_clock = 512"),
            "{err}"
        );
    }
}

#[test]
fn compile_options_render_at_every_point_and_name_unknown_values() {
    let text = good().replace(
        "block = [32, 32]",
        "block = [32, 32]\noptions = [\"-DTILE={{ tile }}\"]",
    );
    let err = plan_error(&text);
    assert_at_line(&err, &text, "options = ");
    assert!(err.contains("-DTILE"), "{err}");
    let text = good().replace(
        "block = [32, 32]",
        "block = [32, 32]\noptions = [\"-DN={{ n }}\", \"--use_fast_math\"]",
    );
    let (_dir, path) = write_experiment("ok.toml", &text);
    assert!(run(&["plan", path.to_str().unwrap()]).status.success());
}

#[test]
fn a_reference_kernel_must_exist_and_be_given_the_kernels_arguments_by_name() {
    let check = "check = { reference = \"matmul\", inputs = [\"A\", \"B\"], output = \"C\", dims = [\"n\", \"n\", \"n\"] }";
    let text = good().replace(
        check,
        "check_kernel = { kernel = \"naive\", outputs = [\"C\"] }",
    );
    let err = plan_error(&text);
    assert_at_line(&err, &text, "\"naive\"");
    assert!(
        err.contains("no kernel named `naive`") && err.contains("matmul"),
        "{err}"
    );
    // A second kernel whose argument of a name differs from the first's.
    let second = format!(
        "\n[[kernel]]\nname = \"other\"\nsource = \"{}\"\nentry = \"matMulKernel\"\ngrid = [1]\nblock = [1]\nargs = [{{ name = \"A\", buffer = \"f32\", len = 4, init = \"output\" }}]\nunchecked = true\n",
        kernels_dir().join("matmul.cu").display()
    );
    let text = good()
        .replace(
            check,
            "check_kernel = { kernel = \"other\", outputs = [\"C\"] }",
        )
        .replace("[defaults]", &format!("{second}\n[defaults]"));
    let err = plan_error(&text);
    assert!(
        err.contains("`A` is 4096 elements of f32 in `matmul` but 4 of f32 in `other` (at 64,"),
        "{err}"
    );
    // A reference that reads what the kernel does not have.
    let text = text.replace(
        "args = [{ name = \"A\", buffer = \"f32\", len = 4, init = \"output\" }]",
        "args = [{ name = \"C\", buffer = \"f32\", len = \"n * n\", init = \"output\" }, { name = \"bias\", buffer = \"f32\", len = 4, init = \"uniform(0, 1)\" }]",
    );
    let err = plan_error(&text);
    assert_at_line(&err, &text, "\"other\", outputs");
    assert!(
        err.contains("kernel `other` reads `bias`, which `matmul` does not have"),
        "{err}"
    );
}

#[test]
fn a_reference_kernel_check_needs_one_launch_before_a_batch_is_timed() {
    let check = "check = { reference = \"matmul\", inputs = [\"A\", \"B\"], output = \"C\", dims = [\"n\", \"n\", \"n\"] }";
    let block = good();
    let start = block.find("[[kernel]]").unwrap();
    let end = block.find("[defaults]").unwrap();
    let twin = block[start..end]
        .replace("name = \"matmul\"", "name = \"twin\"")
        .replace(
            check,
            "check_kernel = { kernel = \"matmul\", outputs = [\"C\"] }",
        );
    let text = block
        .replace("[defaults]", &format!("{twin}[defaults]"))
        .replace("warmup = 5", "warmup = 0\nbatch = 10");
    let err = plan_error(&text);
    assert!(
        err.contains("twin/n=64") && err.contains("warmup = 1"),
        "{err}"
    );
    let ok = text.replace("warmup = 0", "warmup = 1");
    let (_dir, path) = write_experiment("ok.toml", &ok);
    let out = run(&["plan", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn buffer_memory_is_named_and_managed_memory_is_bounded() {
    let a = "init = \"uniform(0, 100)\"";
    let text = good().replacen(a, &format!("{a}, memory = \"hbm\""), 1);
    let err = plan_error(&text);
    assert!(
        err.contains("unknown memory `hbm`") && err.contains("\"pageable\""),
        "{err}"
    );
    assert_at_line(&err, &text, "memory = \"hbm\"");
    // A kernel cannot address pageable host memory: only copies reach it.
    let text = good().replacen(a, &format!("{a}, memory = \"pageable\""), 1);
    let err = plan_error(&text);
    assert!(err.contains("no kernel can address pageable"), "{err}");
    assert_at_line(&err, &text, "memory = \"pageable\"");
    let text = good().replacen(
        "scalar = \"i32\", value = \"n\"",
        "scalar = \"i32\", value = \"n\", memory = \"managed\"",
        1,
    );
    assert!(plan_error(&text).contains("takes only a value"));
    // Two managed buffers of 48 GiB each: more than the 80 GiB the plan assumes.
    let text = good()
        .replace("n = [64, 96]", "n = [113512]")
        .replace(a, &format!("{a}, memory = \"managed\""));
    let err = plan_error(&text);
    assert!(err.contains("managed buffers take"), "{err}");
    let text = good().replacen(a, &format!("{a}, memory = \"mapped\""), 1);
    let (_dir, path) = write_experiment("ok.toml", &text);
    assert!(run(&["plan", path.to_str().unwrap()]).status.success());
}

/// An experiment of one copy (`to` and `bytes` as given) and the matmul with a copy step.
fn copies(to: &str, bytes: &str, step_from: &str) -> String {
    let matmul = good();
    let kernel = &matmul[matmul.find("[[kernel]]").unwrap()..matmul.find("[defaults]").unwrap()];
    let kernel = kernel.replace(
        "  { name = \"n\", scalar = \"i32\", value = \"n\" },\n]",
        &format!("  {{ name = \"n\", scalar = \"i32\", value = \"n\" }},\n  {{ name = \"h_C\", buffer = \"f32\", len = \"n * n\", init = \"output\", memory = \"pinned\" }},\n]\ntakes = [\"A\", \"B\", \"C\", \"m\", \"k\", \"n\"]\nthen = [{{ copy = {{ from = \"{step_from}\", to = \"h_C\" }} }}]"),
    );
    format!(
        "[experiment]\ntitle = \"copies\"\n\n[sweep]\nn = [64, 96]\n\n[[copy]]\nname = \"h2d\"\nfrom = \"pageable\"\nto = \"{to}\"\nbytes = \"{bytes}\"\n\n{kernel}[[variant]]\nname = \"events\"\ntimer = \"events\"\n"
    )
}

#[test]
fn copies_and_copy_steps_are_checked_before_anything_runs() {
    let text = copies("device", "4 * n", "C");
    let (_dir, path) = write_experiment("ok.toml", &text);
    let out = run(&["plan", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let plan = stdout(&out);
    assert!(plan.contains("h2d (copy pageable -> device)"), "{plan}");
    assert!(
        plan.contains("matmul/n=64/events") && plan.contains("+1 step(s)"),
        "{plan}"
    );

    let text = copies("pinned", "4 * n", "C");
    let err = plan_error(&text);
    assert!(
        err.contains("both ends of this copy are host memory"),
        "{err}"
    );
    assert_at_line(&err, &text, "to = \"pinned\"");

    let text = copies("device", "4 * n + 2", "C");
    let err = plan_error(&text);
    assert!(err.contains("positive multiple of 4 bytes"), "{err}");
    assert_at_line(&err, &text, "bytes = ");

    // A copy step between buffers of different sizes, or from a scalar.
    let err = plan_error(&copies("device", "4 * n", "n"));
    assert!(err.contains("`n` is a scalar"), "{err}");
    let text = copies("device", "4 * n", "C").replace(
        "{ name = \"h_C\", buffer = \"f32\", len = \"n * n\"",
        "{ name = \"h_C\", buffer = \"f32\", len = \"n\"",
    );
    let err = plan_error(&text);
    assert!(err.contains("differ in size"), "{err}");

    // The profiler times kernel launches only.
    let text = copies("device", "4 * n", "C");
    let text = format!(
        "{}[[variant]]\nname = \"profiled\"\ntimer = \"profiler\"\n",
        &text[..text.find("[[kernel]]").unwrap()]
    );
    let err = plan_error(&text);
    assert!(
        err.contains("the profiler times kernel launches only"),
        "{err}"
    );

    // A graph cannot capture a copy of pageable memory; async copies of pinned memory it can.
    let graphed = |text: &str| format!("{text}graph = 2\nwarmup = 1\n");
    let err = plan_error(&graphed(&copies("device", "4 * n", "C")));
    assert!(
        err.contains("a CUDA graph cannot capture `h2d`'s copies"),
        "{err}"
    );
    let text = graphed(
        &copies("device", "4 * n", "C").replace("from = \"pageable\"", "from = \"pinned\""),
    );
    let (_dir, path) = write_experiment("ok.toml", &text);
    let out = run(&["plan", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = plan_error(&text.replace("bytes = \"4 * n\"\n", "bytes = \"4 * n\"\nsync = true\n"));
    assert!(err.contains("a sync copy blocks the host"), "{err}");

    // CUPTI timing copies: the output check (which copies too) must come before the timed
    // launches, after a warm-up launch.
    let cupti = |warmup: u32| {
        format!(
            "{}[[variant]]\nname = \"cupti\"\ntimer = \"cupti\"\nwarmup = {warmup}\n",
            copies("device", "4 * n", "C")
        )
    };
    let err = plan_error(&cupti(0));
    assert!(
        err.contains("its output check runs among the timed launches")
            && err.contains("warmup = 1"),
        "{err}"
    );
    let (_dir, path) = write_experiment("ok.toml", &cupti(1));
    let out = run(&["plan", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// `good()` with `extra` added to its `[defaults]`.
fn with_defaults(extra: &str) -> String {
    good().replace("warmup = 5", &format!("warmup = 5\n{extra}"))
}

#[test]
fn counts_sizes_and_durations_beyond_their_limits_are_refused_with_the_limit() {
    let options = format!("options = [{}]", vec!["\"-DX\""; 257].join(", "));
    for (extra, at, says) in [
        (
            "samples = 10000001",
            "samples = 1",
            "more than the 10000000",
        ),
        (
            "warmup = 4611686018427387904",
            "warmup = 4",
            "more than the 10000000",
        ),
        ("batch = 100001", "batch", "more than the 100000"),
        (
            "graph = 9223372036854775807",
            "graph",
            "more than the 100000",
        ),
        ("rotate = 10001", "rotate", "more than the 10000"),
        (
            "fresh_process = true\nprocesses = 1000000000",
            "processes",
            "more than the 10000",
        ),
        (
            "order = \"interleaved\"\nrounds = 100000000",
            "rounds",
            "more than the 10000",
        ),
        (
            "queue = \"saturate\"\nqueue_wait_us = 1000000000000",
            "queue_wait_us",
            "10000000",
        ),
        ("timeout = \"1e300s\"", "timeout", "longer than 1day"),
        ("timeout = \"25h\"", "timeout", "longer than 1day"),
        (
            "stop = { timeout = \"1e300s\" }",
            "stop",
            "longer than 1day",
        ),
        (
            "stop = { min_gpu_time = \"1e20s\" }",
            "stop",
            "longer than 1day",
        ),
        ("stop = { min_samples = 1000000000000 }", "stop", "10000000"),
        ("stop = { rsd_pct = nan }", "stop", "rsd_pct is NaN"),
        (&options, "options", "more than the 256"),
    ] {
        let text = good().replace("samples = 20\nwarmup = 5", extra);
        let err = plan_error(&text);
        assert_at_line(&err, &text, at);
        assert!(err.contains(says), "{extra}: {err}");
    }
    let text = good() + "\n[environment]\ngpu_warmup = \"1e300s\"\n";
    assert!(plan_error(&text).contains("longer than 1day"));
    let text = good() + "floor_samples = 1000000000000\n";
    let err = plan_error(&text);
    assert_at_line(&err, &text, "floor_samples");
    let text = good() + "\n[telemetry]\ninterval_ms = 100000000000\n";
    assert!(plan_error(&text).contains("more than the 60000"));
}

#[test]
fn a_tolerance_from_the_sweep_is_read_at_every_point_and_names_its_key_and_point() {
    let dims = "dims = [\"n\", \"n\", \"n\"] }";
    let follows = "dims = [\"n\", \"n\", \"n\"], tolerance = \"{{ {64: 1e-4, 96: 1e-3}[n] }}\" }";
    let (_dir, path) = write_experiment("ok.toml", &good().replacen(dims, follows, 1));
    let out = run(&["plan", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("tolerance 0.0001 (n=64), 0.001 (n=96)"),
        "{text}"
    );
    for (to, says) in [
        (
            "tolerance = \"{{ 'tight' if n < 96 else 1e-3 }}\" }",
            "tolerance at 64: `{{ 'tight' if n < 96 else 1e-3 }}` renders to `tight` here, which is not a number",
        ),
        (
            "tolerance = \"{{ -n }}\" }",
            "tolerance at 64: -64 is not a tolerance",
        ),
        ("tolerance = \"{{ m }}\" }", "tolerance at 64: cannot render"),
        ("tolerance = true }", "a number such as 1e-5, or text the sweep renders to one"),
    ] {
        let to = format!("dims = [\"n\", \"n\", \"n\"], {to}");
        let text = good().replacen(dims, &to, 1);
        let err = plan_error(&text);
        assert_at_line(&err, &text, &to);
        assert!(err.contains(says), "{to}: {err}");
    }
}

#[test]
fn every_float_is_a_finite_number_its_buffer_can_hold() {
    for (from, to, says) in [
        (
            "uniform(0, 100)",
            "uniform(0, 1e309)",
            "not a finite number",
        ),
        ("uniform(0, 100)", "uniform(nan, 1)", "not a finite number"),
        ("uniform(0, 100)", "normal(0, inf)", "not a finite number"),
        ("uniform(0, 100)", "constant(1e39)", "beyond what f32 holds"),
        (
            "uniform(0, 100)",
            "iota(3e38, 1e38)",
            "beyond what f32 holds",
        ),
        (
            "dims = [\"n\", \"n\", \"n\"] }",
            "dims = [\"n\", \"n\", \"n\"], tolerance = nan }",
            "tolerance: NaN is not a tolerance",
        ),
    ] {
        let text = good().replacen(from, to, 1);
        let err = plan_error(&text);
        assert_at_line(&err, &text, to);
        assert!(err.contains(says), "{to}: {err}");
    }
    for tolerance in ["nan", "inf", "-1.0"] {
        let text = good() + &format!("\n[telemetry]\nclock_tolerance_pct = {tolerance}\n");
        let err = plan_error(&text);
        assert_at_line(&err, &text, "clock_tolerance_pct");
        assert!(err.contains("from 0 to 100"), "{err}");
    }
    let text = good() + "\n[[report.published]]\nvariant = \"events\"\nsource = \"x\"\nunit = \"ms\"\nvalues = { 64 = nan }\n";
    assert!(plan_error(&text).contains("is not a time"));
}

#[test]
fn strings_and_names_are_of_bounded_length() {
    let long = "x".repeat(4097);
    let text = good().replace("title = \"test\"", &format!("title = \"{long}\""));
    let err = plan_error(&text);
    assert_at_line(&err, &text, &long);
    assert!(err.contains("more than the 4096"), "{err}");
    let text = with_defaults(&format!("options = [\"-D{long}\"]"));
    assert!(plan_error(&text).contains("more than the 4096"));
    for (old, what) in [
        ("name = \"matmul\"", "kernel"),
        ("name = \"sync\"", "variant"),
    ] {
        let name = "k".repeat(101);
        let text = good().replace(old, &format!("name = \"{name}\""));
        let err = plan_error(&text);
        assert_at_line(&err, &text, &name);
        assert!(
            err.contains(&format!("{what} name")) && err.contains("100"),
            "{err}"
        );
    }
}

#[test]
fn an_experiment_file_whose_name_is_no_identifier_is_refused() {
    for name in [
        "...toml",
        "..toml",
        "x$(touch F).toml",
        "a b.toml",
        "a\nb.toml",
    ] {
        let (_dir, path) = write_experiment(name, &good());
        let out = run(&["plan", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{name}");
        assert!(
            stderr(&out).contains("rename the file"),
            "{name}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn duplicate_values_names_and_pairs_are_refused() {
    for (from, to, says) in [
        ("n = [64, 96]", "n = [64, 64]", "gives 64 twice"),
        ("n = [64, 96]", "n = [\"2^6\", 64]", "gives 64 twice"),
        (
            "baseline = \"events\"",
            "differences = [[\"sync\", \"sync\"]]",
            "with itself",
        ),
        (
            "baseline = \"events\"",
            "bias = [[\"events\", \"events\"]]",
            "with itself",
        ),
        (
            "baseline = \"events\"",
            "kernels = [[\"matmul\", \"matmul\"]]",
            "with itself",
        ),
        (
            "baseline = \"events\"",
            "differences = [[\"sync\", \"events\"], [\"sync\", \"events\"]]",
            "listed twice",
        ),
    ] {
        let text = good().replace(from, to);
        let err = plan_error(&text);
        assert!(err.contains(says), "{to}: {err}");
        assert!(err.contains("bad.toml:"), "{err}");
    }
    let metric = "\n[[report.metric]]\nname = \"m\"\nvalue = \"time_ns\"\nunit = \"ns\"\n";
    let err = plan_error(&(good() + metric + metric));
    assert!(err.contains("metric `m` is defined twice"), "{err}");
    let peer = "\n[[peer]]\nname = \"p\"\nvariant = \"events\"\ncommand = [\"/bin/true\"]\nreads = \"took {ms}ms\"\n";
    let err = plan_error(&(good() + peer + peer));
    assert!(err.contains("peer `p` is defined twice"), "{err}");
}

const PEER: &str = "\n[[peer]]\nname = \"p\"\nvariant = \"events\"\ncommand = [\"/bin/echo\", \"{{ n }}\", \"a b\"]\nreads = \"took {ms}ms\"\n";

#[test]
fn peer_programs_are_checked_and_plan_shows_every_command_it_would_run() {
    for (from, to, says) in [
        ("\"/bin/echo\", ", "\"\", ", "names a program"),
        ("\"/bin/echo\"", "\"/bin/ec\\u0000ho\"", "without NUL"),
        ("\"a b\"", "\"a\\u0000b\"", "without NUL"),
        ("reads", "processes = 1000000000\nreads", "from 1 to 10000"),
        ("reads", "env = { \"A=B\" = \"x\" }\nreads", "cannot be set"),
    ] {
        let text = good() + &PEER.replace(from, to);
        let err = plan_error(&text);
        assert!(err.contains(says), "{to}: {err}");
    }
    let (_dir, path) = write_experiment("peer.toml", &(good() + PEER));
    let out = run(&["plan", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(
            "peer p beside events: 5 process(es) at each of 2 point(s), running /bin/echo"
        ) && text.contains("64: /bin/echo 64 'a b'")
            && text.contains("96: /bin/echo 96 'a b'"),
        "{text}"
    );
}

#[test]
fn long_deep_or_endless_expressions_and_templates_are_refused_in_bounded_time() {
    let terms = vec!["1"; 600].join("+");
    let nested = format!("{}1{}", "(".repeat(400), ")".repeat(400));
    let loops = "{% for a in range(100000) %}{% for b in range(100000) %}x{% endfor %}{% endfor %}";
    let metric = vec!["time_ns"; 4000].join("+");
    for (text, says) in [
        (
            good().replace("(n + 31) // 32\", \"(n", &format!("{terms}\", \"(n")),
            "more than the 1024",
        ),
        (
            good().replace("(n + 31) // 32\", \"(n", &format!("{nested}\", \"(n")),
            "cannot parse",
        ),
        (
            with_defaults(&format!("options = [\"-D{loops}\"]")),
            "renders to more than",
        ),
        (
            with_defaults("options = [\"{% for a in range(100000) %}{% endfor %}\"]"),
            "fuel",
        ),
        (
            good()
                + &format!(
                    "\n[[report.metric]]\nname = \"m\"\nvalue = \"{metric}\"\nunit = \"ns\"\n"
                ),
            "more than the 4096",
        ),
        (
            good() + &PEER.replace("{{ n }}", loops),
            "renders to more than",
        ),
        (
            good() + PEER + &format!("when = \"{}\"\n", vec!["n > 0"; 300].join(" and ")),
            "more than the 1024",
        ),
    ] {
        let (dir, path) = write_experiment("bad.toml", &text);
        let out = run_within(dir.path(), &["plan", path.to_str().unwrap()], 20)
            .expect("refused within 20 s");
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(says) && err.contains("bad.toml:"), "{err}");
    }
    // A key nested deeper than TOML's reader follows is placed at its line.
    let text = good() + "\n[x]\n" + &vec!["a"; 1000].join(".") + " = 1\n";
    let err = plan_error(&text);
    assert_at_line(&err, &text, "a.a.a");
    assert!(err.contains("flatten it"), "{err}");
}

#[test]
fn only_regular_files_are_read_and_never_through_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let link = dir.path().join("link.cu");
    std::os::unix::fs::symlink(kernels_dir().join("matmul.cu"), &link).unwrap();
    let matmul = kernels_dir().join("matmul.cu").display().to_string();
    for (to, says) in [
        (fifo.display().to_string(), "a FIFO"),
        ("/dev/zero".to_string(), "a device"),
        (link.display().to_string(), "symbolic link"),
        (dir.path().display().to_string(), "a directory"),
    ] {
        for text in [
            good().replace(&matmul, &to),
            good().replacen("uniform(0, 100)", &format!("npy({to})"), 1),
            good() + &format!("template = \"{to}\"\n"),
        ] {
            let (d, path) = write_experiment("bad.toml", &text);
            let out = run_within(d.path(), &["plan", path.to_str().unwrap()], 20)
                .expect("refused within 20 s");
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(1), "{err}");
            assert!(err.contains(says), "{to}: {err}");
        }
    }
}

/// The matmul experiment with a persistent-style counter buffer `arg` added to its kernel.
fn with_counter(arg: &str) -> String {
    good().replace(
        "  { name = \"m\", scalar = \"i32\", value = \"n\" },",
        &format!("  {arg},\n  {{ name = \"m\", scalar = \"i32\", value = \"n\" }},"),
    )
}

#[test]
fn a_reset_buffer_is_written_by_the_kernel_so_an_input_init_is_refused() {
    let text = with_counter(
        r#"{ name = "next", buffer = "u32", len = 1, init = "uniform(0, 4)", reset = "zeros" }"#,
    );
    let err = plan_error(&text);
    assert_at_line(&err, &text, "init = \"uniform(0, 4)\", reset");
    assert!(err.contains("would never be seen"), "{err}");
}

#[test]
fn a_reset_value_must_be_a_memset_the_driver_can_do_in_device_memory() {
    for (arg, says) in [
        (
            r#"{ name = "next", buffer = "f64", len = 1, reset = 1.5 }"#,
            "two different 4-byte halves",
        ),
        (
            r#"{ name = "next", buffer = "u8", len = 1, reset = 300 }"#,
            "does not fit u8",
        ),
        (
            r#"{ name = "next", buffer = "u32", len = 1, reset = "ones" }"#,
            "not \"zeros\" or a finite number",
        ),
        (
            r#"{ name = "next", buffer = "u32", len = 1, reset = "zeros", memory = "pinned" }"#,
            "lives in host memory",
        ),
    ] {
        let err = plan_error(&with_counter(arg));
        assert!(err.contains(says), "{arg}: {err}");
    }
}

#[test]
fn plan_names_the_buffers_reset_before_every_launch() {
    let text = with_counter(r#"{ name = "next", buffer = "i32", len = 1, reset = -1 }"#);
    let (_dir, path) = write_experiment("reset.toml", &text);
    let out = run(&["plan", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(
            "    buffers: inputs A, B; outputs C; set before every launch, outside the timed region: next to -1"
        ),
        "{}",
        stdout(&out)
    );
}

#[test]
fn event_nodes_have_no_room_for_resets() {
    let text = with_counter(r#"{ name = "next", buffer = "u32", len = 1, reset = "zeros" }"#)
        .replace(
            "name = \"sync\"\ntimer = \"host_sync\"",
            "name = \"sync\"\ntimer = \"events\"\ngraph = 4\ncache = \"flush\"\nqueue = \"saturate\"\nflushed_graph = \"event_nodes\"",
        );
    let err = plan_error(&text);
    assert!(
        err.contains("no room for the kernel's `reset` buffers"),
        "{err}"
    );
}

#[test]
fn expect_is_caught_or_left_out_and_needs_a_check() {
    let text = good().replace("check = {", "expect = \"maybe\"\ncheck = {");
    let err = plan_error(&text);
    assert_at_line(&err, &text, "expect = \"maybe\"");
    assert!(
        err.contains("expect = \\\"caught\\\"") || err.contains("expect = \"caught\""),
        "{err}"
    );
    let start = good().find("check = {").unwrap();
    let end = start + good()[start..].find('\n').unwrap();
    let unchecked = format!(
        "{}expect = \"caught\"\nunchecked = true{}",
        &good()[..start],
        &good()[end..]
    );
    let err = plan_error(&unchecked);
    assert!(err.contains("cannot be expected to be caught"), "{err}");
}

#[test]
fn a_kernel_that_is_not_timed_serves_a_check_and_nothing_else() {
    let check = "check = { reference = \"matmul\", inputs = [\"A\", \"B\"], output = \"C\", dims = [\"n\", \"n\", \"n\"] }";
    let block = good();
    let start = block.find("[[kernel]]").unwrap();
    let end = block.find("[defaults]").unwrap();
    let twin = block[start..end]
        .replace("name = \"matmul\"", "name = \"twin\"")
        .replace(
            check,
            "check_kernel = { kernel = \"matmul\", outputs = [\"C\"] }",
        );
    let with_twin = block.replace("[defaults]", &format!("{twin}[defaults]"));
    // A reference run only for the check needs no check of its own.
    let text = with_twin.replacen(check, "timed = false\ncheck = { reference = \"matmul\", inputs = [\"A\", \"B\"], output = \"C\", dims = [\"n\", \"n\", \"n\"] }", 1);
    let err = plan_error(&text);
    assert_at_line(&err, &text, "timed = false");
    assert!(
        err.contains("runs only as another kernel's reference"),
        "{err}"
    );
    let ok = with_twin.replacen(check, "timed = false", 1);
    let (_dir, path) = write_experiment("ok.toml", &ok);
    let out = run(&["plan", path.to_str().unwrap()]);
    let plan = stdout(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(plan.contains("twin/n=64/events"), "{plan}");
    assert!(
        !plan.contains("\nmatmul/n=64"),
        "the reference has no cells: {plan}"
    );
    assert!(
        plan.contains(
            "kernel matmul is not timed (timed = false): it runs only in the checks of twin"
        ),
        "{plan}"
    );
    // No kernel checks against it: it would never run.
    let text = block.replacen(check, "timed = false", 1);
    let err = plan_error(&text);
    assert!(err.contains("no kernel's check_kernel names it"), "{err}");
    // It has no times to compare.
    let text = ok.replace("[report]", "[report]\nkernels = [[\"twin\", \"matmul\"]]");
    let err = plan_error(&text);
    assert!(err.contains("matmul"), "{err}");
}

#[test]
fn a_budget_is_a_duration_a_table_or_none() {
    let text = good().replace("warmup = 5", "warmup = 5\nbudget = \"soon\"");
    let err = plan_error(&text);
    assert_at_line(&err, &text, "budget = ");
    assert!(err.contains("budget") && err.contains("\"none\""), "{err}");
    let ok = good().replace(
        "warmup = 5",
        "warmup = 5\nbudget = { gpu_time = \"2s\", min_samples = 3 }",
    );
    let (_dir, path) = write_experiment("ok.toml", &ok);
    let out = run(&["plan", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(
            "budget: stops once the steady samples hold 2s of GPU time (at least 3 samples)"
        ),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_kernel_that_writes_only_a_reset_buffer_needs_a_check() {
    let text = with_counter(r#"{ name = "bins", buffer = "u32", len = 256, reset = "zeros" }"#)
        .replace("check = { reference = \"matmul\", inputs = [\"A\", \"B\"], output = \"C\", dims = [\"n\", \"n\", \"n\"] }\n", "")
        .replace("init = \"output\" }", "init = \"uniform(0, 1)\" }");
    let err = plan_error(&text);
    assert!(err.contains("writes `bins` but has no check"), "{err}");
}

#[test]
fn a_lazy_first_launch_has_no_room_for_resets() {
    let text = with_counter(r#"{ name = "next", buffer = "u32", len = 1, reset = "zeros" }"#)
        .replace(
            "name = \"sync\"\ntimer = \"host_sync\"",
            "name = \"sync\"\ntimer = \"events\"\nfirst_launch = \"lazy\"",
        );
    let err = plan_error(&text);
    assert!(
        err.contains("a lazy first launch has nothing on the GPU before it"),
        "{err}"
    );
}

#[test]
fn a_matmul_checks_dims_beyond_its_buffers_are_refused_at_their_line() {
    let text = good().replace(
        "dims = [\"n\", \"n\", \"n\"]",
        "dims = [\"2 * n\", \"n\", \"n\"]",
    );
    assert_ne!(text, good());
    let err = plan_error(&text);
    assert!(
        err.contains("need m x k = 8192 elements of `A`, which holds 4096"),
        "{err}"
    );
    assert!(err.contains("hint: dims name the matrices' sizes"), "{err}");
    assert_at_line(&err, &text, "dims = [");
}
