//! A run's private working directory: made 0700 for the run's user, removed with everything in
//! it when the run is over, whatever the outcome.

use super::*;

/// The run's private directory; removed by [`WorkDir::remove`], or on drop if the run was
/// abandoned.
pub(super) struct WorkDir {
    pub(super) path: PathBuf,
    armed: bool,
}

impl WorkDir {
    pub(super) fn create(
        root: &Path,
        record_id: &str,
        identity: Option<&Identity>,
    ) -> io::Result<Self> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        // The record id makes a leftover directory traceable; the rest makes it unique.
        let tag: String = record_id
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .take(40)
            .collect();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let pid = std::process::id();
        let mut last = None;
        for _ in 0..16 {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = root.join(format!("run-{tag}-{pid}-{nanos}-{n}"));
            // create (not create_all) fails on an existing name, so the directory is
            // certainly new and ours.
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => {
                    let dir = WorkDir { path, armed: true };
                    // The umask can only remove bits; set the mode exactly anyway.
                    std::fs::set_permissions(&dir.path, std::fs::Permissions::from_mode(0o700))?;
                    if let Some(id) = identity {
                        std::os::unix::fs::chown(
                            &dir.path,
                            Some(id.uid.as_raw()),
                            Some(id.gid.as_raw()),
                        )?;
                    }
                    return Ok(dir);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("no free name")))
    }

    pub(super) async fn remove(mut self) {
        self.armed = false;
        let path = self.path.clone();
        // A large tree should not stall the runtime; a failure leaves a 0700 directory
        // under the private work_root, which is all that can be done about it here.
        let _ = tokio::task::spawn_blocking(move || remove_tree(&path)).await;
    }

    /// [`WorkDir::remove`] on a thread that may block: a run's end, already on the pool.
    pub(super) fn remove_now(mut self) {
        self.armed = false;
        let _ = remove_tree(&self.path);
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if self.armed {
            let _ = remove_tree(&self.path);
        }
    }
}

/// Removes the directory even where the command (running as the daemon's own user) took
/// write permission off its own subdirectories.
pub(super) fn remove_tree(path: &Path) -> io::Result<()> {
    match std::fs::remove_dir_all(path) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(_) => {}
    }
    // Iterative, so a deep tree cannot exhaust the stack.
    let mut todo = vec![path.to_path_buf()];
    while let Some(dir) = todo.pop() {
        let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    todo.push(entry.path());
                }
            }
        }
    }
    std::fs::remove_dir_all(path)
}
