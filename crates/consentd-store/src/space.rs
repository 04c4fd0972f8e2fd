//! The free space of the state directory's file system, against the floor under which asks are
//! refused `disk_full` (`[limits] min_free_bytes`). The probe is a trait so a test can say the
//! disk is full without filling one; the watch remembers whether the disk is already low, so
//! the owner hears of it once each time it runs low, not once per ask.
//!
//! An ask's attachment bytes are reserved, not only checked ([`SpaceWatch::reserve`]): the check
//! and the reservation are one step under a lock, and the room above the floor is what the probe
//! says less every reservation still held, so asks taken together never write the disk under
//! the floor. A reservation is held until the ask's bytes are written and committed (the probe
//! then sees them) or the ask failed, and released when dropped.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Tells how many bytes an unprivileged writer may still write on a directory's file system.
pub trait FreeSpace: Send + Sync + std::fmt::Debug {
    fn free_bytes(&self, dir: &Path) -> std::io::Result<u64>;
}

/// The kernel's answer (`statvfs`): blocks available to an unprivileged user times their size.
#[derive(Debug, Clone, Copy, Default)]
pub struct Statvfs;

impl FreeSpace for Statvfs {
    fn free_bytes(&self, dir: &Path) -> std::io::Result<u64> {
        let stats = nix::sys::statvfs::statvfs(dir).map_err(std::io::Error::from)?;
        // The widths differ by platform; both are unsigned.
        #[allow(clippy::unnecessary_cast)]
        let free = (stats.blocks_available() as u64).saturating_mul(stats.fragment_size() as u64);
        Ok(free)
    }
}

/// What the watch found.
#[derive(Debug)]
pub enum Space {
    /// At or over the floor (or the floor is zero: no check).
    Room,
    /// Under the floor: `free` bytes left; `first` when the disk was not low at the last check,
    /// so this is the one check of the episode that tells the owner.
    Low { free: u64, first: bool },
    /// Over the floor, but not by the request's own bytes: refused, yet the disk is not low (no
    /// episode begins, so a session cannot make the owner's notice come again and again).
    NoRoomFor { free: u64 },
    /// The probe failed: nothing is refused on a guess.
    Unknown(std::io::Error),
}

/// A probe and whether the disk was low when it last answered.
#[derive(Debug)]
pub struct SpaceWatch {
    probe: Arc<dyn FreeSpace>,
    low: AtomicBool,
    /// Bytes reserved by asks whose attachments are not yet written and committed.
    reserved: Mutex<u64>,
}

/// Bytes of the disk an ask holds until it is stored or has failed; released when dropped.
#[derive(Debug)]
pub struct Reservation {
    watch: Option<Arc<SpaceWatch>>,
    bytes: u64,
}

impl Reservation {
    /// A reservation of nothing: what a request that writes no bytes, or an unknown free space,
    /// holds.
    pub fn nothing() -> Reservation {
        Reservation {
            watch: None,
            bytes: 0,
        }
    }

    /// The bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if let Some(watch) = &self.watch {
            let mut reserved = watch.reserved.lock().unwrap_or_else(|p| p.into_inner());
            *reserved = reserved.saturating_sub(self.bytes);
        }
    }
}

impl SpaceWatch {
    pub fn new(probe: Arc<dyn FreeSpace>) -> SpaceWatch {
        SpaceWatch {
            probe,
            low: AtomicBool::new(false),
            reserved: Mutex::new(0),
        }
    }

    /// Reserves `needs` bytes of `dir`'s file system above `floor`, against what the probe says
    /// less what other asks hold: one step under the lock, so two asks never both take the last
    /// room. Refused with what [`SpaceWatch::check`] would say when there is no room, or
    /// `Unknown` when the probe fails (nothing is refused on a guess); a zero floor reserves
    /// nothing.
    pub fn reserve(
        self: &Arc<Self>,
        dir: &Path,
        floor: u64,
        needs: u64,
    ) -> Result<Reservation, Space> {
        let mut reserved = self.reserved.lock().unwrap_or_else(|p| p.into_inner());
        let held = *reserved;
        match self.check(dir, floor, needs.saturating_add(held)) {
            Space::Room if floor > 0 => {
                *reserved = held.saturating_add(needs);
                Ok(Reservation {
                    watch: Some(self.clone()),
                    bytes: needs,
                })
            }
            Space::Room => Ok(Reservation::nothing()),
            Space::NoRoomFor { free } => Err(Space::NoRoomFor {
                free: free.saturating_sub(held),
            }),
            low => Err(low),
        }
    }

