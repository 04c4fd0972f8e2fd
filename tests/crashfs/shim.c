/* The storage model of the crash-consistency test (tests/integration/crashfs.rs): an LD_PRELOAD
 * shim that keeps, beside a watched directory, the image of what a disk that loses every unsynced
 * write would still hold if the power went out now.
 *
 * The model, in full (docs/CRASH-TESTING.md says what it leaves out):
 * - A regular file's content is durable only as of its last fsync or fdatasync: at that call the
 *   file's whole current content is copied into the image. Writes after it, truncations after it,
 *   are lost until the next one.
 * - A name (create, rename, link, unlink, mkdir) is durable only as of the last fsync of its
 *   directory: at that call the directory's current entries are written to the image. A name never
 *   synced that way is lost, whatever was synced into its file.
 * - Identity follows inodes, not names: a file renamed into place keeps what was synced under its
 *   temporary name, and a file created anew under an old name starts with nothing durable.
 * - Everything in the watched directory when the process starts counts as durable (the test makes
 *   it so: the directory is rebuilt from the previous image, or a daemon stopped cleanly left it).
 *
 * Environment: CRASHFS_ROOT, the watched directory; CRASHFS_IMAGE, a directory to create for the
 * image. Both are removed from the environment at load, with LD_PRELOAD, so that nothing the
 * process starts inherits the shim. Without them the shim does nothing.
 *
 * The image (read by the test, which turns it back into a directory):
 *   inodes/<id>   a regular file's durable content (absent: nothing synced, an empty file);
 *   dirs/<id>     a directory's durable entries, one a line: "f|d <octal mode> <id> <name>";
 *   dirs/0        the watched directory itself;
 *   ready         written once the image of the starting state is complete.
 * Every file of the image is written under a temporary name and renamed, so a SIGKILL at any
 * point leaves each one either before or after the sync that was under way, as a disk would. */

#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

static char root[PATH_MAX];
static size_t root_len;
/* Short enough that every image path built from it fits PATH_MAX. */
static char image[1024];
static pid_t owner_pid;
static int active;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

struct identity {
    dev_t dev;
    ino_t ino;
    unsigned long id;
};
static struct identity *identities;
static size_t identities_len, identities_cap;
/* 0 is the watched directory's. */
static unsigned long next_id = 1;

typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);
typedef int (*sync_fn)(int);
typedef int (*mkdir_fn)(const char *, mode_t);
typedef int (*mkdirat_fn)(int, const char *, mode_t);

/* The next definition of a symbol, looked up on first use: an interposed call may come before
 * this library's constructor has run. */
#define REAL(type, name)                                                                           \
    static type real_##name(void) {                                                                \
        static type f;                                                                             \
        if (!f)                                                                                    \
            f = (type)dlsym(RTLD_NEXT, #name);                                                     \
        return f;                                                                                  \
    }
REAL(open_fn, open)
REAL(open_fn, open64)
REAL(openat_fn, openat)
REAL(openat_fn, openat64)
REAL(sync_fn, fsync)
REAL(sync_fn, fdatasync)
REAL(mkdir_fn, mkdir)
REAL(mkdirat_fn, mkdirat)

static void die(const char *what) {
    /* The image can no longer be trusted; a test reading it would prove nothing. */
    fprintf(stderr, "crashfs shim: %s: %s\n", what, strerror(errno));
    abort();
}

static int watching(void) { return active && getpid() == owner_pid; }

/* The id of (dev, ino); a fresh one when `fresh` (the inode was just created, and its number may
 * have belonged to a file deleted before) or when it was never seen. */
static unsigned long identity(dev_t dev, ino_t ino, int fresh) {
    for (size_t i = 0; i < identities_len; i++) {
        if (identities[i].dev == dev && identities[i].ino == ino) {
            if (fresh)
                identities[i].id = next_id++;
            return identities[i].id;
        }
    }
    if (identities_len == identities_cap) {
        identities_cap = identities_cap ? identities_cap * 2 : 64;
        identities = realloc(identities, identities_cap * sizeof *identities);
        if (!identities)
            die("realloc");
    }
    identities[identities_len] = (struct identity){dev, ino, next_id++};
    return identities[identities_len++].id;
}

/* Whether `path` (absolute, resolved) is the watched directory or under it. */
static int under_root(const char *path) {
    return strncmp(path, root, root_len) == 0 && (path[root_len] == '\0' || path[root_len] == '/');
}

/* The resolved path of an open descriptor; "" when it has none. */
static void fd_path(int fd, char *out) {
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, out, PATH_MAX - 1);
    out[n < 0 ? 0 : n] = '\0';
}

