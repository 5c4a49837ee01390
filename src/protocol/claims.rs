//! One queue of cells for the parts of a run over several GPUs (`--claims DIR`): before a part
//! runs a cell (a turn group: the cells that take turns in one worker), it claims it with a
//! file in `DIR` that only one part can create. A part runs its own share first and then takes
//! the others' unclaimed cells from their ends, so no GPU sits idle while another has cells
//! left, however wrong the estimate that split them was.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;

/// The claims folder a part takes its cells through, and the name it claims them by.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    pub dir: PathBuf,
    pub part: String,
}

impl Claims {
    /// Whether this part runs the unit `key`: it claims it where no part has, and a claim
    /// of its own (a resumed part's) is still its own. The claim appears whole or not at all
    /// (a hard link of a file written and synced first, also on a network file system), so
    /// a part that dies while claiming leaves no claim that names nobody.
    pub fn take(&self, key: &str) -> std::io::Result<bool> {
        let path = self.dir.join(file_name(key));
        let mut draft = tempfile::NamedTempFile::new_in(&self.dir)?;
        draft.write_all(format!("{}\n{key}\n", self.part).as_bytes())?;
        draft.as_file().sync_all()?;
        match std::fs::hard_link(draft.path(), &path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                Ok(self.holder(key)? == Some(true))
            }
            Err(e) => Err(e),
        }
    }

    /// Who holds the unit `key`, without claiming it: nobody (None), this part, or another.
    pub fn holder(&self, key: &str) -> std::io::Result<Option<bool>> {
        let path = self.dir.join(file_name(key));
        let text = match std::fs::read_to_string(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            read => read?,
        };
        match text.lines().next().filter(|p| !p.is_empty()) {
            Some(part) => Ok(Some(part == self.part)),
            None => Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{} names no part: a damaged claim", path.display()),
            )),
        }
    }

    /// Lets go of this part's claims whose units it has no record of (`done` says which it
    /// has), so that a part still running, or a resumed one, takes them: what a part that
    /// stops does, as a cell it stopped in would otherwise wait for this part's resume,
    /// which a time limit may never bring. How many it let go.
    pub fn release_unfinished(&self, done: impl Fn(&str) -> bool) -> std::io::Result<usize> {
        let mut released = 0;
        for entry in std::fs::read_dir(&self.dir)? {
            let path = entry?.path();
            if path.extension().is_none_or(|e| e != "claim") {
                continue;
            }
            let text = std::fs::read_to_string(&path)?;
            let mut lines = text.lines();
            if let (Some(part), Some(key)) = (lines.next(), lines.next()) {
                if part == self.part && !done(key) {
                    std::fs::remove_file(&path)?;
                    released += 1;
                }
            }
        }
        Ok(released)
    }
}

/// What a process of a part claims its runs by: the part's claims and each cell's key
/// (`Plan::claim_key`), with what it has learned of each key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Claiming {
    pub claims: Claims,
    /// Cell index to its claim's key.
    pub keys: HashMap<usize, String>,
    #[serde(skip)]
    decided: HashMap<String, bool>,
}

impl Claiming {
    pub fn new(claims: Claims, keys: HashMap<usize, String>) -> Claiming {
        Claiming {
            claims,
            keys,
            decided: HashMap::new(),
        }
    }

    /// A part's claiming for every cell of `plan`, each by its key (`Plan::claim_keys`).
    pub fn of_plan(claims: Claims, plan: &crate::plan::Plan) -> Claiming {
        let keys = plan.claim_keys().into_iter().map(String::from);
        Claiming::new(claims, keys.enumerate().collect())
    }

    /// The same part's claiming for `cells` alone: what a worker that runs them is sent.
    pub fn of_cells(&self, cells: impl IntoIterator<Item = usize>) -> Claiming {
        let keys = (cells.into_iter())
            .filter_map(|c| Some((c, self.keys.get(&c)?.clone())))
            .collect();
        Claiming::new(self.claims.clone(), keys)
    }

    /// Whether this part holds cell `cell`'s key, without claiming it (a cell without a key
    /// is this part's own; one nobody holds is not).
    pub fn holds(&mut self, cell: usize) -> std::io::Result<bool> {
        Ok(self.holder_of(cell)? == Some(true))
    }

    /// Whether another part holds cell `cell`'s key.
    pub fn elsewhere(&mut self, cell: usize) -> std::io::Result<bool> {
        Ok(self.holder_of(cell)? == Some(false))
    }

    /// Who holds cell `cell`'s key: this part (true; also for a cell without a key),
    /// another (false), or nobody yet.
    fn holder_of(&mut self, cell: usize) -> std::io::Result<Option<bool>> {
        let Some(key) = self.keys.get(&cell) else {
            return Ok(Some(true));
        };
        if let Some(&mine) = self.decided.get(key) {
            return Ok(Some(mine));
        }
        let holder = self.claims.holder(key)?;
        if let Some(mine) = holder {
            self.decided.insert(key.clone(), mine);
        }
        Ok(holder)
    }

