//! The press key's file in the state directory, which the daemon reads or makes at start. The
//! signed button press itself (the key, signing, verifying) is `consentd_core::press`.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use consentd_core::press::{PressKey, KEY_LEN};

/// Failure to get the press key. Messages name the path and never the key.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("cannot get random bytes for a new press key: {0}")]
    Random(getrandom::Error),
    #[error("press key file {}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("press key file {} is not a regular file", path.display())]
    NotAFile { path: PathBuf },
    #[error("press key file {} has {len} bytes, expected {KEY_LEN}", path.display())]
    WrongSize { path: PathBuf, len: u64 },
    #[error(
        "press key file {} has mode {mode:04o}, wider than 0600; fix it with chmod 600",
        path.display()
    )]
    TooOpen { path: PathBuf, mode: u32 },
    #[error(
        "press key file {} is owned by uid {owner}, not by uid {euid} that the daemon runs as; \
         fix it with chown",
        path.display()
    )]
    NotOwn {
        path: PathBuf,
        owner: u32,
        euid: u32,
    },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> KeyError + '_ {
    move |source| KeyError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Reads the key file at `path`, or makes it at first start.
///
/// A new key is written to a temporary file in the same directory (created exclusively, mode 0600,
/// fsynced) and then hard-linked to `path`, which fails if `path` exists: the key file appears
/// whole or not at all, so a crash during first start never leaves a short key behind, and two
/// starts racing end up with the same key. The directory is fsynced so the name survives a power
/// loss. An existing file must be a regular file (not a symlink) of exactly 32 bytes, with no
/// permission bits beyond 0600.
pub fn load_or_create_key(path: &Path) -> Result<PressKey, KeyError> {
    match fs::symlink_metadata(path) {
        Ok(_) => read_key(path),
        Err(e) if e.kind() == io::ErrorKind::NotFound => create_key(path),
        Err(e) => Err(io_err(path)(e)),
    }
}

fn read_key(path: &Path) -> Result<PressKey, KeyError> {
    let not_a_file = || KeyError::NotAFile {
        path: path.to_path_buf(),
    };
    // Refuse a symlink: it could point the daemon at a key someone else controls or can read.
    if fs::symlink_metadata(path)
        .map_err(io_err(path))?
        .file_type()
        .is_symlink()
    {
        return Err(not_a_file());
    }
    // O_NOFOLLOW as well: a symlink swapped in after the check above is refused by the open.
    let mut file = OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
        .open(path)
        .map_err(|error| match error.raw_os_error() {
            Some(code) if code == nix::errno::Errno::ELOOP as i32 => not_a_file(),
            _ => io_err(path)(error),
        })?;
    // Checked on the opened file, so what is checked is what is read.
    let meta = file.metadata().map_err(io_err(path))?;
    if !meta.is_file() {
        return Err(not_a_file());
    }
    // Another user who owns it could have chosen the key, or read it.
    let euid = nix::unistd::geteuid().as_raw();
    if meta.uid() != euid && meta.uid() != 0 {
        return Err(KeyError::NotOwn {
            path: path.to_path_buf(),
            owner: meta.uid(),
            euid,
        });
    }
    let mode = meta.mode() & 0o7777;
    if mode & !0o600 != 0 {
        return Err(KeyError::TooOpen {
            path: path.to_path_buf(),
            mode,
        });
    }
    if meta.len() != KEY_LEN as u64 {
        return Err(KeyError::WrongSize {
            path: path.to_path_buf(),
            len: meta.len(),
        });
    }
    let mut bytes = [0u8; KEY_LEN];
    file.read_exact(&mut bytes).map_err(io_err(path))?;
    // The file could have grown between the size check and the read.
    let mut extra = [0u8; 1];
    if file.read(&mut extra).map_err(io_err(path))? != 0 {
        return Err(KeyError::WrongSize {
            path: path.to_path_buf(),
            len: KEY_LEN as u64 + 1,
        });
    }
    Ok(PressKey::from_bytes(bytes))
}