    /// Checks `dir`'s file system against `floor` bytes. Space back over the floor ends the
    /// episode, so the next time it runs low is told again.
    pub fn check(&self, dir: &Path, floor: u64, needs: u64) -> Space {
        if floor == 0 {
            return Space::Room;
        }
        match self.probe.free_bytes(dir) {
            Ok(free) if free < floor => {
                let was_low = self.low.swap(true, Ordering::SeqCst);
                Space::Low {
                    free,
                    first: !was_low,
                }
            }
            Ok(free) => {
                self.low.store(false, Ordering::SeqCst);
                if free - floor < needs {
                    Space::NoRoomFor { free }
                } else {
                    Space::Room
                }
            }
            Err(error) => Space::Unknown(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    #[derive(Debug, Default)]
    struct Fixed(AtomicU64);

    impl FreeSpace for Fixed {
        fn free_bytes(&self, _: &Path) -> std::io::Result<u64> {
            Ok(self.0.load(Ordering::SeqCst))
        }
    }

    #[test]
    fn the_owner_is_told_once_per_episode() {
        let probe = Arc::new(Fixed::default());
        let watch = SpaceWatch::new(probe.clone());
        // (free bytes, what the check says: None for room, Some(first) for low)
        let cases: [(u64, Option<bool>); 7] = [
            (500, None),
            (99, Some(true)),
            (10, Some(false)),
            (0, Some(false)),
            (100, None),
            (50, Some(true)),
            (50, Some(false)),
        ];
        for (n, (free, expected)) in cases.into_iter().enumerate() {
            probe.0.store(free, Ordering::SeqCst);
            let found = match watch.check(Path::new("/"), 100, 0) {
                Space::Room => None,
                Space::Low { free: left, first } => {
                    assert_eq!(left, free, "case {n}");
                    Some(first)
                }
                Space::NoRoomFor { .. } => panic!("case {n}: nothing was asked for"),
                Space::Unknown(error) => panic!("case {n}: {error}"),
            };
            assert_eq!(found, expected, "case {n}: {free} bytes free");
        }
    }

    #[test]
    fn a_request_that_would_pass_the_floor_is_refused_without_an_episode() {
        let probe = Arc::new(Fixed::default());
        let watch = SpaceWatch::new(probe.clone());
        probe.0.store(150, Ordering::SeqCst);
        // 150 free, floor 100: 50 fits, 51 does not, and neither begins an episode.
        assert!(matches!(watch.check(Path::new("/"), 100, 50), Space::Room));
        assert!(matches!(
            watch.check(Path::new("/"), 100, 51),
            Space::NoRoomFor { free: 150 }
        ));
        assert!(matches!(
            watch.check(Path::new("/"), 100, 1_000),
            Space::NoRoomFor { free: 150 }
        ));
        // Under the floor later, the owner is told: this is the episode's first check.
        probe.0.store(99, Ordering::SeqCst);
        assert!(matches!(
            watch.check(Path::new("/"), 100, 0),
            Space::Low {
                free: 99,
                first: true
            }
        ));
    }

    /// Eight threads reserving at once never hold more than the room above the floor, and a
    /// reservation dropped gives its bytes back.
    #[test]
    fn reservations_taken_at_once_never_pass_the_room_above_the_floor() {
        let probe = Arc::new(Fixed::default());
        probe.0.store(100 + 130, Ordering::SeqCst);
        let watch = Arc::new(SpaceWatch::new(probe));
        for round in 0..100 {
            let barrier = Arc::new(std::sync::Barrier::new(8));
            let held: Vec<Option<Reservation>> = std::thread::scope(|scope| {
                let threads: Vec<_> = (0..8)
                    .map(|_| {
                        let (watch, barrier) = (watch.clone(), barrier.clone());
                        scope.spawn(move || {
                            barrier.wait();
                            watch.reserve(Path::new("/"), 100, 50).ok()
                        })
                    })
                    .collect();
                threads.into_iter().map(|t| t.join().unwrap()).collect()
            });
            let taken: u64 = held.iter().flatten().map(Reservation::bytes).sum();
            assert_eq!(taken, 100, "round {round}: two of 50 fit in 130");
            drop(held);
            assert_eq!(*watch.reserved.lock().unwrap(), 0, "round {round}");
        }
        assert!(matches!(
            watch.reserve(Path::new("/"), 100, 131),
            Err(Space::NoRoomFor { free: 230 })
        ));
    }

    #[test]
    fn a_zero_floor_never_checks_and_the_real_probe_answers() {
        let probe = Arc::new(Fixed::default());
        let watch = SpaceWatch::new(probe);
        assert!(matches!(watch.check(Path::new("/"), 0, 0), Space::Room));
        let real = Statvfs.free_bytes(&std::env::temp_dir()).unwrap();
        assert!(real > 0);
    }
}
