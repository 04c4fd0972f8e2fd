//! The journal's sealing key on disk: `state_dir/journal-seal.key`, 0600, holding only the current
//! epoch's key (docs/adr/0004-journal-seals.md).
//!
//! Evolving writes the next key to a temporary file, fsyncs it, renames it over the key file,
//! fsyncs the directory, and only then overwrites the old file's bytes (through a descriptor
//! opened before the rename) and drops the old key from memory. A crash at any step leaves the
//! old key file or the new one whole, never neither; and no line is sealed with a key before the
//! file holding it is durable, so after a crash the key on disk is never older than the last
//! seal written. A leftover temporary file (a crash before the rename) holds a later key, which
//! reveals nothing earlier, and is removed at the next load.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use consentd_core::journal::{key_id, Epochs, Key, SealKey};

/// The key file's name in the state directory.
pub const SEAL_KEY_FILE: &str = "journal-seal.key";
const TEMP_SUFFIX: &str = ".next";
const HEADER: &str = "consentd journal seal key v1";
/// Shortest epoch: a key erased sooner would cost a rename and three fsyncs too often.
pub const MIN_EPOCH_SECS: i64 = 60;

/// Where a crash test may stop an epoch change: the store's one crash hook
/// ([`crate::set_crash_hook`]), which a `test-hooks` build of the daemon sets.
fn hit(point: &str) {
    crate::crash::point(point);
}

/// Failures of the key file.
#[derive(Debug, thiserror::Error)]
pub enum SealKeyError {
    #[error("seal key {path}: {source}")]
    Io { path: String, source: io::Error },
    #[error("seal key {path} is not a key file: {why}")]
    Malformed { path: String, why: String },
}

/// The key file, loaded: the family's id and epochs, and the current epoch's key.
pub struct KeyFile {
    path: PathBuf,
    pub key_id: String,
    pub epochs: Epochs,
    key: SealKey,
    /// The last epoch the journal was sealed in when the store opened, by whatever family: a
    /// family not yet announced must start after it (a key made after the old one was lost
    /// cannot know it).
    pub(crate) sealed_up_to: Option<u64>,
}

impl std::fmt::Debug for KeyFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "KeyFile {{ {}, key_id: {}, epoch: {} }}",
            self.path.display(),
            self.key_id,
            self.key.epoch
        )
    }
}

impl KeyFile {
    /// The key file in `dir`, if there is one. A leftover temporary file is removed.
    pub fn load(dir: &Path) -> Result<Option<KeyFile>, SealKeyError> {
        let path = dir.join(SEAL_KEY_FILE);
        let temp = temp_path(&path);
        match std::fs::remove_file(&temp) {
            Ok(()) => sync_dir(&path)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(source) => return Err(io_error(&temp, source)),
        }
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(io_error(&path, source)),
        };
        let (key_id, epochs, key) = parse(&text).map_err(|why| SealKeyError::Malformed {
            path: path.display().to_string(),
            why: why.to_string(),
        })?;
        Ok(Some(KeyFile {
            path,
            key_id,
            epochs,
            key,
            sealed_up_to: None,
        }))
    }

    /// A new family from `k0`, its first epoch beginning at `from_ms`: writes the first epoch's
    /// key over any key file in `dir` (the old key goes as an evolved one would).
    pub fn create(
        dir: &Path,
        k0: &Key,
        first: u64,
        from_ms: i64,
        epoch_secs: i64,
    ) -> Result<KeyFile, SealKeyError> {
        let file = KeyFile {
            path: dir.join(SEAL_KEY_FILE),
            key_id: key_id(k0),
            epochs: Epochs {
                first,
                from_ms,
                length_ms: epoch_secs.max(MIN_EPOCH_SECS) * 1000,
            },
            key: SealKey::first(k0, first),
            sealed_up_to: None,
        };
        file.persist()?;
        Ok(file)
    }

    /// The current epoch's key.
    pub fn key(&self) -> &SealKey {
        &self.key
    }

    /// The key to seal a line written at `now_ms` with, evolving (durably, erasing the old key)
    /// up to the epoch `now_ms` falls in. A clock behind the key's epoch keeps the key: epochs
    /// never go back.
    pub fn key_at(&mut self, now_ms: i64) -> Result<&SealKey, SealKeyError> {
        let target = self.epochs.at(now_ms);
        if target > self.key.epoch {
            let mut next = self.key.next();
            while next.epoch < target {
                next = next.next();
            }
            self.replace(next)?;
        }
        Ok(&self.key)
    }

    /// Starts the family's first epoch, numbered `first`, at `from_ms`. Nothing is sealed with
    /// it yet, so its key (`HMAC(k0, "next")` whatever its number) may take any number.
    pub fn rebase(&mut self, first: u64, from_ms: i64) -> Result<(), SealKeyError> {
        debug_assert_eq!(self.key.epoch, self.epochs.first);
        self.epochs.first = first;
        self.epochs.from_ms = from_ms;
        self.key.epoch = first;
        self.persist()
    }

    fn replace(&mut self, next: SealKey) -> Result<(), SealKeyError> {
        let old = self.key.clone();
        self.key = next;
        if let Err(e) = self.persist() {
            // What is on disk is one of the two; keep sealing with neither until reloaded.
            self.key = old;
            return Err(e);
        }
        Ok(())
    }

    /// Writes the current key durably over the file, then overwrites the old file's bytes.
    fn persist(&self) -> Result<(), SealKeyError> {
        let temp = temp_path(&self.path);
        let text = self.text();
        // Opened before the rename, so the old bytes can be overwritten after it.
        let old = File::options().read(true).write(true).open(&self.path).ok();
        let _ = std::fs::remove_file(&temp);
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)
            .map_err(|e| io_error(&temp, e))?;
        f.write_all(text.as_bytes())
            .map_err(|e| io_error(&temp, e))?;
        hit("seal_key_written");
        f.sync_all().map_err(|e| io_error(&temp, e))?;
        hit("seal_key_synced");
        std::fs::rename(&temp, &self.path).map_err(|e| io_error(&self.path, e))?;
        hit("seal_key_renamed");
        sync_dir(&self.path)?;
        hit("seal_key_dir_synced");
        if let Some(old) = old {
            // The old key is no longer reachable by name; erase its bytes too, so that a file
            // system that keeps the freed blocks does not keep the key readable through the
            // old inode (a copy-on-write file system or a flash translation layer may still
            // hold them: docs/OPERATOR.md says so).
            let len = old.metadata().map(|m| m.len()).unwrap_or(0);
            let _ = old.write_all_at(&vec![0u8; len as usize], 0);
            let _ = old.sync_all();
            hit("seal_key_old_erased");
        }
        Ok(())
    }

    fn text(&self) -> String {
        format!(
            "{HEADER}\nkey_id {}\nfirst {}\nfrom_ms {}\nepoch_secs {}\nepoch {}\nkey {}\n",
            self.key_id,
            self.epochs.first,
            self.epochs.from_ms,
            self.epochs.length_ms / 1000,
            self.key.epoch,
            hex::encode(self.key.key)
        )
    }
}