fn create_key(path: &Path) -> Result<PressKey, KeyError> {
    let key = PressKey::generate().map_err(KeyError::Random)?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let file_name = path
        .file_name()
        .ok_or_else(|| KeyError::NotAFile {
            path: path.to_path_buf(),
        })?
        .to_string_lossy()
        .into_owned();
    let mut nonce = [0u8; 8];
    getrandom::fill(&mut nonce).map_err(KeyError::Random)?;
    let tmp = dir.join(format!(".{file_name}.{}.tmp", hex::encode(nonce)));

    let written = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(key.secret_bytes())?;
        f.sync_all()
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(io_err(&tmp)(e));
    }
    let linked = fs::hard_link(&tmp, path);
    // The temporary name has served its purpose either way.
    let _ = fs::remove_file(&tmp);
    match linked {
        Ok(()) => {
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(io_err(dir))?;
            Ok(key)
        }
        // Another start made the key first: use that one.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => read_key(path),
        Err(e) => Err(io_err(path)(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use consentd_core::press::PressAction;
    use std::os::unix::fs::PermissionsExt;

    const REC: &str = "r_0123456789abcdef0123";
    const DIGEST: &str = "aa11bb22cc33dd44ee55ff6600112233445566778899aabbccddeeff00112233";
    const OWNER: i64 = 123_456_789;

    fn mode_of(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn key_file_is_created_0600_and_reread_equal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("press.key");
        let first = load_or_create_key(&path).unwrap();
        assert_eq!(mode_of(&path), 0o600);
        assert_eq!(fs::metadata(&path).unwrap().len(), KEY_LEN as u64);
        assert_eq!(fs::read(&path).unwrap(), *first.secret_bytes());
        let again = load_or_create_key(&path).unwrap();
        assert_eq!(first, again);
        assert_eq!(first.id(), again.id());
        assert_eq!(
            first.sign(PressAction::Yes, REC, DIGEST, OWNER),
            again.sign(PressAction::Yes, REC, DIGEST, OWNER)
        );
        // Only the key file is left behind, no temporary.
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn generated_keys_differ() {
        let a = PressKey::generate().unwrap();
        let b = PressKey::generate().unwrap();
        assert_ne!(a, b);
    }

    #[test]
    fn key_file_of_wrong_size_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        for len in [0usize, 31, 33] {
            let path = dir.path().join(format!("key{len}"));
            fs::write(&path, vec![1u8; len]).unwrap();
            fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
            let err = load_or_create_key(&path).unwrap_err();
            assert!(
                matches!(err, KeyError::WrongSize { len: l, .. } if l == len as u64),
                "{len}: {err:?}"
            );
            assert!(err.to_string().contains(&*path.to_string_lossy()), "{err}");
        }
    }

    #[test]
    fn key_file_with_wide_mode_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("press.key");
        load_or_create_key(&path).unwrap();
        for mode in [0o644, 0o640, 0o604, 0o700, 0o660] {
            fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
            let err = load_or_create_key(&path).unwrap_err();
            assert!(
                matches!(err, KeyError::TooOpen { mode: m, .. } if m == mode),
                "{mode:o}: {err:?}"
            );
            let msg = err.to_string();
            assert!(msg.contains(&*path.to_string_lossy()), "{msg}");
            assert!(msg.contains(&format!("{mode:04o}")), "{msg}");
        }
        // Narrower than 0600 is fine.
        fs::set_permissions(&path, fs::Permissions::from_mode(0o400)).unwrap();
        assert!(load_or_create_key(&path).is_ok());
    }

    #[test]
    fn key_file_symlink_or_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.key");
        load_or_create_key(&real).unwrap();
        let link = dir.path().join("link.key");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(matches!(
            load_or_create_key(&link),
            Err(KeyError::NotAFile { .. })
        ));
        let sub = dir.path().join("sub");
        fs::create_dir(&sub).unwrap();
        fs::set_permissions(&sub, fs::Permissions::from_mode(0o700)).unwrap();
        assert!(load_or_create_key(&sub).is_err());
    }

    #[test]
    fn missing_directory_is_an_error_naming_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nope").join("press.key");
        let err = load_or_create_key(&path).unwrap_err();
        assert!(matches!(err, KeyError::Io { .. }), "{err:?}");
    }
}
