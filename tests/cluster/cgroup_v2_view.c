/* A test harness aid, preloaded into the loopback cluster's Slurm daemons only (never into
 * user tasks): Slurm's cgroup/v2 plugin refuses a hybrid host at start ("Hybrid mode is not
 * supported"), because /proc/<pid>/cgroup lists the v1 hierarchies before the "0::" line, and
 * no namespace hides those lines. This library shows the daemons a unified host's view of
 * /proc/<pid>/cgroup: the "0::" line alone, and "0::/" for a process outside the daemons'
 * cgroup namespace (pid 1: its path starts with "/.."). Everything else passes through.
 * What the daemons then do is real: cgroup2 directories, BPF device programs per step/task.
 * Built by tests/cluster/harness.sh for GPUTOPO_CLUSTER_CGROUP=v2-devices
 * (../shared/slurm-lab.md, "cgroup v2 on these hybrid hosts"). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* "/proc/<one component>/cgroup" */
static int is_proc_cgroup(const char *path)
{
    const char *slash;
    if (!path || strncmp(path, "/proc/", 6) != 0)
        return 0;
    slash = strchr(path + 6, '/');
    return slash && slash > path + 6 && strcmp(slash, "/cgroup") == 0;
}

/* A memory file holding the unified view of PATH, or -1 (errno set). */
static int unified_view(const char *path, int cloexec)
{
    char buf[16384], out[4096];
    ssize_t n = 0, r;
    size_t len = 0;
    const char *line = NULL, *p, *end;
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    while (n < (ssize_t)sizeof(buf) - 1 && (r = read(fd, buf + n, sizeof(buf) - 1 - (size_t)n)) > 0)
        n += r;
    close(fd);
    buf[n] = '\0';
    for (p = buf; p && *p; p = (end = strchr(p, '\n')) ? end + 1 : NULL) {
        if (strncmp(p, "0::", 3) == 0) {
            line = p;
            break;
        }
    }
    if (line) {
        end = strchr(line, '\n');
        len = end ? (size_t)(end - line) : strlen(line);
        if (strncmp(line, "0::/..", 6) == 0 || len >= sizeof(out) - 1) {
            strcpy(out, "0::/\n");
            len = 5;
        } else {
            memcpy(out, line, len);
            out[len++] = '\n';
        }
    }
    fd = memfd_create("cgroup-v2-view", cloexec ? MFD_CLOEXEC : 0);
    if (fd < 0)
        return -1;
    if ((len && write(fd, out, len) != (ssize_t)len) || lseek(fd, 0, SEEK_SET) != 0) {
        close(fd);
        errno = EIO;
        return -1;
    }
    return fd;
}

#define REAL(name, type) static type real_##name; if (!real_##name) real_##name = (type)dlsym(RTLD_NEXT, #name)
typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);
typedef FILE *(*fopen_fn)(const char *, const char *);

#define OPEN_LIKE(name)                                                         \
    int name(const char *path, int flags, ...)                                  \
    {                                                                           \
        mode_t mode = 0;                                                        \
        va_list ap;                                                             \
        REAL(name, open_fn);                                                    \
        if (is_proc_cgroup(path))                                               \
            return unified_view(path, flags & O_CLOEXEC);                       \
        va_start(ap, flags);                                                    \
        if (flags & (O_CREAT | O_TMPFILE))                                      \
            mode = va_arg(ap, mode_t);                                          \
        va_end(ap);                                                             \
        return real_##name(path, flags, mode);                                  \
    }
OPEN_LIKE(open)
OPEN_LIKE(open64)

#define OPENAT_LIKE(name)                                                       \
    int name(int dirfd, const char *path, int flags, ...)                       \
    {                                                                           \
        mode_t mode = 0;                                                        \
        va_list ap;                                                             \
        REAL(name, openat_fn);                                                  \
        if (is_proc_cgroup(path))                                               \
            return unified_view(path, flags & O_CLOEXEC);                       \
        va_start(ap, flags);                                                    \
        if (flags & (O_CREAT | O_TMPFILE))                                      \
            mode = va_arg(ap, mode_t);                                          \
        va_end(ap);                                                             \
        return real_##name(dirfd, path, flags, mode);                           \
    }
OPENAT_LIKE(openat)
OPENAT_LIKE(openat64)

#define FOPEN_LIKE(name)                                                        \
    FILE *name(const char *path, const char *mode)                              \
    {                                                                           \
        int fd;                                                                 \
        FILE *f;                                                                \
        REAL(name, fopen_fn);                                                   \
        if (!is_proc_cgroup(path))                                              \
            return real_##name(path, mode);                                     \
        if ((fd = unified_view(path, strchr(mode, 'e') != NULL)) < 0)           \
            return NULL;                                                        \
        if (!(f = fdopen(fd, "r")))                                             \
            close(fd);                                                          \
        return f;                                                               \
    }
FOPEN_LIKE(fopen)
FOPEN_LIKE(fopen64)
