/* A fixed script of file operations for the shim's own test (tests/integration/crashfs.rs): run
 * under the shim in a directory holding `kept` ("old\n"), it leaves one case of each rule of the
 * model, and the test checks the image against what the model says must survive. */

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void check(int ok, const char *what) {
    if (!ok) {
        perror(what);
        exit(1);
    }
}

static int create(const char *path, const char *text) {
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
    check(fd >= 0, path);
    check(write(fd, text, strlen(text)) == (ssize_t)strlen(text), path);
    return fd;
}

static void sync_path(const char *path) {
    int fd = open(path, O_RDONLY);
    check(fd >= 0 && fsync(fd) == 0, path);
    close(fd);
}

int main(int argc, char **argv) {
    check(argc == 2 && chdir(argv[1]) == 0, "usage: probe DIR");

    /* Durable at start; an append never synced is lost. */
    int kept = open("kept", O_WRONLY | O_APPEND);
    check(kept >= 0 && write(kept, "unsynced\n", 9) == 9, "kept");

    /* Written, synced, renamed into place, directory synced, then written again: the name and
     * the synced content survive, the late write does not. */
    int renamed = create(".renamed.tmp", "first\n");
    check(fsync(renamed) == 0, "renamed");
    check(rename(".renamed.tmp", "renamed") == 0, "rename");

    /* A new directory with a synced entry. */
    check(mkdir("sub", 0700) == 0, "sub");
    int inner = create("sub/inner", "inner\n");
    check(fsync(inner) == 0, "inner");
    sync_path("sub");

    /* A name synced, its content never: an empty file. */
    create("empty", "never synced\n");

    sync_path(".");

    check(write(renamed, "late\n", 5) == 5, "late");
    /* Synced content under a name never synced: the name is lost. */
    int orphan = create("orphan", "synced\n");
    check(fdatasync(orphan) == 0, "orphan");
    /* Removed after the last directory sync: still there. */
    check(unlink("kept") == 0, "unlink");
    return 0;
}
