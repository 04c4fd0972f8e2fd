//! Who asks: a uid, through one socket. The same uid through the main socket and through a
//! labelled one (`[[listen]]`, named by its origin) are two peers: each sees, withdraws and is
//! refused by only its own records, declines and streaks.

/// A uid and the socket it asked through.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Peer {
    pub uid: u32,
    /// The origin of the labelled socket; `None` for the main socket.
    pub listener: Option<String>,
}

impl Peer {
    /// A uid on the main socket.
    pub fn main(uid: u32) -> Self {
        Peer {
            uid,
            listener: None,
        }
    }

    /// A uid on the socket labelled `listener` (`None`: the main socket).
    pub fn through(uid: u32, listener: Option<&str>) -> Self {
        Peer {
            uid,
            listener: listener.map(str::to_owned),
        }
    }

    /// The listener as its column holds it: the origin, or `''` for the main socket.
    pub(crate) fn column(&self) -> &str {
        self.listener.as_deref().unwrap_or("")
    }
}

/// The column's value read back: `''` is the main socket.
pub(crate) fn listener_of(column: String) -> Option<String> {
    (!column.is_empty()).then_some(column)
}
