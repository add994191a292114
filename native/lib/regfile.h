/* regfile.h - the one way the native programs open a file a recording or a process's maps name. */
#ifndef PMUPROF_LIB_REGFILE_H
#define PMUPROF_LIB_REGFILE_H

/* A read-only descriptor of path when it is a regular file, else a negative errno (-ENOENT for a missing or
 * empty path, -EINVAL for anything but a regular file). The paths come from perf.data files and from the
 * targets' maps: another user may have put a FIFO there (open would block) or a device (reads never end),
 * so the file is opened without blocking, checked, and only then made an ordinary descriptor. */
int regfile_open(const char *path);

#endif
