//! The worker's Python interpreter (`check_python`): started with the runner's driver
//! (`python_driver.py`), one request a line on its stdin, one reply a line on its stdout,
//! read on a thread of its own so that a wait can time out; the end of its stderr kept for
//! the message of one that failed.

use crate::worker::failure::Failure;
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The interpreter's side of the protocol.
const DRIVER: &str = include_str!("python_driver.py");
/// The end of the interpreter's stderr kept for an error message.
const STDERR_KEPT: usize = 2000;
/// glibc's malloc told to take every block from its heap and to keep what is freed there
/// (each where the user does not set it): a reference's NumPy temporaries of a large output are
/// then not mapped and faulted in anew at each call. A 16M-element SAXPY in float64 took
/// 54 ms a call instead of 89 ms on a CI host.
const KEEP_FREED_MEMORY: [(&str, &str); 2] = [
    ("MALLOC_MMAP_MAX_", "0"),
    ("MALLOC_TRIM_THRESHOLD_", "68719476736"),
];

pub(super) struct Interpreter {
    pub(super) program: String,
    pub(super) child: Child,
    pub(super) stdin: ChildStdin,
    pub(super) replies: Receiver<String>,
    stderr: Arc<Mutex<String>>,
}

impl Interpreter {
    pub(super) fn start(program: &str) -> Result<Interpreter, Failure> {
        let mut command = Command::new(program);
        for (name, value) in KEEP_FREED_MEMORY {
            if std::env::var_os(name).is_none() {
                command.env(name, value);
            }
        }
        let mut child = command
            .args(["-u", "-c", DRIVER])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                Failure::from(format!(
                    "cannot start `{program}` for the Python reference: {e}. Install Python 3 with NumPy, or name an interpreter in check_python: python = \"/path/to/python3\""
                ))
            })?;
        let (stdin, stdout, mut stderr) = (
            child.stdin.take().expect("piped"),
            child.stdout.take().expect("piped"),
            child.stderr.take().expect("piped"),
        );
        let (send, replies) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let kept = Arc::new(Mutex::new(String::new()));
        let into = Arc::clone(&kept);
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n @ 1..) = stderr.read(&mut chunk) {
                let mut tail = into.lock().unwrap_or_else(|e| e.into_inner());
                tail.push_str(&String::from_utf8_lossy(&chunk[..n]));
                if tail.len() > 2 * STDERR_KEPT {
                    let cut = tail.len() - STDERR_KEPT;
                    let cut = (cut..tail.len())
                        .find(|&i| tail.is_char_boundary(i))
                        .unwrap_or(0);
                    tail.drain(..cut);
                }
            }
        });
        Ok(Interpreter {
            program: program.to_string(),
            child,
            stdin,
            replies,
            stderr: kept,
        })
    }

    /// The last lines it wrote to stderr, once it has ended.
    pub(super) fn stderr_tail(&mut self) -> String {
        let _ = self.child.wait();
        // The reader may still be taking in the last of it.
        std::thread::sleep(Duration::from_millis(50));
        let tail = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        let lines: Vec<&str> = tail.lines().rev().take(3).collect();
        lines.into_iter().rev().collect::<Vec<_>>().join(" / ")
    }
}