    /// The key of cell `cell`, if it has one.
    pub fn key(&self, cell: usize) -> Option<&str> {
        self.keys.get(&cell).map(String::as_str)
    }

    /// Whether this part runs cell `cell`: its key claimed now or before by this part. A
    /// cell without a key is this part's own.
    pub fn may_run(&mut self, cell: usize) -> std::io::Result<bool> {
        let Some(key) = self.keys.get(&cell) else {
            return Ok(true);
        };
        if let Some(&mine) = self.decided.get(key) {
            return Ok(mine);
        }
        let mine = self.claims.take(key)?;
        self.decided.insert(key.clone(), mine);
        Ok(mine)
    }
}

/// A claim's file name: the key's hash, since cell ids hold any character.
fn file_name(key: &str) -> String {
    let hash = crate::system::sha256_hex(key.as_bytes());
    format!("{}.claim", &hash[..32])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn part(dir: &Path, name: &str) -> Claims {
        Claims {
            dir: dir.to_path_buf(),
            part: name.into(),
        }
    }

    #[test]
    fn a_unit_goes_to_the_first_part_that_claims_it_and_stays_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (part(dir.path(), "0/2"), part(dir.path(), "1/2"));
        assert!(a.take("k=1 n=64 events").unwrap());
        assert!(!b.take("k=1 n=64 events").unwrap());
        assert!(
            a.take("k=1 n=64 events").unwrap(),
            "a resumed part keeps its claim"
        );
        assert!(b.take("k=1 n=128 events").unwrap());
        assert!(!a.take("k=1 n=128 events").unwrap());
        // Only the claims are left: no drafts.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
        assert_eq!(b.holder("k=1 n=64 events").unwrap(), Some(false));
        assert_eq!(b.holder("k=1 n=128 events").unwrap(), Some(true));
        assert_eq!(b.holder("k=1 n=256 events").unwrap(), None);
    }

    #[test]
    fn a_part_that_stops_lets_go_of_the_units_it_has_no_record_of() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (part(dir.path(), "0/2"), part(dir.path(), "1/2"));
        for key in ["done", "stopped in"] {
            assert!(a.take(key).unwrap());
        }
        assert!(b.take("b's").unwrap());
        assert_eq!(a.release_unfinished(|k| k == "done").unwrap(), 1);
        assert_eq!(a.holder("stopped in").unwrap(), None);
        assert!(b.take("stopped in").unwrap(), "another part takes it");
        assert_eq!(a.holder("done").unwrap(), Some(true));
        assert_eq!(a.holder("b's").unwrap(), Some(false));
    }

    #[test]
    fn a_claim_that_names_no_part_is_an_error_not_another_parts() {
        let dir = tempfile::tempdir().unwrap();
        let a = part(dir.path(), "0/2");
        std::fs::write(dir.path().join(file_name("k")), "").unwrap();
        assert!(a.holder("k").is_err());
        assert!(a.take("k").is_err());
    }

    #[test]
    fn a_worker_claims_a_turn_group_once_for_all_its_cells() {
        let dir = tempfile::tempdir().unwrap();
        let keys: HashMap<usize, String> = [(0, "a"), (1, "a"), (2, "c")]
            .map(|(c, k)| (c, k.to_string()))
            .into();
        let mut mine = Claiming::new(part(dir.path(), "0/2"), keys.clone());
        let mut other = Claiming::new(part(dir.path(), "1/2"), keys).of_cells([1, 2]);
        assert!(other.may_run(1).unwrap());
        assert!(!mine.may_run(0).unwrap(), "cell 0 takes turns with cell 1");
        assert!(mine.may_run(2).unwrap());
        assert!(!other.may_run(2).unwrap());
        assert!(other.may_run(7).unwrap(), "a cell without a key");
        assert_eq!(other.keys.len(), 2);
    }

    #[test]
    fn parts_that_race_for_every_unit_take_each_exactly_once() {
        let dir = tempfile::tempdir().unwrap();
        let keys: Vec<String> = (0..200).map(|i| format!("cell/{i}")).collect();
        let taken: Vec<Vec<String>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|p| {
                    let claims = part(dir.path(), &format!("{p}/4"));
                    let keys = &keys;
                    s.spawn(move || {
                        (keys.iter())
                            .filter(|k| claims.take(k).unwrap())
                            .cloned()
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut all: Vec<&String> = taken.iter().flatten().collect();
        all.sort();
        let mut expected: Vec<&String> = keys.iter().collect();
        expected.sort();
        assert_eq!(all, expected);
    }
}
