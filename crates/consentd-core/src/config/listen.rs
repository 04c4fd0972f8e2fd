//! `[[listen]]`: labelled sockets besides `[paths] socket`, one per place agents ask from (a
//! remote machine over an SSH forward, a container by a bind mount). Each has its own origin,
//! shown to the owner with every ask through it, and its own allow-list.
//!
//! An origin is what tells the owner where an ask comes from, so it is held to what a target
//! is held to: visible, NFC, one line, at most [`MAX_LISTEN_ORIGIN_CHARS`] characters, and no
//! UTS #39 look-alike of another listener's origin (the owner could not tell "devbox" from
//! "dеvbox" on a card). Two listeners on one path, or one on the main socket's, would make the
//! socket an ask came through ambiguous: refused.

use std::path::{Path, PathBuf};

use toml::{Table, Value};

use super::walker::{join, Walker};
use super::{Listen, LISTEN_KEYS};
use crate::lookalike;
use crate::refusal::visible::{self, FieldRef};

/// The longest origin a listener may have, in characters.
pub const MAX_LISTEN_ORIGIN_CHARS: usize = 32;

/// Every `[[listen]]` table, each problem under `listen[i].key`. `main_socket` is the main
/// socket's path when `[paths]` gave one that could be read.
pub(super) fn listeners(w: &mut Walker, root: &Table, main_socket: Option<&Path>) -> Vec<Listen> {
    let Some(value) = root.get("listen") else {
        return Vec::new();
    };
    let Value::Array(items) = value else {
        w.wrong_type(
            "listen".to_owned(),
            "an array of tables ([[listen]])",
            value,
        );
        return Vec::new();
    };
    let mut listens: Vec<(usize, Listen)> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let path = format!("listen[{i}]");
        let Value::Table(t) = item else {
            w.wrong_type(path, "a table ([[listen]])", item);
            continue;
        };
        if let Some(listen) = one(w, t, &path) {
            listens.push((i, listen));
        }
    }
    let mut paths: Vec<(usize, PathBuf)> = Vec::new();
    let mut origins: Vec<(usize, String)> = Vec::new();
    for (i, listen) in &listens {
        let socket = normal(&listen.socket);
        if main_socket.is_some_and(|main| normal(main) == socket) {
            w.report(
                format!("listen[{i}].socket"),
                "is the main socket's path ([paths] socket); give each listener its own",
            );
        } else if let Some((j, _)) = paths.iter().find(|(_, p)| *p == socket) {
            w.report(
                format!("listen[{i}].socket"),
                format!("listen[{j}] listens on the same path; give each listener its own"),
            );
        }
        paths.push((*i, socket));
        if let Some(problem) = clash(&origins, &listen.origin) {
            w.report(format!("listen[{i}].origin"), problem);
        }
        origins.push((*i, listen.origin.clone()));
    }
    listens.into_iter().map(|(_, listen)| listen).collect()
}

/// One listener's table, or `None` (its problems reported) when it has no usable socket or
/// origin.
fn one(w: &mut Walker, t: &Table, path: &str) -> Option<Listen> {
    w.unknown_keys(t, path, LISTEN_KEYS);
    for key in ["socket", "origin"] {
        if !t.contains_key(key) {
            w.report(join(path, key), "required");
        }
    }
    let socket = w.abs_path(t, path, "socket");
    let origin =
        w.string(t, path, "origin", "a string")
            .and_then(|origin| match origin_problem(origin) {
                Some(problem) => {
                    w.report(join(path, "origin"), problem);
                    None
                }
                None => Some(origin.to_owned()),
            });
    let allowed_uids = super::sections::uid_list(w, t, path).unwrap_or_default();
    Some(Listen {
        socket: socket?,
        origin: origin?,
        allowed_uids,
    })
}

/// Why `origin` cannot label a listener, or `None`.
pub(crate) fn origin_problem(origin: &str) -> Option<String> {
    let chars = origin.chars().count();
    if chars == 0 {
        return Some(format!(
            "is empty; give 1 to {MAX_LISTEN_ORIGIN_CHARS} characters the owner will see on each card"
        ));
    }
    if chars > MAX_LISTEN_ORIGIN_CHARS {
        return Some(format!(
            "has {chars} characters; an origin has at most {MAX_LISTEN_ORIGIN_CHARS}"
        ));
    }
    visible::check_value(origin, FieldRef::Field("origin"), false)
        .err()
        .map(|unshowable| unshowable.message())
}

/// Why `origin` cannot stand beside the origins already read (the same, or a look-alike of
/// one), or `None`.
fn clash(earlier: &[(usize, String)], origin: &str) -> Option<String> {
    if let Some((j, _)) = earlier.iter().find(|(_, o)| o == origin) {
        return Some(format!(
            "{origin:?} is listen[{j}]'s origin too; each listener needs its own"
        ));
    }
    earlier.iter().find_map(|(j, other)| {
        let pair = [other.clone(), origin.to_owned()];
        lookalike::confusable_pair(&pair).map(|found| {
            let position = found.difference.position;
            format!(
                "{origin:?} looks like listen[{j}]'s origin {other:?} (UTS #39) but differs at \
                 char {position}; the owner could not tell them apart on a card"
            )
        })
    })
}

/// A path as compared with another: `a//b/./c` and `a/b/c` are one socket.
fn normal(path: &Path) -> PathBuf {
    path.components().collect()
}
