//! `runner plan`'s buffers of a kernel: what each one is to it (read, written, its working
//! space, set before every launch), and with `--verbose` each one's type, length and init
//! as evaluated at every point, so that an init or a length that follows the sweep is read
//! before a run rather than found by provoking an error.

use super::by_point::every_point;
use crate::experiment::{ArgKind, ArgValue, Dtype, Init, InitSpec, Kernel, Memory};

/// What a buffer is to its kernel.
#[derive(Clone, Copy, PartialEq)]
enum Role {
    Input,
    UpdatedInPlace,
    Output,
    Scratch,
    Reset,
}

impl Role {
    const ALL: [Role; 5] = [
        Role::Input,
        Role::UpdatedInPlace,
        Role::Output,
        Role::Scratch,
        Role::Reset,
    ];

    /// Buffer `i` of `k`, whose init is written `init`.
    fn of(k: &Kernel, i: usize, init: &InitSpec) -> Role {
        match init {
            InitSpec::Fixed(Init::Output) => Role::Output,
            InitSpec::Fixed(Init::Scratch) => Role::Scratch,
            InitSpec::Fixed(Init::Reset(_)) => Role::Reset,
            _ if k.writes(i) => Role::UpdatedInPlace,
            _ => Role::Input,
        }
    }

    /// How a group of buffers of this role is headed.
    fn group(self) -> &'static str {
        match self {
            Role::Input => "inputs",
            Role::UpdatedInPlace => "updated in place",
            Role::Output => "outputs",
            Role::Scratch => "scratch",
            Role::Reset => "set before every launch, outside the timed region:",
        }
    }

    /// How one buffer of this role is called.
    fn word(self) -> &'static str {
        match self {
            Role::Input => "input",
            Role::UpdatedInPlace => "updated in place",
            Role::Output => "output",
            Role::Scratch => "scratch",
            Role::Reset => "set before every launch",
        }
    }
}

/// The buffers by what they are to the kernel: "inputs x; outputs out; scratch partial".
pub(super) fn roles(k: &Kernel) -> String {
    let mut groups: Vec<(Role, Vec<String>)> = Role::ALL.map(|r| (r, Vec::new())).to_vec();
    for (i, a) in k.args.iter().enumerate() {
        let ArgKind::Buffer { init, .. } = &a.kind else {
            continue;
        };
        let role = Role::of(k, i, init);
        let name = match init {
            InitSpec::Fixed(Init::Reset(v)) => format!("{} to {v}", a.name),
            _ => a.name.clone(),
        };
        groups[role as usize].1.push(name);
    }
    let text: Vec<String> = (groups.iter())
        .filter(|(_, names)| !names.is_empty())
        .map(|(role, names)| format!("{} {}", role.group(), names.join(", ")))
        .collect();
    match text.is_empty() {
        true => "none".into(),
        false => text.join("; "),
    }
}

/// A line per buffer: its type, length and init as evaluated at each point, every
/// point's value listed (`--verbose`).
pub(super) fn each(k: &Kernel) -> String {
    let mut out = String::new();
    for (i, a) in k.args.iter().enumerate() {
        let ArgKind::Buffer { init, memory, .. } = &a.kind else {
            continue;
        };
        let at = |text: fn(Dtype, usize, &Init) -> String| {
            let values: Vec<String> = (k.launches.iter())
                .map(|l| match &l.args[i] {
                    ArgValue::Buffer {
                        dtype, len, init, ..
                    } => text(*dtype, *len, init),
                    ArgValue::Scalar { .. } => String::new(),
                })
                .collect();
            every_point(&k.points, &values)
        };
        let place = match memory {
            Memory::Device => String::new(),
            m => format!(", {} memory", m.key()),
        };
        out += &format!(
            "    buffer {} ({}{place}): {}; length {}; init {}\n",
            a.name,
            Role::of(k, i, init).word(),
            at(|dtype, _, _| dtype.key().to_string()),
            at(|_, len, _| len.to_string()),
            at(|_, _, init| init.to_string()),
        );
    }
    out
}