/* Writes `data` to image/<rel> through a temporary name. */
static void write_image_file(const char rel[static 1], const char *data, size_t len) {
    char path[PATH_MAX], tmp[PATH_MAX + 8];
    snprintf(path, sizeof path, "%s/%s", image, rel);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = real_open()(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        die(tmp);
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            die(tmp);
        data += n;
        len -= (size_t)n;
    }
    close(fd);
    if (rename(tmp, path) != 0)
        die(path);
}

/* Copies the whole current content of `fd` (a regular file) into inodes/<id>. */
static void snapshot_file(int fd, unsigned long id) {
    char link[64], path[PATH_MAX], tmp[PATH_MAX + 8];
    /* Through /proc: `fd` may be open for writing only, and its offset is not ours to move. */
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    int in = real_open()(link, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        die(link);
    snprintf(path, sizeof path, "%s/inodes/%lu", image, id);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int out = real_open()(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out < 0)
        die(tmp);
    char buf[1 << 16];
    for (;;) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            die(link);
        if (n == 0)
            break;
        for (ssize_t done = 0; done < n;) {
            ssize_t w = write(out, buf + done, (size_t)(n - done));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                die(tmp);
            done += w;
        }
    }
    close(in);
    close(out);
    if (rename(tmp, path) != 0)
        die(path);
}

