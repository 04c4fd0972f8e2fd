//! A nearly full disk at the intake: asks are refused `disk_full` while the state directory's
//! file system has less free than `[limits] min_free_bytes`, before anything of them is stored,
//! and the owner gets one urgent notice each time the disk runs low.
//!
//! The refusal is answered and logged, never recorded nor journaled: with the disk nearly full
//! the room left is for the database and journal writes of work already accepted (a run that
//! ends, a press on a card). The one notice per episode is the one write it makes.

use std::sync::Arc;

use super::Intake;
use consentd_core::refusal::{Reason, Refusal};
use consentd_core::styled::Styled;
use consentd_store::outbox::{Body, Outgoing, Sound};
use consentd_store::space::{FreeSpace, Reservation, Space, Statvfs};
use consentd_store::{StoreError, Tell};

const MIB: u64 = 1024 * 1024;

/// The environment variable naming a file that holds the free bytes the daemon sees.
#[cfg(feature = "test-hooks")]
pub const FREE_BYTES_FILE_ENV: &str = "CONSENTD_TEST_FREE_BYTES_FILE";

/// Free space as a file says, read on every check, so a test can fill the disk of a running
/// daemon and empty it again; a missing file or one without a number asks the kernel. A number
/// followed by ` less attachments` is a small disk that holds the attachment copies: free is
/// the number less the bytes in `attachments/` at the time, so the daemon's own writes fill it.
/// Chosen by
/// setting `CONSENTD_TEST_FREE_BYTES_FILE`, and only in a build with the `test-hooks` feature,
/// which tests and benches turn on and a release never has.
#[cfg(feature = "test-hooks")]
#[derive(Debug)]
struct FileProbe {
    path: std::path::PathBuf,
}

#[cfg(feature = "test-hooks")]
impl FreeSpace for FileProbe {
    fn free_bytes(&self, dir: &std::path::Path) -> std::io::Result<u64> {
        let written = std::fs::read_to_string(&self.path).unwrap_or_default();
        if let Some(room) = written.trim().strip_suffix(" less attachments") {
            let room: u64 = room.parse().unwrap_or(0);
            let used: u64 = std::fs::read_dir(dir.join("attachments"))?
                .flatten()
                .filter_map(|entry| entry.metadata().ok())
                .map(|meta| meta.len())
                .sum();
            return Ok(room.saturating_sub(used));
        }
        match written.trim().parse() {
            Ok(free) => Ok(free),
            Err(_) => Statvfs.free_bytes(dir),
        }
    }
}

/// The probe the daemon watches free space with.
pub(crate) fn probe() -> Arc<dyn FreeSpace> {
    #[cfg(feature = "test-hooks")]
    if let Some(path) = std::env::var_os(FREE_BYTES_FILE_ENV) {
        return Arc::new(FileProbe { path: path.into() });
    }
    Arc::new(Statvfs)
}

impl Intake {
    /// `disk_full` when the state directory's file system is under the floor; for a request
    /// with no bytes of its own to write (a mandate request).
    pub(crate) async fn disk_refusal(&self) -> Option<Refusal> {
        self.disk_reservation(0).await.err()
    }

    /// The request's `needs` bytes (its attachments) reserved above the floor, held until the
    /// reservation is dropped (once its record is stored, or its ask failed); `disk_full` when
    /// the file system is under the floor, or would be once these bytes and those other asks
    /// hold are written. The first time of an episode, the owner's urgent notice is queued too.
    pub(crate) async fn disk_reservation(&self, needs: u64) -> Result<Reservation, Refusal> {
        let floor = self.config.limits.min_free_bytes;
        let (free, first) = match self.store.reserve_space(floor, needs) {
            Ok(reservation) => return Ok(reservation),
            Err(Space::NoRoomFor { free }) => (free, false),
            Err(Space::Room) => return Ok(Reservation::nothing()),
            Err(Space::Unknown(error)) => {
                tracing::warn!(%error, "cannot tell the state directory's free space");
                return Ok(Reservation::nothing());
            }
            Err(Space::Low { free, first }) => (free, first),
        };
        let dir = self.store.state_dir().display().to_string();
        tracing::warn!(free, floor, %dir, "an ask refused disk_full");
        if first {
            if let Err(error) = self.tell_owner_disk_full(&dir, free).await {
                tracing::error!(%error, "cannot queue the owner's notice of a full disk");
            }
        }
        Err(Refusal::new(
            Reason::DiskFull,
            if needs > 0 && free >= floor {
                format!(
                    "the state directory {dir} has {free} bytes free: this ask's {needs} bytes \
                     of attachments would leave less than limits.min_free_bytes ({floor}); \
                     nothing is stored until there is room"
                )
            } else {
                format!(
                    "the state directory {dir} has {free} bytes free, under limits.min_free_bytes \
                     ({floor}); nothing is stored until there is room"
                )
            },
        ))
    }

    /// Queues the urgent notice that asks are refused for want of disk.
    async fn tell_owner_disk_full(&self, dir: &str, free: u64) -> Result<(), StoreError> {
        let owner = self.owner.owner();
        let Some(owner) = owner else {
            return Ok(());
        };
        let floor = self.config.limits.min_free_bytes;
        let text = consentd_core::card::disk_full_notice(
            &self.locales,
            owner.language,
            dir,
            free / MIB,
            floor.div_ceil(MIB),
        );
        let body = Body::new(Styled::plain(text), Vec::new());
        let now = self.clock.now();
        self.store
            .tell(
                Tell::messages(None, vec![Outgoing::message(owner.id, body, Sound::Urgent)]),
                now,
            )
            .await
    }
}