fn parse(text: &str) -> Result<(String, Epochs, SealKey), &'static str> {
    let mut lines = text.lines();
    if lines.next() != Some(HEADER) {
        return Err("the first line is not the header");
    }
    let mut field = |name: &str| -> Result<String, &'static str> {
        let line = lines.next().ok_or("a field is missing")?;
        line.strip_prefix(name)
            .and_then(|v| v.strip_prefix(' '))
            .map(str::to_string)
            .ok_or("the fields are not in order")
    };
    let key_id = field("key_id")?;
    let num = |v: String| v.parse::<i64>().map_err(|_| "a number does not parse");
    let first = num(field("first")?)?;
    let from_ms = num(field("from_ms")?)?;
    let secs = num(field("epoch_secs")?)?;
    let epoch = num(field("epoch")?)?;
    let key = consentd_core::journal::parse_key(&field("key")?).ok_or("the key is not 64 hex")?;
    if first < 1 || epoch < first || secs < MIN_EPOCH_SECS {
        return Err("the epochs do not add up");
    }
    Ok((
        key_id,
        Epochs {
            first: first as u64,
            from_ms,
            length_ms: secs * 1000,
        },
        SealKey {
            epoch: epoch as u64,
            key,
        },
    ))
}

fn temp_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(TEMP_SUFFIX);
    PathBuf::from(name)
}

fn io_error(path: &Path, source: io::Error) -> SealKeyError {
    SealKeyError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn sync_dir(path: &Path) -> Result<(), SealKeyError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_error(dir, e))
}

/// A fresh random verification key.
pub fn new_k0() -> Result<Key, SealKeyError> {
    let mut k0 = [0u8; 32];
    getrandom::fill(&mut k0).map_err(|e| SealKeyError::Io {
        path: "getrandom".into(),
        source: io::Error::other(e.to_string()),
    })?;
    Ok(k0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evolving_keeps_one_key_and_erases_the_earlier_ones() {
        let dir = tempfile::tempdir().unwrap();
        let k0 = [3u8; 32];
        let mut f = KeyFile::create(dir.path(), &k0, 1, 0, 60).unwrap();
        let mut seen = vec![k0, f.key().key];
        for minute in 1..5 {
            let k = f.key_at(minute * 60_000 + 5).unwrap().clone();
            assert_eq!(k.epoch, 1 + minute as u64);
            seen.push(k.key);
            // Every earlier key, raw or in hex, is gone from every file in the directory.
            let current = seen.last().unwrap();
            for entry in std::fs::read_dir(dir.path()).unwrap() {
                let bytes = std::fs::read(entry.unwrap().path()).unwrap();
                for earlier in seen.iter().filter(|k| *k != current) {
                    let hex = hex::encode(earlier);
                    assert!(!contains(&bytes, earlier) && !contains(&bytes, hex.as_bytes()));
                }
            }
        }
        // A clock gone back keeps the key; a reload finds the same key.
        let e = f.key_at(0).unwrap().epoch;
        assert_eq!(e, 5);
        let again = KeyFile::load(dir.path()).unwrap().unwrap();
        assert_eq!(again.key(), f.key());
        assert_eq!(again.epochs, f.epochs);
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(dir.path().join(SEAL_KEY_FILE))
                .unwrap()
                .permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_damaged_key_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert!(KeyFile::load(dir.path()).unwrap().is_none());
        let f = KeyFile::create(dir.path(), &[1u8; 32], 1, 0, 60).unwrap();
        let text = f.text();
        for bad in [
            text.replace(HEADER, "x"),
            text.replace("epoch_secs 60", "epoch_secs 5"),
            text.replace("key ", "kee "),
            text.lines().take(3).collect::<Vec<_>>().join("\n"),
        ] {
            std::fs::write(dir.path().join(SEAL_KEY_FILE), bad).unwrap();
            assert!(matches!(
                KeyFile::load(dir.path()),
                Err(SealKeyError::Malformed { .. })
            ));
        }
    }

    fn contains(hay: &[u8], needle: &[u8]) -> bool {
        hay.windows(needle.len()).any(|w| w == needle)
    }
}