/* Writes dirs/<id>: the current entries of the directory at `path`. */
static void snapshot_dir(const char *path, unsigned long id) {
    DIR *dir = opendir(path);
    if (!dir)
        die(path);
    size_t cap = 4096, len = 0;
    char *list = malloc(cap);
    if (!list)
        die("malloc");
    struct dirent *entry;
    while ((entry = readdir(dir))) {
        const char *name = entry->d_name;
        if (!strcmp(name, ".") || !strcmp(name, ".."))
            continue;
        struct stat st;
        if (fstatat(dirfd(dir), name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue; /* gone meanwhile: not an entry of this sync */
        char kind;
        if (S_ISREG(st.st_mode))
            kind = 'f';
        else if (S_ISDIR(st.st_mode))
            kind = 'd';
        else
            continue; /* sockets and links are not part of the model */
        char line[NAME_MAX + 64];
        int n = snprintf(line, sizeof line, "%c %o %lu %s\n", kind, st.st_mode & 07777,
                         identity(st.st_dev, st.st_ino, 0), name);
        while (len + (size_t)n + 1 > cap) {
            cap *= 2;
            list = realloc(list, cap);
            if (!list)
                die("realloc");
        }
        memcpy(list + len, line, (size_t)n);
        len += (size_t)n;
    }
    closedir(dir);
    char rel[64];
    snprintf(rel, sizeof rel, "dirs/%lu", id);
    write_image_file(rel, list, len);
    free(list);
}

/* The sync of `fd`, as the model sees it: the file's content or the directory's names become
 * durable. Called before the real sync: if the process dies between the two, the disk may well
 * have written it anyway. */
static void durable(int fd) {
    if (!watching())
        return;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return;
    char path[PATH_MAX];
    fd_path(fd, path);
    pthread_mutex_lock(&lock);
    if (S_ISREG(st.st_mode)) {
        /* An unlinked file's path ends in " (deleted)"; a known inode is still ours. */
        int known = 0;
        for (size_t i = 0; i < identities_len; i++)
            known |= identities[i].dev == st.st_dev && identities[i].ino == st.st_ino;
        if (known || under_root(path))
            snapshot_file(fd, identity(st.st_dev, st.st_ino, 0));
    } else if (S_ISDIR(st.st_mode) && under_root(path)) {
        snapshot_dir(path, identity(st.st_dev, st.st_ino, 0));
    }
    pthread_mutex_unlock(&lock);
}

/* After a call that may have created the inode open at `fd`: a new inode has nothing durable. */
static void created(int fd) {
    struct stat st;
    char path[PATH_MAX];
    if (fstat(fd, &st) != 0)
        return;
    fd_path(fd, path);
    if (!under_root(path))
        return;
    pthread_mutex_lock(&lock);
    identity(st.st_dev, st.st_ino, 1);
    pthread_mutex_unlock(&lock);
}

static int exists_at(int dirfd, const char *path) {
    struct stat st;
    return fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static int open_common(int dirfd, const char *path, int flags, mode_t mode, int at, int large) {
    int creating = watching() && (flags & O_CREAT) && !exists_at(dirfd, path);
    int fd;
    if (at)
        fd = (large ? real_openat64() : real_openat())(dirfd, path, flags, mode);
    else
        fd = (large ? real_open64() : real_open())(path, flags, mode);
    if (fd >= 0 && creating) {
        int saved = errno;
        created(fd);
        errno = saved;
    }
    return fd;
}

#define MODE_ARG(flags)                                                                            \
    mode_t mode = 0;                                                                               \
    if ((flags) & (O_CREAT | __O_TMPFILE)) {                                                       \
        va_list ap;                                                                                \
        va_start(ap, flags);                                                                       \
        mode = va_arg(ap, mode_t);                                                                 \
        va_end(ap);                                                                                \
    }

int open(const char *path, int flags, ...) {
    MODE_ARG(flags)
    return open_common(AT_FDCWD, path, flags, mode, 0, 0);
}
int open64(const char *path, int flags, ...) {
    MODE_ARG(flags)
    return open_common(AT_FDCWD, path, flags, mode, 0, 1);
}
int openat(int dirfd, const char *path, int flags, ...) {
    MODE_ARG(flags)
    return open_common(dirfd, path, flags, mode, 1, 0);
}
int openat64(int dirfd, const char *path, int flags, ...) {
    MODE_ARG(flags)
    return open_common(dirfd, path, flags, mode, 1, 1);
}
/* The fortified entry points _FORTIFY_SOURCE builds call for a two-argument open. */
int __open_2(const char *path, int flags) { return open_common(AT_FDCWD, path, flags, 0, 0, 0); }
int __open64_2(const char *path, int flags) { return open_common(AT_FDCWD, path, flags, 0, 0, 1); }
int __openat_2(int dirfd, const char *path, int flags) {
    return open_common(dirfd, path, flags, 0, 1, 0);
}
int __openat64_2(int dirfd, const char *path, int flags) {
    return open_common(dirfd, path, flags, 0, 1, 1);
}
int creat(const char *path, mode_t mode) {
    return open_common(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode, 0, 0);
}
int creat64(const char *path, mode_t mode) {
    return open_common(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode, 0, 1);
}

static void made_dir(int dirfd, const char *path) {
    int fd = real_openat()(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        created(fd);
        close(fd);
    }
}

int mkdir(const char *path, mode_t mode) {
    int rc = real_mkdir()(path, mode);
    if (rc == 0 && watching()) {
        int saved = errno;
        made_dir(AT_FDCWD, path);
        errno = saved;
    }
    return rc;
}
int mkdirat(int dirfd, const char *path, mode_t mode) {
    int rc = real_mkdirat()(dirfd, path, mode);
    if (rc == 0 && watching()) {
        int saved = errno;
        made_dir(dirfd, path);
        errno = saved;
    }
    return rc;
}

int fsync(int fd) {
    durable(fd);
    return real_fsync()(fd);
}
int fdatasync(int fd) {
    durable(fd);
    return real_fdatasync()(fd);
}

/* The starting state, all durable: every directory's entries and every file's content. */
static void image_tree(const char *path, unsigned long id) {
    snapshot_dir(path, id);
    DIR *dir = opendir(path);
    if (!dir)
        die(path);
    struct dirent *entry;
    while ((entry = readdir(dir))) {
        if (!strcmp(entry->d_name, ".") || !strcmp(entry->d_name, ".."))
            continue;
        char child[PATH_MAX];
        snprintf(child, sizeof child, "%s/%s", path, entry->d_name);
        struct stat st;
        if (lstat(child, &st) != 0)
            die(child);
        if (S_ISDIR(st.st_mode)) {
            image_tree(child, identity(st.st_dev, st.st_ino, 0));
        } else if (S_ISREG(st.st_mode)) {
            int fd = real_open()(child, O_RDONLY | O_CLOEXEC);
            if (fd < 0)
                die(child);
            snapshot_file(fd, identity(st.st_dev, st.st_ino, 0));
            close(fd);
        }
    }
    closedir(dir);
}

__attribute__((constructor)) static void start(void) {
    const char *want_root = getenv("CRASHFS_ROOT"), *want_image = getenv("CRASHFS_IMAGE");
    if (!want_root || !want_image)
        return;
    if (!realpath(want_root, root))
        die(want_root);
    root_len = strlen(root);
    if (strlen(want_image) >= sizeof image) {
        errno = ENAMETOOLONG;
        die(want_image);
    }
    snprintf(image, sizeof image, "%s", want_image);
    char sub[PATH_MAX];
    if (real_mkdir()(image, 0700) != 0)
        die(image);
    snprintf(sub, sizeof sub, "%s/inodes", image);
    if (real_mkdir()(sub, 0700) != 0)
        die(sub);
    snprintf(sub, sizeof sub, "%s/dirs", image);
    if (real_mkdir()(sub, 0700) != 0)
        die(sub);
    struct stat st;
    if (stat(root, &st) != 0)
        die(root);
    identities_cap = 64;
    identities = malloc(identities_cap * sizeof *identities);
    if (!identities)
        die("malloc");
    identities[identities_len++] = (struct identity){st.st_dev, st.st_ino, 0};
    image_tree(root, 0);
    write_image_file("ready", "", 0);
    owner_pid = getpid();
    active = 1;
    unsetenv("LD_PRELOAD");
    unsetenv("CRASHFS_ROOT");
    unsetenv("CRASHFS_IMAGE");
}
