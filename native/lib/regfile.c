/* regfile.c - open a named file only when it is a regular file, never blocking on the open. */
#define _GNU_SOURCE
#include "regfile.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

int regfile_open(const char *path)
{
    struct stat st;
    int fd, flags;

    if (!path || !*path)
        return -ENOENT;
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (flags = fcntl(fd, F_GETFL)) < 0 ||
        fcntl(fd, F_SETFL, flags & ~O_NONBLOCK)) {
        close(fd);
        return -EINVAL;
    }
    return fd;
}
